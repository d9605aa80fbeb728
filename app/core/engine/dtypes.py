"""TensorRT data types by name: numpy dtypes, sizes, ONNX names, and raw-buffer decoding.

Names are the members of ``tensorrt.DataType`` (``FLOAT, HALF, BF16, INT8, INT32, INT64, BOOL, UINT8,
FP8, INT4, FP4, E8M0``), the same in 10.x and 11.x; the module aliases (``trt.float16``, ``trt.bfloat16``,
``trt.fp8``…), ``str(trt.DataType.HALF)`` and the enum objects themselves are accepted too.

``trt.nptype`` maps only FLOAT, HALF, INT8, INT32, INT64, BOOL and UINT8 and raises TypeError for the
rest, so a backend copies BF16/FP8/INT4/FP4/E8M0 buffers as raw bytes and decodes them here (with
``ml_dtypes``, which onnx installs). FP8 is E4M3 with NaN but no infinity (``float8_e4m3fn``, max 448).
INT4 and FP4 pack two values per byte; the first value sits in the low nibble, as in ONNX.
Device buffers are little-endian; decoding reads them as such on any host.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.core.errors import TrtlabError

Buffer = bytes | bytearray | memoryview | np.ndarray


class DTypeError(TrtlabError):
    """A data type TensorRT or trtlab has no mapping for, or a buffer that does not fit its type."""

    title = "Unsupported data type"


@dataclass(frozen=True)
class TrtType:
    """One ``tensorrt.DataType`` member and what it maps to."""

    name: str              # the enum member: trt.DataType.<name>
    code: int              # nvinfer1::DataType value (stable across 10.x and 11.x)
    alias: str             # the module attribute: trt.<alias>
    onnx: str              # the ONNX element type, as app.core.model.onnx_walk.dtype_name writes it
    itemsize: float        # bytes per element; 0.5 for the packed 4-bit types
    kind: str              # "float", "int" or "bool"
    since: tuple[int, int]  # first TensorRT release with the type (this project supports 10.0 and later)
    nptype: bool           # trt.nptype() maps it; the others raise TypeError there

    @property
    def numpy(self) -> np.dtype:
        """The numpy dtype of one (unpacked) element."""
        return _numpy_dtype(self.name)

    @property
    def packed(self) -> bool:
        return self.itemsize < 1


_TYPES = (
    TrtType("FLOAT", 0, "float32", "float32", 4, "float", (10, 0), True),
    TrtType("HALF", 1, "float16", "float16", 2, "float", (10, 0), True),
    TrtType("INT8", 2, "int8", "int8", 1, "int", (10, 0), True),
    TrtType("INT32", 3, "int32", "int32", 4, "int", (10, 0), True),
    TrtType("BOOL", 4, "bool", "bool", 1, "bool", (10, 0), True),
    TrtType("UINT8", 5, "uint8", "uint8", 1, "int", (10, 0), True),
    TrtType("FP8", 6, "fp8", "float8e4m3fn", 1, "float", (10, 0), False),
    TrtType("BF16", 7, "bfloat16", "bfloat16", 2, "float", (10, 0), False),
    TrtType("INT64", 8, "int64", "int64", 8, "int", (10, 0), True),
    TrtType("INT4", 9, "int4", "int4", 0.5, "int", (10, 0), False),
    TrtType("FP4", 10, "fp4", "float4e2m1", 0.5, "float", (10, 8), False),
    TrtType("E8M0", 11, "e8m0", "float8e8m0", 1, "float", (10, 12), False),
)
TRT_TYPES: dict[str, TrtType] = {t.name: t for t in _TYPES}
TRT_TYPE_NAMES: tuple[str, ...] = tuple(TRT_TYPES)
_BY_ALIAS = {t.alias: t for t in _TYPES}
_BY_CODE = {t.code: t for t in _TYPES}
_BY_ONNX = {t.onnx: t for t in _TYPES}
FP8_MAX = 448.0   # largest finite float8_e4m3fn
FP4_MAX = 6.0     # largest float4_e2m1

# ONNX element types with no TensorRT counterpart, and what to do instead.
_ONNX_FIXES = {
    "float64": "Cast it to float32 in the ONNX graph (TensorRT has no float64 tensors).",
    "float8e5m2": "TensorRT's FP8 is E4M3 (float8e4m3fn); quantize to that type instead.",
    "float8e4m3fnuz": "TensorRT's FP8 is E4M3 with the standard bias (float8e4m3fn); use that type.",
    "float8e5m2fnuz": "TensorRT's FP8 is E4M3 (float8e4m3fn); use that type.",
    "uint4": "Use signed int4 with a zero point of 0 (TensorRT quantizes symmetrically).",
    "string": "Strings cannot enter a TensorRT engine; keep that part of the model outside it.",
}


def _numpy_dtype(name: str) -> np.dtype:
    if name in ("FLOAT", "HALF", "INT8", "INT32", "INT64", "BOOL", "UINT8"):
        return np.dtype({"FLOAT": np.float32, "HALF": np.float16, "INT8": np.int8, "INT32": np.int32,
                         "INT64": np.int64, "BOOL": np.bool_, "UINT8": np.uint8}[name])
    import ml_dtypes  # installed with onnx; loaded only when an exotic type is used

    return np.dtype({"BF16": ml_dtypes.bfloat16, "FP8": ml_dtypes.float8_e4m3fn, "INT4": ml_dtypes.int4,
                     "FP4": ml_dtypes.float4_e2m1fn, "E8M0": ml_dtypes.float8_e8m0fnu}[name])


def _unknown(value: object) -> DTypeError:
    return DTypeError(f"{value!r} is not a TensorRT data type.",
                      fix=f"TensorRT's types are {', '.join(TRT_TYPE_NAMES)}.")


def trt_type(value: object) -> TrtType:
    """The type for a name (``"HALF"``, ``"half"``, ``"float16"``, ``"DataType.HALF"``), a code, or an enum."""
    if isinstance(value, TrtType):
        return value
    if isinstance(value, bool):
        raise _unknown(value)
    if isinstance(value, int):
        if value in _BY_CODE:
            return _BY_CODE[value]
        raise _unknown(value)
    if not isinstance(value, str):
        name = getattr(value, "name", None)  # a tensorrt.DataType member, without importing tensorrt
        if isinstance(name, str):
            return trt_type(name)
        raise _unknown(value)
    text = value.strip()
    if text.startswith("DataType."):
        text = text[len("DataType."):]
    if text.upper() in TRT_TYPES:
        return TRT_TYPES[text.upper()]
    if text.lower() in _BY_ALIAS:
        return _BY_ALIAS[text.lower()]
    raise _unknown(value)


def trt_name(value: object) -> str:
    """The ``tensorrt.DataType`` member name, e.g. ``"BF16"``."""
    return trt_type(value).name


def numpy_dtype(value: object) -> np.dtype:
    """The numpy dtype of one element (ml_dtypes types for BF16, FP8, INT4, FP4 and E8M0)."""
    return trt_type(value).numpy


def itemsize(value: object) -> float:
    """Bytes per element, as ``trt.DataType.itemsize`` gives it (0.5 for INT4 and FP4)."""
    return trt_type(value).itemsize


def buffer_nbytes(value: object, shape: Sequence[int]) -> int:
    """Bytes of a dense tensor of ``shape`` (packed 4-bit types round up to whole bytes)."""
    t = trt_type(value)
    count = math.prod(int(d) for d in shape)
    if count < 0 or any(int(d) < 0 for d in shape):
        raise DTypeError(f"Shape {list(shape)} has a negative dimension; a buffer needs a concrete shape.",
                         fix="Resolve dynamic dimensions (-1) before sizing buffers.")
    return math.ceil(count * t.itemsize)


def available_in(value: object, trt_version: str | Sequence[int]) -> bool:
    """Whether the TensorRT release ``trt_version`` (``"10.8.0.43"`` or (10, 8)) has this type."""
    if isinstance(trt_version, str):
        parts = [int(p) for p in trt_version.split(".")[:2] if p.isdigit()]
    else:
        parts = [int(p) for p in trt_version[:2]]
    if not parts:
        raise DTypeError(f"'{trt_version}' is not a TensorRT version.", fix="Give it as MAJOR.MINOR, e.g. 10.8.")
    version = (parts[0], parts[1] if len(parts) > 1 else 0)
    return version >= trt_type(value).since


def trt_to_onnx(value: object) -> str:
    """The ONNX element type name for a TensorRT type (``"BF16"`` → ``"bfloat16"``)."""
    return trt_type(value).onnx


def onnx_to_trt(onnx_type: str | int) -> str:
    """The TensorRT type name for an ONNX element type name or TensorProto code."""
    name = onnx_type
    if isinstance(onnx_type, int) and not isinstance(onnx_type, bool):
        from app.core.model import dtype_name

        name = dtype_name(onnx_type)
    key = str(name).strip().lower()
    if key in _BY_ONNX:
        return _BY_ONNX[key].name
    fix = _ONNX_FIXES.get(key, "Cast that tensor in the ONNX graph to a type TensorRT supports: "
                               + ", ".join(t.onnx for t in _TYPES) + ".")
    raise DTypeError(f"TensorRT has no type for ONNX {name}.", fix=fix)


# --- buffers ----------------------------------------------------------------------------------------

def _as_bytes(raw: Buffer) -> np.ndarray:
    if isinstance(raw, np.ndarray):
        return np.ascontiguousarray(raw).reshape(-1).view(np.uint8)
    return np.frombuffer(memoryview(raw).cast("B"), dtype=np.uint8)


def _unpack_nibbles(data: np.ndarray, count: int) -> np.ndarray:
    nibbles = np.empty(data.size * 2, dtype=np.uint8)
    nibbles[0::2] = data & 0x0F
    nibbles[1::2] = data >> 4
    return nibbles[:count]


def decode(raw: Buffer, value: object, shape: Sequence[int], *, name: str = "") -> np.ndarray:
    """A host copy of a TensorRT buffer as an array of the exact element type (packed types unpacked).

    ``raw`` is the buffer's bytes (bytes, memoryview, or any numpy array whose bytes they are).
    """
    t = trt_type(value)
    shape = tuple(int(d) for d in shape)
    data = _as_bytes(raw)
    want = buffer_nbytes(t, shape)
    if data.size != want:
        label = f"Tensor '{name}'" if name else "The buffer"
        raise DTypeError(f"{label} holds {data.size:,} bytes, but a {t.name} tensor of shape {list(shape)} needs "
                         f"{want:,}.", fix="Read the buffer with the tensor's own dtype and shape from the engine.")
    count = math.prod(shape)
    if t.packed:
        nibbles = _unpack_nibbles(data, count)
        if t.name == "INT4":
            out = ((nibbles ^ 0x08).astype(np.int8) - 8).astype(t.numpy)  # two's complement of the 4 bits
        else:
            out = nibbles.view(t.numpy)  # ml_dtypes keeps a 4-bit float in the low bits of one byte
        return out.reshape(shape)
    size = int(t.itemsize)
    if size == 1:
        return data.view(t.numpy).reshape(shape)
    bits = data.view(f"<u{size}").astype(f"=u{size}")  # little-endian on the device, native on the host
    return bits.view(t.numpy).reshape(shape)


def decode_output(raw: Buffer, value: object, shape: Sequence[int], *, name: str = "") -> np.ndarray:
    """Decode for comparison: float types become float32 exactly, INT4 becomes int8, the rest keep their type."""
    t = trt_type(value)
    arr = decode(raw, t, shape, name=name)
    if t.kind == "float":
        return arr.astype(np.float32)
    if t.name == "INT4":
        return arr.astype(np.int8)
    return arr


def encode(array: object, value: object, *, name: str = "") -> bytes:
    """Bytes to copy into a TensorRT buffer of this type (little-endian; 4-bit types packed, low nibble first).

    Floats are rounded to nearest even; FP8 and FP4 saturate at their largest finite value (±448, ±6) as
    TensorRT's quantization does, and NaN stays NaN. Integers must fit the type, or the error names the range.
    """
    t = trt_type(value)
    arr = np.asarray(array)
    label = f"Input '{name}'" if name else "The array"
    if t.kind == "float":
        if arr.dtype.kind not in "biuf" and arr.dtype != t.numpy:
            arr = arr.astype(np.float32)  # ml_dtypes arrays (kind 'V') of another float type
        src = arr.astype(np.float32) if arr.dtype != t.numpy else arr
        if t.name in ("FP8", "FP4"):
            limit = FP8_MAX if t.name == "FP8" else FP4_MAX
            src = np.clip(src, -limit, limit)  # clip keeps NaN; ml_dtypes would turn overflow into NaN
        out = src.astype(t.numpy)
    elif t.kind == "bool":
        out = arr.astype(np.bool_)
    else:
        if arr.dtype.kind not in "biu":
            raise DTypeError(f"{label} holds {arr.dtype} values but the tensor is {t.name} (integers).",
                             fix=f"Give integer data for a {t.name} tensor.")
        lo, hi = (-8, 7) if t.name == "INT4" else (int(np.iinfo(t.numpy).min), int(np.iinfo(t.numpy).max))
        if arr.size and (int(arr.min()) < lo or int(arr.max()) > hi):
            raise DTypeError(f"{label} has values from {int(arr.min())} to {int(arr.max())}, outside {t.name}'s "
                             f"range {lo}..{hi}.", fix=f"Clip or rescale the data to {lo}..{hi}.")
        out = arr.astype(np.int8 if t.name == "INT4" else t.numpy)
    flat = np.ascontiguousarray(out).reshape(-1)
    if t.packed:
        nibbles = (flat.astype(np.int8).view(np.uint8) if t.name == "INT4" else flat.view(np.uint8)) & 0x0F
        if nibbles.size % 2:
            nibbles = np.append(nibbles, np.uint8(0))
        return (nibbles[0::2] | (nibbles[1::2] << 4)).astype(np.uint8).tobytes()
    size = int(t.itemsize)
    if size == 1:
        return flat.view(np.uint8).tobytes()
    return flat.view(f"=u{size}").astype(f"<u{size}").tobytes()
