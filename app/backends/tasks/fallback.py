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
from app.backends.tasks.eval import CALIB_IMAGES, eval_task
from app.backends.tasks.specs import EvalSpec, FallbackSpec, PrecisionNotAvailable, Target, takes
from app.core.measure import Tolerance

if TYPE_CHECKING:
    from app.core.measure import CandidateReport, OutputKind, Randomness
    from app.core.precision import PrecisionPlan
    from app.core.results import EvalCandidate
    from app.jobs import JobContext, JobEvent


@takes(FallbackSpec)
def fallback_task(spec: FallbackSpec, ctx: JobContext) -> dict:
    """`trtlab fallback`: a small set of nodes to keep in FP32 (or unquantized) so the candidate meets a target.

    Ranks the plan's changeable nodes by a per-layer diagnosis, then searches (app.core.precision.fallback); each
    evaluation builds the variant with some nodes kept FP32, runs it on every sample on the candidate's
    backend and compares it with the reference's outputs. A model that draws random numbers gets the draws
    `compare` gives it: the same seeds, else each evaluation judged against the noise floor. With a dataset, each
    evaluation is `eval` on a subset of it against its truth instead, and the plan found is confirmed on all of it
    (`_Truth`)."""
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
    truth = None
    if spec.dataset is not None:
        spec = spec.with_(shapes=_image_shape(spec))
        truth = _Truth(spec, ctx, plan, planned)
    prep = prepare_samples(spec, ctx)
    # Random nodes: the same seeds as `compare` gives them, else the noise floor (common.random_draws).
    randomness = random_draws(prep.model_path, reference, [candidate])
    try:
        return _search(spec, ctx, prep, randomness, plan, planned, graph, t0, truth)
    finally:
        if randomness is not None:
            randomness.remove_copies()


def _search(spec: FallbackSpec, ctx: JobContext, prep: Prepared, randomness: Randomness | None,
            plan: PrecisionPlan, planned: dict[str, str], graph: onnx.GraphProto, t0: float,
            truth: _Truth | None) -> dict:
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
    agreement = target if isinstance(target, Tolerance) else None  # None: a drop on the dataset's metric
    tols = [] if agreement is None else [agreement]
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
                                  compare_samples(ref_out, cand_out, candidate.name, tols, kinds=kinds), floor)
        # Against the noise floor, a tensor the reference's own draws move as far ranks as unchanged.
        floors = floor_by_tensor(facts)
        rows = [dataclasses.replace(r, cosine=1.0) if within_floor(r, floors.get(r.tensor)) else r for r in rows]
    calib = calibration(spec, ctx)
    calib_method = spec.calib_method
    # The candidate's variant (from the cache by now) says which nodes really changed: only those can help.
    report = build_variant(model_path, plan, calib=calib, calib_method=calib_method,
                           cache_dir=spec.cache_dir).report
    plannable = _changed_nodes(planned, report)
    if truth is not None:
        truth.quantized = {k for k in plannable if planned[k] == "int8"}
    ranked = _overflowing_first(rank_candidates(rows, plannable, graph=graph), graph, report)
    folder = workdir(ctx) / "fallback-variants"

    def evaluate(keep: frozenset[str]) -> CandidateReport | dict[str, float | bool | None]:
        assert agreement is not None  # a drop target is judged by `truth`
        if not keep:  # the variant as planned: its outputs are already here
            return floor.judged(compare_samples(ref_out, cand_out, candidate.name, tols, kinds=kinds), agreement)
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
        return floor.judged(compare_samples(ref_out, outs, candidate.name, tols, kinds=kinds), agreement)

    def say(f: float | None, message: str) -> None:
        fraction = None if f is None else 0.2 + (0.8 if truth is None else 0.7) * f
        if truth is not None:
            truth.step.at(fraction, message)
        ctx.progress(fraction, message)

    remaining = None if budget is None else max(0.0, budget - (time.monotonic() - t0))
    result = search(ranked, evaluate if truth is None else truth.evaluate, target, budget_s=remaining,
                    cancelled=ctx.cancelled, progress=say)
    confirmed = {} if truth is None else truth.confirm(frozenset(result.keep), result.met, result.stopped)
    ref_notes += [] if truth is None else truth.cache_note()
    result.seconds = time.monotonic() - t0  # a cancelled search reports its best set so far ("stopped": "cancelled")
    final = with_high_precision(plan, result.keep)
    doc = {"candidate": candidate.name, "reference": reference.name, **result.to_json(),
           "plan": final.to_json(), "first_nonfinite": first, "ranked": ranked[:50], "samples": len(prep.samples),
           "inputs": prep.source_text, "random_data": prep.random_data,
           "random_ops": randomness.to_json() if randomness is not None else no_random_ops(),
           "notes": {reference.name: ref_notes, candidate.name: cand_notes}, **confirmed}
    return doc


