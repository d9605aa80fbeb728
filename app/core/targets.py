"""Targets: `B:P`, a backend running the variant graph of a precision (`B:plan`: of the job's precision plan).

The one parser of that spelling, so every part of trtlab (specs, CLI, batch matrices, reports, the window) reads
a target the same way: `Target.parse` checks what a person wrote, `Target.read` reads back what trtlab wrote
earlier (a result, a project) without refusing a backend this version does not know."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from app.core.errors import TrtlabError

PRECISIONS = ("fp32", "fp16", "bf16", "int8")
PLAN = "plan"   # the precision of `B:plan`: whatever the job's precision plan asks, node by node
BACKEND_NAMES = ("ort-cpu", "ort-cuda", "ort-trt", "trt", "trt-rtx")
ENGINE_BACKENDS = ("trt", "trt-rtx")   # build TensorRT engines (`trtlab build --backend`)
CPU_BACKENDS = ("ort-cpu",)


class BackendSpecError(TrtlabError):
    title = "Invalid backend"


class PrecisionNotAvailable(TrtlabError):
    title = "Precision not available"


@dataclass(frozen=True)
class Target:
    """`B:P`: a backend running the variant graph for a precision (`B:plan`: for the job's precision plan)."""

    backend: str
    precision: str = "fp32"

    @property
    def name(self) -> str:
        return f"{self.backend}:{self.precision}"

    def __str__(self) -> str:
        return self.name

    @property
    def on_cpu(self) -> bool:
        return self.backend in CPU_BACKENDS

    @property
    def builds_engine(self) -> bool:
        return self.backend in ENGINE_BACKENDS

    @property
    def needs_plan(self) -> bool:
        """It runs the job's precision plan (`B:plan`), so the job needs one."""
        return self.precision == PLAN

    @property
    def runs_fp32(self) -> bool:
        """It runs every node in FP32: the model itself, nothing to fall back from."""
        return self.precision == "fp32"

    def with_precision(self, precision: str) -> Target:
        """The same backend running another precision (`plan` for the job's plan)."""
        return replace(self, precision=precision.lower())

    def with_backend(self, backend: str) -> Target:
        """The same precision on another backend."""
        return replace(self, backend=backend)

    def plan_as_fp32(self, trivial: bool) -> Target:
        """`B:fp32` for `B:plan` when the plan changes nothing (`trivial`): the model itself, said as such."""
        return self.with_precision("fp32") if trivial and self.needs_plan else self

    @classmethod
    def parse(cls, text: str | Target) -> Target:
        """A target as a person writes it (`ort-cpu` is `ort-cpu:fp32`), checked."""
        if isinstance(text, Target):
            return text
        backend, _, precision = str(text).strip().partition(":")
        precision = (precision or "fp32").lower()
        if backend not in BACKEND_NAMES:
            raise BackendSpecError(f"Unknown backend '{backend}' in '{text}'.",
                                   fix=f"Use one of {', '.join(BACKEND_NAMES)}, e.g. ort-cpu:fp32.")
        if precision not in PRECISIONS and precision != PLAN:
            raise BackendSpecError(f"Unknown precision '{precision}' in '{text}'.",
                                   fix=f"Use one of {', '.join(PRECISIONS)}, or 'plan' with a precision plan.")
        return cls(backend, precision)

    @classmethod
    def of(cls, backend: str, precision: str = "fp32") -> Target:
        """A target from its backend and precision (`plan` for the job's plan), checked as `parse` checks."""
        return cls.parse(cls(backend, precision.lower()).name)

    @classmethod
    def read(cls, text: object) -> Target:
        """A target trtlab wrote (in a result, a project, a batch folder): split, not checked."""
        if isinstance(text, Target):
            return text
        backend, _, precision = str(text).strip().partition(":")
        return cls(backend, (precision or "fp32").lower())


def plan_needed(targets: Iterable[Target | str]) -> Target | None:
    """The first of `targets` that runs the job's precision plan (`B:plan`), or None: the one test of whether a
    job needs a plan (text is read as trtlab writes it)."""
    return next((t for t in map(Target.read, targets) if t.needs_plan), None)


def require_plan(targets: Iterable[Target | str], plan: object | None) -> None:
    """Refuses a job whose `B:plan` targets have no plan to run, naming the first."""
    if plan is None and (target := plan_needed(targets)) is not None:
        raise PrecisionNotAvailable(f"{target.name} needs a precision plan, and none was given.",
                                    fix="Pass --plan PLAN.json, or use a precision such as "
                                        f"{target.with_precision('fp16').name}.")
