"""The run / compare / bench pipeline as job functions: `fn(params, ctx) -> dict`.

They run in a child process (app.jobs) for the GUI and the CLI alike; params and results are JSON-safe,
arrays go to `.npz` files in the job's folder.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from app.backends import ENGINE_BACKENDS, BackendSpecError, BackendUnavailable, Target, get_backend
from app.core.errors import TrtlabError, VariantLoadError
from app.core.precision import PrecisionPlan
from app.core.tensors import graph_inputs, value_info_to_tensor_info

log = logging.getLogger(__name__)


class PrecisionNotAvailable(TrtlabError):
    title = "Precision not available"


@dataclass
class _Prepared:
    model_path: str
    samples: list[dict[str, np.ndarray]]
    source_text: str
    random_data: bool
    shapes: dict[str, tuple[int, ...]]


def target_plan(target: Target, params: dict) -> PrecisionPlan:
    """The plan a target runs: the params' plan for `B:plan`, else every node in the target's precision."""
    from app.core.precision import PrecisionPlan

    if target.precision == "plan":
        if not params.get("plan"):
            raise PrecisionNotAvailable(f"{target.name} needs a precision plan, and none was given.",
                                        fix="Pass --plan PLAN.json, or use a precision such as "
                                            f"{target.backend}:fp16.")
        return PrecisionPlan.from_json(params["plan"])
    return PrecisionPlan(default=target.precision)


CALIB_SEED_OFFSET = 7919  # random calibration data never repeats the random samples it is then tested on


def _calibration(params: dict, ctx: object | None):
    """A callable making the INT8 calibration samples (once): `--calib`, else the `--inputs` source; random
    calibration data comes from its own seed, so a variant is not tested on the samples it was calibrated on."""
    made: list[tuple[list[dict[str, np.ndarray]], bool]] = []

    def make() -> tuple[list[dict[str, np.ndarray]], bool]:
        if made:
            return made[0]
        source = dict(params.get("calib") or params.get("inputs") or {"kind": "random",
                                                                      "seed": int(params.get("seed", 0))})
        random = source.get("kind", "random") == "random"
        if random and not params.get("calib"):
            source["seed"] = int(source.get("seed", 0) or 0) + CALIB_SEED_OFFSET
        count = int(params.get("calib_samples") or (CALIB_SAMPLES if random else CALIB_MAX))
        prep = prepare_samples({**params, "inputs": source, "samples": count}, ctx)
        made.append((prep.samples, prep.random_data))
        return made[0]
    return make


def _cancel_check(ctx: object | None):
    """`cancelled()` for long core work inside a job: raises the job's own cancel, so it ends as cancelled."""
    if ctx is None:
        return None

    def cancelled() -> bool:
        ctx.check_cancelled()
        return False
    return cancelled


CALIB_SAMPLES = 16   # random calibration samples when no data is given
CALIB_MAX = 512      # a folder of samples or images calibrates on up to this many


def variant_path(model_path: str, target: Target, ctx: object | None = None,
                 params: dict | None = None) -> tuple[str, list[str]]:
    """The graph a target runs, and notes about it: the model itself for FP32, else the variant for its
    precision or plan (built once, then taken from the variant cache)."""
    from app.core.variants import build_variant

    params = params or {}
    plan = target_plan(target, params)
    if target.precision == "fp32":
        return model_path, []
    variant = build_variant(
        model_path, plan, calib=_calibration({**params, "model": model_path}, ctx),
        calib_method=str(params.get("calib_method") or "minmax"),
        progress=(lambda f, m: ctx.progress(f, m)) if ctx is not None else None,
        cancelled=_cancel_check(ctx), workdir=getattr(ctx, "workdir", None),
        cache_dir=params.get("cache_dir"))
    notes = list(variant.notes)
    if target.backend == "ort-cpu" and "half" in variant.report:
        notes.append("ONNX Runtime's CPU provider computes FP32 between Casts: this measures rounding of weights "
                     "and activations, not half-precision arithmetic or speed")
    return variant.path, notes


