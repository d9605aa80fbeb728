"""`trtlab bench`: latency statistics of one target, and per engine layer times on TensorRT."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.backends import ENGINE_BACKENDS, EngineSession, Session, Target
from app.backends.tasks.common import (
    Prepared,
    fallback_note,
    open_engine_session,
    open_ort_session,
    prepare_samples,
    progress,
    seeded_graph,
    variant_path,
    where_it_ran,
    workdir,
)
from app.backends.tasks.specs import BenchSpec, takes

if TYPE_CHECKING:
    from app.jobs import JobContext


@takes(BenchSpec)
def bench_task(spec: BenchSpec, ctx: JobContext | None) -> dict:
    """`trtlab bench`: latency statistics of one target."""
    from app.core.measure import find_randomness, timing_json, timing_note

    target = spec.target
    prep = prepare_samples(spec.with_(samples=1), ctx)
    progress(ctx, 0.0, f"Preparing {target.name}…")
    path, variant_notes = variant_path(prep.model_path, target, ctx, spec)
    # Random nodes: seeded as `compare` seeds them, so the graph timed is the graph compared (the copy is removed).
    randomness = find_randomness(prep.model_path)
    try:
        if randomness is not None:
            path = seeded_graph(randomness, target, ctx)(path)
            variant_notes.append(timing_note(randomness, target))
        doc = _bench(spec, ctx, prep, path, variant_notes)
    finally:
        if randomness is not None:
            randomness.remove_copies()
    if randomness is not None:
        doc["random_ops"] = timing_json(randomness, target)
    return doc


def _bench(spec: BenchSpec, ctx: JobContext | None, prep: Prepared, path: str, variant_notes: list[str]) -> dict:
    """The timed runs of the graph at `path`, then where its nodes ran (ONNX Runtime) or its engine layers' times."""
    from app.core.measure import Budget, MeasureCancelled, device_of, measure

    target, mode = spec.target, spec.mode
    engine = open_engine_session(target, path, spec, ctx, prep.shapes) if target.backend in ENGINE_BACKENDS else None
    session: Session = engine if engine is not None else open_ort_session(target, path, spec)
    try:
        fn = session.timed_runner(prep.samples[0], mode)
        batch = next(iter(prep.shapes.values()), (1,))[0] if prep.shapes else 1
        try:
            stats = measure(fn, Budget.parse(spec.warmup), Budget.parse(spec.iterations), mode=mode,
                            batch=int(batch or 1), cancel=ctx.cancelled if ctx is not None else None,
                            progress=(lambda f, m: ctx.progress(f, m)) if ctx is not None else None,
                            device=device_of(target.backend))
        except MeasureCancelled:
            if ctx is not None:
                ctx.check_cancelled()  # the job's own cancel: its log says "cancelled", with no traceback
            raise
        layer_times = _layer_times(engine, prep, ctx) if engine is not None else None
    finally:
        session.close()
    doc = {"backend": target.name, **stats.to_json()}
    if target.backend.startswith("ort-"):
        doc["placement"] = placement = _placement(target, path, spec, prep, ctx)
        if placement.get("fallback_nodes"):
            variant_notes.append(fallback_note(placement))
    doc.update({"notes": variant_notes + list(session.notes), "inputs": prep.source_text,
                "times_ms": [round(float(t), 6) for t in stats.times_ms]})
    if layer_times is not None:
        doc["layer_times"] = layer_times
    return doc


PLACEMENT_RUNS = 3  # profiled after the timed runs, in a session of their own: the profiler never slows the timing


def _placement(target: Target, path: str, spec: BenchSpec, prep: Prepared, ctx: JobContext | None) -> dict:
    """Where each node ran, with casts, copies and the node count ONNX Runtime ran (its profiler, a few runs)."""
    progress(ctx, 0.98, "Reading where each node runs…")
    prefix = str(workdir(ctx) / "bench_placement")
    session = open_ort_session(target, path, spec, profile_prefix=prefix)
    try:
        for _ in range(PLACEMENT_RUNS):
            session.run(prep.samples[0])
        return where_it_ran(session, path, target.name)
    finally:
        session.close()


def _layer_times(session: EngineSession, prep: Prepared, ctx: JobContext | None) -> dict:
    """Per engine layer timing of a TensorRT engine (IProfiler over 20 runs), after the benchmark; the build
    result maps engine layers to ONNX nodes."""
    from app.core.engine import per_layer_times

    progress(ctx, 0.97, "Timing each engine layer…")
    times = per_layer_times(session.profile_layers(prep.samples[0], runs=20))
    return {k: {"mean_ms": v.mean_ms, "median_ms": v.median_ms, "share": v.share} for k, v in times.items()}
