"""`trtlab compare`: the reference and each candidate on the same samples, every metric, and the plots' data."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from app.backends.tasks.common import (
    Prepared,
    draws_rewrite,
    fallback_note,
    floor_rewrite,
    judge_draws,
    no_random_ops,
    output_kinds,
    prepare_samples,
    progress,
    random_draws,
    run_outputs,
)
from app.backends.tasks.specs import CompareSpec, takes
from app.core.evaluate import preprocessing_json
from app.core.measure import NOISE_FLOOR, Randomness, floor_summary, target_note

if TYPE_CHECKING:
    from app.core.measure import CandidateReport, OutputKind
    from app.jobs import JobContext


@takes(CompareSpec)
def compare_task(spec: CompareSpec, ctx: JobContext | None) -> dict:
    """`trtlab compare`: the reference and each candidate on the same samples, then every metric."""
    prep = prepare_samples(spec, ctx)
    # Random nodes: the same seeds for the reference and each variant, else the noise floor (measure/random_draws.py).
    randomness = random_draws(prep.model_path, spec.reference, list(spec.candidates))
    if randomness is None:
        return compare_runs(spec, ctx, prep, None)
    try:
        return compare_runs(spec, ctx, prep, randomness)
    finally:
        randomness.remove_copies()  # a copy of the model per target: not left in the job's folder


def compare_runs(spec: CompareSpec, ctx: JobContext | None, prep: Prepared, randomness: Randomness | None) -> dict:
    """The reference and each candidate on the prepared samples, then every metric; `randomness`: the model's random
    nodes and how each candidate's draws are matched (app.core.measure.random_draws)."""
    from app.core.measure import compare_samples

    reference, candidates, tolerances = spec.reference, list(spec.candidates), list(spec.tolerances)
    steps = 1 + len(candidates) + (randomness is not None and NOISE_FLOOR in randomness.methods.values())
    placements: dict[str, dict] = {reference.name: {}}
    ref_rewrite = draws_rewrite(randomness, reference, ctx)
    # The reference's first sample alone first: its answer is sent at once (a partial result), the rest follow.
    first, rest = replace(prep, samples=prep.samples[:1]), replace(prep, samples=prep.samples[1:])
    split = 1.0 / (steps * len(prep.samples))
    ref_out, ref_notes = run_outputs(reference, first, spec, ctx, (0.0, split),
                                     None if rest.samples else placements[reference.name], rewrite=ref_rewrite)
    if ctx is not None:
        ctx.partial(reference_document(reference.name, first, output_kinds(spec, first, ref_out), ref_out,
                                       len(prep.samples)))
    if rest.samples:
        more, _ = run_outputs(reference, rest, spec, ctx, (split, 1.0 / steps), placements[reference.name],
                              rewrite=ref_rewrite)
        ref_out += more
    kinds = output_kinds(spec, prep, ref_out)  # read from every sample, as before any partial result
    floors: list[CandidateReport] = []

    def noise_floor() -> CandidateReport:
        """The reference against itself with other draws (run once, when a candidate needs it)."""
        if not floors:
            assert randomness is not None
            floor_out, _ = run_outputs(reference, prep, spec, ctx, ((steps - 1) / steps, 1.0),
                                       rewrite=floor_rewrite(randomness, reference, ctx))
            progress(ctx, None, "Measuring the noise floor…")
            floors.append(compare_samples(ref_out, floor_out, "noise floor", tolerances, kinds=kinds))
            randomness.floor = floor_summary(floors[0])
        return floors[0]

    reports, notes, cand_outputs = [], {reference.name: ref_notes}, []
    if randomness is not None:
        ref_notes.append(target_note(randomness, reference, reference))
    for k, cand in enumerate(candidates):
        placements[cand.name] = {}
        out, cand_notes = run_outputs(cand, prep, spec, ctx, ((k + 1) / steps, (k + 2) / steps), placements[cand.name],
                                      rewrite=draws_rewrite(randomness, cand, ctx))
        notes[cand.name] = cand_notes
        progress(ctx, None, f"Comparing {cand.name} with {reference.name}…")
        report = compare_samples(ref_out, out, cand.name, tolerances, kinds=kinds)
        if randomness is not None:
            cand_notes += judge_draws(randomness, reference, cand, report, noise_floor)
        reports.append(report)
        cand_outputs.append(out)
        if ctx is not None and k + 1 < len(candidates):  # each candidate's answer as soon as it is compared
            ctx.partial(document(spec, prep, randomness, reports, notes, kinds, placements, ref_out, cand_outputs))
    return document(spec, prep, randomness, reports, notes, kinds, placements, ref_out, cand_outputs, ctx)