def prepare_samples(params: dict, ctx: object | None = None) -> _Prepared:
    """Load the model's input declarations and make the input samples the params ask for."""
    from app.core.inputs import InputSource, make_samples, resolve_input_shapes

    model_path = str(params["model"])
    model = onnx.load(model_path, load_external_data=False)
    infos = [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]
    user = {k: tuple(int(d) for d in v) for k, v in (params.get("shapes") or {}).items()}
    shapes = resolve_input_shapes(infos, user)
    source = InputSource.from_json(params.get("inputs") or {"kind": "random", "seed": int(params.get("seed", 0))})
    samples = make_samples(model, infos, shapes, source, samples=int(params.get("samples", 1)))
    return _Prepared(model_path, samples, source.describe(), source.is_random, shapes)


def _workdir(ctx: object | None) -> Path:
    """The job's folder; a fresh temporary one outside a job. Never the model's folder: it may be the user's."""
    workdir = getattr(ctx, "workdir", None)
    if workdir:
        return Path(workdir)
    import tempfile

    return Path(tempfile.mkdtemp(prefix="trtlab-"))


def _progress(ctx: object | None, fraction: float | None, message: str) -> None:
    if ctx is not None:
        ctx.progress(fraction, message)
        ctx.check_cancelled()


def open_session(target: Target, path: str, params: dict, ctx: object | None,
                 shapes: dict[str, tuple[int, ...]]) -> object:
    """A backend session on a graph; native TensorRT builds its engine (with progress and Cancel) first."""
    options = params.get("options") or {}
    if target.backend in ENGINE_BACKENDS:  # trt, trt-rtx
        return get_backend(target.backend).prepare(path, options, ctx=ctx, shapes=shapes)  # type: ignore[call-arg]
    try:
        return get_backend(target.backend).prepare(path, options)
    except BackendUnavailable as exc:
        # ONNX Runtime is here (it raised while loading the graph, not before): the graph is at fault. The user's
        # model passed the loader's checks; a variant trtlab wrote is trtlab's fault, so the job failed (exit 4).
        if exc.__cause__ is None:
            raise
        model = params.get("model")
        if model is not None and Path(path).resolve() == Path(str(model)).resolve():
            raise TrtlabError(exc.message, fix="Check that this onnxruntime supports the model's opsets and IR "
                                               "version (pip install -U onnxruntime).") from exc
        raise VariantLoadError(f"The {target.precision.upper()} variant trtlab wrote for this model "
                               f"({Path(path).name}) cannot be loaded: {exc.message}",
                               fix="This is a fault in trtlab, not in your model: report the model and this "
                                   "message. Delete the variant cache (TRTLAB_CACHE_DIR or ~/.cache/trtlab/"
                                   "variants) if the file was damaged on disk.") from exc


def run_outputs(target: Target, prep: _Prepared, params: dict, ctx: object | None,
                span: tuple[float, float] = (0.0, 1.0)) -> tuple[list[dict[str, np.ndarray]], list[str]]:
    """Run every sample on one target; returns the outputs per sample and the session's notes."""
    lo, hi = span
    _progress(ctx, lo, f"Preparing {target.name}…")
    path, variant_notes = variant_path(prep.model_path, target, ctx, params)
    session = open_session(target, path, params, ctx, prep.shapes)
    try:
        outs = []
        for i, feeds in enumerate(prep.samples):
            outs.append(session.run(feeds))
            _progress(ctx, lo + (hi - lo) * (i + 1) / len(prep.samples),
                      f"{target.name}: sample {i + 1} of {len(prep.samples)}")
        return outs, variant_notes + list(session.notes)
    finally:
        session.close()