class _Truth:
    """The search's judge against a labelled dataset's truth: each evaluation is `eval` of the evaluation's plan on
    the candidate's backend (B:plan) over the subset (the first `subset` images after a shuffle from `seed`), the
    target its tolerance; `confirm` then evaluates the plan found over the whole set. INT8 calibrates as `eval`
    calibrates a plan with INT8 in it: on `calib`, else on the dataset's first images, so `trtlab eval --plan` (with
    the same --calib) gives the same numbers."""

    def __init__(self, spec: FallbackSpec, ctx: JobContext, plan: PrecisionPlan, planned: dict[str, str]) -> None:
        from pathlib import Path

        from app.core.dataset import load_dataset

        assert spec.dataset is not None
        self.spec, self.plan, self.step = spec, plan, _Step(ctx)
        self.int8 = [k for k, p in planned.items() if p == "int8"]
        self.dataset = str(Path(spec.dataset).resolve())
        self.total = len(load_dataset(spec.dataset, spec.labels, spec.format))
        self.size = min(spec.subset, self.total)
        self.whole = EvalSpec(model=spec.model, dataset=spec.dataset, labels=spec.labels, format=spec.format,
                              reference=spec.reference, candidates=(Target(spec.candidate.backend, "plan"),),
                              tolerances=(str(spec.target),), seed=spec.seed, shapes=spec.shapes, inputs=spec.inputs,
                              options=spec.options, plan=plan, calib=spec.calib, shuffle=True,
                              calib_samples=min(spec.calib_samples or CALIB_IMAGES, self.size),
                              calib_method=spec.calib_method, cache_dir=spec.cache_dir,
                              output_kinds=spec.output_kinds)
        # The subset: the first images of the whole set's order drawn from the seed (all of it when it is no larger:
        # then it is its own confirmation). Without --calib, INT8 calibrates on the subset's first images, which are
        # the whole set's first too: the search and the confirmation judge the same variant of a plan.
        self.part = self.whole if self.size == self.total else self.whole.with_(limit=self.size)
        self.seen: dict[frozenset[str], EvalCandidate] = {}
        self.answers = self.cached = 0  # the reference's answers over every evaluation, and those from the cache
        self.quantized: set[str] = set()  # the INT8 nodes the candidate's variant quantized (set by the search)

    def evaluate(self, keep: frozenset[str]) -> dict[str, float | bool | None]:
        """The change of the target's metric on the subset with `keep` kept high (points) and whether it is met."""
        from app.core.precision import STOP_CANCELLED, SearchStopped
        from app.jobs.protocol import JobCancelled

        try:
            self.seen[keep] = found = self._run(keep, self.part)
        except JobCancelled:
            raise SearchStopped(STOP_CANCELLED) from None
        delta = found.delta.get(self.spec.target.metric)
        return {self.spec.target.metric: None if delta is None else delta * 100, "met": found.passed}

    def _run(self, keep: frozenset[str], spec: EvalSpec) -> EvalCandidate:
        from app.core.precision import with_high_precision
        from app.core.results import EvaluationResult

        plan = with_high_precision(self.plan, keep)
        if self.quantized and self.quantized <= keep:  # nothing left to quantize: the same graph with no INT8 node
            plan = plan.with_overrides(self.int8, "fp32")
        result = EvaluationResult.from_json(eval_task(spec.with_(plan=plan), self.step.context))
        self.answers += result.dataset.images
        self.cached += result.cached.get(result.reference.name, 0)
        return result.candidates[0]

    def cache_note(self) -> list[str]:
        return [f"on the dataset, {self.cached:,} of its {self.answers:,} answers over the evaluations came from the "
                "answer cache"] if self.answers else []

    def confirm(self, keep: frozenset[str], met: bool, stopped: str | None) -> dict:
        """The dataset's facts for the search's result: the subset's change with the plan found, then the whole set's
        (`confirmed`), which decides `met`; not run when the search missed the target or was cancelled (then
        "stopped" says so)."""
        from app.jobs.protocol import JobCancelled

        metric = self.spec.target.metric
        out: dict = {"dataset": self.dataset, "dataset_images": self.total, "subset": self.size, "met": False}
        found = self.seen.get(keep)
        if found is None:
            return out
        out |= {"subset_delta": found.delta.get(metric), "subset_ci": list(found.ci.get(metric) or ())}
        if not met or stopped == "cancelled":
            return out
        if self.part is not self.whole:
            message = f"Confirming on all {self.total:,} images…"
            self.step.at(0.9, message)
            self.step.ctx.progress(0.9, message)
            try:
                found = self._run(keep, self.whole)
            except JobCancelled:
                return {**out, "stopped": "cancelled"}
        return out | {"confirmed": found.passed, "met": found.passed, "confirmed_delta": found.delta.get(metric),
                      "confirmed_ci": list(found.ci.get(metric) or ())}


