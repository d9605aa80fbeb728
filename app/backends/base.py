"""The one small protocol every runtime implements, and the names the CLI and GUI use."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from app.core.errors import TrtlabError
from app.core.targets import BACKEND_NAMES, ENGINE_BACKENDS, PRECISIONS, BackendSpecError, Target

__all__ = ["BACKEND_NAMES", "ENGINE_BACKENDS", "PRECISIONS", "Availability", "Backend", "BackendSpecError",
           "BackendUnavailable", "Session", "Target"]

if TYPE_CHECKING:
    from app.jobs import JobContext



class BackendUnavailable(TrtlabError):
    """A requested backend cannot run here; the message says why and the fix how to get it."""

    title = "Backend not available"


@dataclass(frozen=True)
class Availability:
    """Whether a backend can run models here (``available``: what run, compare and bench need) and, for the
    engine backends, whether it can build engines (``can_build``; None for backends that build nothing).
    TensorRT for RTX builds without a GPU but runs only on an RTX-class GPU, so the two differ there;
    ``build_reason`` says why it cannot build."""

    available: bool
    reason: str = ""
    install_hint: str = ""
    details: dict[str, str] = field(default_factory=dict)
    can_build: bool | None = None
    build_reason: str = ""

    @property
    def can_run(self) -> bool:
        return self.available

    def to_json(self) -> dict[str, object]:
        doc: dict[str, object] = {"available": self.available, "reason": self.reason,
                                  "install_hint": self.install_hint, "details": dict(self.details)}
        if self.can_build is not None:
            doc.update({"can_build": self.can_build, "can_run": self.available, "build_reason": self.build_reason})
        return doc


class Session(Protocol):
    """A prepared model on one backend."""

    input_names: list[str]
    output_names: list[str]
    notes: list[str]   # what a reader of the results must know (e.g. "TF32 on")

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]: ...

    def timed_runner(self, feeds: dict[str, np.ndarray], mode: str) -> Callable[[], float | None]:
        """A zero-argument function doing one iteration, for `app.core.measure.latency.measure`."""
        ...

    def close(self) -> None: ...


class ProfiledSession(Session, Protocol):
    """An ONNX Runtime session prepared with a profiler prefix: its trace says where each node ran."""

    def end_profiling(self) -> str:
        """The profiler's trace file, written now."""
        ...


class EngineSession(Session, Protocol):
    """A TensorRT (or TensorRT for RTX) engine: it times each engine layer through an IProfiler."""

    def profile_layers(self, feeds: dict[str, np.ndarray], runs: int = 20) -> list[tuple[str, float]]: ...


class Backend(Protocol):
    name: str
    precisions: tuple[str, ...]
    timing_modes: tuple[str, ...]  # "end_to_end" and/or "device_only"

    def availability(self) -> Availability: ...

    def prepare(self, model_path: str, options: dict[str, object] | None = None) -> Session: ...


class OrtBackend(Backend, Protocol):
    """An ONNX Runtime backend (`ort-*`): its sessions can record ONNX Runtime's profile."""

    def prepare(self, model_path: str, options: dict[str, object] | None = None,
                profile_prefix: str | None = None) -> ProfiledSession: ...


class EngineBackend(Backend, Protocol):
    """A backend building TensorRT engines (ENGINE_BACKENDS): preparing builds the engine, with the job's progress
    and Cancel, at the input shapes of the run."""

    def prepare(self, model_path: str, options: dict[str, object] | None = None, *, ctx: JobContext | None = None,
                shapes: dict[str, tuple[int, ...]] | None = None) -> EngineSession: ...