def run_task(params: dict, ctx: object) -> dict:
    """`trtlab run`: one target on the input samples; outputs saved to outputs.npz."""
    target = Target.parse(params["target"])
    prep = prepare_samples(params, ctx)
    outs, notes = run_outputs(target, prep, params, ctx)
    arrays = {f"{name}" if len(outs) == 1 else f"{name}__{i}": arr
              for i, sample in enumerate(outs) for name, arr in sample.items()}
    npz = ctx.save_arrays("outputs", arrays)
    return {
        "backend": target.name, "samples": len(outs), "inputs": prep.source_text, "random_data": prep.random_data,
        "notes": notes, "npz": npz,
        "outputs": [{"name": k, "shape": list(v.shape), "dtype": str(v.dtype)} for k, v in outs[0].items()],
    }


def compare_task(params: dict, ctx: object) -> dict:
    """`trtlab compare`: the reference and each candidate on the same samples, then every metric."""
    from app.core.compare import Tolerance, compare_report_json, compare_samples

    reference = Target.parse(params.get("reference") or "ort-cpu:fp32")
    candidates = [Target.parse(c) for c in params["candidates"]]
    tolerances = [Tolerance.parse(t) for t in params.get("tolerances") or []]
    prep = prepare_samples(params, ctx)
    steps = 1 + len(candidates)
    ref_out, ref_notes = run_outputs(reference, prep, params, ctx, (0.0, 1.0 / steps))
    reports, notes = [], {reference.name: ref_notes}
    for k, cand in enumerate(candidates):
        out, cand_notes = run_outputs(cand, prep, params, ctx, ((k + 1) / steps, (k + 2) / steps))
        notes[cand.name] = cand_notes
        _progress(ctx, None, f"Comparing {cand.name} with {reference.name}…")
        reports.append(compare_samples(ref_out, out, cand.name, tolerances))
    doc = compare_report_json(reference.name, len(prep.samples), reports)
    doc.update({"inputs": prep.source_text, "random_data": prep.random_data, "notes": notes,
                "shapes": {k: list(v) for k, v in prep.shapes.items()},
                "tolerances": sorted({str(t) for c in doc.get("candidates", []) for t in c.get("tolerances", [])})
                or [f"{t.metric}:{t.value}" for t in tolerances]})
    doc["plots"] = {r.name: plot_data(r) for r in reports}
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


def bench_task(params: dict, ctx: object) -> dict:
    """`trtlab bench`: latency statistics of one target."""
    from app.core.compute import device_of
    from app.core.latency import Budget, measure

    target = Target.parse(params["target"])
    mode = params.get("mode") or "end_to_end"
    prep = prepare_samples({**params, "samples": 1}, ctx)
    _progress(ctx, 0.0, f"Preparing {target.name}…")
    path, variant_notes = variant_path(prep.model_path, target, ctx, params)
    session = open_session(target, path, params, ctx, prep.shapes)
    try:
        fn = session.timed_runner(prep.samples[0], mode)
        batch = next(iter(prep.shapes.values()), (1,))[0] if prep.shapes else 1
        stats = measure(fn, Budget.parse(str(params.get("warmup", "10"))),
                        Budget.parse(str(params.get("iterations", "100"))), mode=mode, batch=int(batch or 1),
                        cancel=ctx.cancelled if ctx is not None else None,
                        progress=(lambda f, m: ctx.progress(f, m)) if ctx is not None else None,
                        device=device_of(target.backend))
        layer_times = _layer_times(session, prep, ctx) if target.backend in ENGINE_BACKENDS else None
    finally:
        session.close()
    doc = {"backend": target.name, **stats.to_json()}
    doc.update({"notes": variant_notes + list(session.notes), "inputs": prep.source_text,
                "times_ms": [round(float(t), 6) for t in stats.times_ms]})
    if layer_times is not None:
        doc["layer_times"] = layer_times
    return doc


def _layer_times(session: object, prep: _Prepared, ctx: object | None) -> dict:
    """Per engine layer timing of a TensorRT engine (IProfiler over 20 runs), after the benchmark; the build
    result maps engine layers to ONNX nodes."""
    from app.core.engine.inspect import per_layer_times

    _progress(ctx, 0.97, "Timing each engine layer…")
    times = per_layer_times(session.profile_layers(prep.samples[0], runs=20))  # type: ignore[attr-defined]
    return {k: {"mean_ms": v.mean_ms, "median_ms": v.median_ms, "share": v.share} for k, v in times.items()}


