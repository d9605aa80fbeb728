"""The "Accuracy on <dataset>" section of a report, from a `trtlab eval` result (`EvaluationResult`): the dataset and
its preprocessing, the task's metrics per precision with each candidate's difference from the reference and its
95 % interval, the change per class, the confusion matrices, the per-image scatter and the images lost worst.

Each part is left out where the result has no data for it (no per-image values: no scatter; no confusion counts:
no heat map) rather than drawn empty.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from app.core.results import EvalCandidate, EvalRun, EvaluationResult
from app.reports import svg
from app.reports.answers import picture
from app.reports.results import ReportItem
from app.reports.words import (
    EVAL_METRICS,
    LOWER_IS_BETTER,
    PER_CLASS_METRICS,
    PER_IMAGE_WORDS,
    eval_metric_words,
    points,
    target_words,
)

# Each task's metrics in the order the table lists them (others the result has come after)
TASK_ORDER = {"detection": ("map50", "map", "mean_iou"), "classification": ("top1", "top5"),
              "segmentation": ("miou", "dice"), "recognition": ("cer", "wer", "exact")}
# The per-image metric of each task, for a result that does not name it
PER_IMAGE_METRIC = {"classification": "correct", "detection": "f1", "segmentation": "miou", "recognition": "cer"}
CLASSES_SHOWN = 30    # classes a per-class chart or a confusion matrix shows; the rest are summed up
WORST_SHOWN = 12      # worst images shown per candidate


def dataset_name(result: EvaluationResult) -> str:
    path = result.dataset.path
    return Path(path).name or path or "the dataset"


def _value(v: float | None) -> str:
    return "—" if v is None or not math.isfinite(v) else f"{v:.3f}"


def _finite(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return float(v)


def shown_metrics(result: EvaluationResult) -> list[str]:
    """The metrics the table lists: the task's, in its order, then any other the runs have."""
    have = list(result.reference.metrics)
    for c in result.candidates:
        have += [m for m in c.metrics if m not in have]
    first = [m for m in TASK_ORDER.get(result.dataset.task, ()) if m in have]
    return first + [m for m in have if m not in first]


def difference(metric: str, cand: EvalCandidate) -> str:
    """"−1.4 pts, 95 % CI −2.0 … −0.8": the candidate's difference from the reference ("" where undefined)."""
    delta = _finite(cand.delta.get(metric))
    if delta is None:
        return ""
    interval = cand.interval(metric)
    ci = f", 95 % CI {points(interval[0])} … {points(interval[1])}" if interval is not None else ""
    return f"{points(delta)} pts{ci}"


def change_text(metric: str, ref: float | None, cand: EvalCandidate) -> str:
    """"0.512 → 0.498 (−1.4 pts, 95 % CI −2.0 … −0.8)": the reference's value, the candidate's, the difference."""
    text = f"{_value(ref)} → {_value(cand.metrics.get(metric))}"
    diff = difference(metric, cand)
    return f"{text} ({diff})" if diff else text


def _tolerances(result: EvaluationResult) -> list[Any]:
    from app.core.evaluate import DropTolerance, DropToleranceError

    out = []
    for text in result.tolerances:
        try:
            out.append(DropTolerance.parse(text))
        except DropToleranceError:
            continue
    return out


def _judged(tolerances: list[Any], metric: str, cand: EvalCandidate) -> str:
    """"pass"/"fail" where a tolerance judged ``metric``, else ""."""
    mine = [t for t in tolerances if t.metric == metric]
    if not mine:
        return ""
    deltas = {k: (math.nan if v is None else float(v)) for k, v in cand.delta.items()}
    return "fail" if any(t.check(deltas) is not None for t in mine) else "pass"


