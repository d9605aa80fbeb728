"""Targets: `B:P`, a backend running the variant graph of a precision (`B:plan`: of the job's precision plan), with
the runtime's own settings where some are chosen (`ort-cuda:fp16@cuda_graph=1,conv_algo=heuristic`: KNOBS).

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
_COUNT = "a count"   # a knob whose value is a whole number >= 1
# The runtime's settings a target may carry, per backend: each knob's values (the first is ONNX Runtime's default).
KNOBS: dict[str, dict[str, tuple[str, ...]]] = {
    "ort-cuda": {
        "cuda_graph": ("0", "1"),                              # enable_cuda_graph: one captured graph replayed
        "nhwc": ("0", "1"),                                    # prefer_nhwc: channels-last convolutions
        "conv_algo": ("exhaustive", "heuristic", "default"),   # cudnn_conv_algo_search
        "conv_workspace": ("1", "0"),                          # cudnn_conv_use_max_workspace
        "opt": ("all", "extended", "basic", "disable"),         # graph_optimization_level
    },
    "ort-cpu": {
        "threads": (_COUNT,),                                  # intra_op_num_threads
        "mode": ("sequential", "parallel"),                    # execution_mode
        "inter_threads": (_COUNT,),                            # inter_op_num_threads (parallel mode)
        "opt": ("all", "extended", "basic", "disable"),
    },
}


class BackendSpecError(TrtlabError):
    title = "Invalid backend"


class PrecisionNotAvailable(TrtlabError):
    title = "Precision not available"


@dataclass(frozen=True)
class Target:
    """`B:P`: a backend running the variant graph for a precision (`B:plan`: for the job's precision plan)."""

    backend: str
    precision: str = "fp32"
    knobs: tuple[tuple[str, str], ...] = ()   # the runtime's settings (KNOBS), sorted by name; () : its defaults

    @property
    def name(self) -> str:
        base = f"{self.backend}:{self.precision}"
        return f"{base}@{','.join(f'{k}={v}' for k, v in self.knobs)}" if self.knobs else base

    @property
    def base(self) -> Target:
        """The same backend and precision with the runtime's default settings."""
        return replace(self, knobs=())

    @property
    def settings(self) -> dict[str, str]:
        """The runtime's settings this target sets, by knob name."""
        return dict(self.knobs)

    def with_knobs(self, knobs: dict[str, str] | Iterable[tuple[str, str]]) -> Target:
        """The same backend and precision with these settings (checked as `parse` checks them)."""
        items = knobs.items() if isinstance(knobs, dict) else knobs
        return replace(self, knobs=_checked_knobs(self.backend, items, self.name))

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
        """The same precision on another backend (its settings belong to the old backend: dropped)."""
        return replace(self, backend=backend, knobs=self.knobs if backend == self.backend else ())

    def plan_as_fp32(self, trivial: bool) -> Target:
        """`B:fp32` for `B:plan` when the plan changes nothing (`trivial`): the model itself, said as such."""
        return self.with_precision("fp32") if trivial and self.needs_plan else self

    @classmethod
    def parse(cls, text: str | Target) -> Target:
        """A target as a person writes it (`ort-cpu` is `ort-cpu:fp32`), checked."""
        if isinstance(text, Target):
            return text
        head, _, knob_text = str(text).strip().partition("@")
        backend, _, precision = head.partition(":")
        precision = (precision or "fp32").lower()
        if backend not in BACKEND_NAMES:
            raise BackendSpecError(f"Unknown backend '{backend}' in '{text}'.",
                                   fix=f"Use one of {', '.join(BACKEND_NAMES)}, e.g. ort-cpu:fp32.")
        if precision not in PRECISIONS and precision != PLAN:
            raise BackendSpecError(f"Unknown precision '{precision}' in '{text}'.",
                                   fix=f"Use one of {', '.join(PRECISIONS)}, or 'plan' with a precision plan.")
        return cls(backend, precision, _checked_knobs(backend, _knob_items(knob_text, str(text)), str(text)))

    @classmethod
    def of(cls, backend: str, precision: str = "fp32") -> Target:
        """A target from its backend and precision (`plan` for the job's plan), checked as `parse` checks."""
        return cls.parse(cls(backend, precision.lower()).name)

    @classmethod
    def read(cls, text: object) -> Target:
        """A target trtlab wrote (in a result, a project, a batch folder): split, not checked."""
        if isinstance(text, Target):
            return text
        head, _, knob_text = str(text).strip().partition("@")
        backend, _, precision = head.partition(":")
        knobs = tuple(sorted((name, value) for name, _, value in (p.partition("=") for p in knob_text.split(",") if p)))
        return cls(backend, (precision or "fp32").lower(), knobs)


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


def _knob_items(text: str, whole: str) -> list[tuple[str, str]]:
    items = []
    for part in (p.strip() for p in text.split(",")) if text.strip() else ():
        name, eq, value = part.partition("=")
        if not eq or not name.strip() or not value.strip():
            raise BackendSpecError(f"'{part}' in '{whole}' is not a setting NAME=VALUE.",
                                   fix="Write settings after '@' as NAME=VALUE pairs separated by commas, e.g. "
                                       "ort-cuda:fp16@cuda_graph=1,conv_algo=heuristic.")
        items.append((name.strip().lower(), value.strip().lower()))
    return items


def _checked_knobs(backend: str, items: Iterable[tuple[str, str]], whole: str) -> tuple[tuple[str, str], ...]:
    """Settings checked against the backend's KNOBS, sorted by name; a knob given twice is refused."""
    known = KNOBS.get(backend, {})
    out: dict[str, str] = {}
    for name, value in items:
        if name not in known:
            raise BackendSpecError(f"{backend} has no setting '{name}' (in '{whole}').",
                                   fix=(f"Its settings are {', '.join(known)}." if known else
                                        f"{backend} takes no settings after '@'; ort-cuda and ort-cpu do."))
        allowed = known[name]
        ok = value.isdigit() and int(value) >= 1 if allowed == (_COUNT,) else value in allowed
        if not ok:
            choices = "a whole number of 1 or more" if allowed == (_COUNT,) else " or ".join(allowed)
            raise BackendSpecError(f"'{value}' is not a value of {backend}'s {name} (in '{whole}').",
                                   fix=f"Use {choices}.")
        if name in out:
            raise BackendSpecError(f"{name} is set twice in '{whole}'.", fix="Give each setting once.")
        out[name] = value
    return tuple(sorted(out.items()))
