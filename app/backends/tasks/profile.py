"""`trtlab profile`: where each node of one target runs and how long it takes, from the runtime's own profiler
(ONNX Runtime's trace for ort-* backends; per engine layer times, mapped to ONNX nodes, for TensorRT)."""

from __future__ import annotations

import json

import onnx

from app.backends import ENGINE_BACKENDS, Target
from app.backends.tasks.common import open_session, prepare_samples, progress, variant_path, workdir
from app.backends.tasks.specs import ProfileSpec, takes

WARMUP_RUNS = 3  # not profiled into the medians: first runs allocate and pick kernels


@takes(ProfileSpec)
def profile_task(spec: ProfileSpec, ctx: object) -> dict:
    """Per-node medians over `spec.iterations` runs of the first sample, by node, by op type and by device."""
    from app.core.measure import parse_ort_profile

    target = Target.parse(spec.target)
    prep = prepare_samples(spec.with_(samples=1), ctx)
    progress(ctx, 0.0, f"Preparing {target.name}…")
    path, notes = variant_path(prep.model_path, target, ctx, spec)
    graph = onnx.load(path, load_external_data=False).graph
    engine = target.backend in ENGINE_BACKENDS
    prefix = None if engine else str(workdir(ctx) / "ort_profile")
    session = open_session(target, path, spec, ctx, prep.shapes, profile_prefix=prefix)
    runs = WARMUP_RUNS + spec.iterations
    try:
        if engine:
            from app.core.engine import per_layer_times

            progress(ctx, 0.5, "Timing each engine layer…")
            times = per_layer_times(session.profile_layers(prep.samples[0], runs=spec.iterations))  # type: ignore[attr-defined]
            profile = _engine_profile(target.name, times, spec.iterations)
        else:
            for k in range(runs):
                session.run(prep.samples[0])  # type: ignore[attr-defined]
                progress(ctx, (k + 1) / runs, f"{target.name}: run {k + 1} of {runs}")
            with open(session.end_profiling(), encoding="utf-8") as fh:  # type: ignore[attr-defined]
                events = json.load(fh)
            profile = parse_ort_profile(events, graph, target.name, skip_runs=WARMUP_RUNS)
    finally:
        session.close()  # type: ignore[attr-defined]
    doc = profile.to_json()
    doc.update({"notes": notes + list(getattr(session, "notes", [])), "inputs": prep.source_text,
                "random_data": prep.random_data, "model": spec.model})
    return doc


def _engine_profile(name: str, times: dict, runs: int) -> object:
    from app.core.measure import NodeTime, Profile

    nodes = [NodeTime(layer, "engine layer", "TensorRT", t.median_ms, runs) for layer, t in times.items()]
    return Profile(name, runs, sum(n.ms for n in nodes) or None, nodes)
