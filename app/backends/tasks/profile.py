"""`trtlab profile`: where each node of one target runs and how long it takes, from the runtime's own profiler
(ONNX Runtime's trace for ort-* backends; per engine layer times, mapped to ONNX nodes, for TensorRT). With
`against`, a second target is profiled the same way first and the two are set side by side: which nodes got slower,
which nodes only the target runs, and the measured reasons it is slower."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import onnx

from app.backends import ENGINE_BACKENDS, Target
from app.backends.tasks.common import (
    Prepared,
    open_engine_session,
    open_ort_session,
    prepare_samples,
    progress,
    seeded_graph,
    variant_path,
    workdir,
)
from app.backends.tasks.specs import ProfileSpec, takes

if TYPE_CHECKING:
    from app.core.measure import Profile, Randomness
    from app.jobs import JobContext

WARMUP_RUNS = 3  # not profiled into the medians: first runs allocate and pick kernels


@takes(ProfileSpec)
def profile_task(spec: ProfileSpec, ctx: JobContext | None) -> dict:
    """Per-node medians over `spec.iterations` runs of the first sample, by node, by op type and by device."""
    from app.core.measure import find_randomness, profile_delta, slower_reasons, timing_json

    prep = prepare_samples(spec.with_(samples=1), ctx)
    targets = spec.targets()
    # Random nodes: seeded as `compare` seeds them, so the graph profiled is the graph compared (copies, removed).
    randomness = find_randomness(prep.model_path)
    docs = []
    try:
        for k, target in enumerate(targets):
            span = (k / len(targets), (k + 1) / len(targets))
            docs.append(_profile_one(target, spec, prep, ctx, span, randomness))
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
        slower = (doc.get("total_ms") or 0) > (against.get("total_ms") or 0)
        doc["slower_because"] = slower_reasons(against, doc, doc["delta"]) if slower else []
    doc.update({"inputs": prep.source_text, "random_data": prep.random_data, "model": spec.model})
    return doc


def _profile_one(target: Target, spec: ProfileSpec, prep: Prepared, ctx: JobContext | None,
                 span: tuple[float, float], randomness: Randomness | None = None) -> dict:
    from app.core.measure import parse_ort_profile, timing_note

    lo, hi = span
    progress(ctx, lo, f"Preparing {target.name}…")
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

            progress(ctx, (lo + hi) / 2, f"{target.name}: timing each engine layer…")
            times = per_layer_times(engine.profile_layers(sample, runs=spec.iterations))
            profile = _engine_profile(target.name, times, spec.iterations)
        finally:
            engine.close()
        session_notes = engine.notes
    else:
        prefix = str(workdir(ctx) / f"ort_profile_{target.name.replace(':', '_')}")
        session = open_ort_session(target, path, spec, profile_prefix=prefix)
        runs = WARMUP_RUNS + spec.iterations
        try:
            for k in range(runs):
                session.run(sample)
                progress(ctx, lo + (hi - lo) * (k + 1) / runs, f"{target.name}: run {k + 1} of {runs}")
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
