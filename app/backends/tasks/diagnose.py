"""`trtlab diagnose`: every float intermediate tensor of the reference and the candidate, compared."""

from __future__ import annotations

from typing import TYPE_CHECKING

import onnx

from app.backends import Target
from app.backends.tasks.common import (
    PrecisionNotAvailable,
    Prepared,
    open_session,
    output_kinds,
    prepare_samples,
    progress,
    variant_path,
    workdir,
)
from app.backends.tasks.specs import DiagnoseSpec, JobInputs, takes

if TYPE_CHECKING:
    from app.jobs import JobContext


def layer_errors(prep: Prepared, reference: Target, candidate: Target, spec: JobInputs, ctx: JobContext | None,
                 span: tuple[float, float] = (0.0, 1.0)) -> tuple[list, str | None, dict]:
    """Every float intermediate tensor of the reference and the candidate on the first sample, compared.

    Returns the rows (node order), the first node turning NaN/Inf, and facts about the run."""

    from app.core.fileio import atomic_write_bytes
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
    ref_exposed, names = expose_all(ref_model)
    cand_exposed, cand_names = expose_all(cand_model, names)
    paths = []
    for tag, m in (("reference", ref_exposed), ("candidate", cand_exposed)):
        path = folder / f"diagnose_{tag}.onnx"
        atomic_write_bytes(path, m.SerializeToString())
        paths.append(str(path))
    outs = []
    for k, (target, exposed) in enumerate(((reference, paths[0]), (candidate, paths[1]))):
        progress(ctx, lo + (hi - lo) * (0.1 + 0.4 * k), f"Running {target.name} with {len(names):,} tensors "
                  "exposed…")
        session = open_session(target, exposed, spec, ctx, prep.shapes)
        try:
            outs.append(session.run(feeds))
        finally:
            session.close()
    progress(ctx, lo + (hi - lo) * 0.9, "Measuring each tensor…")
    rows, first = diagnose_outputs(ref_model, outs[0], outs[1])
    final = [o.name for o in ref_model.graph.output]
    answers = tuple({k: v for k, v in o.items() if k in final} for o in outs)
    return rows, first, {"notes": notes, "tensors_missing_in_candidate": len(names) - len(cand_names),
                         "final_outputs": answers}


@takes(DiagnoseSpec)
def diagnose_task(spec: DiagnoseSpec, ctx: JobContext | None) -> dict:
    """`trtlab diagnose`: every float intermediate tensor of the reference and the candidate, compared."""
    reference, candidate = spec.reference, spec.candidate
    prep = prepare_samples(spec.with_(samples=1), ctx)
    rows, first, facts = layer_errors(prep, reference, candidate, spec, ctx)
    from app.core.measure import compare_samples

    # The model's own outputs judged by what they mean (their kinds), as `compare` does, on the diagnosed sample.
    ref_final, cand_final = facts["final_outputs"]
    judged = compare_samples([ref_final], [cand_final], candidate.name, kinds=output_kinds(spec, prep, [ref_final]))
    finite = [r for r in rows if r.cosine is not None]
    worst = min(finite, key=lambda r: r.cosine) if finite else None
    return {"candidate": candidate.name, "reference": reference.name, "first_nonfinite": first,
            "worst": worst.node if worst else None, "layers": [r.to_json() for r in rows],
            "tensors_compared": len(rows), "tensors_missing_in_candidate": facts["tensors_missing_in_candidate"],
            "inputs": prep.source_text, "random_data": prep.random_data, "notes": facts["notes"],
            "answers_changed": not judged.passed,
            "outputs": [{"name": o.name, "kind": o.kind, "task": o.to_json()["task"], "passed": o.passed,
                         "failures": o.failures, "cosine": o.cosine} for o in judged.outputs]}
