"""Latency measurement: warm-up, a count or time budget of timed iterations, and their statistics.

Each iteration is one call of ``fn``. When ``fn`` returns a float, that is the iteration's time in
milliseconds as the backend measured it (device-only timing with CUDA events); otherwise the host wall
time around the call (``perf_counter_ns``) is used, which includes host/device transfers.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from app.core.errors import TrtlabError
from app.core.results import BenchResult
from app.core.targets import Target

COV_WARN = 0.025  # trtexec's threshold: a coefficient of variation above 2.5 % makes results unreliable
MIN_ITERATIONS = 10
MAX_ITERATIONS = 1_000_000  # a time budget on a microsecond-fast model must not grow without bound
_CHECK_EVERY_NS = 100_000_000  # cancel/progress are polled at most every 0.1 s, off the timed path
MODES = ("end_to_end", "device_only")
# What steadies the numbers depends on where the model computes: GPU clocks mean nothing to a CPU run.
JITTER_ADVICE = {
    "cpu": "close other programs, run more iterations (or a longer time budget), or pin the threads "
           "(fewer intra-op threads, taskset to fixed cores)",
    "gpu": "close other programs, lock the GPU clocks (nvidia-smi --lock-gpu-clocks), or run longer",
    None: "close other programs or run longer",
}


def default_timing_mode(backend: str) -> str:
    """The one default of what a benchmark times: a GPU backend its device work only (copies excluded, as
    trtexec's GPU compute time), the CPU the whole call (there is nothing else to time)."""
    return "end_to_end" if Target.read(backend).on_cpu else "device_only"


class BudgetError(TrtlabError):
    title = "Invalid iteration budget"


class MeasureCancelled(TrtlabError):
    title = "Cancelled"


@dataclass
class Budget:
    """How long to run: a number of iterations, or seconds (whichever is set; both: the first reached)."""

    count: int | None = None
    seconds: float | None = None

    @classmethod
    def parse(cls, text: str | int | float) -> Budget:
        """``"200"`` → 200 iterations; ``"3s"``, ``"0.5s"``, ``"500ms"`` → a time budget."""
        s = str(text).strip().lower()
        if m := re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)\s*(s|ms|sec|seconds?)", s):
            value = float(m.group(1)) / (1000.0 if m.group(2) == "ms" else 1.0)
            if value > 0:
                return cls(seconds=value)
        elif re.fullmatch(r"\d+", s):
            return cls(count=int(s))
        raise BudgetError(f"'{text}' is not an iteration budget.",
                          fix="Give a number of iterations (e.g. 200) or a time such as 3s or 0.5s.")

    def __str__(self) -> str:
        if self.count is not None:
            return f"{self.count}"
        return f"{self.seconds:g}s" if self.seconds is not None else "0"


@dataclass
class LatencyStats:
    mode: str
    warmup: int
    iterations: int
    times_ms: np.ndarray
    batch: int = 1
    min: float = math.nan
    mean: float = math.nan
    median: float = math.nan
    p90: float = math.nan
    p95: float = math.nan
    p99: float = math.nan
    max: float = math.nan
    std: float = math.nan
    cov: float = math.nan
    throughput_per_s: float = math.nan
    unstable: bool = False
    device: str | None = None   # "cpu" | "gpu": where the model computed (None: not said)
    warning: str = ""
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def from_times(cls, times_ms: np.ndarray, *, mode: str, warmup: int, batch: int = 1,
                   device: str | None = None) -> LatencyStats:
        """Statistics of the timed iterations; ``device`` ("cpu" or "gpu") picks the advice for jittery runs."""
        t = np.asarray(times_ms, dtype=np.float64)
        s = cls(mode=mode, warmup=warmup, iterations=int(t.size), times_ms=t, batch=batch, device=device)
        if t.size:
            s.min, s.max, s.mean = float(t.min()), float(t.max()), float(t.mean())
            s.median, s.p90, s.p95, s.p99 = (float(v) for v in np.percentile(t, [50, 90, 95, 99]))
            s.std = float(t.std(ddof=1)) if t.size > 1 else 0.0
            s.cov = s.std / s.mean if s.mean > 0 else 0.0
            s.throughput_per_s = batch * 1000.0 / s.mean if s.mean > 0 else math.inf
        if t.size < MIN_ITERATIONS:
            s.warnings.append(f"only {t.size} iteration(s) were measured; use at least {MIN_ITERATIONS} "
                              "(or a longer time budget) for stable numbers")
        if t.size > 1 and s.cov > COV_WARN:
            s.warnings.append(f"latency varies a lot between runs (CoV {s.cov:.1%} > {COV_WARN:.1%}): "
                              + JITTER_ADVICE.get(device, JITTER_ADVICE[None]))
        s.unstable = bool(s.warnings)
        s.warning = "; ".join(s.warnings)
        return s

    def to_json(self) -> dict[str, object]:
        """The CLI.md `bench` keys (the caller adds "backend"), plus batch and the warning."""
        def f(x: float) -> float | None:
            return float(x) if math.isfinite(x) else None

        return {"mode": self.mode, "warmup": self.warmup, "iterations": self.iterations,
                "latency_ms": {k: f(getattr(self, k)) for k in ("min", "mean", "median", "p90", "p95", "p99",
                                                               "max", "std")},
                "cov": f(self.cov), "throughput_per_s": f(self.throughput_per_s), "batch": self.batch,
                "unstable": self.unstable, "warning": self.warning,
                **({"device": self.device} if self.device else {})}


