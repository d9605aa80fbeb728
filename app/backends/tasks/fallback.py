"""`trtlab fallback`: a small set of nodes to keep in FP32 (or unquantized) so a candidate meets a target."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import onnx

from app.backends.tasks.common import (
    PrecisionNotAvailable,
    Prepared,
    calibration,
    cancel_check,
    open_session,
    output_kinds,
    prepare_samples,
    run_outputs,
    target_plan,
    workdir,
)
from app.backends.tasks.diagnose import layer_errors
from app.backends.tasks.specs import FallbackSpec, takes

if TYPE_CHECKING:
    from app.jobs import JobContext


@takes(FallbackSpec)
def fallback_task(spec: FallbackSpec, ctx: JobContext) -> dict:
    """`trtlab fallback`: a small set of nodes to keep in FP32 (or unquantized) so the candidate meets a target.

    Ranks the plan's changeable nodes by a per-layer diagnosis, then searches (app.core.precision.fallback); each
    evaluation builds the variant with some nodes kept FP32, runs it on every sample on the candidate's
    backend and compares it with the reference's outputs."""
    import shutil
    import time

    from app.core.measure import compare_samples
    from app.core.precision import (
        STOP_CANCELLED,
        SearchStopped,
        build_variant,
        rank_candidates,
        search,
        with_high_precision,
    )
    from app.jobs.protocol import JobCancelled

    t0 = time.monotonic()
    reference, candidate, target = spec.reference, spec.candidate, spec.target
    plan = target_plan(candidate, spec)
    model_path = spec.model
    graph = onnx.load(model_path, load_external_data=False).graph
    planned = {r.key: r.precision for r in plan.resolve(graph) if r.precision not in ("fp32", "fixed")}
    plannable = set(planned)
    if not plannable:
        raise PrecisionNotAvailable(f"{candidate.name}: every node is already FP32, so there is nothing to fall "
                                    "back from.", fix="Give a candidate such as ort-cpu:fp16 or a plan with "
                                                      "FP16/BF16/INT8 nodes.")
    budget = spec.budget_s
    prep = prepare_samples(spec, ctx)
    ref_out, ref_notes = run_outputs(reference, prep, spec, ctx, (0.0, 0.05))
    # Diagnose on the sample the candidate gets most wrong: a sample where nothing breaks ranks by noise.
    cand_out, _ = run_outputs(candidate, prep, spec, ctx, (0.05, 0.1))
    kinds = output_kinds(spec, prep, ref_out)
    worst = _worst_sample(ref_out, cand_out)
    diag_prep = Prepared(prep.model_path, [prep.samples[worst]], prep.source_text, prep.random_data, prep.shapes)
    rows, first, facts = layer_errors(diag_prep, reference, candidate, spec, ctx, (0.1, 0.2))
    calib = calibration(spec, ctx)
    calib_method = spec.calib_method
    # The candidate's variant (from the cache by now) says which nodes really changed: only those can help.
    report = build_variant(model_path, plan, calib=calib, calib_method=calib_method,
                           cache_dir=spec.cache_dir).report
    plannable = _changed_nodes(planned, report)
    ranked = _overflowing_first(rank_candidates(rows, plannable, graph=graph), graph, report)
    folder = workdir(ctx) / "fallback-variants"

    def evaluate(keep: frozenset[str]):
        if not keep:  # the variant as planned: its outputs are already here
            return compare_samples(ref_out, cand_out, candidate.name, [target], kinds=kinds)
        try:
            variant = build_variant(model_path, with_high_precision(plan, keep), calib=calib,
                                    calib_method=calib_method, cancelled=cancel_check(ctx),
                                    workdir=getattr(ctx, "workdir", None), cache_dir=folder, allow_no_int8=True)
        except JobCancelled:
            # Cancelled mid-evaluation: the search stops and reports the best set it has, not nothing.
            raise SearchStopped(STOP_CANCELLED) from None
        session = open_session(candidate, variant.path, spec, ctx, prep.shapes)
        try:
            outs = [session.run(feeds) for feeds in prep.samples]
        finally:
            session.close()
            if not variant.identity:
                shutil.rmtree(folder, ignore_errors=True)  # one evaluation's variant at a time on disk
        return compare_samples(ref_out, outs, candidate.name, [target], kinds=kinds)

    remaining = None if budget is None else max(0.0, budget - (time.monotonic() - t0))
    result = search(ranked, evaluate, target, budget_s=remaining, cancelled=ctx.cancelled,
                    progress=lambda f, m: ctx.progress(None if f is None else 0.2 + 0.8 * f, m))
    result.seconds = time.monotonic() - t0  # a cancelled search reports its best set so far ("stopped": "cancelled")
    final = with_high_precision(plan, result.keep)
    doc = {"candidate": candidate.name, "reference": reference.name, **result.to_json(),
           "plan": final.to_json(), "first_nonfinite": first, "ranked": ranked[:50], "samples": len(prep.samples),
           "inputs": prep.source_text, "random_data": prep.random_data,
           "notes": {reference.name: ref_notes, candidate.name: facts["notes"]}}
    return doc


def _worst_sample(ref: list[dict[str, np.ndarray]], cand: list[dict[str, np.ndarray]]) -> int:
    """The sample whose lowest output cosine (NaN/Inf counting as the worst) is lowest."""
    from app.core.precision import tensor_error

    def score(k: int) -> float:
        worst = 1.0
        for name, r in ref[k].items():
            c = cand[k].get(name)
            if c is None:
                continue
            if np.isfinite(r).all() and not np.isfinite(c).all():
                return -2.0
            cos = tensor_error(r, c)[1]
            worst = min(worst, -1.0 if cos is None else cos)
        return worst

    return min(range(len(ref)), key=score)


def _changed_nodes(planned: dict[str, str], report: dict) -> set[str]:
    """The planned nodes the variant really changed: quantized INT8 nodes, half nodes not kept FP32."""
    quantized = set((report.get("int8") or {}).get("quantized_nodes") or [])
    half = set((report.get("half") or {}).get("half_nodes") or [])
    return {k for k, p in planned.items() if k in (quantized if p == "int8" else half)}


def _overflowing_first(ranked: list[str], graph: onnx.GraphProto, report: dict) -> list[str]:
    """Nodes reading weights that overflow the half type are the likeliest culprits: they go first."""
    from app.core.precision import node_keys

    overflow = set((report.get("half") or {}).get("overflow") or {})
    if not overflow:
        return ranked
    readers = [k for k, n in zip(node_keys(graph), graph.node, strict=True) if overflow & set(n.input)]
    front = [k for k in readers if k in ranked]
    return front + [k for k in ranked if k not in front]
