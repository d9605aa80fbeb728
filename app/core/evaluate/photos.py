"""Photos as a model's input by its preset: the sample photos and folders of images that ``compare``, ``bench``,
``diagnose``, ``fallback`` and ``run`` feed, the window's input data and the demo's, made as ``trtlab eval`` makes
its images (:meth:`app.core.evaluate.Preset.apply`, one implementation).

:func:`model_preprocess` is the one rule for what photos get: the model's preset (:func:`choose_preset`: letterbox
and [0, 1] pixels for an Ultralytics export, PaddleOCR's rules for its models, ImageNet's otherwise) as an
:class:`app.core.measure.ImagePreprocess` (the settings the project saves and the window edits), with the settings a
person gave in place of the preset's. :func:`photo_tensor` makes one image's array by it (the function
:func:`app.core.measure.make_samples` is given for images), :func:`fit_source` fills an images source's
preprocessing from the model where nobody set it, and :func:`preprocessing_json` says in a result which preset the
photos went through.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from app.core.errors import InputError
from app.core.evaluate.presets import Preset, choose_preset
from app.core.measure import ImagePreprocess, InputSource, photo_source_for, read_image
from app.core.model import TensorInfo

PRESET_KEYS = ("size", "layout", "color", "scale", "mean", "std", "resize", "pad")  # what a person may set


def _expand(values: tuple[float, ...], channels: int, what: str) -> tuple[float, ...]:
    """One value per channel: as given, or a single value (or equal ones) repeated; refused otherwise."""
    if len(values) == channels:
        return tuple(float(v) for v in values)
    if values and len(set(values)) == 1:
        return (float(values[0]),) * channels
    raise InputError(f"The image {what} has {len(values)} values but the model's input has {channels} channel(s).",
                     fix=f"Give one {what} value, or one per channel ({channels}).")


def model_preprocess(model: onnx.ModelProto | Mapping[str, str] | None, info: TensorInfo,
                     given: Mapping[str, Any] | None = None) -> ImagePreprocess:
    """How photos become a model's image input: the model's preset, with the settings a person gave (`given`:
    :data:`PRESET_KEYS` → value) in place of the preset's (``given`` and ``reason`` then say which). `model` is the
    model, or only its metadata (then only the Ultralytics rule can be read). The size is left to the input's shape
    (None) unless given."""
    if not isinstance(model, onnx.ModelProto):
        proto = onnx.ModelProto()
        for k, v in dict(model or {}).items():
            proto.metadata_props.add(key=str(k), value=str(v))
        model = proto
    preset = choose_preset(model, info)
    c = preset.channels
    pre = ImagePreprocess(size=None, layout=preset.layout, color="RGB" if preset.color == "L" else preset.color,
                          scale=preset.scale, mean=_expand(preset.mean, c, "mean"), std=_expand(preset.std, c, "std"),
                          resize=preset.resize, pad=preset.pad, preset=preset.name, reason=preset.reason)
    hand = {k: v for k, v in (given or {}).items() if k in PRESET_KEYS and v is not None}
    if not hand:
        return pre
    keys = [k for k in PRESET_KEYS if k in hand]
    return ImagePreprocess.from_json({**pre.to_json(), **hand, "given": keys,
                                      "reason": f"{', '.join(keys)} as given, the rest from the model's "
                                                f"{preset.name} preset"})


def image_preset(pre: ImagePreprocess, height: int, width: int, channels: int) -> Preset:
    """The :class:`Preset` the settings make for an input of height×width with `channels` (1: grey, 3: colour; a
    4th, alpha, is made apart): the input's size unless ``size`` says otherwise; ``limit`` (a fixed input) resizes
    to it."""
    n = max(channels, 1)
    c = 1 if channels == 1 else 3
    mean, std = _expand(pre.mean, n, "mean")[:c], _expand(pre.std, n, "std")[:c]
    return Preset(name=pre.preset or "custom", resize="stretch" if pre.resize == "limit" else pre.resize,
                  size=pre.size or (height, width), color="L" if c == 1 else pre.color, scale=pre.scale, mean=mean,
                  std=std, pad=pre.pad, layout=pre.layout, reason=pre.reason)


def _pil_image(img: np.ndarray) -> Any:
    """A decoded (H, W, C) 0–255 array as a Pillow image again (L, LA, RGB or RGBA; 16-bit depth rounded to 8)."""
    from PIL import Image

    px = np.clip(np.rint(img), 0, 255).astype(np.uint8)
    mode = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}[px.shape[2]]
    return Image.fromarray(px[..., 0] if px.shape[2] == 1 else px, mode)


def photo_tensor(path: Path, pre: ImagePreprocess, height: int, width: int, channels: int) -> np.ndarray:
    """One image file (decoded by :func:`app.core.measure.read_image`, its EXIF orientation applied) as (H, W, C)
    float32 by the preset the settings make (:meth:`Preset.apply`: the resize rule, colour order, scale, mean/std).
    A 4th channel is the image's alpha (opaque where it has none), resized and scaled alike."""
    img = read_image(path)
    if any(v == 0 for v in _expand(pre.std, max(channels, 1), "std")):
        raise InputError("An image std value is 0.", fix="Use non-zero std values (1 means no division).")
    preset = dataclasses.replace(image_preset(pre, height, width, channels), layout="NHWC")
    x, _ = preset.apply(_pil_image(img))
    out = x[0]
    if channels == 4:
        mean, std = _expand(pre.mean, 4, "mean")[3], _expand(pre.std, 4, "std")[3]
        alpha = img[..., -1:] if img.shape[2] in (2, 4) else np.full(img.shape[:2] + (1,), 255.0, np.float32)
        a, _ = dataclasses.replace(preset, color="L", mean=(mean,), std=(std,)).apply(_pil_image(alpha))
        out = np.concatenate([out, a[0]], axis=2)
    return np.ascontiguousarray(out, np.float32)


