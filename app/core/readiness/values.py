"""Checks on stored values: INT64 tensors and values beyond INT32, float64 weights; and the per-tensor scan cache
that the plan's FP16/BF16 weight checks share.

TensorRT ≥ 9.0 takes INT64 natively ("the ONNX parser no longer automatically casts INT64 to INT32",
onnx-tensorrt changelog, 9.0 EA); TensorRT 8.x cast INT64 weights to INT32 and clamped what did not fit. So on
TensorRT 10/11 INT64 tensors are worth knowing about, not a failure; values beyond INT32 matter where something
on their way is INT32 only (a Cast to INT32, or an op whose TensorRT types have INT32 but not INT64).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from pathlib import Path

from onnx import TensorProto

from app.core.model import WeightStats, weight_stats
from app.core.readiness.context import GraphIndex, StoredTensor
from app.core.readiness.findings import Finding, Severity
from app.core.readiness.support import SupportTable

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
FLOAT32_MAX = 3.4028234663852886e38
_SLICE_BOUNDS = {1, 2}   # Slice starts/ends: INT64 min/max there mean "from the start"/"to the end" by the spec
_FINGERPRINT_BYTES = 4096


class ScanCache:
    """Per-tensor value statistics kept between checks of one model, so editing a plan rescans nothing.

    Keyed by the tensor's name, type, dims and a fingerprint of its bytes (length and a checksum of the first
    and last 4 KiB; the external-data location for external tensors). Give one cache per opened model.
    """

    def __init__(self, max_entries: int = 200_000) -> None:
        self._stats: dict[tuple, WeightStats] = {}
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._stats)

    def clear(self) -> None:
        self._stats.clear()

    @staticmethod
    def _key(name: str, t: TensorProto) -> tuple:
        where: tuple[object, ...]
        if t.data_location == TensorProto.EXTERNAL:
            where = tuple((e.key, e.value) for e in t.external_data)
        elif t.raw_data:
            raw = t.raw_data
            where = (len(raw), zlib.crc32(raw[:_FINGERPRINT_BYTES]), zlib.crc32(raw[-_FINGERPRINT_BYTES:]))
        else:
            fields = (t.float_data, t.int32_data, t.int64_data, t.double_data, t.uint64_data)
            where = tuple((len(f), zlib.crc32(repr(list(f[:64]) + list(f[-64:])).encode())) for f in fields)
        return name, t.data_type, tuple(t.dims), where

    def stats(self, name: str, t: TensorProto, model_path: Path | None = None) -> WeightStats:
        key = self._key(name, t)
        hit = self._stats.get(key)
        if hit is not None:
            self.hits += 1
            return hit
        self.misses += 1
        result = weight_stats(t, model_path)
        if len(self._stats) >= self.max_entries:
            self._stats.clear()
        self._stats[key] = result
        return result


def _readers(index: GraphIndex, st: StoredTensor) -> list[str]:
    if st.owner is not None:
        return [index.keys[st.owner]]
    return index.reader_keys(st.name)


def _int32_only(index: GraphIndex, table: SupportTable, st: StoredTensor) -> list[str]:
    """Readers that take the tensor as INT32: a Cast to INT32, or an op typed INT32 but not INT64."""
    out = []
    for i, _ in index.readers.get(st.name, ()):
        node = index.graph.node[i]
        if node.op_type == "Cast":
            to = next((a.i for a in node.attribute if a.name == "to"), None)
            if to == TensorProto.INT32:
                out.append(index.keys[i])
            continue
        support = table.op(node.op_type)
        if support is not None and "INT32" in support.types and "INT64" not in support.types:
            out.append(index.keys[i])
    return out


def check_values(index: GraphIndex, table: SupportTable, cache: ScanCache, model_path: Path | None) -> list[Finding]:
    out: list[Finding] = []
    int64 = [st for st in index.tensors if st.tensor.data_type == TensorProto.INT64]
    if int64:
        readers = _ordered(index, (k for st in int64 for k in _readers(index, st)))
        out.append(Finding(
            "info", "int64-tensors", readers,
            f"{len(int64)} INT64 tensor(s) (initializers and Constant values), read by {len(readers)} node(s), mostly "
            "shape and index arithmetic. TensorRT 10 and 11 keep INT64 as INT64 (the parser stopped casting INT64 "
            "down to INT32 in TensorRT 9.0); TensorRT 8.x cast them to INT32 and clamped what did not fit.",
            "Nothing to do for TensorRT 10/11. For TensorRT 8.x, keep these values inside the INT32 range."))
    beyond: list[tuple[StoredTensor, WeightStats]] = []
    unscanned: list[str] = []
    for st in int64:
        stats = cache.stats(st.name, st.tensor, model_path)
        if stats.note:
            unscanned.append(st.name)
        elif stats.min is not None and (stats.min < INT32_MIN or (stats.max or 0) > INT32_MAX):
            uses = index.readers.get(st.name, [])
            if uses and all(index.graph.node[i].op_type == "Slice" and j in _SLICE_BOUNDS for i, j in uses):
                continue  # Slice's "to the end" sentinel: clamped by the op's own definition
            beyond.append((st, stats))
    for st, stats in beyond:
        narrow = _int32_only(index, table, st)
        severity: Severity = "warning" if narrow else "info"
        where = (f" It is read as INT32 by {', '.join(repr(k) for k in narrow[:3])}, which clamps those values to "
                 "±2147483647." if narrow else " Every reader takes INT64 on TensorRT 10/11, so nothing is clamped "
                 "there; TensorRT 8.x clamps them when it casts to INT32.")
        out.append(Finding(
            severity, "int64-beyond-int32", _readers(index, st),
            f"INT64 tensor '{st.name}' holds values outside the INT32 range (from {stats.min:.0f} to "
            f"{stats.max:.0f}).{where}",
            "Keep these values inside ±2147483647 (e.g. clip them when exporting), or keep the path INT64."))
    doubles = [st for st in index.tensors if st.tensor.data_type == TensorProto.DOUBLE]
    if doubles:
        huge = []
        for st in doubles:
            stats = cache.stats(st.name, st.tensor, model_path)
            if stats.note:
                unscanned.append(st.name)
            elif max(abs(stats.min or 0.0), abs(stats.max or 0.0)) > FLOAT32_MAX:
                huge.append(st.name)
        readers = _ordered(index, (k for st in doubles for k in _readers(index, st)))
        out.append(Finding(
            "warning" if huge else "info", "float64-weights", readers,
            f"{len(doubles)} float64 tensor(s); TensorRT has no double type and casts them to float32"
            + (f", clamping values beyond ±3.4e38 in {', '.join(repr(n) for n in huge[:3])}." if huge else "."),
            "Export these weights as float32."))
    if unscanned:
        out.append(unscanned_finding(unscanned))
    return out


def unscanned_finding(names: list[str]) -> Finding:
    return Finding("info", "weights-not-scanned", [],
                   f"{len(names)} tensor(s) could not be read for their values (e.g. '{names[0]}': stored in an "
                   "external file the check was not given, or too large), so their range was not checked.",
                   "Check the model from its file (external data next to it) to include them.")


def _ordered(index: GraphIndex, keys: Iterable[str]) -> list[str]:
    return sorted(set(keys), key=lambda k: index.order.get(k, len(index.order)))
