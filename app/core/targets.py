"""Targets: `B:P`, a backend running the variant graph of a precision (`B:plan`: of the job's precision plan).

The one parser of that spelling, so every part of trtlab (specs, CLI, batch matrices, reports, the window) reads
a target the same way: `Target.parse` checks what a person wrote, `Target.read` reads back what trtlab wrote
earlier (a result, a project) without refusing a backend this version does not know."""

from __future__ import annotations

from dataclasses import dataclass

from app.core.errors import TrtlabError

PRECISIONS = ("fp32", "fp16", "bf16", "int8")
BACKEND_NAMES = ("ort-cpu", "ort-cuda", "ort-trt", "trt", "trt-rtx")
ENGINE_BACKENDS = ("trt", "trt-rtx")   # build TensorRT engines (`trtlab build --backend`)
CPU_BACKENDS = ("ort-cpu",)


class BackendSpecError(TrtlabError):
    title = "Invalid backend"


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
        if precision not in PRECISIONS and precision != "plan":
            raise BackendSpecError(f"Unknown precision '{precision}' in '{text}'.",
                                   fix=f"Use one of {', '.join(PRECISIONS)}, or 'plan' with a precision plan.")
        return cls(backend, precision)

    @classmethod
    def read(cls, text: object) -> Target:
        """A target trtlab wrote (in a result, a project, a batch folder): split, not checked."""
        if isinstance(text, Target):
            return text
        backend, _, precision = str(text).strip().partition(":")
        return cls(backend, (precision or "fp32").lower())