def document(spec: CompareSpec, prep: Prepared, randomness: Randomness | None, reports: list[CandidateReport],
             notes: dict[str, list[str]], kinds: dict[str, OutputKind], placements: dict[str, dict],
             ref_out: list[dict[str, np.ndarray]], cand_outputs: list[list[dict[str, np.ndarray]]],
             ctx: JobContext | None = None) -> dict:
    """The comparison's result for the candidates compared so far (`reports`): the final one, or a partial one."""
    from app.core.measure import compare_report_json

    reference, tolerances = spec.reference, list(spec.tolerances)
    notes = {t: list(n) for t, n in notes.items()}
    doc = compare_report_json(reference.name, len(prep.samples), reports)
    doc["random_ops"] = randomness.to_json() if randomness is not None else no_random_ops()
    doc.update(preprocessing_json(prep.source, prep.shapes))  # the preset the photos went through
    doc.update({"inputs": prep.source_text, "random_data": prep.random_data, "notes": notes,
                "shapes": {k: list(v) for k, v in prep.shapes.items()},
                "tolerances": sorted({str(t) for c in doc.get("candidates", []) for t in c.get("tolerances", [])})
                or [f"{t.metric}:{t.value}" for t in tolerances]})
    doc["plots"] = {r.name: plot_data(r) for r in reports}
    doc["output_kinds"] = {name: k.to_json() for name, k in kinds.items()}
    # Where each target's nodes ran (ONNX Runtime's profiler): a GPU target with compute nodes on the CPU is named.
    doc["placement"] = {t: p for t, p in placements.items() if p}
    for t, p in doc["placement"].items():
        if p.get("fallback_nodes"):
            notes.setdefault(t, []).append(fallback_note(p))
    progress(ctx, None, "Drawing the answers…")
    doc["answers"] = answer_pictures(prep, kinds, ref_out, reports, cand_outputs)
    return doc


def reference_document(reference: str, prep: Prepared, kinds: dict[str, OutputKind],
                       ref_out: list[dict[str, np.ndarray]], samples: int) -> dict:
    """A comparison of `samples` samples with no candidate yet: the reference's answers so far (`ref_out` on
    `prep`'s samples) as pictures with their input photos (drawn as each candidate's are, from the reference judged
    against itself)."""
    from app.core.measure import compare_report_json, compare_samples

    itself = compare_samples(ref_out, ref_out, reference, [], kinds=kinds)
    answers = answer_pictures(prep, kinds, ref_out, [itself], [ref_out])
    for entry in answers["outputs"].values():
        entry["candidates"] = {}
    doc = compare_report_json(reference, samples, [])
    doc.update({"inputs": prep.source_text, "random_data": prep.random_data, "answers": answers})
    return doc


def answer_pictures(prep: Prepared, kinds: dict[str, OutputKind], ref_out: list[dict[str, np.ndarray]],
                    reports: list[CandidateReport], cand_outputs: list[list[dict[str, np.ndarray]]]) -> dict:
    """The answers as pictures (app.core.measure.pictures): the input photos, then per output of a task kind (the
    first MAX_OUTPUTS) the reference's picture and each candidate's, per sample (the first MAX_SAMPLES)."""
    from app.core.measure import MAX_OUTPUTS, MAX_SAMPLES, input_picture, output_pictures, png_b64

    source = prep.source
    pre = source.preprocess if source is not None and source.kind == "images" else None
    photos = [input_picture(feeds, pre) for feeds in prep.samples[:MAX_SAMPLES]]
    size = next(((v[2], v[3]) if v[1] in (1, 3) else (v[1], v[2]) for v in prep.shapes.values() if len(v) == 4),
                (256, 256))
    shown = [name for name, k in kinds.items()
             if k.kind in ("image", "detections", "yolo", "classes", "sequence", "audio")]
    outputs: dict[str, dict] = {}
    for name in shown[:MAX_OUTPUTS]:
        entry: dict = {"kind": kinds[name].kind, "candidates": {}}
        for report, outs in zip(reports, cand_outputs, strict=True):
            metrics = next((o for o in report.outputs if o.name == name), None)
            if metrics is None or not metrics.answers:
                continue
            pics = output_pictures(kinds[name], [s[name] for s in ref_out], [s[name] for s in outs], metrics.answers,
                                   photos, size)
            entry.setdefault("ref", pics.pop("ref", None))
            if "ref_sound" in pics:  # audio: the reference's sound, WAV data URIs (each candidate's is "sound")
                entry.setdefault("ref_sound", pics.pop("ref_sound"))
            # Each sample's own verdict facts (no box or label lists: the pictures show those).
            per_sample = [{k: v for k, v in a.items() if k not in ("ref", "cand")} for a in metrics.answers]
            entry["candidates"][report.name] = {**pics, "per_sample": per_sample[:MAX_SAMPLES]}
        if entry["candidates"]:
            outputs[name] = entry
    return {"inputs": [png_b64(p, photo=True) if p is not None else None for p in photos], "outputs": outputs,
            "photos": not prep.random_data}


SCATTER_POINTS = 2000  # per output: enough to see a cloud, small enough to keep results light for the GUI


def _lists(pair: Iterable[np.ndarray], limit: int | None = None) -> list[list[float]]:
    arrays = [np.asarray(a, dtype=np.float64).ravel() for a in pair]
    if limit is not None and arrays and len(arrays[0]) > limit:
        keep = np.linspace(0, len(arrays[0]) - 1, limit).astype(np.int64)
        arrays = [a[keep] for a in arrays]
    # 7 significant digits keep the JSON short without changing what a plot shows
    return [[float(f"{v:.7g}") for v in a] for a in arrays]


def plot_data(report: CandidateReport) -> dict:
    """A candidate's histograms and scatter samples as JSON lists, per output."""
    out: dict[str, dict] = {}
    for name, pair in getattr(report, "histograms", {}).items():
        out.setdefault(name, {})["abs_diff"] = _lists(pair)
    for name, sides in getattr(report, "value_hist", {}).items():
        out.setdefault(name, {})["values"] = {side: _lists(pair) for side, pair in sides.items()}
    for name, pair in getattr(report, "scatter", {}).items():
        out.setdefault(name, {})["scatter"] = _lists(pair, SCATTER_POINTS)
    return out
