"""`trtlab profile`: where each node of one target runs and how long it takes, from the runtime's own profiler
(ONNX Runtime's trace for ort-* backends; per engine layer times, mapped to ONNX nodes, for TensorRT). With
`against`, a second target is profiled the same way first and the two are set side by side: which nodes got slower,
which nodes only the target runs, and the measured reasons it is slower. With `against_batch`, the same target is
profiled at that batch first (dim 0 of every input; the model's batch must be dynamic) and the two points are set
side by side per item: which nodes and op types stay launch-bound and which scale with the batch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import onnx

from app.backends import ENGINE_BACKENDS, Target
from app.backends.tasks.common import (
    Prepared,
    default_source,
    open_engine_session,
    open_ort_session,
    prepare_samples,
    progress,
    seeded_graph,
    variant_path,
    workdir,
)
from app.backends.tasks.specs import takes
from app.backends.tasks.speed_specs import ProfileSpec
from app.core.errors import TrtlabError
from app.core.measure import InputSource, batch_shapes

if TYPE_CHECKING:
    from app.core.measure import Profile, Randomness
    from app.jobs import JobContext

WARMUP_RUNS = 3  # not profiled into the medians: first runs allocate and pick kernels


@takes(ProfileSpec)
def profile_task(spec: ProfileSpec, ctx: JobContext | None) -> dict:
    """Per-node medians over `spec.iterations` runs of the first sample, by node, by op type and by device; with
    `against`, a second target's beside it; with `against_batch`, the same target's at that batch beside it."""
    from app.core.measure import find_randomness, points_delta, profile_delta, slower_reasons, timing_json

    runs = _runs(spec)
    # Random nodes: seeded as `compare` seeds them, so the graph profiled is the graph compared (copies, removed).
    randomness = find_randomness(spec.model)
    docs: list[dict] = []
    preps: dict[int, Prepared] = {}
    try:
        for k, (target, at) in enumerate(runs):
            prep = preps.get(at.batch or 0) or prepare_samples(at.with_(samples=1), ctx)
            preps[at.batch or 0] = prep
            span = (k / len(runs), (k + 1) / len(runs))
            docs.append(_profile_one(target, at, prep, ctx, span, randomness, k))
            if at.batch is not None:
                docs[-1].update({"batch": at.batch, "shapes": {n: list(d) for n, d in prep.shapes.items()}})
            if randomness is not None:
                docs[-1]["random_ops"] = timing_json(randomness, target)
    finally:
        if randomness is not None:
            randomness.remove_copies()
    doc = docs[-1]
    if len(docs) == 2:
        against = docs[0]
        doc["against"] = against
        doc["delta"] = profile_delta(against, doc)
        if spec.against_batch is not None:  # one target at two batches: per item, launch-bound or not
            doc["delta"] = points_delta(against, doc, doc["delta"])
            doc["slower_because"] = []
        else:
            slower = (doc.get("total_ms") or 0) > (against.get("total_ms") or 0)
            doc["slower_because"] = slower_reasons(against, doc, doc["delta"]) if slower else []
    doc.update({"inputs": prep.source_text, "random_data": prep.random_data, "model": spec.model})
    return doc


def _runs(spec: ProfileSpec) -> list[tuple[Target, ProfileSpec]]:
    """Each profile to take, the reference first: (target, the spec at its point). Batches set dim 0 of every
    input; without `batch`, the shapes given (or declared) are the target's point and their dim 0 its batch."""
    if spec.batch is None and spec.against_batch is None:
        return [(t, spec) for t in spec.targets()]
    from app.core.measure import resolve_input_shapes
    from app.core.model import graph_inputs, value_info_to_tensor_info

    model = onnx.load(spec.model, load_external_data=False)
    inputs = [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]
    batch = spec.batch
    if batch is None:
        given = resolve_input_shapes(inputs, dict(spec.shapes))
        batch = next((d[0] for d in given.values() if d), 1)

    batches = [batch] if spec.against_batch is None else [spec.against_batch, batch]
    most = max(batches)
    if spec.inputs is None and most > 1 and _photos_short_of(spec.with_(shapes=batch_shapes(inputs, spec.shapes, most)),
                                                              most):
        spec = spec.with_(inputs=InputSource(kind="random", seed=spec.seed))  # every point on the same kind of data

    def at(b: int) -> ProfileSpec:
        return spec.with_(shapes=batch_shapes(inputs, spec.shapes, b), batch=b, against_batch=None)

    if spec.against_batch is None:
        return [(t, at(batch)) for t in spec.targets()]
    return [(spec.target, at(spec.against_batch)), (spec.target, at(batch))]


def _photos_short_of(spec: ProfileSpec, batch: int) -> bool:
    """Whether the samples the spec gets by default are trtlab's sample photos and fewer than `batch`: such a batch
    is profiled on random data instead (a kernel's time does not depend on the pixels)."""
    from app.core.measure import SAMPLES_DIR, sample_photos

    try:
        source = default_source(spec)
    except TrtlabError:
        return False
    return source.kind == "images" and bool(source.path) and \
        Path(str(source.path)).resolve() == SAMPLES_DIR.resolve() and len(sample_photos()) < batch


def _profile_one(target: Target, spec: ProfileSpec, prep: Prepared, ctx: JobContext | None,
                 span: tuple[float, float], randomness: Randomness | None = None, run: int = 0) -> dict:
    from app.core.measure import parse_ort_profile, timing_note

    lo, hi = span
    name = target.name + (f" at batch {spec.batch}" if spec.batch is not None else "")
    progress(ctx, lo, f"Preparing {name}…")
    path, notes = variant_path(prep.model_path, target, ctx, spec)
    if randomness is not None:
        path = seeded_graph(randomness, target, ctx)(path)
        notes.append(timing_note(randomness, target))
    graph = onnx.load(path, load_external_data=False).graph
    sample = prep.samples[0]
    if target.backend in ENGINE_BACKENDS:
        engine = open_engine_session(target, path, spec, ctx, prep.shapes)
        try:
            from app.core.engine import per_layer_times

            progress(ctx, (lo + hi) / 2, f"{name}: timing each engine layer…")
            times = per_layer_times(engine.profile_layers(sample, runs=spec.iterations))
            profile = _engine_profile(target.name, times, spec.iterations)
        finally:
            engine.close()
        session_notes = engine.notes
    else:
        prefix = str(workdir(ctx) / f"ort_profile_{run}_{target.name.replace(':', '_')}")
        session = open_ort_session(target, path, spec, profile_prefix=prefix)
        runs = WARMUP_RUNS + spec.iterations
        try:
            for k in range(runs):
                session.run(sample)
                progress(ctx, lo + (hi - lo) * (k + 1) / runs, f"{name}: run {k + 1} of {runs}")
            with open(session.end_profiling(), encoding="utf-8") as fh:
                events = json.load(fh)
            profile = parse_ort_profile(events, graph, target.name, skip_runs=WARMUP_RUNS)
        finally:
            session.close()
        session_notes = session.notes
    doc = profile.to_json()
    doc["notes"] = notes + list(session_notes)
    return doc


def _engine_profile(name: str, times: dict, runs: int) -> Profile:
    from app.core.measure import NodeTime, Profile

    nodes = [NodeTime(layer, "engine layer", "TensorRT", t.median_ms, runs, model_node=False)
             for layer, t in times.items()]
    return Profile(name, runs, sum(n.ms for n in nodes) or None, nodes)