def _run(fn: Callable[[], float | None], budget: Budget, times: list[float] | None, phase: str,
         share: tuple[float, float], cancel: Callable[[], bool] | None,
         progress: Callable[[float, str], None] | None) -> int:
    """Run ``fn`` until ``budget`` is spent; append per-iteration ms to ``times``; returns the iteration count."""
    clock = time.perf_counter_ns
    append = times.append if times is not None else None
    limit = budget.count if budget.count is not None else MAX_ITERATIONS
    limit_ns = int(budget.seconds * 1e9) if budget.seconds is not None else None
    if budget.count is None and budget.seconds is None:
        return 0
    start = next_check = clock()
    n = 0
    while n < limit:
        t0 = clock()
        got = fn()
        t1 = clock()
        if append is not None:
            append(got if got is not None else (t1 - t0) / 1e6)
        n += 1
        if limit_ns is not None and t1 - start >= limit_ns:
            break
        if t1 >= next_check:
            next_check = t1 + _CHECK_EVERY_NS
            if cancel is not None and cancel():
                raise MeasureCancelled(f"The benchmark was cancelled during {phase} after {n} iteration(s).")
            if progress is not None:
                done = (t1 - start) / limit_ns if limit_ns else n / limit
                progress(share[0] + (share[1] - share[0]) * min(1.0, done), f"{phase}: {n} iteration(s)")
    return n


def measure(fn: Callable[[], float | None], warmup: Budget, iterations: Budget, *, mode: str, batch: int = 1,
            cancel: Callable[[], bool] | None = None,
            progress: Callable[[float, str], None] | None = None, device: str | None = None) -> LatencyStats:
    """Warm up, then time iterations; ``fn`` returns its own ms (device timing) or None (host wall time).
    ``device`` ("cpu" or "gpu"): where the model computes, for the advice on unstable timings."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if cancel is not None and cancel():
        raise MeasureCancelled("The benchmark was cancelled before it started.")
    n_warm = _run(fn, warmup, None, "warm-up", (0.0, 0.1), cancel, progress)
    times: list[float] = []
    _run(fn, iterations if (iterations.count or iterations.seconds) else Budget(count=1), times, "timing",
         (0.1, 1.0), cancel, progress)
    if progress is not None:
        progress(1.0, f"{len(times)} iteration(s) timed")
    return LatencyStats.from_times(np.asarray(times, dtype=np.float64), mode=mode, warmup=n_warm, batch=batch,
                                   device=device)


def speedup(reference: LatencyStats, candidate: LatencyStats) -> float:
    """How many times faster the candidate is than the reference, by median latency (> 1: faster)."""
    if not candidate.median > 0:
        return math.nan
    return reference.median / candidate.median


def median_ms(bench: BenchResult | None) -> float | None:
    """A bench result's median latency in ms (None when it has none)."""
    value = bench.latency_ms.median if bench is not None else None
    return float(value) if value else None


def speed_reference(benches: Mapping[str, BenchResult], compare_reference: str = "", bench_reference: str = "") -> str:
    """The one rule for what speed-ups are relative to (the Results table, the scorecard and the report all use it):
    the comparisons' reference when it was benchmarked; else the reference the benchmarks were run against; else the
    first FP32 benchmark; else the first benchmark ("" with none)."""
    for ref in (compare_reference, bench_reference):
        if ref and ref in benches:
            return ref
    return next((t for t in benches if Target.read(t).precision == "fp32"), next(iter(benches), ""))


def speedups(benches: Mapping[str, BenchResult], reference: str) -> dict[str, float | None]:
    """Each benchmarked target's median-latency ratio to `reference`'s (> 1: faster); None where either median is
    unknown. The one place speed-ups are computed: the Results table, the scorecard and the report all read it (each
    then says what a ratio means where the precision is only emulated)."""
    base = median_ms(benches.get(reference))
    return {t: (base / m if base and (m := median_ms(d)) else None) for t, d in benches.items()}
