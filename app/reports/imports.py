"""The "Imported TensorRT engines" section of a report, from `trtlab import` results (`ImportResult`) and their
comparisons (`ImportComparison`, `trtlab import DIR --against DIR2`): for each engine where it ran (GPU, TensorRT
version), its layers slowest first with the ONNX nodes fused into each, its latency statistics and its outputs'
verdict against ONNX Runtime FP32; for two engines the ONNX nodes whose time, precision or fusion changed, largest
change first. Two imports in one report without a comparison are compared here (the first against each other).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.core.engine import compare_imports, fusion_words, import_label, short_node
from app.core.results import ImportComparison, ImportResult
from app.reports.results import ReportItem
from app.reports.words import fmt

LAYER_ROWS = 40     # the slowest layers listed per engine; the rest are summed up in one line
CHANGE_ROWS = 40    # the largest changes listed per comparison
LATENCY_KEYS = ("median", "p90", "p95", "p99", "mean", "min", "max", "std")


def _ms(v: float | None) -> str:
    return fmt(v, 4) if v is not None else "—"


def _share(v: float | None) -> str:
    return f"{v:.1%}" if v is not None else "—"


def _verdict(r: ImportResult) -> dict[str, Any]:
    """The engine's outputs against ONNX Runtime FP32: its verdict and each output's cosine and max |Δ|."""
    answers = r.answers
    if answers is None or not answers.candidates:
        return {"status": "info", "text": "not judged (no outputs came back with their samples)", "outputs": []}
    cand = answers.candidates[0]
    outputs = [{"name": o.name, "kind": o.kind, "cosine": fmt(o.cosine, 6) if o.cosine is not None else "—",
                "max_abs": fmt(o.max_abs) if o.max_abs is not None else "—", "status": "pass" if o.passed else "fail",
                "failures": "; ".join(o.failures)} for o in cand.outputs]
    return {"status": "pass" if cand.passed else "fail",
            "text": f"{'passes' if cand.passed else 'fails'} against {answers.reference} on {answers.samples} "
                    f"sample(s)", "outputs": outputs}


def engine_section(r: ImportResult, title: str = "") -> dict[str, Any]:
    """One imported engine as the template shows it."""
    timed = [layer for layer in r.layers if layer.ms is not None]
    rows = []
    for i, layer in enumerate(timed[:LAYER_ROWS]):
        rows.append({"rank": i + 1, "name": layer.name, "type": layer.type or layer.kind, "kind": layer.kind,
                     "precision": (layer.precision or "?").upper(), "ms": _ms(layer.ms), "share": _share(layer.share),
                     "nodes": ", ".join(layer.onnx_nodes) or "—",
                     "serves": ", ".join(layer.serves)})
    rest = timed[LAYER_ROWS:]
    mix: dict[str, int] = {}
    for layer in r.layers:
        mix[(layer.precision or "unknown").upper()] = mix.get((layer.precision or "unknown").upper(), 0) + 1
    lat = r.latency_ms
    latency = None
    if lat is not None and lat.median is not None:
        latency = {"columns": list(LATENCY_KEYS), "cells": [_ms(getattr(lat, k)) for k in LATENCY_KEYS],
                   "runs": r.timed_runs, "throughput": fmt(r.throughput_per_s, 4) if r.throughput_per_s else "—"}
    return {
        "title": title or import_label(r), "folder": r.imported_from, "tool": r.tool or "trtexec",
        "trt_version": r.trt_version, "gpu": r.gpu, "cc": r.compute_capability, "precision": r.precision,
        "model": r.model, "layers": len(r.layers), "timed": len(timed), "source": r.layer_source,
        "mix": ", ".join(f"{n} {p}" for p, n in sorted(mix.items(), key=lambda kv: (-kv[1], kv[0]))),
        "total": _ms(r.total_ms), "runs": r.profile_runs, "rows": rows,
        "rest": f"{len(rest)} more layers, {_ms(sum(layer.ms or 0.0 for layer in rest))} ms together" if rest else "",
        "latency": latency, "verdict": _verdict(r),
        "unclaimed": len(r.unclaimed), "unmapped": len(r.unmapped), "notes": list(r.notes)}


def _delta(a: float | None, b: float | None) -> str:
    if a is None or b is None:
        return "—"
    return f"{b - a:+.4f}" + (f" ({(b - a) / a:+.0%})" if a else "")


def comparison_section(c: ImportComparison) -> dict[str, Any]:
    """Two engines, node by node: the totals and latency side by side, then the nodes that changed."""
    rows = []
    changed = [n for n in c.changed() if not n.only_in]
    for n in changed[:CHANGE_ROWS]:
        rows.append({"node": n.node, "short": short_node(n.node), "ms_a": _ms(n.ms_a), "ms_b": _ms(n.ms_b),
                     "delta": f"{n.delta_ms:+.4f}" if n.delta_ms is not None else "—",
                     "precision": (f"{n.precision_a.upper()} → {n.precision_b.upper()}" if n.precision_changed
                                   else (n.precision_a or "").upper()),
                     "precision_changed": n.precision_changed, "fusion": fusion_words(n),
                     "layer_a": n.layer_a, "layer_b": n.layer_b})
    both = len(c.nodes) - len(c.only_a) - len(c.only_b)
    return {
        "label_a": c.label_a, "label_b": c.label_b,
        "totals": [{"what": "Total (the sum of the profile's layers)", "a": _ms(c.total_ms_a), "b": _ms(c.total_ms_b),
                    "delta": _delta(c.total_ms_a, c.total_ms_b)},
                   {"what": "Median latency (timed inferences)", "a": _ms(c.median_ms_a), "b": _ms(c.median_ms_b),
                    "delta": _delta(c.median_ms_a, c.median_ms_b)}],
        "summary": f"{both} ONNX nodes in both engines: {c.precision_changes} ran in another precision, "
                   f"{c.fusion_changes} fused differently; {len(c.only_a)} only in A, {len(c.only_b)} only in B.",
        "rows": rows, "more": len(changed) - len(rows),
        "only_a": list(c.only_a[:20]), "only_b": list(c.only_b[:20]),
        "only_more": max(0, len(c.only_a) - 20) + max(0, len(c.only_b) - 20), "notes": list(c.notes)}


def _same_model(a: ImportResult, b: ImportResult) -> bool:
    return not a.model or not b.model or Path(a.model).name == Path(b.model).name


def imports_section(items: list[ReportItem]) -> dict[str, Any] | None:
    """The section: every imported engine (a comparison's two included), then every comparison."""
    engines: list[dict[str, Any]] = []
    comparisons: list[ImportComparison] = []
    plain: list[ImportResult] = []
    for item in items:
        if isinstance(item.result, ImportResult):
            plain.append(item.result)
            engines.append(engine_section(item.result, item.title))
        elif isinstance(item.result, ImportComparison):
            c = item.result
            comparisons.append(c)
            for r, label in ((c.engine_a, c.label_a), (c.engine_b, c.label_b)):
                if r is not None and r not in plain:
                    engines.append(engine_section(r, label))
    if not comparisons and len(plain) >= 2:  # engines of one model (or of unnamed ones), the first against each
        comparisons = [compare_imports(plain[0], other) for other in plain[1:] if _same_model(plain[0], other)]
    if not engines and not comparisons:
        return None
    return {"engines": engines, "comparisons": [comparison_section(c) for c in comparisons]}


def scorecard_lines(items: list[ReportItem]) -> list[dict[str, str]]:
    """One line per imported engine: where it ran, its profile's total and its verdict."""
    lines = []
    for item in items:
        if not isinstance(item.result, ImportResult):
            continue
        r = item.result
        text = f"Imported engine {import_label(r)}: {len(r.layers)} layers, {_ms(r.total_ms)} ms per inference " \
               "(the profile's total)"
        if r.latency_ms is not None and r.latency_ms.median is not None:
            text += f", median latency {_ms(r.latency_ms.median)} ms"
        verdict = _verdict(r)
        lines.append({"text": f"{text}; outputs {verdict['text']}", "status": verdict["status"]})
    for item in items:
        if isinstance(item.result, ImportComparison):
            c = item.result
            lines.append({"text": f"Imported engines {c.label_a} against {c.label_b}: {_ms(c.total_ms_a)} → "
                                  f"{_ms(c.total_ms_b)} ms per inference; {c.precision_changes} ONNX node(s) ran in "
                                  f"another precision, {c.fusion_changes} fused differently", "status": "info"})
    return lines
