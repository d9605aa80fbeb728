"""`trtlab compare`: the reference and each candidate on the same samples, every metric, and the plots' data."""

from __future__ import annotations

import numpy as np

from app.backends import Target
from app.backends.tasks.common import output_kinds, prepare_samples, progress, run_outputs
from app.backends.tasks.specs import CompareSpec, takes


@takes(CompareSpec)
def compare_task(spec: CompareSpec, ctx: object) -> dict:
    """`trtlab compare`: the reference and each candidate on the same samples, then every metric."""
    from app.core.measure import Tolerance, compare_report_json, compare_samples

    reference = Target.parse(spec.reference)
    candidates = [Target.parse(c) for c in spec.candidates]
    tolerances = [Tolerance.parse(t) for t in spec.tolerances]
    prep = prepare_samples(spec, ctx)
    steps = 1 + len(candidates)
    ref_out, ref_notes = run_outputs(reference, prep, spec, ctx, (0.0, 1.0 / steps))
    kinds = output_kinds(spec, prep, ref_out)
    reports, notes = [], {reference.name: ref_notes}
    for k, cand in enumerate(candidates):
        out, cand_notes = run_outputs(cand, prep, spec, ctx, ((k + 1) / steps, (k + 2) / steps))
        notes[cand.name] = cand_notes
        progress(ctx, None, f"Comparing {cand.name} with {reference.name}…")
        reports.append(compare_samples(ref_out, out, cand.name, tolerances, kinds=kinds))
    doc = compare_report_json(reference.name, len(prep.samples), reports)
    doc.update({"inputs": prep.source_text, "random_data": prep.random_data, "notes": notes,
                "shapes": {k: list(v) for k, v in prep.shapes.items()},
                "tolerances": sorted({str(t) for c in doc.get("candidates", []) for t in c.get("tolerances", [])})
                or [f"{t.metric}:{t.value}" for t in tolerances]})
    doc["plots"] = {r.name: plot_data(r) for r in reports}
    doc["output_kinds"] = {name: k.to_json() for name, k in kinds.items()}
    return doc


SCATTER_POINTS = 2000  # per output: enough to see a cloud, small enough to keep results light for the GUI


def _lists(pair: object, limit: int | None = None) -> list[list[float]]:
    arrays = [np.asarray(a, dtype=np.float64).ravel() for a in pair]  # type: ignore[union-attr]
    if limit is not None and arrays and len(arrays[0]) > limit:
        keep = np.linspace(0, len(arrays[0]) - 1, limit).astype(np.int64)
        arrays = [a[keep] for a in arrays]
    # 7 significant digits keep the JSON short without changing what a plot shows
    return [[float(f"{v:.7g}") for v in a] for a in arrays]


def plot_data(report: object) -> dict:
    """A candidate's histograms and scatter samples as JSON lists, per output."""
    out: dict[str, dict] = {}
    for name, pair in getattr(report, "histograms", {}).items():
        out.setdefault(name, {})["abs_diff"] = _lists(pair)
    for name, sides in getattr(report, "value_hist", {}).items():
        out.setdefault(name, {})["values"] = {side: _lists(pair) for side, pair in sides.items()}
    for name, pair in getattr(report, "scatter", {}).items():
        out.setdefault(name, {})["scatter"] = _lists(pair, SCATTER_POINTS)
    return out
