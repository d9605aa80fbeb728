"""`trtlab diagnose`: every float intermediate tensor of the reference and the candidate, compared."""

from __future__ import annotations

from typing import TYPE_CHECKING

import onnx

from app.backends import Target
from app.backends.tasks.common import (
    Prepared,
    floor_rewrite,
    judge_draws,
    no_random_ops,
    open_session,
    output_kinds,
    prepare_samples,
    progress,
    random_draws,
    run_outputs,
    seed_model,
    variant_path,
    workdir,
)
from app.backends.tasks.specs import DiagnoseSpec, JobInputs, PrecisionNotAvailable, takes

if TYPE_CHECKING:
    from app.core.measure import CandidateReport, Randomness
    from app.core.precision import LayerError
    from app.jobs import JobContext


def layer_errors(prep: Prepared, reference: Target, candidate: Target, spec: JobInputs, ctx: JobContext | None,
                 span: tuple[float, float] = (0.0, 1.0), randomness: Randomness | None = None
                 ) -> tuple[list, str | None, dict]:
    """Every float intermediate tensor of the reference and the candidate on the first sample, compared.

    Returns the rows (node order), the first node turning NaN/Inf, and facts about the run. With `randomness`
    (`common.random_draws`), the random nodes draw as in `compare`: the reference's graph is seeded, the candidate's
    alike where it can draw the same numbers; where it cannot, the reference runs a third time with other seeds,
    and `facts["floor_rows"]` holds every tensor of the reference against itself (the noise floor)."""

    from app.core.fileio import atomic_write_bytes
    from app.core.measure import FLOOR_SEED_BASE, NOISE_FLOOR, SAME_SEEDS
    from app.core.precision import diagnose_outputs, expose_all

    if reference.precision != "fp32":
        raise PrecisionNotAvailable(f"A per-layer diagnosis compares against an FP32 reference, not {reference.name}.",
                                    fix=f"Use --reference {reference.backend}:fp32 (the default is ort-cpu:fp32).")
    lo, hi = span
    feeds = prep.samples[0]
    folder = workdir(ctx)
    progress(ctx, lo, "Exposing intermediate tensors…")
    ref_model = onnx.load(prep.model_path)
    cand_path, notes = variant_path(prep.model_path, candidate, ctx, spec)
    cand_model = onnx.load(cand_path)
    method = randomness.methods.get(candidate.name) if randomness is not None else None
    if randomness is not None:  # seeded as `compare` seeds them (common.seeded_graph): the exposed graphs are copies
        seed_model(randomness, ref_model, reference.name)
        if method == SAME_SEEDS:
            seed_model(randomness, cand_model, candidate.name)
    ref_exposed, names = expose_all(ref_model)
    cand_exposed, cand_names = expose_all(cand_model, names)
    runs = [("reference", reference, ref_exposed), ("candidate", candidate, cand_exposed)]
    if randomness is not None and method == NOISE_FLOOR:
        floor_exposed = onnx.ModelProto()
        floor_exposed.CopyFrom(ref_exposed)
        seed_model(randomness, floor_exposed, "floor", FLOOR_SEED_BASE)
        runs.append(("floor", reference, floor_exposed))
    outs = []
    for k, (tag, target, exposed) in enumerate(runs):
        path = folder / f"diagnose_{tag}.onnx"
        atomic_write_bytes(path, exposed.SerializeToString())
        progress(ctx, lo + (hi - lo) * (0.1 + 0.8 * k / len(runs)),
                 f"Running {target.name}{' with other draws' if tag == 'floor' else ''} with {len(names):,} "
                 "tensors exposed…")
        session = open_session(target, str(path), spec, ctx, prep.shapes)
        try:
            outs.append(session.run(feeds))
        finally:
            session.close()
    progress(ctx, lo + (hi - lo) * 0.9, "Measuring each tensor…")
    rows, first = diagnose_outputs(ref_model, outs[0], outs[1])
    final = [o.name for o in ref_model.graph.output]
    answers = tuple({k: v for k, v in o.items() if k in final} for o in outs)
    facts = {"notes": notes, "tensors_missing_in_candidate": len(names) - len(cand_names),
             "final_outputs": answers[:2]}
    if len(outs) == 3:
        facts["floor_rows"] = diagnose_outputs(ref_model, outs[0], outs[2])[0]
        facts["floor_outputs"] = answers[2]
    return rows, first, facts