def metric_table(result: EvaluationResult) -> dict[str, Any]:
    """Rows of metrics, a column per precision (the reference first): the reference's value, each candidate's
    "before → after" with its difference in points and interval, coloured where a tolerance judged it."""
    ref = result.reference
    tolerances = _tolerances(result)
    rows = []
    for m in shown_metrics(result):
        name, tip = EVAL_METRICS.get(m, (m, ""))
        cells = [{"text": _value(ref.metrics.get(m)), "sub": "", "status": ""}]
        for c in result.candidates:
            cells.append({"text": f"{_value(ref.metrics.get(m))} → {_value(c.metrics.get(m))}",
                          "sub": difference(m, c), "status": _judged(tolerances, m, c)})
        tol = ", ".join(str(t) for t in tolerances if t.metric == m)
        rows.append({"key": m, "label": name, "tip": tip, "main": m == result.main_metric, "tolerance": tol,
                     "cells": cells})
    verdict = [{"text": "reference", "status": ""}] + [
        {"text": "PASS" if c.passed else "FAIL", "status": "pass" if c.passed else "fail"} for c in result.candidates]
    failures = [f"{target_words(c.name)}: {f}" for c in result.candidates for f in c.failures]
    return {"targets": [ref.name] + [c.name for c in result.candidates], "rows": rows, "verdict": verdict,
            "failures": failures}


# ------------------------------------------------------------------------------------------------- per class
def _per_class_metric(runs: Sequence[EvalRun]) -> tuple[str, str] | None:
    keys = {k for r in runs for m in r.per_class.values() for k in m}
    return next(((k, w) for k, w in PER_CLASS_METRICS if k in keys), None)


def per_class_chart(result: EvaluationResult, colors: Mapping[str, str]) -> dict[str, Any] | None:
    """Each class's change against the reference per candidate, in points, the classes that lost most first;
    None where the result has no per-class numbers."""
    ref = result.reference
    found = _per_class_metric([ref, *result.candidates])
    if found is None or not result.candidates:
        return None
    key, words = found
    rows: list[tuple[str, list[float | None]]] = []
    for cls, mine in ref.per_class.items():
        before = _finite(mine.get(key))
        deltas: list[float | None] = []
        for c in result.candidates:
            after = _finite((c.per_class.get(cls) or {}).get(key))
            deltas.append(None if before is None or after is None else (after - before) * 100)
        rows.append((cls, deltas))
    if not any(d is not None for _, ds in rows for d in ds):
        return None
    changed = [r for r in rows if any(d for d in r[1])]
    out: dict[str, Any] = {"metric": words, "classes": len(rows), "changed": len(changed), "chart": None, "more": ""}
    if not changed:
        return out  # the template says that no class changed
    changed.sort(key=lambda r: min((d for d in r[1] if d is not None), default=0.0))
    shown, rest = changed[:CLASSES_SHOWN], changed[CLASSES_SHOWN:]
    if rest:
        largest = max(abs(d) for _, ds in rest for d in ds if d is not None)
        out["more"] = f"{len(rest)} more classes changed, each by at most {largest:.1f} points."
    series = [(target_words(c.name), colors.get(c.name, svg.color(k))) for k, c in enumerate(result.candidates)]
    out["chart"] = svg.diverging_bars(
        shown, series, value_suffix=" pts", title=f"Per-class {words}: change against the reference",
        x_label=f"change in per-class {words}, candidate − reference (points; below 0 the candidate is worse)")
    return out


# ------------------------------------------------------------------------------------------------- confusion
def class_labels(run: EvalRun) -> dict[int, str]:
    """The class names of a run's confusion rows: its per-class entries name, in order, the classes that have one
    (a classifier's classes with a true image; a segmenter's with a true or predicted pixel)."""
    matrix = run.confusion or ()
    names = list(run.per_class)
    k = len(matrix)
    rows = [sum(matrix[i]) for i in range(k)]
    cols = [sum(matrix[i][j] for i in range(k)) for j in range(k)]
    for present in ([i for i in range(k) if rows[i] > 0],
                    [i for i in range(k) if rows[i] + cols[i] - matrix[i][i] > 0]):
        if len(present) == len(names):
            return dict(zip(present, names, strict=True))
    return {}


def _merged(matrix: Sequence[Sequence[int]], keep: list[int], k: int) -> list[list[int]]:
    """The rows and columns of ``keep`` in order, the others summed into one last row and column."""
    others = [i for i in range(k) if i not in set(keep)]
    groups = [[i] for i in keep] + ([others] if others else [])
    return [[sum(int(matrix[i][j]) for i in gi for j in gj) for gj in groups] for gi in groups]


