"""The report's tables, as plain data for the template: the precision comparison, the benchmarks, the per-layer
diagnosis, the fallback search and the engine's layers. Each builder returns None when it has nothing to show,
so the section is left out rather than shown empty."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

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


# The task metrics of each output kind, listed before the element-wise ones: (key in the output's "task", label,
# what it means, the tolerance metric that judges it)
TASK_METRICS = {
    "detections": (("matched", "Boxes matched", "reference boxes the candidate found: same class, IoU ≥ 0.5", ""),
                   ("missed", "Boxes missed", "reference boxes the candidate lost", "det_missed"),
                   ("extra", "Boxes added", "candidate boxes the reference does not have", "det_extra"),
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


def judged_by(c: dict, o: dict, data: dict) -> dict[str, tuple[str, float]]:
    """The tolerances that decided an output's pass/fail, tolerance metric -> ("metric:value", value): the output's
    own "judged_by" (every result that judges answers by kind has it); for a result from before, the candidate's
    tolerances, which then judged every output element by element."""
    given = o.get("judged_by")
    texts = [str(t) for t in given] if isinstance(given, list) else \
        [str(t) for t in c.get("tolerances") or data.get("tolerances") or []]
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


def _task_rows(kind: str, per: list[dict | None], tols: list[dict]) -> list[dict[str, Any]]:
    rows = []
    for key, label, tip, metric in TASK_METRICS.get(kind, ()):
        cells: list[dict[str, str]] = []
        used: set[str] = set()
        for o, tol in zip(per, tols, strict=True):
            task = task_of(o) if o is not None else None
            if task is None:
                cells.append(_cell("—"))
                continue
            status = _judged_cell(metric, task.get(key), tol, used) if metric else ""
            cells.append(_cell(_task_value(key, task.get(key)), status))
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
    data = item.data
    cands = [c for c in data.get("candidates") or [] if isinstance(c, dict)]
    if not cands:
        return None
    names = [str(c.get("name", "?")) for c in cands]
    outputs: list[str] = []
    for c in cands:
        for o in c.get("outputs") or []:
            if o.get("name") not in outputs:
                outputs.append(o.get("name"))
    given = data.get("output_kinds")
    given_kinds = given if isinstance(given, dict) else {}
    tables, judged_all = [], set()
    for out in outputs:
        per = [next((o for o in c.get("outputs") or [] if o.get("name") == out), None) for c in cands]
        kind = kind_line(next((o for o in per if o and o.get("kind")), None), given_kinds.get(out))
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
                value = o.get(key)
                # Only a tolerance that judged the output marks it: a mask's cosine is detail, its IoU decides.
                status = _judged_cell(_ROW_TOLERANCE[key], value, tol, used) if key in _ROW_TOLERANCE else ""
                if key in ("nan", "inf") and value and value > o.get(f"ref_{key}", 0):
                    status = "fail"
                cells.append(_cell(fmt_metric(key, value), status))
            if all(cell["text"] == "—" for cell in cells) and key == "top1":
                continue  # not a classifier output: no top-1 row
            rows.append({"label": label, "tip": tip, "tolerance": ", ".join(sorted(used)), "cells": cells})
        judged_all |= {t for tol in tols for t, _ in tol.values()}
        shapes = {str(o.get("shape")) for o in per if o}
        verdict = [_cell("pass" if o and o.get("passed", c.get("passed")) else "fail",
                         "pass" if o and o.get("passed", c.get("passed")) else "fail") for c, o in zip(cands, per,
                                                                                              strict=True)]
        failures = [f"{c.get('name')}: {f}" for c, o in zip(cands, per, strict=True) if o
                    for f in o.get("failures") or []]
        tables.append({"output": out, "shape": ", ".join(sorted(shapes)), "rows": rows, "task_rows": task_rows,
                       "kind": kind, "verdict": verdict, "failures": failures})
    unused = sorted({str(t) for c in cands for t in c.get("unused_tolerances") or []})
    return {"reference": data.get("reference", ""), "samples": data.get("samples"), "candidates": names,
            "inputs": data.get("inputs", ""), "random_data": bool(data.get("random_data")),
            "tolerances": sorted(judged_all) or data.get("tolerances") or sorted(
                {t for c in cands for t in c.get("tolerances") or []}), "unused_tolerances": unused,
            "tables": tables, "title": item.title or f"Comparison against {data.get('reference', '')}"}


def bench_table(benches: dict[str, dict], speedups: dict[str, float | None], reference: str) -> dict | None:
    if not benches:
        return None
    rows = []
    for target, d in benches.items():
        lat = d.get("latency_ms") or {}
        sp = speedups.get(target)
        cov = d.get("cov")
        rows.append({"target": target, "words": target_words(target), "mode": str(d.get("mode", "")).replace("_", "-"),
                     "runs": d.get("iterations"), "cells": [fmt(lat.get(k)) for k in LATENCY_KEYS],
                     "cov": fmt(cov * 100, 3) + " %" if isinstance(cov, float) else "—",
                     "throughput": fmt(d.get("throughput_per_s"), 4),
                     "speedup": "reference" if target == reference else ("—" if sp is None else f"{sp:.2f}×"),
                     "unstable": bool(d.get("unstable")), "warning": d.get("warning") or ""})
    modes = sorted({str(d.get("mode", "")).replace("_", "-") for d in benches.values() if d.get("mode")})
    return {"columns": list(LATENCY_KEYS), "rows": rows, "reference": reference, "modes": modes}


def _badness(row: dict) -> tuple:
    new_bad = (row.get("nan") or 0) + (row.get("inf") or 0) > (row.get("ref_nan") or 0) + (row.get("ref_inf") or 0)
    cos = row.get("cosine")
    cos = -2.0 if cos is None or (isinstance(cos, float) and math.isnan(cos)) else cos
    return (0 if new_bad else 1, cos)


def diagnosis_table(item: ReportItem) -> dict[str, Any] | None:
    d = item.data
    layers = [r for r in d.get("layers") or [] if isinstance(r, dict)]
    if not layers:
        return None
    order = {id(r): k for k, r in enumerate(layers)}
    worst = sorted(layers, key=_badness)
    shown = worst[:DIAGNOSIS_ROWS]
    rest = worst[DIAGNOSIS_ROWS:]
    rows = [{"rank": k + 1, "position": order[id(r)] + 1, "node": r.get("node", ""), "op": r.get("op", ""),
             "tensor": r.get("tensor", ""), "cosine": fmt_cos(r.get("cosine")), "snr": fmt_snr(r.get("snr_db")),
             "max_abs": fmt(r.get("max_abs")), "nan": fmt(r.get("nan")), "inf": fmt(r.get("inf")),
             "bad": _badness(r)[0] == 0, "first": r.get("node") == d.get("first_nonfinite")}
            for k, r in enumerate(shown)]
    rest_cos = [c for c in (r.get("cosine") for r in rest) if isinstance(c, int | float)]
    return {"candidate": d.get("candidate", ""), "reference": d.get("reference", ""),
            "first_nonfinite": d.get("first_nonfinite"), "worst": d.get("worst"), "rows": rows,
            "compared": d.get("tensors_compared", len(layers)), "missing": d.get("tensors_missing_in_candidate", 0),
            "rest": len(rest), "rest_min_cos": fmt_cos(min(rest_cos)) if rest_cos else "",
            "inputs": d.get("inputs", ""), "random_data": bool(d.get("random_data"))}


def fallback_table(item: ReportItem) -> dict[str, Any]:
    d = item.data
    before, after = d.get("before") or {}, d.get("after") or {}
    metrics = [m for m in ("cos", "max_abs", "nonfinite") if m in before or m in after]
    metrics += sorted((set(before) | set(after)) - set(metrics))
    label = {"cos": "Cosine similarity", "max_abs": "Max |Δ|", "nonfinite": "New NaN/Inf values"}
    rows = [{"metric": label.get(m, m), "before": fmt_cos(before.get(m)) if m == "cos" else fmt(before.get(m)),
             "after": fmt_cos(after.get(m)) if m == "cos" else fmt(after.get(m))} for m in metrics]
    return {"candidate": d.get("candidate", ""), "reference": d.get("reference", ""), "target": d.get("target", ""),
            "met": bool(d.get("met")), "kept": list(d.get("keep_high_precision") or []), "rows": rows,
            "evaluations": d.get("evaluations"), "seconds": fmt(d.get("seconds"), 3), "stopped": d.get("stopped"),
            "first_nonfinite": d.get("first_nonfinite")}


def engine_table(item: ReportItem) -> dict[str, Any]:
    d = item.data
    layers = [r for r in d.get("layers") or [] if isinstance(r, dict)]
    counts = Counter(str(r.get("precision") or "unknown").upper() for r in layers)
    ran = Counter(str(p).upper() for p in (d.get("ran") or {}).values())
    mismatches = [{"node": m.get("node", ""), "planned": str(m.get("planned", "")).upper(),
                   "ran": str(m.get("ran", "")).upper(), "severity": m.get("severity", ""),
                   "message": m.get("message", "")} for m in d.get("mismatches") or [] if isinstance(m, dict)]
    flavour = "TensorRT for RTX" if d.get("flavour") == "rtx" else "TensorRT"
    return {"target": d.get("target", ""), "flavour": flavour, "version": d.get("trt_version", ""),
            "gpu": d.get("gpu", ""), "cc": d.get("compute_capability", ""), "source": d.get("layer_source", ""),
            "layers": len(layers), "counts": counts.most_common(), "ran": ran.most_common(),
            "mismatches": mismatches, "ok": d.get("ok", True) is not False, "out": d.get("out") or d.get("engine"),
            "parse_errors": [p for p in d.get("parse_errors") or [] if isinstance(p, dict)],
            "warnings": list(d.get("warnings") or [])}
