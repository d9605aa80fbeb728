"""What the jobs share: the plan a target runs, input and calibration samples, the variant a target runs, backend
sessions, and progress / cancel helpers."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import onnx

from app.backends import (
    ENGINE_BACKENDS,
    BackendUnavailable,
    EngineSession,
    ProfiledSession,
    Session,
    Target,
    get_engine_backend,
    get_ort_backend,
)
from app.backends.tasks.specs import JobInputs
from app.core.errors import TrtlabError, VariantLoadError
from app.core.model import graph_inputs, value_info_to_tensor_info
from app.core.precision import PrecisionPlan
from app.core.targets import require_plan

if TYPE_CHECKING:
    from app.core.measure import CandidateReport, InputSource, OutputKind, Randomness
    from app.jobs import JobContext

log = logging.getLogger(__name__)


@dataclass
class Prepared:
    """A job's model and its input samples (from `prepare_samples`)."""

    model_path: str
    samples: list[dict[str, np.ndarray]]
    source_text: str
    random_data: bool
    shapes: dict[str, tuple[int, ...]]
    source: InputSource | None = None


def target_plan(target: Target, spec: JobInputs) -> PrecisionPlan:
    """The plan a target runs: the spec's plan for `B:plan`, else every node in the target's precision."""
    if target.needs_plan:
        require_plan([target], spec.plan)
        assert spec.plan is not None  # require_plan refused a missing one
        return spec.plan
    return PrecisionPlan(default=target.precision)


CALIB_SEED_OFFSET = 7919  # random calibration data never repeats the random samples it is then tested on


def calibration(spec: JobInputs, ctx: JobContext | None) -> Callable[[], tuple[list[dict[str, np.ndarray]], bool]]:
    """A callable making the INT8 calibration samples (once): `--calib`, else the `--inputs` source; random
    calibration data comes from its own seed, so a variant is not tested on the samples it was calibrated on."""
    import dataclasses

    made: list[tuple[list[dict[str, np.ndarray]], bool]] = []

    def make() -> tuple[list[dict[str, np.ndarray]], bool]:
        if made:
            return made[0]
        source: InputSource = spec.calib or spec.inputs or default_source(spec)
        if source.is_random and spec.calib is None:
            source = dataclasses.replace(source, seed=source.seed + CALIB_SEED_OFFSET)
        count = spec.calib_samples or (CALIB_SAMPLES if source.is_random else CALIB_MAX)
        prep = prepare_samples(spec.with_(inputs=source, samples=count), ctx)
        made.append((prep.samples, prep.random_data))
        return made[0]
    return make


def cancel_check(ctx: JobContext | None) -> Callable[[], bool] | None:
    """`cancelled()` for long core work inside a job: raises the job's own cancel, so it ends as cancelled."""
    if ctx is None:
        return None

    def cancelled() -> bool:
        ctx.check_cancelled()
        return False
    return cancelled


CALIB_SAMPLES = 16   # random calibration samples when no data is given
CALIB_MAX = 512      # a folder of samples or images calibrates on up to this many


def variant_path(model_path: str, target: Target, ctx: JobContext | None, spec: JobInputs) -> tuple[str, list[str]]:
    """The graph a target runs, and notes about it: the model itself for FP32, else the variant for its
    precision or plan (built once, then taken from the variant cache)."""
    from app.core.precision import build_variant

    plan = target_plan(target, spec)
    if target.precision == "fp32":
        return model_path, []
    variant = build_variant(
        model_path, plan, calib=calibration(spec.with_(model=model_path), ctx), calib_method=spec.calib_method,
        progress=(lambda f, m: ctx.progress(f, m)) if ctx is not None else None,
        cancelled=cancel_check(ctx), workdir=getattr(ctx, "workdir", None), cache_dir=spec.cache_dir)
    notes = list(variant.notes)
    if target.backend == "ort-cpu" and "half" in variant.report:
        notes.append("ONNX Runtime's CPU provider computes FP32 between Casts: this measures rounding of weights "
                     "and activations, not half-precision arithmetic or speed")
    return variant.path, notes


