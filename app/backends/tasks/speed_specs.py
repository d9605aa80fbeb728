"""The speed jobs' specs: a benchmark sweep over one dimension (`trtlab bench --sweep`), a runtime's settings tuned
(`trtlab tune`) and where the time goes, per node, at one point or two (`trtlab profile`). Kept beside `specs` (whose
registry holds them) so that module stays short."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from app.backends.tasks.spec_fields import SpecError
from app.backends.tasks.spec_fields import count_of as _count
from app.backends.tasks.spec_fields import target_of as _target
from app.backends.tasks.specs import TIMING_MODES, JobInputs
from app.core.targets import KNOBS, Target

MAX_SWEEP_POINTS = 64


def _timing(spec: JobInputs, warmup: str, iterations: str, mode: str, first: Target) -> None:
    """A speed spec's warm-up and iteration budgets and timing mode, checked and set (frozen spec)."""
    from app.core.measure import Budget, default_timing_mode

    object.__setattr__(spec, "warmup", str(warmup))
    object.__setattr__(spec, "iterations", str(iterations))
    Budget.parse(str(warmup))
    Budget.parse(str(iterations))
    if not mode:
        object.__setattr__(spec, "mode", default_timing_mode(first.backend))
    elif mode not in TIMING_MODES:
        raise SpecError(f"Unknown timing mode '{mode}'.", fix=f"Use one of {', '.join(TIMING_MODES)}.")


SWEEP_GPU_SESSIONS = 3   # a GPU sweep's sessions per point, unless --sessions says otherwise


@dataclass(frozen=True, kw_only=True)
class SweepSpec(JobInputs):
    """`trtlab bench --sweep NAME:AXIS=V1,V2,...`: every target timed at every value of one dimension."""

    sweep_targets: tuple[Target, ...]         # the targets swept, in the order given
    input: str = ""                           # the swept input; "": dimension `axis` of every input (the batch)
    axis: int = 0
    values: tuple[int, ...]
    warmup: str = "10"
    iterations: str = "100"
    mode: str = ""                            # "": the first target's default timing mode
    sessions: int = 0                         # sessions timed per point; 0: SWEEP_GPU_SESSIONS on GPUs, else 1
    kind: ClassVar[str] = "sweep"
    job: ClassVar[str] = "app.backends.tasks.sweep:sweep_task"

    def __post_init__(self) -> None:
        if isinstance(self.sweep_targets, str) or not self.sweep_targets:
            raise SpecError("A sweep needs at least one target.", fix="Give --backend B:P, e.g. ort-cpu:fp32.")
        object.__setattr__(self, "sweep_targets", tuple(_target(t) for t in self.sweep_targets))
        if isinstance(self.values, str) or not self.values:
            raise SpecError("A sweep needs the values to measure.", fix="Give e.g. --sweep batch=1,2,4,8.")
        values = tuple(_count(v, "a sweep value") for v in self.values)
        if len(set(values)) != len(values) or len(values) > MAX_SWEEP_POINTS:
            raise SpecError(f"Sweep values {list(values)}: each value once, at most {MAX_SWEEP_POINTS}.",
                            fix="Give distinct values such as 1,2,4,8,16.")
        object.__setattr__(self, "values", tuple(sorted(values)))
        if not isinstance(self.axis, int) or isinstance(self.axis, bool) or self.axis < 0:
            raise SpecError(f"Sweep axis {self.axis!r} is not a dimension index.", fix="Give e.g. images:0.")
        _timing(self, self.warmup, self.iterations, self.mode, self.sweep_targets[0])
        if self.sessions:
            _count(self.sessions, "sessions")
        super().__post_init__()

    def targets(self) -> list[Target]:
        return list(self.sweep_targets)

    def sessions_per_point(self) -> int:
        """Sessions timed per point: as given, else SWEEP_GPU_SESSIONS where a target runs on a GPU (cuDNN picks its
        algorithms per session, so one session's time is one draw) and 1 on the CPU."""
        return self.sessions or (1 if all(t.on_cpu for t in self.sweep_targets) else SWEEP_GPU_SESSIONS)


TUNE_SESSIONS = 3


@dataclass(frozen=True, kw_only=True)
class TuneSpec(JobInputs):
    """`trtlab tune`: combinations of a runtime's settings timed in several sessions each, kept only where the
    answers equal the default settings'."""

    target: Target                            # the backend and precision; its own settings are the ones to beat
    knobs: tuple[str, ...] = ()               # the settings to try (KNOBS of the backend); (): every one
    sessions: int = TUNE_SESSIONS             # sessions timed per combination (cuDNN picks kernels per session)
    warmup: str = "20"
    iterations: str = "100"
    mode: str = ""
    kind: ClassVar[str] = "tune"
    job: ClassVar[str] = "app.backends.tasks.tune:tune_task"

    def __post_init__(self) -> None:
        object.__setattr__(self, "target", _target(self.target))
        known = KNOBS.get(self.target.backend)
        if not known:
            raise SpecError(f"{self.target.backend} has no runtime settings to tune.",
                            fix=f"Tune one of {', '.join(KNOBS)} (e.g. ort-cuda:fp16).")
        knobs = tuple(str(k) for k in self.knobs) if not isinstance(self.knobs, str) else (self.knobs,)
        if unknown := [k for k in knobs if k not in known]:
            raise SpecError(f"{self.target.backend} has no setting {', '.join(unknown)}.",
                            fix=f"Its settings are {', '.join(known)}.")
        object.__setattr__(self, "knobs", knobs)
        _count(self.sessions, "sessions")
        _timing(self, self.warmup, self.iterations, self.mode, self.target)
        super().__post_init__()


@dataclass(frozen=True, kw_only=True)
class ProfileSpec(JobInputs):
    """`trtlab profile`: per-node times and placement of one target (ONNX Runtime's profiler, engine layers), beside
    a second target's (`against`) or beside the same target's at another batch (`against_batch`)."""

    target: Target
    against: Target | None = None  # a second target profiled the same way, side by side (e.g. FP32 for FP16)
    iterations: int = 20
    batch: int | None = None          # dim 0 of every input (a dynamic batch); None: the shapes as given
    against_batch: int | None = None  # the same target profiled at this batch too: the two points side by side
    kind: ClassVar[str] = "profile"
    job: ClassVar[str] = "app.backends.tasks.profile:profile_task"

    def __post_init__(self) -> None:
        object.__setattr__(self, "target", _target(self.target))
        object.__setattr__(self, "against", _target(self.against) if self.against else None)
        _count(self.iterations, "iterations")
        for name in ("batch", "against_batch"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, _count(getattr(self, name), name))
        if self.against is not None and self.against_batch is not None:
            raise SpecError("A profile sets side by side either two targets or two batches of one target, not both.",
                            fix="Drop --against, or drop --against-batch.")
        super().__post_init__()

    def targets(self) -> list[Target]:
        return [t for t in (self.against, self.target) if t is not None]
