"""Image decoding with Pillow and preprocessing into model inputs with numpy.

Pillow decodes the files: JPEG, PNG, WebP, TIFF, BMP, GIF (the first frame), PPM/PGM and whatever else the
installed Pillow reads. Decoded images are float32 arrays of shape (H, W, C) in the 0–255 range, channels in
RGB(A) order; grey images keep one channel (two with alpha) and palette images become RGB, or RGBA when they
have a transparent colour. 16-bit images are scaled down by 257 so that the same ``scale`` (default 1/255)
works for every depth. The EXIF orientation is applied, so photos come out the way cameras and viewers show
them. Resizing is Pillow's bilinear filter on float planes: half-pixel centres, and when shrinking the filter
widens to cover every source pixel (antialiasing, as PIL-based training pipelines do).
"""

from __future__ import annotations

import struct
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from app.core.errors import InputError

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".pgm", ".webp", ".tif", ".tiff", ".gif")
_AS_IS = ("L", "LA", "RGB", "RGBA", "F")  # modes whose arrays are already grey(+alpha) or RGB(A)
_CONVERT = {"1": "L", "La": "LA", "RGBa": "RGBA", "PA": "RGBA"}  # everything else (CMYK, YCbCr, RGBX…) -> RGB


@dataclass
class ImagePreprocess:
    """How images become tensors: resize, channel order, layout, then ``(pixel * scale - mean) / std``."""

    size: tuple[int, int] | None = None  # (H, W); None: the input's own dims
    layout: str = "NCHW"  # or "NHWC"
    color: str = "RGB"  # or "BGR"
    scale: float = 1 / 255
    mean: tuple[float, ...] = (0.0, 0.0, 0.0)
    std: tuple[float, ...] = (1.0, 1.0, 1.0)

    def __post_init__(self) -> None:
        self.layout, self.color = str(self.layout).upper(), str(self.color).upper()
        if self.layout not in ("NCHW", "NHWC"):
            raise InputError(f"Image layout '{self.layout}' is not NCHW or NHWC.", fix="Choose NCHW or NHWC.")
        if self.color not in ("RGB", "BGR"):
            raise InputError(f"Colour order '{self.color}' is not RGB or BGR.", fix="Choose RGB or BGR.")
        if self.size is not None:
            self.size = (int(self.size[0]), int(self.size[1]))
            if min(self.size) <= 0:
                raise InputError(f"Image size {self.size} must be positive.", fix="Give HxW such as 224x224.")
        self.mean = tuple(float(v) for v in self.mean)
        self.std = tuple(float(v) for v in self.std)

    def to_json(self) -> dict[str, object]:
        d = asdict(self)
        d["size"] = list(self.size) if self.size else None
        d["mean"], d["std"] = list(self.mean), list(self.std)
        return d

    @classmethod
    def from_json(cls, d: dict) -> ImagePreprocess:
        known = {k: d[k] for k in ("size", "layout", "color", "scale", "mean", "std") if d.get(k) is not None}
        return cls(**known)

    def describe(self) -> str:
        size = f"resize {self.size[0]}×{self.size[1]}, " if self.size else ""
        return (f"{size}{self.layout}, {self.color}, scale {self.scale:.6g}, mean {list(self.mean)}, "
                f"std {list(self.std)}")


def _bad(path: Path, why: str) -> InputError:
    return InputError(f"Image '{path.name}' cannot be read: {why}.",
                      fix="Re-save it as PNG or JPEG, or remove it from the folder.")


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

def _resize(img: np.ndarray, height: int, width: int) -> np.ndarray:
    """Bilinear resize of float32 (H, W, C), one Pillow "F" plane per channel (no rounding to 8 bits)."""
    if img.shape[:2] == (height, width):
        return img
    image, _ = _pil()
    planes = [np.asarray(image.fromarray(np.ascontiguousarray(img[..., c]))
                         .resize((width, height), image.Resampling.BILINEAR)) for c in range(img.shape[2])]
    return np.stack(planes, axis=-1)


def _to_channels(img: np.ndarray, channels: int, path: Path) -> np.ndarray:
    have = img.shape[2]
    if have == channels:
        return img
    if have in (1, 2):  # grey (+ alpha)
        grey = img[..., :1]
        rgb = np.repeat(grey, 3, axis=2)
        if channels == 1:
            return grey
        return rgb if channels == 3 else np.concatenate([rgb, _alpha(img)], axis=2)
    rgb = img[..., :3]
    if channels == 3:
        return rgb
    if channels == 1:  # ITU-R BT.601 luma, what most image libraries use for "L"
        return (rgb @ np.array([0.299, 0.587, 0.114], np.float32))[..., None]
    if channels == 4:
        return np.concatenate([rgb, _alpha(img)], axis=2)
    raise InputError(f"Image '{path.name}' has {have} channels but the model's input needs {channels}.",
                     fix="Check the layout setting (NCHW/NHWC): the channel axis may be the wrong one.")


def _alpha(img: np.ndarray) -> np.ndarray:
    if img.shape[2] in (2, 4):
        return img[..., -1:]
    return np.full(img.shape[:2] + (1,), 255.0, np.float32)


def _per_channel(values: tuple[float, ...], channels: int, what: str) -> np.ndarray:
    arr = np.asarray(values, np.float32)
    if arr.size == channels:
        return arr
    if arr.size == 1 or (arr.size > 0 and np.all(arr == arr[0])):
        return np.full(channels, arr[0], np.float32)
    raise InputError(f"The image {what} has {arr.size} values but the model's input has {channels} channel(s).",
                     fix=f"Give one {what} value, or one per channel ({channels}).")


def preprocess_image(path: Path, pre: ImagePreprocess, height: int, width: int, channels: int) -> np.ndarray:
    """Decode and preprocess one image into (H, W, C) float32: channels, colour order, resize, scale, mean/std."""
    img = _to_channels(read_image(path), channels, path)
    if pre.color == "BGR" and channels >= 3:
        img = np.concatenate([img[..., 2::-1], img[..., 3:]], axis=2)
    img = _resize(img.astype(np.float32, copy=False), height, width)
    mean = _per_channel(pre.mean, channels, "mean")
    std = _per_channel(pre.std, channels, "std")
    if np.any(std == 0):
        raise InputError("An image std value is 0.", fix="Use non-zero std values (1 means no division).")
    return ((img * np.float32(pre.scale) - mean) / std).astype(np.float32)