def within_floor(row: LayerError, floor: LayerError | None) -> bool:
    """Whether a tensor's difference is the noise's: the reference's own draws move it (its floor is not exact) and
    the candidate is no farther from the reference than FLOOR_SLACK × the floor (by 1 − cosine)."""
    from app.core.measure import FLOOR_SLACK

    if floor is None or floor.cosine is None or row.cosine is None or not floor.max_abs:
        return False
    return 1.0 - row.cosine <= FLOOR_SLACK * (1.0 - floor.cosine)


def floor_by_tensor(facts: dict) -> dict[str, LayerError]:
    """The noise floor's rows by tensor ({} when the draws matched)."""
    return {r.tensor: r for r in facts.get("floor_rows", [])}


@takes(DiagnoseSpec)
def diagnose_task(spec: DiagnoseSpec, ctx: JobContext | None) -> dict:
    """`trtlab diagnose`: every float intermediate tensor of the reference and the candidate, compared."""
    reference, candidate = spec.reference, spec.candidate
    prep = prepare_samples(spec.with_(samples=1), ctx)
    # Random nodes: the same seeds as `compare` gives them, else the noise floor (common.random_draws).
    randomness = random_draws(prep.model_path, reference, [candidate])
    try:
        return _diagnose(spec, ctx, prep, randomness)
    finally:
        if randomness is not None:
            randomness.remove_copies()


def _diagnose(spec: DiagnoseSpec, ctx: JobContext | None, prep: Prepared, randomness: Randomness | None) -> dict:
    from app.core.measure import compare_samples, floor_summary

    reference, candidate = spec.reference, spec.candidate
    rows, first, facts = layer_errors(prep, reference, candidate, spec, ctx, randomness=randomness)
    # The model's own outputs judged by what they mean (their kinds), as `compare` does, on the diagnosed sample.
    ref_final, cand_final = facts["final_outputs"]
    kinds = output_kinds(spec, prep, [ref_final])
    judged = compare_samples([ref_final], [cand_final], candidate.name, kinds=kinds)
    notes = list(facts["notes"])
    floors: list[CandidateReport] = []

    def noise_floor() -> CandidateReport:
        """The model's outputs of the reference against itself with other draws (run once, when needed)."""
        if not floors:
            assert randomness is not None
            other = facts.get("floor_outputs")
            if other is None:
                outs, _ = run_outputs(reference, prep, spec, ctx, rewrite=floor_rewrite(randomness, reference, ctx))
                other = outs[0]
            floors.append(compare_samples([ref_final], [other], "noise floor", kinds=kinds))
            randomness.floor = floor_summary(floors[0])
        return floors[0]

    if randomness is not None:
        notes += judge_draws(randomness, reference, candidate, judged, noise_floor)
    floor_rows = floor_by_tensor(facts)
    layers = []
    for r in rows:
        row = r.to_json()
        f = floor_rows.get(r.tensor)
        if f is not None:  # the reference against itself with other draws, for this tensor
            row.update({"floor_cosine": f.cosine, "floor_max_abs": f.max_abs, "within_floor": within_floor(r, f)})
        layers.append(row)
    # The worst layer by cosine; against the noise floor, of the tensors whose difference the noise does not explain.
    finite = [r for r in rows if r.cosine is not None and not within_floor(r, floor_rows.get(r.tensor))]
    worst = min(finite, key=lambda r: r.cosine) if finite else None
    return {"candidate": candidate.name, "reference": reference.name, "first_nonfinite": first,
            "worst": worst.node if worst else None, "layers": layers,
            "tensors_compared": len(rows), "tensors_missing_in_candidate": facts["tensors_missing_in_candidate"],
            "inputs": prep.source_text, "random_data": prep.random_data, "notes": notes,
            "answers_changed": not judged.passed,
            "random_ops": randomness.to_json() if randomness is not None else no_random_ops(),
            "outputs": [{"name": o.name, "kind": o.kind, "task": o.to_json()["task"], "passed": o.passed,
                         "failures": o.failures, "cosine": o.cosine} for o in judged.outputs]}