def layer_errors(prep: _Prepared, reference: Target, candidate: Target, params: dict, ctx: object | None,
                 span: tuple[float, float] = (0.0, 1.0)) -> tuple[list, str | None, dict]:
    """Every float intermediate tensor of the reference and the candidate on the first sample, compared.

    Returns the rows (node order), the first node turning NaN/Inf, and facts about the run."""

    from app.core.diagnose import diagnose_outputs, expose_all
    from app.core.fileio import atomic_write_bytes

    if reference.precision != "fp32":
        raise PrecisionNotAvailable(f"A per-layer diagnosis compares against an FP32 reference, not {reference.name}.",
                                    fix=f"Use --reference {reference.backend}:fp32 (the default is ort-cpu:fp32).")
    lo, hi = span
    feeds = prep.samples[0]
    folder = _workdir(ctx)
    _progress(ctx, lo, "Exposing intermediate tensors…")
    ref_model = onnx.load(prep.model_path)
    cand_path, notes = variant_path(prep.model_path, candidate, ctx, params)
    cand_model = onnx.load(cand_path)
    ref_exposed, names = expose_all(ref_model)
    cand_exposed, cand_names = expose_all(cand_model, names)
    paths = []
    for tag, m in (("reference", ref_exposed), ("candidate", cand_exposed)):
        path = folder / f"diagnose_{tag}.onnx"
        atomic_write_bytes(path, m.SerializeToString())
        paths.append(str(path))
    outs = []
    for k, (target, path) in enumerate(((reference, paths[0]), (candidate, paths[1]))):
        _progress(ctx, lo + (hi - lo) * (0.1 + 0.4 * k), f"Running {target.name} with {len(names):,} tensors "
                  "exposed…")
        session = open_session(target, path, params, ctx, prep.shapes)
        try:
            outs.append(session.run(feeds))
        finally:
            session.close()
    _progress(ctx, lo + (hi - lo) * 0.9, "Measuring each tensor…")
    rows, first = diagnose_outputs(ref_model, outs[0], outs[1])
    return rows, first, {"notes": notes, "tensors_missing_in_candidate": len(names) - len(cand_names)}


def diagnose_task(params: dict, ctx: object) -> dict:
    """`trtlab diagnose`: every float intermediate tensor of the reference and the candidate, compared."""
    reference = Target.parse(params.get("reference") or "ort-cpu:fp32")
    candidate = Target.parse(params["candidate"])
    prep = prepare_samples({**params, "samples": 1}, ctx)
    rows, first, facts = layer_errors(prep, reference, candidate, params, ctx)
    finite = [r for r in rows if r.cosine is not None]
    worst = min(finite, key=lambda r: r.cosine) if finite else None
    return {"candidate": candidate.name, "reference": reference.name, "first_nonfinite": first,
            "worst": worst.node if worst else None, "layers": [r.to_json() for r in rows],
            "tensors_compared": len(rows), "tensors_missing_in_candidate": facts["tensors_missing_in_candidate"],
            "inputs": prep.source_text, "random_data": prep.random_data, "notes": facts["notes"]}