def _image_shape(spec: FallbackSpec) -> dict[str, tuple[int, ...]]:
    """The shapes with a dynamic image input filled in as `eval` fills it: what the model says, else its static dims
    with a batch of 1 (other dynamic dims are left to --shapes)."""
    from app.core.evaluate import default_input_shape
    from app.core.model import graph_inputs, value_info_to_tensor_info

    model = onnx.load(spec.model, load_external_data=False)
    infos = [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]
    if len(infos) != 1 or infos[0].name in spec.shapes or infos[0].shape is None or len(infos[0].shape) != 4:
        return dict(spec.shapes)
    info, dims = infos[0], infos[0].shape
    shape = default_input_shape(model, info)
    if shape is None and all(isinstance(d, int) and d > 0 for d in dims[1:]):
        shape = (1, *(int(d) for d in dims[1:]))
    return {**spec.shapes, info.name: shape} if shape is not None else dict(spec.shapes)


class _Step:
    """The context `eval` runs in for one evaluation: its progress shown under the search's step, in the step's
    fraction; its own folder; the job's Cancel."""

    def __init__(self, ctx: JobContext) -> None:
        from app.jobs import JobContext

        folder = workdir(ctx) / "eval"
        folder.mkdir(parents=True, exist_ok=True)
        self.ctx, self.label = ctx, ""
        self.fraction: float | None = None
        self.context = JobContext(folder, self._emit, ctx.cancelled)

    def at(self, fraction: float | None, message: str) -> None:
        self.fraction, self.label = fraction, message.partition(":")[0].rstrip("…")

    def _emit(self, event: JobEvent) -> None:
        if event.kind == "progress":
            self.ctx.progress(self.fraction, f"{self.label}: {event.message}")
        elif event.kind == "log":
            self.ctx.log(event.message, event.level)


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
            tols = [t for t in (self.spec.target,) if isinstance(t, Tolerance)]
            self.report = compare_samples(self.ref_out, outs, "noise floor", tols, kinds=self.kinds)
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