def default_source(spec: JobInputs, model: onnx.ModelProto | None = None) -> InputSource:
    """The samples a job uses when it is given none: trtlab's sample photos for a model whose one input is an image
    (preprocessed by the model's preset, as `trtlab eval` does: app.core.evaluate.photo_source), trtlab's speech
    sample for a model with a waveform input (at the model's rate: its metadata's, else an audio output's
    ``rate=``), else seeded random data (whose description says when a spectrogram input was not fed photos). A
    folder of images given without its preprocessing gets the model's preset (app.core.evaluate.fit_source)."""
    from app.core.evaluate import fit_source, photo_source
    from app.core.measure import (
        InputSource,
        model_rate,
        not_photos,
        resolve_input_shapes,
        speech_source_for,
    )

    if spec.inputs is not None and (spec.inputs.kind != "images" or spec.inputs.preprocess is not None):
        return spec.inputs
    model = model if model is not None else onnx.load(spec.model, load_external_data=False)
    infos = [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]
    if spec.inputs is not None:
        return fit_source(model, infos, spec.inputs)
    try:
        shapes = resolve_input_shapes(infos, dict(spec.shapes))
    except TrtlabError:
        return InputSource(kind="random", seed=spec.seed)
    rate = model_rate(model) or next((k.rate for k in spec.output_kinds.values() if k.kind == "audio" and k.rate),
                                     None)
    return (photo_source(model, infos, shapes) or speech_source_for(infos, shapes, rate)
            or InputSource(kind="random", seed=spec.seed, note=not_photos(infos, shapes)))


def prepare_samples(spec: JobInputs, ctx: JobContext | None = None) -> Prepared:
    """Load the model's input declarations and make the input samples the spec asks for."""
    from app.core.evaluate import photo_tensor
    from app.core.measure import make_samples, resolve_input_shapes

    model_path = spec.model
    model = onnx.load(model_path, load_external_data=False)
    infos = [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]
    shapes = resolve_input_shapes(infos, dict(spec.shapes))
    source = default_source(spec, model)  # photos: by the model's preset unless set, made as `trtlab eval` does
    samples = make_samples(model, infos, shapes, source, samples=spec.samples, photos=photo_tensor)
    text = source.describe()
    from app.core.measure import SAMPLES_DIR

    if source.kind == "images" and source.path and Path(source.path).resolve() == SAMPLES_DIR.resolve():
        text = "trtlab's sample photos (" + (source.preprocess.describe() if source.preprocess else "") + ")" + (
            f"; {source.note}" if source.note else "")
    return Prepared(model_path, samples, text, source.is_random, shapes, source)


def output_kinds(spec: JobInputs, prep: Prepared, reference_outputs: list[dict[str, np.ndarray]]
                 ) -> dict[str, OutputKind]:
    """Each output's kind: the spec's where given, else inferred from the graph and the reference's output shapes,
    and kept only where the reference's answer read that way is plausible (app.core.measure.plausible)."""
    from app.core.measure import infer_output_kinds, prove_kinds

    model = onnx.load(prep.model_path, load_external_data=False)
    dims = {k: list(np.shape(v)) for k, v in (reference_outputs[0] if reference_outputs else {}).items()}
    kinds = infer_output_kinds(model, dims, {k: list(v) for k, v in prep.shapes.items()}, spec.output_kinds)
    return prove_kinds(kinds, reference_outputs)


def workdir(ctx: JobContext | None) -> Path:
    """The job's folder; a fresh temporary one outside a job. Never the model's folder: it may be the user's."""
    workdir = getattr(ctx, "workdir", None)
    if workdir:
        return Path(workdir)
    import tempfile

    return Path(tempfile.mkdtemp(prefix="trtlab-"))


def progress(ctx: JobContext | None, fraction: float | None, message: str) -> None:
    if ctx is not None:
        ctx.progress(fraction, message)
        ctx.check_cancelled()


def open_session(target: Target, path: str, spec: JobInputs, ctx: JobContext | None,
                 shapes: dict[str, tuple[int, ...]]) -> Session:
    """A backend session on a graph; native TensorRT builds its engine (with progress and Cancel) first."""
    if target.backend in ENGINE_BACKENDS:  # trt, trt-rtx
        return open_engine_session(target, path, spec, ctx, shapes)
    return open_ort_session(target, path, spec)