def fit_source(model: onnx.ModelProto, inputs: list[TensorInfo], source: InputSource) -> InputSource:
    """An images source with its preprocessing: as set (by a person, or chosen earlier), else the model's preset
    (:func:`model_preprocess`, its reason as the source's note). Other sources are returned as they are."""
    if source.kind != "images" or source.preprocess is not None or len(inputs) != 1:
        return source
    pre = model_preprocess(model, inputs[0])
    return dataclasses.replace(source, preprocess=pre, note=source.note or pre.reason)


def photo_source(model: onnx.ModelProto | Mapping[str, str] | None, inputs: list[TensorInfo],
                 shapes: dict[str, tuple[int, ...]], folder: str | Path | None = None,
                 given: Mapping[str, Any] | None = None) -> InputSource | None:
    """trtlab's sample photos (or `folder`'s images) fitted to a model's one image input
    (:func:`app.core.measure.photo_source_for` says which models take photos), preprocessed by its preset with the
    settings `given` in its place (:func:`model_preprocess`); None for other models."""
    source = photo_source_for(inputs, shapes, folder=folder)
    if source is None:
        return None
    info = inputs[0]
    fitted = TensorInfo(info.name, info.dtype, tuple(shapes.get(info.name, info.shape or ())))
    pre = model_preprocess(model, fitted, given)
    return dataclasses.replace(source, preprocess=pre, note=pre.reason)


def source_preset(source: InputSource | None, shapes: Mapping[str, tuple[int, ...]]) -> Preset | None:
    """The preset an images source's pictures went through, fitted to the image input's resolved shape (`shapes`:
    the model's one input); None for other sources and other models."""
    if source is None or source.kind != "images" or source.preprocess is None or len(shapes) != 1:
        return None
    (shape,) = shapes.values()
    if len(shape) != 4:
        return None
    pre = source.preprocess
    c, h, w = (shape[1], shape[2], shape[3]) if pre.layout == "NCHW" else (shape[3], shape[1], shape[2])
    try:
        return image_preset(pre, int(h), int(w), int(c))
    except InputError:
        return None


def preprocessing_json(source: InputSource | None, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, object]:
    """What a result that ran on images says of their preprocessing: ``preprocessing`` (the preset in words, and
    why it was chosen or who set it) and ``preset`` (its JSON, with ``describe``); empty for other sources."""
    preset = source_preset(source, shapes)
    if preset is None:
        return {}
    words = preset.describe() + (f" ({preset.reason})" if preset.reason else "")
    return {"preprocessing": words, "preset": {**preset.to_json(), "describe": preset.describe()}}
