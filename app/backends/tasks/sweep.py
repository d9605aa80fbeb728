"""`trtlab bench --sweep NAME:AXIS=1,2,4,...`: every target timed as `bench` times it (warm-up, device-only on GPUs,
the stability check) at every value of one dynamic dimension, with its throughput and peak memory; where
throughput stops growing (the knee); and why a half-precision target is not faster than FP32, from both profiles.

A point that runs out of memory is a result ("out of memory at batch 128"), the target's larger values then
skipped; another error fails that point only."""

from __future__ import annotations

import json
import os
import threading
from typing import TYPE_CHECKING

import numpy as np
import onnx

from app.backends import ENGINE_BACKENDS, Session, Target
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
from app.backends.tasks.specs import takes
from app.backends.tasks.speed_specs import SweepSpec

if TYPE_CHECKING:
    from app.core.measure import LatencyStats, Profile, SweepAxis
    from app.jobs import JobContext

PROFILE_WARMUP = 2   # the "why" profiles: runs not counted, then runs profiled
PROFILE_RUNS = 5
RSS_EVERY_S = 0.005  # the CPU's peak memory: the process's resident size sampled this often during a point
HALF = ("fp16", "bf16")


@takes(SweepSpec)
def sweep_task(spec: SweepSpec, ctx: JobContext | None) -> dict:
    """Every target at every value, in order of value; then the knees and the reasons."""
    from app.core.measure import SweepAxis, find_randomness, timing_note

    sweep = SweepAxis(spec.input, spec.axis, spec.values)
    swept, base = sweep_shapes(spec, sweep)
    spec = spec.with_(shapes=base)  # the variants (FP16 ranges, INT8 calibration) see complete shapes
    prep = prepare_samples(spec.with_(shapes=base, samples=1), ctx)
    targets = spec.targets()
    total = len(targets) * len(sweep.values)
    points: list[dict] = []
    notes: list[str] = []
    paths: dict[str, str] = {}
    randomness = find_randomness(prep.model_path)
    try:
        for k, target in enumerate(targets):
            progress(ctx, k * len(sweep.values) / total, f"Preparing {target.name}…")
            path, variant_notes = variant_path(prep.model_path, target, ctx, spec)
            if randomness is not None:
                path = seeded_graph(randomness, target, ctx)(path)
                variant_notes.append(timing_note(randomness, target))
            paths[target.name] = path
            notes += [f"{target.name}: {n}" for n in variant_notes]
            _target_points(spec, ctx, sweep, swept, prep, target, path, (k * len(sweep.values), total), points)
        knees = {t.name: _knee(sweep, [p for p in points if p["target"] == t.name]) for t in targets}
        why = _whys(spec, ctx, sweep, swept, prep, targets, paths, knees)
    finally:
        if randomness is not None:
            randomness.remove_copies()
    shown = feeds_at(prep, sweep, swept, sweep.values[0])
    return {"input": sweep.input, "axis": sweep.axis, "values": list(sweep.values), "is_batch": sweep.is_batch,
            "targets": [t.name for t in targets], "mode": spec.mode, "points": points, "knees": knees, "why": why,
            "shapes": {k: list(np.shape(v)) for k, v in shown.items()}, "notes": list(dict.fromkeys(notes)),
            "inputs": prep.source_text, "device": _device_name(targets), "sessions": spec.sessions_per_point()}


def sweep_shapes(spec: SweepSpec, sweep: SweepAxis) -> tuple[list[str], dict[str, tuple[int, ...]]]:
    """The swept inputs, checked against the model, and every input's shape with the swept dimension as given
    (a sample file's batch) or 1: the shape the samples are made at."""
    from app.core.measure import base_shapes, resolve_input_shapes, swept_inputs
    from app.core.model import graph_inputs, value_info_to_tensor_info

    model = onnx.load(spec.model, load_external_data=False)
    infos = [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]
    declared = {i.name: i.shape for i in infos}
    swept = swept_inputs(declared, sweep)
    given = base_shapes(declared, {k: tuple(v) for k, v in spec.shapes.items()}, swept, sweep.axis)
    return swept, resolve_input_shapes(infos, given)