def open_engine_session(target: Target, path: str, spec: JobInputs, ctx: JobContext | None,
                        shapes: dict[str, tuple[int, ...]]) -> EngineSession:
    """A session of an engine backend (ENGINE_BACKENDS) on a graph: its engine is built (with progress and Cancel)
    or taken from the engine cache first."""
    return get_engine_backend(target.backend).prepare(path, dict(spec.options), ctx=ctx, shapes=shapes)


def open_ort_session(target: Target, path: str, spec: JobInputs, profile_prefix: str | None = None
                     ) -> ProfiledSession:
    """A session of an ONNX Runtime backend on a graph. With `profile_prefix`, ONNX Runtime's profiler records
    every node's runs."""
    options = {**spec.options, "knobs": target.settings} if target.knobs else dict(spec.options)
    try:
        return get_ort_backend(target.backend).prepare(path, options, profile_prefix=profile_prefix)
    except BackendUnavailable as exc:
        # ONNX Runtime is here (it raised while loading the graph, not before): the graph is at fault. The user's
        # model passed the loader's checks; a variant trtlab wrote is trtlab's fault, so the job failed (exit 4).
        if exc.__cause__ is None:
            raise
        if Path(path).resolve() == Path(spec.model).resolve():
            raise TrtlabError(exc.message, fix="Check that this onnxruntime supports the model's opsets and IR "
                                               "version (pip install -U onnxruntime).") from exc
        raise VariantLoadError(f"The {target.precision.upper()} variant trtlab wrote for this model "
                               f"({Path(path).name}) cannot be loaded: {exc.message}",
                               fix="This is a fault in trtlab, not in your model: report the model and this "
                                   "message (a file damaged on disk is rebuilt: the cache checks what it "
                                   "serves against its record).") from exc


def run_outputs(target: Target, prep: Prepared, spec: JobInputs, ctx: JobContext | None,
                span: tuple[float, float] = (0.0, 1.0), placement: dict | None = None,
                rewrite: Callable[[str], str] | None = None) -> tuple[list[dict[str, np.ndarray]], list[str]]:
    """Run every sample on one target; returns the outputs per sample and the session's notes. With `placement`
    (ONNX Runtime backends), ONNX Runtime's profiler records the runs and `placement` gets where the nodes ran
    ({"placement": {provider: nodes}, "fallback_nodes": [...]}, app.core.measure.profile). `rewrite` gives the
    graph to run in place of the target's (a copy in the job's folder: `seeded_graph` seeds random nodes)."""
    lo, hi = span
    progress(ctx, lo, f"Preparing {target.name}…")
    path, variant_notes = variant_path(prep.model_path, target, ctx, spec)
    if rewrite is not None:
        path = rewrite(path)
    session: Session
    profiled: ProfiledSession | None = None
    if placement is not None and target.backend.startswith("ort-"):
        prefix = str(workdir(ctx) / f"placement_{target.name.replace(':', '_')}")
        session = profiled = open_ort_session(target, path, spec, profile_prefix=prefix)
    else:
        session = open_session(target, path, spec, ctx, prep.shapes)
    try:
        outs = []
        for i, feeds in enumerate(prep.samples):
            outs.append(session.run(feeds))
            progress(ctx, lo + (hi - lo) * (i + 1) / len(prep.samples),
                      f"{target.name}: sample {i + 1} of {len(prep.samples)}")
        if placement is not None and profiled is not None:
            placement.update(where_it_ran(profiled, path, target.name))
        return outs, variant_notes + list(session.notes)
    finally:
        session.close()


def seeded_graph(randomness: Randomness, target: Target, ctx: JobContext | None, base: int = 0, label: str = ""
                 ) -> Callable[[str], str]:
    """For `run_outputs`' `rewrite`: the graph a target runs, copied into the job's folder with every random node
    seeded from `base` (app.core.model.seed_random_ops; base 0 keeps the model's own seeds, another base replaces
    them too). The copy is listed in `randomness.copies` for removal. Engine backends ignore seeds: their graph
    stays."""
    def seeded(path: str) -> str:
        if target.builds_engine:
            return path
        from app.core.precision import save_model

        name = label or target.name
        model = onnx.load(path)
        seed_model(randomness, model, name, base)
        out = workdir(ctx) / "seeded" / f"{Path(path).stem}.{name.replace(':', '_')}.onnx"
        save_model(model, out)
        randomness.copies.append(out)
        return str(out)
    return seeded


