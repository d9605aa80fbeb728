"""Speed as it scales: a benchmark sweep over a dimension (batch or any dynamic one), and a runtime's settings tuned
(`trtlab bench --sweep`, `trtlab tune`; docs/cli.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.core.results.common import JobDoc
from app.core.results.jobs import LatencyStats
from app.core.results.record import JSONValue, Record, optional


# ----------------------------------------------------------------- sweep
@dataclass(frozen=True)
class SweepPoint(Record):
    """One target at one value of the swept dimension: its latency, throughput and peak device memory, or why it has
    none ("oom": out of memory, "failed": another error, "skipped": cancelled or after an out-of-memory point)."""

    target: str = ""
    value: int = 0
    status: str = "ok"                        # ok | oom | failed | skipped
    latency_ms: LatencyStats = LatencyStats()
    throughput_per_s: float | None = None     # value × runs per second: items/s (the batch), else units/s
    peak_memory_mb: float | None = None       # the device's peak during the point (GPU backends), else the process's
    cov: float | None = optional(None)
    unstable: bool = optional(False)
    message: str = optional("")               # "out of memory at batch 128", the error's first line
    memory_source: str = optional("")         # "device": GPU memory in use after the runs less before the session;
                                              # "process": the process's peak RSS above its level before the session
    iterations: int = optional(0)             # the timed runs
    sessions_ms: tuple[float, ...] = optional(factory=tuple)  # each session's median, where several were timed

    def spread(self) -> float | None:
        """The sessions' medians' range over the point's median (None for one session)."""
        m = self.sessions_ms
        if len(m) < 2 or not self.latency_ms.median:
            return None
        return (max(m) - min(m)) / self.latency_ms.median


@dataclass(frozen=True)
class SweepKnee(Record):
    """Where a target's throughput stops growing: the first value after which doubling the dimension gains less than
    the threshold, and the best throughput seen."""

    value: int | None = None
    best_value: int | None = None
    best_throughput_per_s: float | None = None
    reason: str = ""


@dataclass(frozen=True)
class SweepResult(JobDoc):
    """Every target at every value of one dimension (`--sweep NAME:AXIS=1,2,4,...`)."""

    input: str = ""                           # the swept input ("" : dimension `axis` of every input: the batch)
    axis: int = 0
    values: tuple[int, ...] = ()
    is_batch: bool = True                     # the swept dimension is the batch (throughput counts items)
    targets: tuple[str, ...] = ()
    mode: str = ""
    points: tuple[SweepPoint, ...] = ()
    knees: Mapping[str, SweepKnee] = optional(factory=dict)
    why: Mapping[str, str] = optional(factory=dict)   # candidate target -> why it is not faster than FP32
    shapes: Mapping[str, tuple[JSONValue, ...]] = optional(factory=dict)  # the shapes at the first value
    notes: tuple[str, ...] = optional(factory=tuple)
    device: str = optional("")
    sessions: int = optional(1)               # sessions timed per point (the point: the one with the median median)

    def point(self, target: str, value: int) -> SweepPoint | None:
        return next((p for p in self.points if p.target == target and p.value == value), None)

    def series(self, target: str) -> tuple[SweepPoint, ...]:
        """A target's points in the order of the values."""
        return tuple(p for v in self.values if (p := self.point(target, v)) is not None)


# ----------------------------------------------------------------- tune
@dataclass(frozen=True)
class TuneTrial(Record):
    """One combination of a runtime's settings: its median time in each of several sessions, and whether its answers
    equal the default settings' ("refused": the runtime would not take it, with its reason)."""

    target: str = ""                          # the target with its settings, e.g. ort-cuda:fp16@cuda_graph=1
    knobs: Mapping[str, str] = optional(factory=dict)
    status: str = "ok"                        # ok | refused | answers_differ | failed
    median_ms: float | None = None            # the median of the sessions' medians
    sessions_ms: tuple[float, ...] = ()       # each session's median
    spread: float | None = None               # (max - min) / median over the sessions
    speedup: float | None = None              # default's median / this median
    verdict: str = optional("")               # the answers against the default's (compare's verdict)
    message: str = optional("")


@dataclass(frozen=True)
class TuneResult(JobDoc):
    """A target's runtime settings tried, the answers checked against the default's, the fastest kept."""

    target: str = ""                          # the target as given (its default settings)
    batch: int = optional(1)
    mode: str = ""
    sessions: int = 3
    default: TuneTrial = TuneTrial()
    trials: tuple[TuneTrial, ...] = ()
    best: str = ""                            # the fastest target whose answers equal the default's
    best_speedup: float | None = None
    shapes: Mapping[str, tuple[JSONValue, ...]] = optional(factory=dict)
    notes: tuple[str, ...] = optional(factory=tuple)
    device: str = optional("")
    variant: str = optional("")               # the graph every combination ran: the model for FP32, else its variant
