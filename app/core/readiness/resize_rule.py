"""Which ``Resize`` nodes TensorRT's ONNX parser refuses: the rule of onnx-tensorrt's own code, not of its
operator table (which leaves cubic out although the importer takes it).

From ``onnxOpCheckers.cpp`` (``checkResize``) and ``onnxOpImporters.cpp`` (``importResize``, unchanged from
10.1 GA to 10.6 GA and in TensorRT for RTX 1.7.1, whose parser gave the same answers on every case below):

- ``mode`` nearest, linear or cubic (anything else is refused);
- from opset 11, ``coordinate_transformation_mode`` half_pixel, pytorch_half_pixel, tf_half_pixel_for_nn,
  asymmetric or align_corners (half_pixel_symmetric and tf_crop_and_resize are refused), and
  tf_half_pixel_for_nn only with ``nearest_mode`` round_prefer_floor;
- ``antialias`` 0 and ``keep_aspect_ratio_policy`` stretch (opset 18 attributes);
- ``axes`` without repeats; with ``scales`` computed in the graph (not a constant), ``axes`` must be all of them
  in order (0, 1, …, rank-1);
- with constant ``scales`` (and, from opset 11, no ``sizes``): cubic may resize only the last 2 dims, linear
  only the last 3 — the importer asks that the leading ``len(scales) - n`` scale factors be 1. With ``sizes``
  the importer returns before that test, so a cubic resize given by sizes imports whatever it resizes.

``nearest_mode`` values, ``exclude_outside`` and ``cubic_coeff_a`` are all taken.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx
from onnx import numpy_helper

from app.core.model import attr_int, attr_ints

MODES = ("nearest", "linear", "cubic")
TRANSFORMS = ("half_pixel", "pytorch_half_pixel", "tf_half_pixel_for_nn", "asymmetric", "align_corners")
RESIZED_DIMS = {"linear": 3, "cubic": 2}   # the innermost dims each interpolation may resize


def _attr(node: onnx.NodeProto, name: str, default: object = None) -> object:
    for a in node.attribute:
        if a.name == name:
            value = onnx.helper.get_attribute_value(a)
            return value.decode() if isinstance(value, bytes) else value
    return default


def _const(consts: Mapping[str, onnx.TensorProto], name: str) -> np.ndarray | None:
    t = consts.get(name) if name else None
    if t is None or t.data_location == onnx.TensorProto.EXTERNAL:
        return None
    try:
        return numpy_helper.to_array(t)
    except Exception:  # an unreadable constant: the rule cannot be decided, so nothing is claimed
        return None


def resize_problem(node: onnx.NodeProto, opset: int, consts: Mapping[str, onnx.TensorProto]) -> str | None:
    """Why TensorRT's parser refuses this Resize (for a finding's "has …"), or None when it imports it."""
    mode = str(_attr(node, "mode", "nearest"))
    if mode not in MODES:
        return f"mode '{mode}' (TensorRT resizes nearest, linear or cubic)"
    if opset >= 11:
        ct = str(_attr(node, "coordinate_transformation_mode", "half_pixel"))
        if ct not in TRANSFORMS:
            return f"coordinate_transformation_mode '{ct}' (TensorRT takes {', '.join(TRANSFORMS)})"
        nearest = str(_attr(node, "nearest_mode", "round_prefer_floor"))
        if ct == "tf_half_pixel_for_nn" and nearest != "round_prefer_floor":
            return f"coordinate_transformation_mode tf_half_pixel_for_nn with nearest_mode '{nearest}' (only " \
                   "round_prefer_floor there)"
    if attr_int(_attr(node, "antialias", 0) or 0):
        return "antialias=1 (TensorRT does not antialias)"
    policy = str(_attr(node, "keep_aspect_ratio_policy", "stretch"))
    if policy != "stretch":
        return f"keep_aspect_ratio_policy '{policy}' (only stretch)"
    axes = attr_ints(_attr(node, "axes") or [])
    if len(set(axes)) != len(axes):
        return f"axes {axes} with a repeated axis"
    has_sizes = opset >= 11 and len(node.input) > 3 and bool(node.input[3])
    if has_sizes:
        return None  # the importer sets the output dims and returns before any dims test
    scales_name = node.input[2 if opset >= 11 else 1] if len(node.input) > (2 if opset >= 11 else 1) else ""
    if not scales_name:
        return None
    if scales_name not in consts:
        if axes and axes != list(range(len(axes))):
            return f"axes {axes} with scales computed in the graph (only all axes in order, or constant scales)"
        return None
    limit = RESIZED_DIMS.get(mode)
    scales = _const(consts, scales_name)
    if limit is None or scales is None or scales.ndim != 1:
        return None
    given = [float(s) for s in scales]
    full = given
    if axes:  # the importer spreads the scales over the axes, 1 elsewhere, but tests the leading len(given) - n
        rank = max(max(axes) + 1, len(given))
        full = [1.0] * rank
        for axis, s in zip(axes, given, strict=False):
            if axis >= 0:
                full[axis] = s
    leading = full[:max(len(given) - limit, 0)]
    if any(s != 1.0 for s in leading):
        return (f"{mode} resizing of dims other than the last {limit} (scales {_fmt(given)}; TensorRT's {mode} "
                f"resize works on the innermost {limit} dims only)")
    return None


def _fmt(values: list[float]) -> str:
    return "[" + ", ".join(f"{v:g}" for v in values) + "]"
