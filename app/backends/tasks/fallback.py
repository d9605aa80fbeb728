"""`trtlab fallback`: a small set of nodes to keep in FP32 (or unquantized) so a candidate meets a target."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import onnx

from app.backends.tasks.common import (
    Prepared,
    calibration,
    cancel_check,
    draws_rewrite,
    floor_rewrite,
    judge_draws,
    no_random_ops,
    open_session,
    output_kinds,
    prepare_samples,
    random_draws,
    run_outputs,
    target_plan,
    workdir,
)
from app.backends.tasks.diagnose import floor_by_tensor, layer_errors, within_floor
from app.backends.tasks.specs import FallbackSpec, PrecisionNotAvailable, takes

if TYPE_CHECKING:
    from app.core.measure import CandidateReport, OutputKind, Randomness, Tolerance
    from app.core.precision import PrecisionPlan
    from app.jobs import JobContext


@takes(FallbackSpec)
def fallback_task(spec: FallbackSpec, ctx: JobContext) -> dict:
    """`trtlab fallback`: a small set of nodes to keep in FP32 (or unquantized) so the candidate meets a target.

    Ranks the plan's changeable nodes by a per-layer diagnosis, then searches (app.core.precision.fallback); each
    evaluation builds the variant with some nodes kept FP32, runs it on every sample on the candidate's
    backend and compares it with the reference's outputs. A model that draws random numbers gets the draws
    `compare` gives it: the same seeds, else each evaluation judged against the noise floor."""
    import time

    t0 = time.monotonic()
    reference, candidate = spec.reference, spec.candidate
    plan = target_plan(candidate, spec)
    model_path = spec.model
    graph = onnx.load(model_path, load_external_data=False).graph
    planned = {r.key: r.precision for r in plan.resolve(graph) if r.precision not in ("fp32", "fixed")}
    plannable = set(planned)
    if not plannable:
        raise PrecisionNotAvailable(f"{candidate.name}: every node is already FP32, so there is nothing to fall "
                                    "back from.", fix="Give a candidate such as ort-cpu:fp16 or a plan with "
                                                      "FP16/BF16/INT8 nodes.")
    prep = prepare_samples(spec, ctx)
    # Random nodes: the same seeds as `compare` gives them, else the noise floor (common.random_draws).
    randomness = random_draws(prep.model_path, reference, [candidate])
    try:
        return _search(spec, ctx, prep, randomness, plan, planned, graph, t0)
    finally:
        if randomness is not None:
            randomness.remove_copies()


def _search(spec: FallbackSpec, ctx: JobContext, prep: Prepared, randomness: Randomness | None,
            plan: PrecisionPlan, planned: dict[str, str], graph: onnx.GraphProto, t0: float) -> dict:
    """The diagnosis, ranking and search of `fallback_task`, on the prepared samples."""
    import dataclasses
    import shutil
    import time

    from app.core.measure import compare_samples, target_note
    from app.core.precision import (
        STOP_CANCELLED,
        SearchStopped,
        build_variant,
        rank_candidates,
        search,
        with_high_precision,
    )
    from app.jobs.protocol import JobCancelled

    reference, candidate, target = spec.reference, spec.candidate, spec.target
    model_path, budget = spec.model, spec.budget_s
    ref_out, ref_notes = run_outputs(reference, prep, spec, ctx, (0.0, 0.05),
                                     rewrite=draws_rewrite(randomness, reference, ctx))
    # Diagnose on the sample the candidate gets most wrong: a sample where nothing breaks ranks by noise.
    cand_out, _ = run_outputs(candidate, prep, spec, ctx, (0.05, 0.1),
                              rewrite=draws_rewrite(randomness, candidate, ctx))
    kinds = output_kinds(spec, prep, ref_out)
    floor = _NoiseFloor(randomness, spec, ctx, prep, ref_out, kinds)
    worst = _worst_sample(ref_out, cand_out)
    diag_prep = Prepared(prep.model_path, [prep.samples[worst]], prep.source_text, prep.random_data, prep.shapes)
    rows, first, facts = layer_errors(diag_prep, reference, candidate, spec, ctx, (0.1, 0.2), randomness=randomness)
    cand_notes = list(facts["notes"])
    if randomness is not None:
        ref_notes.append(target_note(randomness, reference, reference))
        cand_notes += judge_draws(randomness, reference, candidate,
                                  compare_samples(ref_out, cand_out, candidate.name, [target], kinds=kinds), floor)
        # Against the noise floor, a tensor the reference's own draws move as far ranks as unchanged.
        floors = floor_by_tensor(facts)
        rows = [dataclasses.replace(r, cosine=1.0) if within_floor(r, floors.get(r.tensor)) else r for r in rows]
    calib = calibration(spec, ctx)
    calib_method = spec.calib_method
    # The candidate's variant (from the cache by now) says which nodes really changed: only those can help.
    report = build_variant(model_path, plan, calib=calib, calib_method=calib_method,
                           cache_dir=spec.cache_dir).report
    plannable = _changed_nodes(planned, report)
    ranked = _overflowing_first(rank_candidates(rows, plannable, graph=graph), graph, report)
    folder = workdir(ctx) / "fallback-variants"

    def evaluate(keep: frozenset[str]) -> CandidateReport | dict[str, float | bool | None]:
        if not keep:  # the variant as planned: its outputs are already here
            return floor.judged(compare_samples(ref_out, cand_out, candidate.name, [target], kinds=kinds), target)
        try:
            variant = build_variant(model_path, with_high_precision(plan, keep), calib=calib,
                                    calib_method=calib_method, cancelled=cancel_check(ctx),
                                    workdir=getattr(ctx, "workdir", None), cache_dir=folder, allow_no_int8=True)
        except JobCancelled:
            # Cancelled mid-evaluation: the search stops and reports the best set it has, not nothing.
            raise SearchStopped(STOP_CANCELLED) from None
        rewrite = draws_rewrite(randomness, candidate, ctx)  # seeded as the reference is, where it draws alike
        session = open_session(candidate, rewrite(variant.path) if rewrite else variant.path, spec, ctx, prep.shapes)
        try:
            outs = [session.run(feeds) for feeds in prep.samples]
        finally:
            session.close()
            if rewrite is not None and randomness is not None:
                randomness.remove_copies()  # one evaluation's seeded copy at a time on disk
            if not variant.identity:
                shutil.rmtree(folder, ignore_errors=True)  # one evaluation's variant at a time on disk
        return floor.judged(compare_samples(ref_out, outs, candidate.name, [target], kinds=kinds), target)

    remaining = None if budget is None else max(0.0, budget - (time.monotonic() - t0))
    result = search(ranked, evaluate, target, budget_s=remaining, cancelled=ctx.cancelled,
                    progress=lambda f, m: ctx.progress(None if f is None else 0.2 + 0.8 * f, m))
    result.seconds = time.monotonic() - t0  # a cancelled search reports its best set so far ("stopped": "cancelled")
    final = with_high_precision(plan, result.keep)
    doc = {"candidate": candidate.name, "reference": reference.name, **result.to_json(),
           "plan": final.to_json(), "first_nonfinite": first, "ranked": ranked[:50], "samples": len(prep.samples),
           "inputs": prep.source_text, "random_data": prep.random_data,
           "random_ops": randomness.to_json() if randomness is not None else no_random_ops(),
           "notes": {reference.name: ref_notes, candidate.name: cand_notes}}
    return doc


class _NoiseFloor:
    """The reference against itself with other draws (run once, when first needed), and each evaluation judged
    against it where the candidate cannot draw the reference's numbers."""

    def __init__(self, randomness: Randomness | None, spec: FallbackSpec, ctx: JobContext, prep: Prepared,
                 ref_out: list[dict[str, np.ndarray]], kinds: dict[str, OutputKind]) -> None:
        from app.core.measure import NOISE_FLOOR

        self.randomness, self.spec, self.ctx, self.prep, self.ref_out, self.kinds = (
            randomness, spec, ctx, prep, ref_out, kinds)
        self.report: CandidateReport | None = None
        self.judging = randomness is not None and randomness.methods.get(spec.candidate.name) == NOISE_FLOOR

    def __call__(self) -> CandidateReport:
        from app.core.measure import compare_samples, floor_summary

        if self.report is None:
            assert self.randomness is not None
            reference = self.spec.reference
            outs, _ = run_outputs(reference, self.prep, self.spec, self.ctx,
                                  rewrite=floor_rewrite(self.randomness, reference, self.ctx))
            self.report = compare_samples(self.ref_out, outs, "noise floor", [self.spec.target], kinds=self.kinds)
            self.randomness.floor = floor_summary(self.report)
        return self.report

    def judged(self, report: CandidateReport, target: Tolerance) -> CandidateReport | dict[str, float | bool | None]:
        """An evaluation as the search reads it: the report itself where the draws matched; against the noise floor,
        its metrics with `met` true when every output meets the target or is within the floor."""
        if not self.judging:
            return report
        from app.core.measure import judge_by_floor
        from app.core.precision import measure_target as measure

        failing = {o.name for o in report.outputs if not o.passed}
        judge_by_floor(report, self())
        metrics, _ = measure(report, target)
        met = bool(report.outputs) and all(
            (target.passes(o) or (o.name in failing and o.passed)) and not o.new_nonfinite and not o.shape_mismatch
            for o in report.outputs)
        return {**metrics, "met": met}


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
