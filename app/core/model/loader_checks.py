"""Checks the loader runs on a model's bytes and tensors before anything reads tensor data.

- :func:`check_tensor_sizes`: every stored tensor holds the data its dims claim. A crafted tensor with dims
  [1e6, 1e6] and 4 bytes would otherwise make the first reader (numpy_helper, ONNX Runtime) try to allocate
  terabytes; it is refused here, from the dims alone, without touching its data.
- :func:`graph_nesting_depth`: how deeply subgraphs are nested, read from the protobuf wire format, for a file
  that the protobuf parser refused (its nesting limit is reached by If-inside-If models that are not corrupt).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import onnx
from onnx import TensorProto

from app.core import errors
from app.core.model.onnx_walk import iter_tensors

_REEXPORT = "Re-export the model from its framework, or copy the file again if it was cut short."

# Bits per element; types absent here (STRING, UNDEFINED) are not checked.
_BITS: dict[int, int] = {TensorProto.FLOAT: 32, TensorProto.UINT8: 8, TensorProto.INT8: 8, TensorProto.UINT16: 16,
         TensorProto.INT16: 16, TensorProto.INT32: 32, TensorProto.INT64: 64, TensorProto.BOOL: 8,
         TensorProto.FLOAT16: 16, TensorProto.DOUBLE: 64, TensorProto.UINT32: 32, TensorProto.UINT64: 64,
         TensorProto.COMPLEX64: 64, TensorProto.COMPLEX128: 128, TensorProto.BFLOAT16: 16}
for _name, _bits in (("FLOAT8E4M3FN", 8), ("FLOAT8E4M3FNUZ", 8), ("FLOAT8E5M2", 8), ("FLOAT8E5M2FNUZ", 8),
                     ("FLOAT8E8M0", 8), ("UINT4", 4), ("INT4", 4), ("FLOAT4E2M1", 4), ("UINT2", 2), ("INT2", 2)):
    if hasattr(TensorProto, _name):  # newer onnx releases add types; older ones lack them
        _BITS[getattr(TensorProto, _name)] = _bits
_TYPED_FIELDS = ("float_data", "int32_data", "int64_data", "double_data", "uint64_data")
_PROTOBUF_MAX_DEPTH = 100  # protobuf's default nesting limit (messages inside messages), in Python and C++


def _human(n: int) -> str:
    size: float = n
    for unit in ("bytes", "KB", "MB", "GB", "TB", "PB"):
        if size < 1024 or unit == "PB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} bytes"


def _kind(t: TensorProto) -> str:
    return onnx.helper.tensor_dtype_to_string(t.data_type).removeprefix("TensorProto.").lower()


def check_tensor_sizes(p: Path, model: onnx.ModelProto) -> None:
    """Refuse a tensor whose dims claim more values than it stores (raw, typed or external data)."""
    for t in iter_tensors(model.graph, every_attribute=True):
        bits = _BITS.get(t.data_type)
        if bits is None:
            continue
        dims = [int(d) for d in t.dims]
        name = t.name or "(unnamed)"
        if any(d < 0 for d in dims):
            raise errors.TensorDataError(f"'{p.name}' is corrupt: tensor '{name}' has a negative dimension "
                                         f"{dims}.", fix=_REEXPORT)
        numel = math.prod(dims)  # Python ints: crafted dims cannot overflow
        need = (numel * bits + 7) // 8
        if t.data_location == TensorProto.EXTERNAL:
            length = next((e.value for e in t.external_data if e.key == "length"), "")
            held = int(length) if str(length).isdigit() else None
        elif t.HasField("raw_data"):
            # ByteSize() counts the serialized tensor without copying its data; only a tensor close to short
            # has its raw bytes measured exactly.
            held = t.ByteSize()
            if held < need + 4096:
                held = len(t.raw_data)
        else:
            values = sum(len(getattr(t, f)) for f in _TYPED_FIELDS)
            # Complex values take two numbers; sub-byte types may pack several values per stored integer.
            if t.data_type in (TensorProto.COMPLEX64, TensorProto.COMPLEX128):
                wanted = 2 * numel
            else:
                wanted = (numel * bits + 31) // 32 if bits < 8 else numel
            if values < wanted:
                raise errors.TensorDataError(
                    f"'{p.name}' is corrupt: tensor '{name}' claims shape {dims} ({numel:,} {_kind(t)} values) but "
                    f"stores {values:,} number(s).", fix=_REEXPORT)
            continue
        if held is not None and held < need:
            raise errors.TensorDataError(
                f"'{p.name}' is corrupt: tensor '{name}' claims shape {dims} ({numel:,} {_kind(t)} values, "
                f"{_human(need)}) but holds {_human(held)} of data.", fix=_REEXPORT)


def graph_nesting_depth(data: bytes | memoryview, limit: int = 10_000) -> int:
    """How many levels of subgraphs the serialized ModelProto nests (0: no subgraph), read from the wire
    format (ModelProto.graph -> GraphProto.node -> NodeProto.attribute -> AttributeProto.g/graphs -> ...).
    Stops counting at ``limit``; bytes that are not protobuf give what was read so far."""
    view = memoryview(data)
    deepest = 0
    # (start, end, message kind, graph depth); kinds: model, graph, node, attribute
    stack: list[tuple[int, int, str, int]] = [(0, len(view), "model", -1)]
    wanted = {"model": {7: "graph"}, "graph": {1: "node"}, "node": {5: "attribute"},
              "attribute": {6: "graph", 11: "graph"}}
    while stack:
        start, end, kind, depth = stack.pop()
        for num, lo, hi in _fields(view, start, end):
            child = wanted[kind].get(num)
            if child is None:
                continue
            child_depth = depth + 1 if child == "graph" else depth
            deepest = max(deepest, child_depth)
            if deepest >= limit:
                return deepest
            stack.append((lo, hi, child, child_depth))
    return max(deepest, 0)


def _fields(view: memoryview, i: int, end: int) -> Iterator[tuple[int, int, int]]:
    """(field number, start, end) of each length-delimited field of one message; stops at malformed bytes."""
    while i < end:
        key, i = read_varint(view, i, end)
        if key is None:
            return
        wire, num = key & 7, key >> 3
        if wire == 0:
            _, i = read_varint(view, i, end)
            if i is None:
                return
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            length, i = read_varint(view, i, end)
            if length is None or i + length > end:
                return
            yield num, i, i + length
            i += length
        else:
            return


def read_varint(view: memoryview, i: int, end: int) -> tuple[int | None, int]:
    """A protobuf varint at `i`, and where the next field starts; (None, end) when the bytes run out first."""
    shift = result = 0
    while i < end and shift < 64:
        b = view[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7
    return None, end


def nesting_error(p: Path, data: bytes, exc: BaseException) -> errors.NestingTooDeepError | None:
    """The error for a file refused by protobuf because its subgraphs nest too deep; None when that is not why."""
    depth = graph_nesting_depth(data)
    said = "depth" in str(exc).lower() or "recursion" in str(exc).lower()
    # Each level of subgraph is three protobuf messages (graph, node, attribute) inside the one above.
    if 3 * depth + 4 < _PROTOBUF_MAX_DEPTH and not said:
        return None
    levels = f"{depth} levels deep" if depth else "too deeply"
    return errors.NestingTooDeepError(
        f"'{p.name}' nests subgraphs {levels} (If/Loop/Scan bodies inside one another); the ONNX file parser "
        f"(protobuf) reads at most {_PROTOBUF_MAX_DEPTH} nested messages, about "
        f"{(_PROTOBUF_MAX_DEPTH - 4) // 3} levels of subgraphs, so neither trtlab nor ONNX Runtime can open it. "
        "The file itself is not necessarily corrupt.",
        fix="Export the model with less nesting: fold constant conditions so the If nodes disappear, or unroll "
            "nested loops; or split the model.")