def fallback_task(params: dict, ctx: object) -> dict:
    """`trtlab fallback`: a small set of nodes to keep in FP32 (or unquantized) so the candidate meets a target.

    Ranks the plan's changeable nodes by a per-layer diagnosis, then searches (app.core.fallback); each
    evaluation builds the variant with some nodes kept FP32, runs it on every sample on the candidate's
    backend and compares it with the reference's outputs."""
    import shutil
    import time

    from app.core.compare import Tolerance, compare_samples
    from app.core.fallback import STOP_CANCELLED, SearchStopped, rank_candidates, search, with_high_precision
    from app.core.variants import build_variant
    from app.jobs.protocol import JobCancelled

    t0 = time.monotonic()
    reference = Target.parse(params.get("reference") or "ort-cpu:fp32")
    candidate = Target.parse(params["candidate"])
    target = Tolerance.parse(str(params["target"]))
    plan = target_plan(candidate, params)
    model_path = str(params["model"])
    graph = onnx.load(model_path, load_external_data=False).graph
    planned = {r.key: r.precision for r in plan.resolve(graph) if r.precision not in ("fp32", "fixed")}
    plannable = set(planned)
    if not plannable:
        raise PrecisionNotAvailable(f"{candidate.name}: every node is already FP32, so there is nothing to fall "
                                    "back from.", fix="Give a candidate such as ort-cpu:fp16 or a plan with "
                                                      "FP16/BF16/INT8 nodes.")
    budget = float(params["budget_s"]) if params.get("budget_s") else None
    prep = prepare_samples(params, ctx)
    ref_out, ref_notes = run_outputs(reference, prep, params, ctx, (0.0, 0.05))
    # Diagnose on the sample the candidate gets most wrong: a sample where nothing breaks ranks by noise.
    cand_out, _ = run_outputs(candidate, prep, params, ctx, (0.05, 0.1))
    worst = _worst_sample(ref_out, cand_out)
    diag_prep = _Prepared(prep.model_path, [prep.samples[worst]], prep.source_text, prep.random_data, prep.shapes)
    rows, first, facts = layer_errors(diag_prep, reference, candidate, params, ctx, (0.1, 0.2))
    calib = _calibration({**params, "model": model_path}, ctx)
    calib_method = str(params.get("calib_method") or "minmax")
    # The candidate's variant (from the cache by now) says which nodes really changed: only those can help.
    report = build_variant(model_path, plan, calib=calib, calib_method=calib_method,
                           cache_dir=params.get("cache_dir")).report
    plannable = _changed_nodes(planned, report)
    ranked = _overflowing_first(rank_candidates(rows, plannable, graph=graph), graph, report)
    folder = _workdir(ctx) / "fallback-variants"

    def evaluate(keep: frozenset[str]):
        if not keep:  # the variant as planned: its outputs are already here
            return compare_samples(ref_out, cand_out, candidate.name, [target])
        try:
            variant = build_variant(model_path, with_high_precision(plan, keep), calib=calib,
                                    calib_method=calib_method, cancelled=_cancel_check(ctx),
                                    workdir=getattr(ctx, "workdir", None), cache_dir=folder, allow_no_int8=True)
        except JobCancelled:
            # Cancelled mid-evaluation: the search stops and reports the best set it has, not nothing.
            raise SearchStopped(STOP_CANCELLED) from None
        session = open_session(candidate, variant.path, params, ctx, prep.shapes)
        try:
            outs = [session.run(feeds) for feeds in prep.samples]
        finally:
            session.close()
            if not variant.identity:
                shutil.rmtree(folder, ignore_errors=True)  # one evaluation's variant at a time on disk
        return compare_samples(ref_out, outs, candidate.name, [target])

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
    from app.core.diagnose import tensor_error

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


def plan_summary(plan: PrecisionPlan) -> str:
    """A plan in a few words: 'fp16', or 'fp16 with 3 nodes overridden, rules for Conv'."""
    parts = [plan.default]
    if plan.overrides:
        parts.append(f"{len(plan.overrides)} node override{'s' if len(plan.overrides) != 1 else ''}")
    if plan.op_rules:
        parts.append("rules for " + ", ".join(f"{op} {p}" for op, p in sorted(plan.op_rules.items())))
    return parts[0] + (" with " + ", ".join(parts[1:]) if parts[1:] else "")


