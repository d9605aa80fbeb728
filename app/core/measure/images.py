"""Image decoding with Pillow, and the preprocessing that makes model inputs of images.

Pillow decodes the files: JPEG, PNG, WebP, TIFF, BMP, GIF (the first frame), PPM/PGM and whatever else the
installed Pillow reads. Decoded images are float32 arrays of shape (H, W, C) in the 0–255 range, channels in
RGB(A) order; grey images keep one channel (two with alpha) and palette images become RGB, or RGBA when they
have a transparent colour. 16-bit images are scaled down by 257 so that the same ``scale`` (default 1/255)
works for every depth. The EXIF orientation is applied, so photos come out the way cameras and viewers show
them.

Preprocessing (:class:`ImagePreprocess`) is the model's preset unless a person set it otherwise
(:func:`app.core.evaluate.model_preprocess`: letterbox for an Ultralytics export, PaddleOCR's rules for its
models, ImageNet's otherwise), and it is carried out by :meth:`app.core.evaluate.Preset.apply`, as ``trtlab eval``
does: resizing is Pillow's bilinear filter on float planes (half-pixel centres; when shrinking the filter widens
to cover every source pixel, antialiasing as PIL-based training pipelines do).
"""

from __future__ import annotations

import struct
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from app.core.errors import InputError

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".pgm", ".webp", ".tif", ".tiff", ".gif")
_AS_IS = ("L", "LA", "RGB", "RGBA", "F")  # modes whose arrays are already grey(+alpha) or RGB(A)
_CONVERT = {"1": "L", "La": "LA", "RGBa": "RGBA", "PA": "RGBA"}  # everything else (CMYK, YCbCr, RGBX…) -> RGB


RESIZE_RULES = ("stretch", "letterbox", "height", "limit")  # app.core.evaluate.presets.RESIZES
_KEYS = ("size", "layout", "color", "scale", "mean", "std", "resize", "pad", "preset", "reason", "given")


@dataclass
class ImagePreprocess:
    """How images become tensors: resize rule, channel order, layout, then ``(pixel * scale - mean) / std``.

    The images are turned into tensors by :meth:`app.core.evaluate.Preset.apply`
    (:func:`app.core.evaluate.photo_tensor`), the one implementation ``trtlab eval`` uses too. ``resize``:
    ``stretch`` to the input's size, ``letterbox`` into it (the aspect ratio kept, padded evenly with ``pad``),
    ``height`` (PaddleOCR's text lines: the input's height, width by the aspect ratio, right-padded) or ``limit``
    (a fixed input: resized to it). ``preset`` names the model's
    preset these settings came from (:func:`app.core.evaluate.model_preprocess`), ``reason`` says why, ``given``
    lists the settings a person set over it."""

    size: tuple[int, int] | None = None  # (H, W); None: the input's own dims
    layout: str = "NCHW"  # or "NHWC"
    color: str = "RGB"  # or "BGR"
    scale: float = 1 / 255
    mean: tuple[float, ...] = (0.0, 0.0, 0.0)
    std: tuple[float, ...] = (1.0, 1.0, 1.0)
    resize: str = "stretch"
    pad: float = 0.0
    preset: str = ""
    reason: str = ""
    given: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.layout, self.color = str(self.layout).upper(), str(self.color).upper()
        if self.layout not in ("NCHW", "NHWC"):
            raise InputError(f"Image layout '{self.layout}' is not NCHW or NHWC.", fix="Choose NCHW or NHWC.")
        if self.color not in ("RGB", "BGR"):
            raise InputError(f"Colour order '{self.color}' is not RGB or BGR.", fix="Choose RGB or BGR.")
        self.resize = str(self.resize).lower()
        if self.resize not in RESIZE_RULES:
            raise InputError(f"Resize rule '{self.resize}' is not one of {', '.join(RESIZE_RULES)}.",
                             fix="Choose stretch or letterbox (height and limit are PaddleOCR's).")
        if self.size is not None:
            self.size = (int(self.size[0]), int(self.size[1]))
            if min(self.size) <= 0:
                raise InputError(f"Image size {self.size} must be positive.", fix="Give HxW such as 224x224.")
        self.mean = tuple(float(v) for v in self.mean)
        self.std = tuple(float(v) for v in self.std)
        self.pad = float(self.pad)
        self.given = tuple(str(v) for v in self.given)

    def to_json(self) -> dict[str, object]:
        d = asdict(self)
        d["size"] = list(self.size) if self.size else None
        d["mean"], d["std"], d["given"] = list(self.mean), list(self.std), list(self.given)
        return d

    @classmethod
    def from_json(cls, d: dict) -> ImagePreprocess:
        known = {k: d[k] for k in _KEYS if d.get(k) is not None}
        return cls(**known)

    def describe(self) -> str:
        """The settings in words: the preset's name, the resize rule, colour, scale, mean/std, layout (and which
        settings were given by hand)."""
        size = f" {self.size[0]}×{self.size[1]}" if self.size else ""
        how = {"stretch": f"resize{size or ' to the input'}", "letterbox": f"letterbox{size or ' to the input'}, "
               f"pad {self.pad:g}", "height": "height of the input, width by aspect ratio, right-padded",
               "limit": f"resize{size or ' to the input'}"}[self.resize]
        name = f"{self.preset}: " if self.preset else ""
        hand = f" ({', '.join(self.given)} given)" if self.given and self.preset else ""
        return (f"{name}{how}, {self.layout}, {self.color}, scale {self.scale:.6g}, mean {list(self.mean)}, "
                f"std {list(self.std)}{hand}")