def confusion_charts(result: EvaluationResult) -> dict[str, Any] | None:
    """A heat map per precision with confusion counts (classification, segmentation), on the same classes: those
    with an image or a prediction, the most frequent CLASSES_SHOWN − 1 and one "other" beyond CLASSES_SHOWN."""
    runs = [r for r in (result.reference, *result.candidates) if r.confusion]
    if not runs:
        return None
    k = max(len(r.confusion or ()) for r in runs)
    runs = [r for r in runs if len(r.confusion or ()) == k]
    names: dict[int, str] = {}
    for r in runs:
        for i, n in class_labels(r).items():
            names.setdefault(i, n)
    mass = [0] * k
    for r in runs:
        matrix = r.confusion or ()
        for i in range(k):
            mass[i] += sum(int(v) for v in matrix[i]) + sum(int(matrix[j][i]) for j in range(k))
    used = [i for i in range(k) if mass[i] > 0]
    keep = used if len(used) <= CLASSES_SHOWN else sorted(sorted(used, key=lambda i: -mass[i])[:CLASSES_SHOWN - 1])
    labels = [names.get(i, f"class {i}") for i in keep]
    other = len(used) - len(keep)
    unused = k - len(used)
    if other:
        labels.append(f"other ({other})")
    pixels = result.dataset.task == "segmentation"
    charts = []
    for r in runs:
        matrix = r.confusion or ()
        cut = _merged(matrix, keep, k)
        if not other:  # no "other" row: the classes with nothing are left out, not summed
            cut = [row[:len(keep)] for row in cut[:len(keep)]]
        what = "pixels" if pixels else "images"
        charts.append({"target": r.name, "words": target_words(r.name),
                       "chart": svg.heatmap(cut, labels, percent=pixels,
                                            title=f"Confusion matrix of {target_words(r.name)}: {what} per true "
                                                  "class (rows) and predicted class (columns)")})
    notes = []
    if other:
        notes.append(f"The {len(keep)} classes with the most {'pixels' if pixels else 'images'} are shown; the other "
                     f"{other} are summed in \"other\".")
    if unused:
        notes.append(f"{unused} class{'es' if unused != 1 else ''} with no true or predicted "
                     f"{'pixel' if pixels else 'image'} left out.")
    return {"charts": charts, "notes": notes, "percent": pixels}


# ------------------------------------------------------------------------------------------------- per image
def per_image_metric(result: EvaluationResult) -> str:
    return result.per_image_metric or PER_IMAGE_METRIC.get(result.dataset.task, "")


def _lower_is_better(metric: str) -> bool:
    return metric in LOWER_IS_BETTER


def per_image_scatter(result: EvaluationResult, colors: Mapping[str, str]) -> dict[str, Any] | None:
    """Each image's per-image metric, the reference's (x) against each candidate's (y), and per candidate how many
    images came out better, the same and worse; None where the result has no per-image values."""
    ref = result.reference.values
    if not ref:
        return None
    metric = per_image_metric(result)
    lower = _lower_is_better(metric)
    series = []
    counts = []
    for k, c in enumerate(result.candidates):
        if len(c.values) != len(ref):
            continue
        xs, ys = [], []
        for x, y in zip(ref, c.values, strict=True):
            fx, fy = _finite(x), _finite(y)
            if fx is not None and fy is not None:
                xs.append(fx)
                ys.append(fy)
        if not xs:
            continue
        series.append((target_words(c.name), xs, ys, colors.get(c.name, svg.color(k))))
        worse = sum(1 for x, y in zip(xs, ys, strict=True) if (y > x if lower else y < x))
        better = sum(1 for x, y in zip(xs, ys, strict=True) if (y < x if lower else y > x))
        counts.append({"target": target_words(c.name), "images": len(xs), "worse": worse, "better": better,
                       "same": len(xs) - worse - better})
    if not series:
        return None
    words = PER_IMAGE_WORDS.get(metric, metric)
    chart = svg.paired_scatter(series, x_label=f"reference ({target_words(result.reference.name)}): {words}",
                               y_label=f"candidate: {words}",
                               title=f"Per image: {words}, reference (x) against candidate (y)")
    side = "above" if lower else "below"
    return {"chart": chart, "metric": words, "better": "lower" if lower else "higher", "worse_side": side,
            "counts": counts}


def _loss(w: Any, lower: bool) -> float:
    ref, cand = _finite(w.reference), _finite(w.candidate)
    if ref is None or cand is None:
        return 0.0
    return (cand - ref) if lower else (ref - cand)