def variant_task(params: dict, ctx: object) -> dict:
    """`trtlab variant`: build (or take from the cache) the variant graph and save it where asked."""
    from app.core.variants import build_variant, save_model

    target = Target.parse(params["target"])
    plan = target_plan(target, params)
    model_path = str(params["model"])
    raised_note = ""
    if params.get("opset"):
        model_path, raised_note = _raised_opset(params, int(params["opset"]), ctx)
    _progress(ctx, 0.0, "Building the variant…")
    variant = build_variant(
        model_path, plan, calib=_calibration(params, ctx), calib_method=str(params.get("calib_method") or "minmax"),
        progress=lambda f, m: ctx.progress(f, m), cancelled=_cancel_check(ctx), workdir=ctx.workdir,
        cache_dir=params.get("cache_dir"))
    out = str(params["out"])
    _progress(ctx, 0.95, f"Saving {out}…")
    save_model(onnx.load(variant.path), out)
    notes = ([raised_note] if raised_note else []) + list(variant.notes)
    return {"model": str(params["model"]), "out": out, "plan": plan.to_json(), "plan_summary": plan_summary(plan),
            "key": variant.key, "cached": variant.cached, "identity": variant.identity, "notes": notes,
            "report": variant.report}


def _raised_opset(params: dict, opset: int, ctx: object) -> tuple[str, str]:
    """`trtlab variant --opset N`: the model at opset N, saved in the job's folder, and a note saying so. Its
    FP32 outputs are compared with the model's on one random sample where the input shapes are known."""
    from app.core.errors import TrtlabError
    from app.core.transforms.opset import raise_opset
    from app.core.variants import save_model

    _progress(ctx, 0.0, f"Raising the opset to {opset}…")
    try:
        feeds = prepare_samples({**params, "inputs": {"kind": "random", "seed": 0}, "samples": 1}, ctx).samples
    except TrtlabError:
        feeds = []  # dynamic dims not given: the converter's result is still fully checked, not run
    raised, note = raise_opset(onnx.load(str(params["model"])), opset, feeds or None)
    if not note:
        return str(params["model"]), f"the model is already at opset {opset} or newer"
    path = Path(getattr(ctx, "workdir", None) or Path(str(params["out"])).parent) / \
        f"{Path(str(params['model'])).stem}.opset{opset}.onnx"
    save_model(raised, path)
    if not feeds:
        note += " (FP32 outputs not compared: give --shapes for the dynamic dims to compare them)"
    return str(path), note


def engine_report(layer_info: dict | None, variant_graph: onnx.GraphProto, plan: PrecisionPlan,
                  model_graph: onnx.GraphProto, variant_report: dict | None = None) -> dict:
    """The engine's layers (the precision that ran, tactic, ONNX nodes fused in) and what differs from the plan."""
    from app.core.engine.inspect import map_to_onnx, parse_engine_info, plan_mismatches
    from app.core.precision import node_keys

    if not layer_info:
        return {"layers": [], "ran": {}, "mismatches": [], "notes": ["the engine gave no layer information"]}
    info = parse_engine_info(layer_info)
    layers = [layer for layer in info.layers if layer.profile == 0]
    mapping = map_to_onnx(layers, variant_graph)
    planned = {r.key: "fixed" if r.precision == "fixed" else r.planned for r in plan.resolve(model_graph)}
    # What the variant really asked of TensorRT: nodes the half transform kept FP32 are FP32 in the graph.
    for key in ((variant_report or {}).get("half") or {}).get("kept_fp32") or {}:
        if key in planned:
            planned[key] = "fp32"
    op_types = dict(zip(node_keys(model_graph), (n.op_type for n in model_graph.node), strict=True))
    mismatches = plan_mismatches(mapping.precision, planned, mapping=mapping, op_types=op_types)
    return {"layers": [{"name": layer.name, "type": layer.type, "precision": layer.precision, "tactic": layer.tactic,
                        "onnx_nodes": mapping.nodes.get(layer.name, []), "kind": layer.kind,
                        "inputs": [[t.name, t.dtype, list(t.dims)] for t in layer.inputs],
                        "outputs": [[t.name, t.dtype, list(t.dims)] for t in layer.outputs]} for layer in layers],
            "ran": mapping.precision, "notes": list(info.notes),
            "mismatches": [{"node": m.key, "planned": m.planned, "ran": m.ran, "severity": m.severity,
                            "message": m.message, "layers": list(m.layers)} for m in mismatches]}


