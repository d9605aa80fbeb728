"""Image decoding and preprocessing with numpy only (no Qt, no Pillow requirement).

PNG (every colour type and bit depth, Adam7 interlacing), BMP (uncompressed and bit-field forms) and
binary/ASCII PPM/PGM are decoded here. JPEG needs a real DCT decoder: it goes through Pillow when Pillow
happens to be installed, and otherwise fails with an error that says how to install it.

Decoded images are float32 arrays of shape (H, W, C) in the 0–255 range, channels in RGB(A) order;
16-bit images are scaled down by 257 so that the same ``scale`` (default 1/255) works for every depth.
"""

from __future__ import annotations

import importlib
import struct
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from app.core.errors import InputError

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".pgm")
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))



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
                      fix="Re-save it as an 8-bit PNG or BMP, or remove it from the folder.")


def read_image(path: Path) -> np.ndarray:
    """Decode one image file into float32 (H, W, C) RGB(A) values in 0–255."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _bad(path, exc.strerror or str(exc)) from exc
    try:
        if data.startswith(_PNG_MAGIC):
            return _decode_png(data)
        if data[:2] == b"BM":
            return _decode_bmp(data)
        if data[:2] in (b"P2", b"P3", b"P5", b"P6"):
            return _decode_pnm(data)
    except InputError:
        raise
    except (ValueError, IndexError, struct.error, zlib.error) as exc:
        # Truncated or corrupt files surface as numpy/struct/zlib errors deep in the decoder.
        raise _bad(path, f"the file is corrupt or truncated ({exc})") from exc
    if data[:3] == b"\xff\xd8\xff":
        return _decode_with_pillow(path, "JPEG")
    raise _bad(path, "it is not a PNG, BMP, PPM/PGM or JPEG file")


def _pillow() -> Any | None:
    try:
        return importlib.import_module("PIL.Image")
    except ImportError:
        return None


def _decode_with_pillow(path: Path, kind: str) -> np.ndarray:
    pil = _pillow()
    if pil is None:
        raise InputError(f"Image '{path.name}' is a {kind} file; decoding {kind} needs Pillow, which is not "
                         "installed.", fix="Run `pip install pillow`, or convert the images to PNG.")
    with pil.open(path) as im:
        return np.asarray(im.convert("RGB"), dtype=np.float32)


# --- PNG -------------------------------------------------------------------------------------------

def _decode_png(data: bytes) -> np.ndarray:
    pos, idat, palette, header = 8, [], None, None
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        crc = data[pos + 8 + length:pos + 12 + length]
        if len(body) != length or len(crc) != 4:
            raise ValueError("a chunk runs past the end of the file")
        if zlib.crc32(kind + body) != struct.unpack(">I", crc)[0]:
            raise ValueError(f"chunk {kind.decode('latin-1')} fails its checksum")
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            palette = np.frombuffer(body, np.uint8).reshape(-1, 3)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    if header is None or not idat:
        raise ValueError("no image header or no image data")
    width, height, depth, ctype, _comp, _filter, interlace = header
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(ctype)
    if channels is None or depth not in (1, 2, 4, 8, 16):
        raise ValueError(f"colour type {ctype} with bit depth {depth} is not valid PNG")
    raw = zlib.decompress(b"".join(idat))
    img = np.zeros((height, width, channels), np.uint16 if depth == 16 else np.uint8)
    passes = _ADAM7 if interlace else ((0, 0, 1, 1),)
    pos = 0
    for x0, y0, dx, dy in passes:
        pw, ph = -(-(width - x0) // dx), -(-(height - y0) // dy)
        if pw <= 0 or ph <= 0:
            continue
        stride = -(-(pw * channels * depth) // 8)
        rows = _unfilter(raw, pos, ph, stride, max(1, channels * depth // 8))
        pos += ph * (stride + 1)
        img[y0::dy, x0::dx] = _unpack(rows, pw, channels, depth)
    if ctype == 3:
        if palette is None:
            raise ValueError("a palette image without a palette")
        return palette[img[..., 0]].astype(np.float32)
    out = img.astype(np.float32)
    if depth == 16:
        out /= 257.0
    elif depth < 8:
        out *= 255.0 / ((1 << depth) - 1)
    return out


def _unfilter(raw: bytes, pos: int, rows: int, stride: int, bpp: int) -> np.ndarray:
    """Undo PNG's per-row filters (None, Sub, Up, Average, Paeth)."""
    if len(raw) < pos + rows * (stride + 1):
        raise ValueError("the image data is shorter than the header says")
    out = np.zeros((rows, stride), np.uint8)
    prev = np.zeros(stride, np.uint8)
    for y in range(rows):
        start = pos + y * (stride + 1)
        ftype = raw[start]
        line = np.frombuffer(raw, np.uint8, stride, start + 1)
        if ftype == 0:
            cur = line
        elif ftype == 1:
            # Sub is a running sum per byte lane; uint8 wraps exactly as the PNG spec's mod 256.
            pad = (-stride) % bpp
            cur = np.cumsum(np.concatenate([line, np.zeros(pad, np.uint8)]).reshape(-1, bpp), axis=0,
                            dtype=np.uint8).reshape(-1)[:stride]
        elif ftype == 2:
            cur = line + prev
        elif ftype in (3, 4):
            cur = np.frombuffer(_unfilter_sequential(ftype, line.tobytes(), prev.tobytes(), bpp), np.uint8)
        else:
            raise ValueError(f"row {y} has an unknown filter type {ftype}")
        out[y] = cur
        prev = out[y]
    return out