def worst_images(result: EvaluationResult) -> list[dict[str, Any]]:
    """Per candidate, the images it lost most on, worst first, with their pictures (truth | reference |
    candidate) where the result has them."""
    metric = per_image_metric(result)
    words = PER_IMAGE_WORDS.get(metric, metric)
    lower = _lower_is_better(metric)
    out = []
    for c in result.candidates:
        if not c.worst:
            continue
        ranked = sorted(c.worst, key=lambda w: -_loss(w, lower))[:WORST_SHOWN]
        images = []
        for k, w in enumerate(ranked, 1):
            name = _image_name(w.image, result.dataset.path)
            if metric == "correct":
                how = f"reference {_right(w.reference)}, candidate {_right(w.candidate)}"
            else:
                how = f"{words} {_per_image(w.reference)} → {_per_image(w.candidate)}"
            images.append({"rank": k, "name": name, "path": w.image, "picture": picture(w.picture),
                           "caption": f"{k}. {name}: {how}"})
        out.append({"target": target_words(c.name), "name": c.name, "images": images,
                    "more": len(c.worst) - len(ranked)})
    return out


def _image_name(image: str, dataset: str) -> str:
    """The image's path inside the dataset (class folders name the class), else its file name."""
    try:
        return Path(image).relative_to(dataset).as_posix() if dataset else Path(image).name or image
    except ValueError:
        return Path(image).name or image


def _right(v: float | None) -> str:
    f = _finite(v)
    return "—" if f is None else "right" if f >= 0.5 else "wrong"


def _per_image(v: float | None) -> str:
    f = _finite(v)
    return "—" if f is None else f"{f:.3f}"


# ------------------------------------------------------------------------------------------------- the section
def eval_section(item: ReportItem, colors: Mapping[str, str], index: int = 0) -> dict[str, Any]:
    """Everything the template shows of one evaluation, as plain data."""
    result = item.result_as(EvaluationResult)
    ds, cm = result.dataset, result.dataset.class_map
    class_map = ""
    if cm is not None:
        class_map = f"classes mapped {cm.how}" if cm.how else "classes mapped"
        if cm.unmatched:
            class_map += f"; no model class for {', '.join(cm.unmatched)}"
    notes = [{"target": target_words(name) if name in {result.reference.name, *(c.name for c in result.candidates)}
              else name, "notes": list(n)} for name, n in result.notes.items() if n]
    return {
        "id": "accuracy" if index == 0 else f"accuracy-{index + 1}",
        "title": f"Accuracy on {dataset_name(result)}",
        "dataset": {"path": ds.path, "task": ds.task, "images": ds.images, "class_map": class_map,
                    "summary": ds.summary if (ds.format_name or ds.format) in ds.summary
                    else " · ".join(p for p in (ds.format_name or ds.format, ds.summary) if p)},
        "preprocessing": result.preset.describe or result.preset.name, "preset_reason": result.preset.reason,
        "main_metric": eval_metric_words(result.main_metric) if result.main_metric else "",
        "tolerances": list(result.tolerances),
        "table": metric_table(result),
        "per_class": per_class_chart(result, colors),
        "confusion": confusion_charts(result),
        "scatter": per_image_scatter(result, colors),
        "worst": worst_images(result),
        "notes": notes,
        "seconds": result.seconds,
    }


def scorecard_lines(item: ReportItem) -> list[dict[str, str]]:
    """A line per candidate: its main metric before and after, and whether it met the tolerances."""
    result = item.result_as(EvaluationResult)
    metric = result.main_metric or next(iter(shown_metrics(result)), "")
    lines = []
    for c in result.candidates:
        text = f"Accuracy on {dataset_name(result)}, {target_words(c.name)}: {eval_metric_words(metric)} " \
               f"{change_text(metric, result.reference.metrics.get(metric), c)}"
        if _lower_is_better(metric):
            text += " (lower is better)"
        if c.failures:
            text += f"; failed: {c.failures[0]}" + (f" and {len(c.failures) - 1} more" if len(c.failures) > 1 else "")
        elif result.tolerances:
            text += "; within the tolerances"
        lines.append({"text": text, "status": "pass" if c.passed else "fail"})
    return lines

