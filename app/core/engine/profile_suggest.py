"""A starting MIN:OPT:MAX range for each input, from the model's own dims and the shapes the user set.

Static dims are kept. A dynamic dim takes, in this order:

1. the size the user set for that input;
2. the size the user set for another input on a dim of the same name (``batch_size`` shared by two
   inputs, a sequence length ``S``), so that dims the model ties together stay equal;
3. a default for the axis's role: the batch axis (axis 0) ranges over :data:`BATCH_RANGE`; the spatial
   axes of an image input (NCHW or NHWC, 1, 3 or 4 channels) take the model's ``imgsz`` metadata
   (the Ultralytics convention) or :data:`DEFAULT_SPATIAL`; any other axis takes :data:`DEFAULT_LENGTH`.

Only the batch axis gets a range; every other axis gets one size (min = opt = max), since a range there
changes which kernels TensorRT may pick and is better chosen on purpose. No dynamic dim is ever
suggested as 1 outside the batch minimum.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from app.core.engine.profiles import InputProfile
from app.core.model import Dim, TensorInfo

BATCH_RANGE = (1, 8, 32)  # min, opt, max of a batch axis nobody set
DEFAULT_SPATIAL = 224  # height and width of an image input nobody set (the ImageNet size)
DEFAULT_LENGTH = 128  # any other dynamic axis: sequence length, frames, time steps
_CHANNELS = (1, 3, 4)

Triple = tuple[int, int, int]


def _is_dynamic(d: Dim) -> bool:
    return not (isinstance(d, int) and d > 0)


def _named(d: Dim) -> str | None:
    """The dim's name when it has one that other inputs may share ('?' and -1 are not names)."""
    return d if isinstance(d, str) and d not in ("", "?") else None


def _spatial_axes(shape: tuple[Dim, ...]) -> set[int]:
    if len(shape) != 4:
        return set()
    if shape[1] in _CHANNELS:
        return {2, 3}
    if shape[3] in _CHANNELS:
        return {1, 2}
    return set()


def _imgsz(metadata: Mapping[str, str] | None) -> tuple[int, int] | None:
    """``imgsz`` as Ultralytics writes it (``[640, 640]`` or ``640``), when present and sane."""
    text = (metadata or {}).get("imgsz")
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    sizes = [value] if isinstance(value, int) else value if isinstance(value, list) else []
    if not sizes or len(sizes) > 2 or not all(isinstance(v, int) and v > 0 for v in sizes):
        return None
    return (sizes[0], sizes[-1])


def _batch(opt: int | None) -> Triple:
    if opt is None:
        return BATCH_RANGE
    return (min(BATCH_RANGE[0], opt), opt, max(BATCH_RANGE[2], opt))


def suggest_profile(inputs: Sequence[TensorInfo], shapes: Mapping[str, Sequence[int]] | None = None,
                    metadata: Mapping[str, str] | None = None) -> dict[str, InputProfile]:
    """One suggested range per input of known rank (static inputs: their one shape), keyed by input name."""
    shapes = shapes or {}
    set_by_name: dict[str, int] = {}  # dim name -> the size the user gave it on some input
    for info in inputs:
        given = shapes.get(info.name)
        if info.shape is None or given is None or len(given) != len(info.shape):
            continue
        for d, v in zip(info.shape, given, strict=True):
            if (name := _named(d)) is not None:
                set_by_name.setdefault(name, int(v))
    image = _imgsz(metadata)
    chosen: dict[str, Triple] = {}  # dim name -> its range, so that dims of one name get one range
    out: dict[str, InputProfile] = {}
    for info in inputs:
        if info.shape is None:
            continue
        given = shapes.get(info.name)
        if given is not None and len(given) != len(info.shape):
            given = None
        spatial = _spatial_axes(info.shape)
        ranges: list[Triple] = []
        for axis, d in enumerate(info.shape):
            if not _is_dynamic(d):
                ranges.append((int(d), int(d), int(d)))
                continue
            name = _named(d)
            if name is not None and name in chosen:
                ranges.append(chosen[name])
                continue
            value = int(given[axis]) if given is not None else set_by_name.get(name) if name else None
            if axis == 0 and len(info.shape) > 1:
                triple = _batch(value)
            else:
                if value is None:
                    value = (image[0 if axis == min(spatial) else 1] if image else DEFAULT_SPATIAL) \
                        if axis in spatial else DEFAULT_LENGTH
                triple = (value, value, value)
            if name is not None:
                chosen[name] = triple
            ranges.append(triple)
        out[info.name] = InputProfile(info.name, *(tuple(r[k] for r in ranges) for k in range(3)))
    return out