def seed_model(randomness: Randomness, model: onnx.ModelProto, name: str, base: int = 0) -> None:
    """Seed every random node of a loaded graph (in place) as `seeded_graph` does, and record the seeds under `name`
    (a target's name, or "floor")."""
    from app.core.model import seed_random_ops

    randomness.seeds[name] = seed_random_ops(model, base, keep_seeds=base == 0)


# Models that draw random numbers, in the jobs that compare a reference with candidates (compare, diagnose,
# fallback): the same seeds where a candidate runs on the reference's ONNX Runtime provider, else the noise floor
# (app.core.measure.random_draws). `random_draws` says which for each candidate, `draws_rewrite` gives the seeded
# graph to run, `floor_rewrite` the reference's graph with other seeds, and `judge_draws` a candidate's notes.

def random_draws(model_path: str, reference: Target, candidates: list[Target]) -> Randomness | None:
    """The model's random nodes and how each candidate's draws are matched with the reference's (SAME_SEEDS or
    NOISE_FLOOR); None when the model draws no random numbers."""
    from app.core.measure import NOISE_FLOOR, SAME_SEEDS, find_randomness, same_draws

    randomness = find_randomness(model_path)
    if randomness is not None:
        randomness.methods = {c.name: SAME_SEEDS if same_draws(reference, c) else NOISE_FLOOR for c in candidates}
    return randomness


def draws_rewrite(randomness: Randomness | None, target: Target, ctx: JobContext | None
                  ) -> Callable[[str], str] | None:
    """`run_outputs`' `rewrite` for the reference or a candidate: the seeded copy, unless the model draws no random
    numbers or the candidate is judged against the noise floor (it draws its own numbers: its graph stays)."""
    from app.core.measure import SAME_SEEDS

    if randomness is None or randomness.methods.get(target.name, SAME_SEEDS) != SAME_SEEDS:
        return None
    return seeded_graph(randomness, target, ctx)


def floor_rewrite(randomness: Randomness, reference: Target, ctx: JobContext | None) -> Callable[[str], str]:
    """The reference's graph with every random node drawn from other seeds: the noise floor's second run."""
    from app.core.measure import FLOOR_SEED_BASE

    return seeded_graph(randomness, reference, ctx, FLOOR_SEED_BASE, "floor")


def judge_draws(randomness: Randomness, reference: Target, candidate: Target, report: CandidateReport,
                floor: Callable[[], CandidateReport]) -> list[str]:
    """A candidate's notes about the random nodes; a candidate judged against the noise floor is judged so here (in
    place, app.core.measure.judge_by_floor). `floor()` gives the reference against itself with other draws (run
    when first needed): a candidate that fails on the same draws gets it for scale."""
    from app.core.measure import NOISE_FLOOR, floor_text, judge_by_floor, target_note

    notes = [target_note(randomness, reference, candidate)]
    if randomness.methods.get(candidate.name) == NOISE_FLOOR:
        notes += [f"noise floor: {n}" for n in judge_by_floor(report, floor())]
    elif not report.passed:
        notes += [f"noise floor (for scale; judged on the same draws): {o.name}: {floor_text(o)}"
                  for o in floor().outputs]
    return notes


def no_random_ops() -> dict[str, object]:
    """A job's `random_ops` for a model that draws no random numbers."""
    return {"nodes": [], "method": None, "note": ""}


def where_it_ran(session: ProfiledSession, path: str, name: str) -> dict:
    """Which provider ran each node of a profiled ONNX Runtime session, from its profiler's trace."""
    import json

    from app.core.measure import parse_ort_profile

    with open(session.end_profiling(), encoding="utf-8") as fh:
        events = json.load(fh)
    prof = parse_ort_profile(events, onnx.load(path, load_external_data=False).graph, name).to_json()
    return {k: prof[k] for k in ("placement", "fallback_nodes", "casts", "copies", "node_count")}


def fallback_note(placement: dict) -> str:
    """A GPU target's compute nodes that ran on the CPU, named, as a note every result shows."""
    names = list(placement.get("fallback_nodes") or [])
    shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    return (f"{len(names)} compute node(s) ran on the CPU, not the GPU ({shown}); {placement.get('copies', 0)} "
            "copies between host and device: `trtlab profile` shows where the time goes")