def feeds_at(prep: Prepared, sweep: SweepAxis, swept: list[str], value: int) -> dict[str, np.ndarray]:
    """The sample at one value: the swept inputs' arrays tiled (or cut) along the axis to `value`."""
    out = {}
    for name, arr in prep.samples[0].items():
        if name in swept and arr.ndim > sweep.axis and arr.shape[sweep.axis] != value:
            have = max(1, arr.shape[sweep.axis])
            reps = [1] * arr.ndim
            reps[sweep.axis] = -(-value // have)
            arr = np.take(np.tile(arr, reps), np.arange(value), axis=sweep.axis)
        out[name] = np.ascontiguousarray(arr)
    return out


def _samples_at(spec: SweepSpec, ctx: JobContext | None, sweep: SweepAxis, swept: list[str], prep: Prepared,
                value: int) -> dict[str, np.ndarray]:
    """The batch: the first sample tiled; another dimension: samples made at that size (random data, or the
    source's own, cut or padded by it)."""
    if sweep.is_batch:
        return feeds_at(prep, sweep, swept, value)
    from app.core.measure import shapes_at

    shapes = shapes_at(prep.shapes, swept, sweep.axis, value)
    return prepare_samples(spec.with_(shapes=shapes, samples=1), ctx).samples[0]


def _target_points(spec: SweepSpec, ctx: JobContext | None, sweep: SweepAxis, swept: list[str], prep: Prepared,
                   target: Target, path: str, count: tuple[int, int], points: list[dict]) -> None:
    """One target's points in order of value, added to `points` (each sent as a partial result as it comes): after
    one runs out of memory, the larger values are skipped. `count`: the points before these, and all of them."""
    from app.core.measure import error_line, is_out_of_memory

    done, total = count
    oom_at: int | None = None
    for j, value in enumerate(sweep.values):
        if points and ctx is not None:  # the points so far, for a viewer, before the next one
            ctx.partial({"input": sweep.input, "axis": sweep.axis, "values": list(sweep.values),
                         "is_batch": sweep.is_batch, "targets": [t.name for t in spec.targets()], "mode": spec.mode,
                         "points": points})
        n = done + j
        where = sweep.word(value)
        if oom_at is not None:
            points.append({"target": target.name, "value": value, "status": "skipped",
                           "message": f"skipped: out of memory at a smaller value ({sweep.word(oom_at)})"})
            continue
        progress(ctx, n / total, f"{target.name} at {where} ({n + 1} of {total})")
        try:
            points.append(_point(spec, ctx, sweep, swept, prep, target, path, value, (n / total, (n + 1) / total)))
        except Exception as exc:  # noqa: BLE001 - a point's failure is its result; the job's cancel is not
            if ctx is not None:
                ctx.check_cancelled()
            from app.core.measure import MeasureCancelled

            if isinstance(exc, MeasureCancelled):
                raise
            if is_out_of_memory(exc):
                oom_at = value
                points.append({"target": target.name, "value": value, "status": "oom",
                               "message": f"out of memory at {where}: {error_line(exc)}"})
            else:
                points.append({"target": target.name, "value": value, "status": "failed",
                               "message": f"failed at {where}: {error_line(exc)}"})


def _point(spec: SweepSpec, ctx: JobContext | None, sweep: SweepAxis, swept: list[str], prep: Prepared,
           target: Target, path: str, value: int, span: tuple[float, float]) -> dict:
    """One target at one value, timed in `spec.sessions_per_point()` sessions, each of its own (a GPU session picks
    its own cuDNN algorithms): warm-up and timed runs in each. The point is the session whose median is the median of
    theirs, with every session's median beside it; its memory is the first session's (the others' would count
    what the allocator kept)."""
    from app.core.measure import device_of, items_per_s

    feeds = _samples_at(spec, ctx, sweep, swept, prep, value)
    n = spec.sessions_per_point()
    lo, hi = span
    runs = []
    memory_mb: float | None = None
    memory_source = ""
    for k in range(n):
        memory = _DeviceMemory() if device_of(target.backend) == "gpu" else _PeakRss()
        step = (lo + (hi - lo) * k / n, lo + (hi - lo) * (k + 1) / n)
        with memory:
            runs.append(_session_stats(spec, ctx, sweep, swept, prep, target, path, value, feeds, step,
                                       memory, f" (session {k + 1} of {n})" if n > 1 else ""))
        if k == 0:
            memory_mb, memory_source = memory.mb, memory.source if memory.mb is not None else ""
    medians = [s.median for s in runs]
    stats = sorted(runs, key=lambda s: s.median)[(n - 1) // 2]
    lat = stats.to_json()
    out = {"target": target.name, "value": value, "status": "ok", "latency_ms": lat["latency_ms"],
           "throughput_per_s": items_per_s(value, stats.mean), "peak_memory_mb": memory_mb,
           "memory_source": memory_source, "cov": lat["cov"], "unstable": any(s.unstable for s in runs),
           "message": next((s.warning for s in runs if s.warning), ""), "iterations": stats.iterations}
    if n > 1:
        out["sessions_ms"] = [round(m, 6) for m in medians]
    return out


def _session_stats(spec: SweepSpec, ctx: JobContext | None, sweep: SweepAxis, swept: list[str], prep: Prepared,
                   target: Target, path: str, value: int, feeds: dict[str, np.ndarray], span: tuple[float, float],
                   memory: _PeakRss | _DeviceMemory, which: str) -> LatencyStats:
    """One session opened at the value, warmed up and timed, then closed; `memory` read before it closes."""
    from app.core.measure import Budget, device_of, measure, shapes_at

    lo, hi = span
    session: Session
    if target.backend in ENGINE_BACKENDS:
        session = open_engine_session(target, path, spec, ctx, shapes_at(prep.shapes, swept, sweep.axis, value))
    else:
        session = open_ort_session(target, path, spec)
    try:
        fn = session.timed_runner(feeds, spec.mode)
        stats = measure(fn, Budget.parse(spec.warmup), Budget.parse(spec.iterations), mode=spec.mode,
                        batch=value if sweep.is_batch else 1, cancel=ctx.cancelled if ctx is not None else None,
                        progress=(lambda f, m: ctx.progress(lo + (hi - lo) * f, f"{target.name} at "
                                                            f"{sweep.word(value)}{which}: {m}"))
                        if ctx is not None else None, device=device_of(target.backend))
        memory.read()
    finally:
        session.close()
    return stats


class _PeakRss:
    """The process's peak resident memory above its level before the session, sampled from /proc/self/statm in a
    thread while the point runs (None where /proc is absent)."""

    source = "process"

    def __init__(self) -> None:
        self.mb: float | None = None
        self._stop = threading.Event()
        self._peak = 0
        self._base = 0
        self._thread: threading.Thread | None = None

    @staticmethod
    def _rss() -> int | None:
        try:
            with open("/proc/self/statm", encoding="ascii") as fh:
                return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            return None

    def _watch(self) -> None:
        while not self._stop.wait(RSS_EVERY_S):
            self._peak = max(self._peak, self._rss() or 0)

    def __enter__(self) -> _PeakRss:
        base = self._rss()
        if base is not None:
            self._base = self._peak = base
            self._thread = threading.Thread(target=self._watch, daemon=True)
            self._thread.start()
        return self

    def read(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._peak = max(self._peak, self._rss() or 0)
        self.mb = round(max(0, self._peak - self._base) / 2**20, 3)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()


class _DeviceMemory:
    """The GPU's memory in use after the point's runs less before its session (cuda-python's cudaMemGetInfo;
    None where cuda-python is absent)."""

    source = "device"

    def __init__(self) -> None:
        self.mb: float | None = None
        self._before: int | None = None

    @staticmethod
    def _used() -> int | None:
        try:
            from cuda.bindings import runtime  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            return None
        err, free, total = runtime.cudaMemGetInfo()
        return None if int(err) != 0 else int(total) - int(free)

    def __enter__(self) -> _DeviceMemory:
        self._before = self._used()
        return self

    def read(self) -> None:
        after = self._used()
        if self._before is not None and after is not None:
            self.mb = round(max(0, after - self._before) / 2**20, 3)

    def __exit__(self, *exc: object) -> None:
        return None


def _knee(sweep: SweepAxis, points: list[dict]) -> dict:
    from app.core.measure import find_knee

    unit = sweep.word() if sweep.word() == "batch" else "value"
    return find_knee([(p["value"], p.get("throughput_per_s")) for p in points if p["status"] == "ok"],
                     unit=unit).to_json()


def _whys(spec: SweepSpec, ctx: JobContext | None, sweep: SweepAxis, swept: list[str], prep: Prepared,
          targets: list[Target], paths: dict[str, str], knees: dict[str, dict]) -> dict[str, str]:
    """For each FP16/BF16 target under FP16_WORTH × its backend's FP32 best throughput: both profiled at the
    candidate's best value, and the reasons in words."""
    from app.core.measure import error_line, needs_why, why_not_faster

    out: dict[str, str] = {}
    for cand in targets:
        ref = next((t for t in targets if t.backend == cand.backend and t.precision == "fp32"
                    and t.knobs == cand.knobs), None)
        if ref is None or cand.precision not in HALF or not cand.backend.startswith("ort-"):
            continue
        ref_best = knees[ref.name].get("best_throughput_per_s")
        cand_best = knees[cand.name].get("best_throughput_per_s")
        if not needs_why(ref_best, cand_best):
            continue
        value = knees[cand.name].get("best_value") or knees[ref.name].get("best_value")
        if value is None:
            continue
        progress(ctx, 0.99, f"Profiling {ref.name} and {cand.name} at {sweep.word(value)}…")
        try:
            profiles = [_profile(spec, ctx, sweep, swept, prep, t, paths[t.name], value) for t in (ref, cand)]
        except Exception as exc:  # noqa: BLE001 - a profile that fails leaves the sweep's numbers standing
            if ctx is not None:
                ctx.check_cancelled()
            out[cand.name] = f"not profiled ({error_line(exc)})"
            continue
        on_cpu = cand.on_cpu
        engine = "" if cand.backend == "ort-trt" else f"trt:{cand.precision}"
        ratio = cand_best / ref_best if cand_best is not None and ref_best else None
        graphs = cand.backend == "ort-cuda" and cand.settings.get("cuda_graph") != "1"
        out[cand.name] = why_not_faster(profiles[0], profiles[1], at=sweep.word(value), on_cpu=on_cpu,
                                        engine_target=engine, ratio=ratio, fixed=_fixed(spec, sweep, swept),
                                        graph_target=cand.with_knobs({**cand.settings, "cuda_graph": "1"}).name
                                        if graphs else "")
    return out


def _fixed(spec: SweepSpec, sweep: SweepAxis, swept: list[str]) -> bool:
    """Whether the swept dimension is fixed in the model (a one-value sweep at the model's own size)."""
    from app.core.model import graph_inputs

    graph = onnx.load(spec.model, load_external_data=False).graph
    declared = {v.name: v.type.tensor_type.shape.dim for v in graph_inputs(graph)}
    return any(sweep.axis < len(dims) and dims[sweep.axis].dim_value > 0
               for name, dims in declared.items() if name in swept)


def _profile(spec: SweepSpec, ctx: JobContext | None, sweep: SweepAxis, swept: list[str], prep: Prepared,
             target: Target, path: str, value: int) -> Profile:
    """ONNX Runtime's profile of a few runs at one value (the first runs not counted)."""
    from app.core.measure import parse_ort_profile

    feeds = _samples_at(spec, ctx, sweep, swept, prep, value)
    prefix = str(workdir(ctx) / f"sweep_profile_{target.name.replace(':', '_').replace('@', '_')}")
    session = open_ort_session(target, path, spec, profile_prefix=prefix)
    try:
        for _ in range(PROFILE_WARMUP + PROFILE_RUNS):
            session.run(feeds)
            if ctx is not None:
                ctx.check_cancelled()
        with open(session.end_profiling(), encoding="utf-8") as fh:
            events = json.load(fh)
    finally:
        session.close()
    graph = onnx.load(path, load_external_data=False).graph
    return parse_ort_profile(events, graph, target.name, skip_runs=PROFILE_WARMUP)


def _device_name(targets: list[Target]) -> str:
    """The GPU's name where a target runs on one (else the CPU's, as provenance says)."""
    if all(t.on_cpu for t in targets):
        return "cpu"
    try:
        from cuda.bindings import runtime
    except ImportError:
        return "gpu"
    err, props = runtime.cudaGetDeviceProperties(0)
    name = getattr(props, "name", b"")
    return (name.decode(errors="replace").rstrip("\x00") if isinstance(name, bytes) else str(name)) or "gpu"