def _bad(path: Path, why: str) -> InputError:
    return InputError(f"Image '{path.name}' cannot be read: {why}.",
                      fix="Re-save it as PNG or JPEG, or remove it from the folder.")


def pillow() -> tuple[Any, Any]:
    """Pillow's Image and ImageOps modules; an InputError saying how to install it where it is missing."""
    return _pil()


def _pil() -> tuple[Any, Any]:
    try:
        from PIL import Image, ImageOps
    except ImportError as exc:  # a dependency of trtlab: missing only from a broken install
        raise InputError("Decoding images needs Pillow, which is not installed.",
                         fix="Run `pip install Pillow` (or reinstall trtlab, which depends on it).") from exc
    return Image, ImageOps


def read_image(path: Path) -> np.ndarray:
    """Decode one image file into float32 (H, W, C) RGB(A) or grey(+alpha) values in 0–255."""
    path = Path(path)
    image, image_ops = _pil()
    try:
        im = image.open(path)
    except image.UnidentifiedImageError as exc:
        raise InputError(f"Image '{path.name}' cannot be read: it is not an image Pillow can read.",
                         fix="Convert it to PNG or JPEG, or remove it from the folder "
                             f"(images are files ending in {', '.join(IMAGE_EXTENSIONS)}).") from exc
    except OSError as exc:  # errno set: the file cannot be opened; none: Pillow found its header broken
        raise _bad(path, (exc.strerror or str(exc)) if exc.errno else f"the file is corrupt or truncated ({exc})") \
            from exc
    except image.DecompressionBombError as exc:
        raise _bad(path, str(exc)) from exc
    with im:
        try:
            im.load()  # decodes the first frame; a truncated or corrupt file fails here
            return _to_array(image_ops.exif_transpose(im))
        except (OSError, SyntaxError, ValueError, EOFError, struct.error) as exc:
            raise _bad(path, f"the file is corrupt or truncated ({exc})") from exc


def _to_array(im: Any) -> np.ndarray:
    mode = im.mode
    if mode == "P":
        im = im.convert("RGBA" if "transparency" in im.info else "RGB")
    elif mode in _CONVERT:
        im = im.convert(_CONVERT[mode])
    elif mode not in _AS_IS and not mode.startswith("I"):
        im = im.convert("RGB")
    arr = np.asarray(im).astype(np.float32)
    if mode.startswith("I"):  # 16-bit grey ("I;16…", or "I" from older Pillow releases): scale into 0–255
        arr /= np.float32(257.0)
    return arr[..., None] if arr.ndim == 2 else arr


# --- preprocessing ---------------------------------------------------------------------------------

class PhotoTensor(Protocol):
    """Makes one image file an (H, W, C) float32 array by the settings, for an input of height×width with `channels`
    (:func:`app.core.evaluate.photo_tensor`: the model's preset, as ``trtlab eval`` applies it)."""

    def __call__(self, path: Path, pre: ImagePreprocess, height: int, width: int, channels: int) -> np.ndarray: ...