def _unfilter_sequential(ftype: int, line: bytes, prev: bytes, bpp: int) -> bytearray:
    # Average and Paeth depend on the byte just decoded, so they cannot be vectorised; plain ints
    # are several times faster than numpy scalars here.
    cur = bytearray(len(line))
    for i, f in enumerate(line):
        left = cur[i - bpp] if i >= bpp else 0
        up = prev[i]
        if ftype == 3:
            cur[i] = (f + ((left + up) >> 1)) & 0xFF
            continue
        corner = prev[i - bpp] if i >= bpp else 0
        p = left + up - corner
        pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
        pred = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
        cur[i] = (f + pred) & 0xFF
    return cur


def _unpack(rows: np.ndarray, width: int, channels: int, depth: int) -> np.ndarray:
    h = rows.shape[0]
    if depth == 8:
        return rows[:, :width * channels].reshape(h, width, channels)
    if depth == 16:
        return rows.view(">u2")[:, :width * channels].astype(np.uint16).reshape(h, width, channels)
    bits = np.unpackbits(rows, axis=1).reshape(h, -1, depth)
    values = (bits * (1 << np.arange(depth - 1, -1, -1, dtype=np.uint8))).sum(axis=2, dtype=np.uint8)
    return values[:, :width * channels].reshape(h, width, channels)


# --- BMP -------------------------------------------------------------------------------------------

def _decode_bmp(data: bytes) -> np.ndarray:
    offset, dib = struct.unpack("<I", data[10:14])[0], struct.unpack("<I", data[14:18])[0]
    if dib == 12:
        width, height, _planes, bpp = struct.unpack("<HhHH", data[18:26])
        compression, colors, entry = 0, 0, 3
    else:
        width, height, _planes, bpp, compression = struct.unpack("<iiHHI", data[18:34])
        colors, entry = struct.unpack("<I", data[46:50])[0], 4
    if compression not in (0, 3, 6):
        raise ValueError(f"compression method {compression} (RLE or embedded JPEG/PNG) is not supported")
    top_down, height = height < 0, abs(height)
    stride = ((width * bpp + 31) // 32) * 4
    rows = np.frombuffer(data, np.uint8, stride * height, offset).reshape(height, stride)
    if not top_down:
        rows = rows[::-1]
    if bpp in (1, 2, 4, 8):
        count = colors or (1 << bpp)
        table_at = 14 + dib
        pal = np.frombuffer(data, np.uint8, count * entry, table_at).reshape(count, entry)[:, 2::-1]
        return pal[_unpack(np.ascontiguousarray(rows), width, 1, bpp)[..., 0]].astype(np.float32)
    if bpp == 24:
        return rows[:, :width * 3].reshape(height, width, 3)[..., ::-1].astype(np.float32)
    if bpp not in (16, 32):
        raise ValueError(f"{bpp} bits per pixel is not a BMP format")
    if compression == 0:
        masks = (0xFF0000, 0xFF00, 0xFF) if bpp == 32 else (0x7C00, 0x03E0, 0x001F)
    else:
        masks = struct.unpack("<III", data[54:66])  # after a 40-byte header, or inside a V2+ header
    pixels = rows[:, :width * bpp // 8].copy().view("<u4" if bpp == 32 else "<u2").astype(np.uint32)
    planes = []
    for mask in masks:
        shift = (mask & -mask).bit_length() - 1 if mask else 0
        top = (mask >> shift) if mask else 1
        planes.append(((pixels & mask) >> shift).astype(np.float32) * (255.0 / top))
    return np.stack(planes, axis=-1)


# --- PPM / PGM -------------------------------------------------------------------------------------

def _decode_pnm(data: bytes) -> np.ndarray:
    magic = data[:2]
    tokens: list[bytes] = []
    pos = 2
    while len(tokens) < 3:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos) + 1
            continue
        end = pos
        while end < len(data) and not data[end:end + 1].isspace():
            end += 1
        tokens.append(data[pos:end])
        pos = end
    width, height, maxval = (int(t) for t in tokens)
    channels = 3 if magic in (b"P3", b"P6") else 1
    count = width * height * channels
    if magic in (b"P2", b"P3"):
        values = np.array(data[pos:].split()[:count], dtype=np.float64)
    else:
        values = np.frombuffer(data, ">u2" if maxval > 255 else np.uint8, count, pos + 1)
    if values.size != count:
        raise ValueError("the pixel data is shorter than the header says")
    return (values.reshape(height, width, channels).astype(np.float32) * (255.0 / maxval)).astype(np.float32)


# --- preprocessing ---------------------------------------------------------------------------------

def resize_bilinear(img: np.ndarray, height: int, width: int) -> np.ndarray:
    """Bilinear resize of (H, W, C) with half-pixel centres (OpenCV's INTER_LINEAR, no antialiasing)."""
    h0, w0 = img.shape[:2]
    if (h0, w0) == (height, width):
        return img

    def axis(n_out: int, n_in: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        pos = np.clip((np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5, 0, n_in - 1)
        lo = np.floor(pos).astype(np.intp)
        return lo, np.minimum(lo + 1, n_in - 1), (pos - lo).astype(np.float32)

    y0, y1, wy = axis(height, h0)
    x0, x1, wx = axis(width, w0)
    rows = img[y0] * (1 - wy)[:, None, None] + img[y1] * wy[:, None, None]
    return rows[:, x0] * (1 - wx)[None, :, None] + rows[:, x1] * wx[None, :, None]


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
    img = resize_bilinear(img.astype(np.float32, copy=False), height, width)
    mean = _per_channel(pre.mean, channels, "mean")
    std = _per_channel(pre.std, channels, "std")
    if np.any(std == 0):
        raise InputError("An image std value is 0.", fix="Use non-zero std values (1 means no division).")
    return ((img * np.float32(pre.scale) - mean) / std).astype(np.float32)
