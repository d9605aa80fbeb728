"""The report's tables, as plain data for the template: the precision comparison, the benchmarks, the per-layer
diagnosis, the fallback search and the engine's layers. Each builder returns None when it has nothing to show,
so the section is left out rather than shown empty."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from app.core.results import (
    BenchResult,
    BuildResult,
    CandidateResult,
    CompareResult,
    DiagnoseResult,
    FallbackResult,
    LayerError,
    OutputResult,
    ParseError,
    PlanMismatch,
)
from app.reports.answers import kind_line, task_of
from app.reports.results import ReportItem
from app.reports.words import TOL_METRICS, fmt, fmt_cos, fmt_metric, fmt_snr, passes, target_words

# Every metric of a compare output, in the order the table lists them: (key, label, what it means)
COMPARE_METRICS = (
    ("cosine", "Cosine similarity", "1 = same direction; the lowest over samples"),
    ("snr_db", "SNR", "signal-to-noise of the difference (higher is better)"),
    ("max_abs", "Max |Δ|", "largest absolute difference"),
    ("mean_abs", "Mean |Δ|", ""),
    ("median_abs", "Median |Δ|", ""),
    ("p99_abs", "99th percentile |Δ|", ""),
    ("max_rel", "Max relative Δ", "relative to the reference's magnitude"),
    ("mean_rel", "Mean relative Δ", ""),
    ("top1", "Top-1 agreement", "same arg-max as the reference"),
    ("nan", "NaN values", ""),
    ("inf", "Inf values", ""),
)
DIAGNOSIS_ROWS = 30  # the worst layers listed; the rest are summed up in one line
LATENCY_KEYS = ("median", "p90", "p99", "mean", "min", "max")


def _cell(text: str, status: str = "") -> dict[str, str]:
    return {"text": text, "status": status}


# The task metrics of each output kind, listed before the element-wise ones: (its field of the output's `Task`,
# label, what it means, the tolerance metric that judges it)
TASK_METRICS = {
    "detections": (("matched", "Boxes matched", "reference boxes the candidate found: same class, IoU ≥ 0.5", ""),
                   ("missed", "Boxes missed", "reference boxes the candidate lost", "det_missed"),
                   ("extra_boxes", "Boxes added", "candidate boxes the reference does not have", "det_extra"),
                   ("mean_iou", "Mean IoU of matched boxes", "", "det_iou"),
                   ("max_score_change", "Largest score change", "", ""),
                   ("nms_boundary", "Boxes at the NMS boundary", "kept by one side's NMS, suppressed by the other's: "
                                                                 "neither missed nor added", ""),
                   ("score_threshold", "Score threshold", "boxes scored below it are not answers", "")),
    "image": (("mask_iou", "Mask IoU", "masks thresholded at 0.5; the worst sample", "mask_iou"),
              ("psnr_db", "PSNR", "over the reference's value range; the worst sample", "psnr_db")),
    "classes": (("top1", "Top-1 agreement", "rows whose best label agrees", "top1"),
                ("top5", "Top-5 agreement", "rows whose reference best is in the candidate's top 5", "top5")),
    "sequence": (("token_agreement", "Token agreement", "steps whose arg-max agrees", "token_agreement"),
                 ("edit_distance", "Edit distance", "the largest, between the decoded sequences", "edit_distance")),
}
TASK_METRICS["yolo"] = TASK_METRICS["detections"]
TASK_METRICS["audio"] = (("audio_snr_db", "SNR of the sound", "the error's energy against the reference's; the worst "
                                                              "signal", "audio_snr_db"),
                         ("lsd_db", "Log-spectral distance", "dB between the spectrograms; the worst signal", "lsd_db"))
_PERCENT = {"top1", "top5", "token_agreement"}


def _task_value(key: str, v: object) -> str:
    if key in _PERCENT and isinstance(v, float):
        return f"{v:.1%}"
    if key in ("psnr_db", "audio_snr_db"):
        return fmt_snr(v)
    return fmt(v)


def judged_by(c: CandidateResult, o: OutputResult, data: CompareResult) -> dict[str, tuple[str, float]]:
    """The tolerances that decided an output's pass/fail, tolerance metric -> ("metric:value", value): the output's
    own `judged_by` (every result that judges answers by kind has it; only an output read as part of another's
    answer, a split detection head's, has none); for a result from before, the candidate's tolerances, which then
    judged every output element by element."""
    info = data.output_kinds.get(o.name)
    own = bool(o.judged_by) or (info is not None and bool(info.part_of))
    texts = [str(t) for t in o.judged_by] if own else [str(t) for t in c.tolerances or data.tolerances]
    out: dict[str, tuple[str, float]] = {}
    for t in texts:
        metric, _, value = t.partition(":")
        try:
            out[metric.strip()] = (t, float(value))
        except ValueError:
            continue
    return out


def _judged_cell(metric: str, value: object, tols: dict[str, tuple[str, float]], used: set[str]) -> str:
    """"pass"/"fail" where a tolerance on `metric` judged the output (noting it in `used`), else ""."""
    if metric not in tols:
        return ""
    used.add(tols[metric][0])
    ok = passes(metric, value, tols[metric][1])
    return "" if ok is None else ("pass" if ok else "fail")


def _task_rows(kind: str, per: list[OutputResult | None], tols: list[dict[str, tuple[str, float]]]
               ) -> list[dict[str, Any]]:
    rows = []
    for key, label, tip, metric in TASK_METRICS.get(kind, ()):
        cells: list[dict[str, str]] = []
        used: set[str] = set()
        for o, tol in zip(per, tols, strict=True):
            task = task_of(o) if o is not None else None
            if task is None:
                cells.append(_cell("—"))
                continue
            value = getattr(task, key)
            status = _judged_cell(metric, value, tol, used) if metric else ""
            cells.append(_cell(_task_value(key, value), status))
        if all(cell["text"] == "—" for cell in cells):
            continue  # not measured (top-5 of fewer than 6 classes)
        rows.append({"label": label, "tip": tip, "tolerance": ", ".join(sorted(used)), "cells": cells})
    return rows


# A tolerance's metric for each element-wise row (the reverse of TOL_METRICS)
_ROW_TOLERANCE = {key: metric for metric, key in TOL_METRICS.items()}


def compare_table(item: ReportItem) -> dict[str, Any] | None:
    """Metrics as rows, candidates side by side as columns, one table per output; a metric with a tolerance that
    judged the output shows it and marks each candidate's value pass or fail. An output whose answer was judged (its
    kind's task metrics: boxes, masks, labels, text) lists those first; its element-wise metrics follow as detail."""
    data = item.result_as(CompareResult)
    cands = list(data.candidates)
    if not cands:
        return None
    names = [c.name for c in cands]
    outputs: list[str] = []
    for c in cands:
        for entry in c.outputs:
            if entry.name not in outputs:
                outputs.append(entry.name)
    tables, judged_all = [], set()
    for out in outputs:
        per = [c.output(out) for c in cands]
        kind = kind_line(next((o for o in per if o and o.kind), None), data.output_kinds.get(out))
        tols = [judged_by(c, o, data) if o is not None else {} for c, o in zip(cands, per, strict=True)]
        task_rows = _task_rows(kind["kind"], per, tols) if kind and any(o and task_of(o) for o in per) else []
        rows = []
        for key, label, tip in COMPARE_METRICS:
            if key == "top1" and task_rows and kind and kind["kind"] == "classes":
                continue  # the task rows have it
            cells: list[dict[str, str]] = []
            used: set[str] = set()
            for o, tol in zip(per, tols, strict=True):
                if o is None:
                    cells.append(_cell("—"))
                    continue
                value = getattr(o, key)
                # Only a tolerance that judged the output marks it: a mask's cosine is detail, its IoU decides.
                status = _judged_cell(_ROW_TOLERANCE[key], value, tol, used) if key in _ROW_TOLERANCE else ""
                if key in ("nan", "inf") and value and value > (o.ref_nan if key == "nan" else o.ref_inf):
                    status = "fail"
                cells.append(_cell(fmt_metric(key, value), status))
            if all(cell["text"] == "—" for cell in cells) and key == "top1":
                continue  # not a classifier output: no top-1 row
            rows.append({"label": label, "tip": tip, "tolerance": ", ".join(sorted(used)), "cells": cells})
        judged_all |= {t for tol in tols for t, _ in tol.values()}
        shapes = {str(list(o.shape) if o.shape is not None else None) for o in per if o}  # as the JSON has it
        verdict = [_cell("pass" if o and o.passed else "fail", "pass" if o and o.passed else "fail") for o in per]
        failures = [f"{c.name}: {f}" for c, o in zip(cands, per, strict=True) if o for f in o.failures]
        tables.append({"output": out, "shape": ", ".join(sorted(shapes)), "rows": rows, "task_rows": task_rows,
                       "kind": kind, "verdict": verdict, "failures": failures})
    unused = sorted({str(t) for c in cands for t in c.unused})
    return {"reference": data.reference, "samples": data.samples, "candidates": names,
            "inputs": data.inputs, "random_data": data.random_data,
            "tolerances": sorted(judged_all) or list(data.tolerances) or sorted(
                {t for c in cands for t in c.tolerances}), "unused_tolerances": unused,
            "tables": tables, "title": item.title or f"Comparison against {data.reference}"}


def bench_table(benches: dict[str, BenchResult], speedups: dict[str, float | None], reference: str) -> dict | None:
    if not benches:
        return None
    rows = []
    for target, b in benches.items():
        sp = speedups.get(target)
        cov = b.cov
        rows.append({"target": target, "words": target_words(target), "mode": b.mode.replace("_", "-"),
                     "runs": b.iterations, "cells": [fmt(getattr(b.latency_ms, k)) for k in LATENCY_KEYS],
                     "cov": fmt(cov * 100, 3) + " %" if isinstance(cov, float) else "—",
                     "throughput": fmt(b.throughput_per_s, 4),
                     "speedup": "reference" if target == reference else ("—" if sp is None else f"{sp:.2f}×"),
                     "unstable": b.unstable, "warning": b.warning})
    modes = sorted({b.mode.replace("_", "-") for b in benches.values() if b.mode})
    return {"columns": list(LATENCY_KEYS), "rows": rows, "reference": reference, "modes": modes}


def _badness(row: LayerError) -> tuple[int, float]:
    new_bad = (row.nan or 0) + (row.inf or 0) > (row.ref_nan or 0) + (row.ref_inf or 0)
    cos = row.cosine
    cos = -2.0 if cos is None or (isinstance(cos, float) and math.isnan(cos)) else cos
    return (0 if new_bad else 1, cos)


def diagnosis_table(item: ReportItem) -> dict[str, Any] | None:
    d = item.result_as(DiagnoseResult)
    layers = list(d.layers)
    if not layers:
        return None
    order = {id(r): k for k, r in enumerate(layers)}
    worst = sorted(layers, key=_badness)
    shown = worst[:DIAGNOSIS_ROWS]
    rest = worst[DIAGNOSIS_ROWS:]
    rows = [{"rank": k + 1, "position": order[id(r)] + 1, "node": r.node, "op": r.op,
             "tensor": r.tensor, "cosine": fmt_cos(r.cosine), "snr": fmt_snr(r.snr_db),
             "max_abs": fmt(r.max_abs), "nan": fmt(r.nan), "inf": fmt(r.inf),
             "bad": _badness(r)[0] == 0, "first": r.node == d.first_nonfinite}
            for k, r in enumerate(shown)]
    rest_cos = [c for c in (r.cosine for r in rest) if isinstance(c, int | float)]
    return {"candidate": d.candidate, "reference": d.reference,
            "first_nonfinite": d.first_nonfinite, "worst": d.worst, "rows": rows,
            "compared": d.tensors_compared, "missing": d.tensors_missing_in_candidate,
            "rest": len(rest), "rest_min_cos": fmt_cos(min(rest_cos)) if rest_cos else "",
            "inputs": d.inputs, "random_data": d.random_data}


def fallback_table(item: ReportItem) -> dict[str, Any]:
    d = item.result_as(FallbackResult)
    before, after = d.before, d.after  # metric -> its value, without and with the nodes kept
    metrics = [m for m in ("cos", "max_abs", "nonfinite") if m in before or m in after]
    metrics += sorted((set(before) | set(after)) - set(metrics))
    label = {"cos": "Cosine similarity", "max_abs": "Max |Δ|", "nonfinite": "New NaN/Inf values"}
    rows = [{"metric": label.get(m, m), "before": fmt_cos(before.get(m)) if m == "cos" else fmt(before.get(m)),
             "after": fmt_cos(after.get(m)) if m == "cos" else fmt(after.get(m))} for m in metrics]
    return {"candidate": d.candidate, "reference": d.reference, "target": d.target,
            "met": d.met, "kept": list(d.keep_high_precision), "rows": rows,
            "evaluations": d.evaluations, "seconds": fmt(d.seconds, 3), "stopped": d.stopped,
            "first_nonfinite": d.first_nonfinite}


@dataclass
class EngineTable:
    """A built engine as the report shows it: what built it, its layers' precisions, what differs from the plan."""

    target: str
    flavour: str                              # "TensorRT" or "TensorRT for RTX"
    version: str
    gpu: str
    cc: str
    source: str
    layers: int
    counts: list[tuple[str, int]]             # precision -> layers, most first
    ran: list[tuple[str, int]]                # precision -> nodes, most first
    mismatches: list[PlanMismatch]            # precisions in capitals
    ok: bool
    out: str
    parse_errors: list[ParseError]
    warnings: list[str]
    chart: Any = None                         # the precision chart, drawn by the report


def engine_table(item: ReportItem) -> EngineTable:
    d = item.result_as(BuildResult)
    layers = d.layers
    counts = Counter(str(r.precision or "unknown").upper() for r in layers)
    ran = Counter(str(p).upper() for p in d.ran.values())
    mismatches = [m.replace(planned=str(m.planned).upper(), ran=str(m.ran).upper()) for m in d.mismatches]
    flavour = "TensorRT for RTX" if d.flavour == "rtx" else "TensorRT"
    return EngineTable(target=d.target, flavour=flavour, version=d.trt_version, gpu=d.gpu, cc=d.compute_capability,
                       source=d.layer_source, layers=len(layers), counts=counts.most_common(), ran=ran.most_common(),
                       mismatches=mismatches, ok=d.ok, out=d.out or d.engine, parse_errors=list(d.parse_errors),
                       warnings=list(d.warnings))
