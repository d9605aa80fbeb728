"""Checks of a precision plan against the model: nodes it asks to change that cannot change, and weights that
FP16/BF16 cannot hold (overflow, subnormals, flush to zero), per node — the same rules the FP16/BF16 and INT8
transforms apply when they build the variant."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from onnx import TensorProto

from app.core.model import FP16_MIN_NORMAL, FP16_MIN_SUBNORMAL, ShapeResult, tensor_to_array
from app.core.precision import PlannedNode, PrecisionPlan, half_inputs, model_opsets
from app.core.readiness.context import GraphIndex
from app.core.readiness.findings import Finding, Severity
from app.core.readiness.values import ScanCache, unscanned_finding

BF16_MAX = 3.3895313892515355e38
_FLOATS = {TensorProto.FLOAT, TensorProto.DOUBLE}


def _fmt_keys(keys: list[str], limit: int = 3) -> str:
    shown = ", ".join(f"'{k}'" for k in keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def check_plan(index: GraphIndex, plan: PrecisionPlan, shapes: ShapeResult, cache: ScanCache,
               model_path: Path | None) -> list[Finding]:
    g = index.graph
    out: list[Finding] = []
    unknown = plan.unknown_keys(g)
    if unknown:
        out.append(Finding("warning", "plan-unknown-nodes", [],
                           f"The plan names {len(unknown)} node(s) this model does not have ({_fmt_keys(unknown)}); "
                           "they are ignored.",
                           "The plan was made for another model or an older export: set those nodes again."))
    rows = plan.resolve(g, shapes, model_opsets(index.model))  # the transforms' own decisions, in context
    halves = sorted({r.planned for r in rows if r.precision != "fixed"} & {"fp16", "bf16"})
    if len(halves) > 1:
        mixed = [r.key for r in rows if r.precision != "fixed" and r.planned in ("fp16", "bf16")]
        out.append(Finding("error", "plan-mixed-half", mixed[:50],
                           "The plan mixes FP16 and BF16 nodes; a variant computes in one half type, so it cannot be "
                           "built.", "Set the BF16 nodes to FP16 (or the reverse); keep FP32 where neither is safe."))
    fixed: dict[str, list[PlannedNode]] = {"node": [], "op type": []}
    kept: dict[bool, list[tuple[str, str]]] = {True: [], False: []}      # explicit? -> (key, why)
    int8_skipped: dict[bool, list[tuple[str, str]]] = {True: [], False: []}
    half_nodes: list[tuple[int, str]] = []                                 # (node index, precision)
    opset = index.opset("") or 1
    for row in rows:
        wanted = plan.planned(row.key, row.op_type)
        if wanted == "fp32":
            continue
        explicit = row.source == "node"
        if row.precision == "fixed":
            if row.source in fixed:
                fixed[row.source].append(row)
            continue
        why = row.reason if row.differs else ""
        if wanted in ("fp16", "bf16"):
            if why:
                kept[explicit].append((row.key, why))
            else:
                half_nodes.append((row.index, wanted))
        elif wanted == "int8":
            if why:
                int8_skipped[explicit].append((row.key, why))
    for source, rows_ in fixed.items():
        if rows_:
            severity: Severity = "warning" if source == "node" else "info"
            reasons = sorted({r.reason for r in rows_})
            out.append(Finding(
                severity, "plan-fixed-node", [r.key for r in rows_],
                f"The plan asks {len(rows_)} node(s) by {source} for another precision, but their precision cannot "
                f"change: {'; '.join(reasons[:3])}{' …' if len(reasons) > 3 else ''}. They stay as they are.",
                "Nothing breaks; remove these entries from the plan so it says what will happen."))
    for explicit, items in kept.items():
        if items:
            out.append(Finding(
                "warning" if explicit else "info", "plan-kept-fp32", [k for k, _ in items],
                f"{len(items)} node(s) planned FP16/BF16 stay FP32 in the variant: {items[0][1]}"
                + (f" (and {len(items) - 1} more)" if len(items) > 1 else "") + ".",
                "Nothing breaks; the variant keeps them FP32. Set them FP32 in the plan to make that explicit"
                + ("; 'no bf16 kernel at opset N' means ONNX admits BF16 for that op only in a newer opset "
                   "(convert the model's opset first), or plan FP16." if any("kernel at opset" in w for _, w in items)
                   else ".")))
    for explicit, items in int8_skipped.items():
        if items:
            out.append(Finding(
                "warning" if explicit else "info", "plan-int8-skipped", [k for k, _ in items],
                f"{len(items)} node(s) planned INT8 get no Q/DQ: {items[0][1]}"
                + (f" (and {len(items) - 1} more)" if len(items) > 1 else "") + ".",
                "Nothing breaks; they keep their float precision. Plan Conv, ConvTranspose, MatMul, Gemm, residual "
                "Add or pooling nodes INT8."))
    out.extend(_weight_findings(index, half_nodes, opset, cache, model_path))
    return out


def _weight_findings(index: GraphIndex, half_nodes: list[tuple[int, str]], opset: int, cache: ScanCache,
                     model_path: Path | None) -> list[Finding]:
    g = index.graph
    stored = {st.name: st for st in index.tensors if st.owner is None}
    out: list[Finding] = []
    small: list[tuple[str, int, int]] = []   # (key, subnormal count, flushed count)
    unscanned: list[str] = []
    for i, precision in half_nodes:
        node = g.node[i]
        key = index.keys[i]
        positions = half_inputs(node, opset, precision) or []
        sub = flushed = 0
        for j in positions:
            name = node.input[j] if j < len(node.input) else ""
            st = stored.get(name)
            if not name or st is None or st.tensor.data_type not in _FLOATS:
                continue
            stats = cache.stats(name, st.tensor, model_path)
            if stats.note:
                unscanned.append(name)
                continue
            biggest = max(abs(stats.min or 0.0), abs(stats.max or 0.0))
            if precision == "fp16" and stats.fp16_overflow:
                out.append(Finding(
                    "warning", "fp16-overflow", [key],
                    f"'{key}' ({node.op_type}) is planned FP16 but its weight '{name}' has {stats.fp16_overflow} "
                    f"value(s) beyond FP16's ±65504 (largest |w| {biggest:.3g}). The FP16 variant clamps them to "
                    "±65504 (a Cast would make them inf): the output goes wrong with no NaN or Inf to warn.",
                    f"Keep '{key}' FP32 in the plan"
                    + (" (or fuse Conv+BatchNormalization first, which folds the variance into the conv)"
                       if node.op_type == "BatchNormalization" else "") + "."))
            elif precision == "bf16" and biggest > BF16_MAX:
                count = _bf16_overflow(st.tensor, model_path)
                out.append(Finding(
                    "warning", "bf16-overflow", [key],
                    f"'{key}' ({node.op_type}) is planned BF16 but its weight '{name}' has {count} value(s) beyond "
                    f"BF16's ±3.39e38 (largest |w| {biggest:.3g}); they become inf in BF16.",
                    f"Keep '{key}' FP32 in the plan."))
            if precision == "fp16":
                sub += stats.fp16_subnormal
                flushed += stats.fp16_underflow
        if sub:
            small.append((key, sub, flushed))
    if small:
        worst = sorted(small, key=lambda s: -s[1])[:3]
        examples = ", ".join(f"'{k}' {s} ({f} to zero)" for k, s, f in worst)
        out.append(Finding(
            "info", "fp16-subnormal", [k for k, _, _ in small],
            f"{len(small)} node(s) planned FP16 read weights below FP16's smallest normal value (|w| < "
            f"{FP16_MIN_NORMAL:.2g}: fewer significant bits) or below {FP16_MIN_SUBNORMAL / 2:.2g} (flushed to "
            f"zero), e.g. {examples}.",
            "Usually harmless. If such a node's error grows in FP16 (trtlab diagnose), keep it FP32."))
    if unscanned:
        out.append(unscanned_finding(unscanned))
    return out


def _bf16_overflow(t: TensorProto, model_path: Path | None) -> int:
    a = np.abs(tensor_to_array(t, model_path).astype(np.float64, copy=False))
    return int(np.count_nonzero(np.isfinite(a) & (a > BF16_MAX)))