def _variant_report(path: str) -> dict:
    """The transform report stored beside a cached variant ({} for the model itself)."""
    import json

    meta = Path(path).with_suffix(".json")
    try:
        return dict(json.loads(meta.read_text(encoding="utf-8")).get("report") or {})
    except (OSError, ValueError):
        return {}


def build_task(params: dict, ctx: object) -> dict:
    """`trtlab build`: the variant graph for the precision or plan, built into a TensorRT engine (`trt`) or a
    TensorRT for RTX plan (`trt-rtx`), or taken from the engine cache, saved where asked, with its layers mapped
    to the ONNX nodes (from the engine inspector, or from the builder's `Layers:` dump where no GPU can load
    the engine)."""
    import shutil

    from app.backends.trt import build_config_from, ensure_engine
    from app.backends.trt_build import BuildFailed
    from app.backends.trt_flavour import flavour_of
    from app.core.engine.parser_errors import explain, issue_from_fields, map_issues_to_graph

    target = Target.parse(params["target"])
    if target.backend not in ENGINE_BACKENDS:
        raise BackendSpecError(f"{target.backend} does not build engines.",
                               fix=f"Build with one of {', '.join(ENGINE_BACKENDS)}.")
    flavour = flavour_of(target.backend)
    plan = target_plan(target, params)
    model_path = str(params["model"])
    path, notes = variant_path(model_path, target, ctx, params)
    variant_graph = onnx.load(path, load_external_data=False).graph
    inputs = [value_info_to_tensor_info(v) for v in graph_inputs(variant_graph)]
    shapes = {k: tuple(v) for k, v in (params.get("shapes") or {}).items()}
    config = build_config_from(params.get("options") or {}, inputs, shapes, variant_graph)
    try:
        outcome = ensure_engine(path, config, ctx, flavour=flavour)
    except BuildFailed as exc:
        issues = getattr(exc, "issues", None)
        if not issues:
            raise
        # The parser refused the graph: a result that names the nodes, so the GUI can show them on the graph.
        resolved = map_issues_to_graph([issue_from_fields(**i) for i in issues], variant_graph)
        errors = []
        for r in resolved:
            message, fix = explain(r)
            errors.append({"node": r.key, "op": r.issue.op, "code": r.issue.code, "message": message, "fix": fix})
        return {"model": model_path, "target": target.name, "ok": False, "parse_errors": errors, "notes": notes,
                "layers": [], "ran": {}, "mismatches": [], "warnings": []}
    out = params.get("out")
    if out:
        from app.core.fileio import atomic_write_bytes

        _progress(ctx, 0.98, f"Saving {out}…")
        atomic_write_bytes(out, outcome.path.read_bytes())
        shutil.copyfile(outcome.path.with_name(outcome.path.name + ".json"), f"{out}.json")
    model_graph = onnx.load(model_path, load_external_data=False).graph
    report = engine_report(outcome.layer_info, variant_graph, plan, model_graph, _variant_report(path))
    meta = outcome.meta
    gpu, cc = meta.get("gpu_name"), meta.get("compute_capability")
    if flavour.portable:  # an RTX plan is built for its targets, not for a GPU of this machine
        gpu, cc = "RTX GPUs (a portable plan, built without a GPU)", ", ".join(meta.get("runs_on") or [])
    if outcome.layer_source == "builder log":
        notes.append("engine layers read from the builder's Layers: dump: no GPU here can load this engine for the "
                     "engine inspector")
    return {"model": model_path, "target": target.name, "ok": True, "engine": str(outcome.path), "out": out,
            "cached": outcome.cached, "key": meta.get("key"), "trt_version": meta.get("trt_version"),
            "gpu": gpu, "compute_capability": cc, "backend": target.backend, "flavour": flavour.key,
            "targets": list(config.targets), "layer_source": outcome.layer_source,
            "config": config.to_json(), "warnings": outcome.warnings, "notes": notes + report.pop("notes"), **report}
