"""Job specs, events, results and the context a job function receives: all JSON-safe, no Qt."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from app.core.errors import TrtlabError


class JobCancelled(TrtlabError):
    title = "Cancelled"


@dataclass
class JobSpec:
    func: str                       # "package.module:function", resolved in the child
    params: dict = field(default_factory=dict)
    title: str = ""
    workdir: str | None = None

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> JobSpec:
        return cls(func=d["func"], params=dict(d.get("params") or {}), title=d.get("title", ""),
                   workdir=d.get("workdir"))


@dataclass
class JobEvent:
    kind: str                       # "started" | "progress" | "log" | "result" | "error"
    time: float = field(default_factory=time.time)
    fraction: float | None = None
    message: str = ""
    level: str = "info"
    data: dict | None = None

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self)).encode("utf-8")

    @classmethod
    def from_bytes(cls, raw: bytes) -> JobEvent:
        return cls(**json.loads(raw.decode("utf-8")))


@dataclass
class JobResult:
    status: str                     # "done" | "failed" | "cancelled"
    data: dict | None = None
    error: str = ""
    exit_reason: str = ""
    log_tail: list[str] = field(default_factory=list)
    seconds: float = 0.0
    workdir: str = ""
    error_type: str = ""            # class name of the job's exception, "" for crashes
    user_error: bool = False        # the job failed on the user's input (a TrtlabError), not a crash
    fix: str = ""

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> JobResult:
        return cls(**d)


class JobContext:
    """What a job function gets: progress, log, cancel flag and a folder for its arrays."""

    def __init__(self, workdir: Path, emit: Callable[[JobEvent], None], cancelled: Callable[[], bool]) -> None:
        self.workdir = Path(workdir)
        self._emit = emit
        self._cancelled = cancelled

    def progress(self, fraction: float | None, message: str = "") -> None:
        self._emit(JobEvent("progress", fraction=None if fraction is None else float(fraction), message=message))

    def log(self, message: str, level: str = "info") -> None:
        self._emit(JobEvent("log", message=message, level=level))

    def cancelled(self) -> bool:
        return self._cancelled()

    def check_cancelled(self) -> None:
        if self._cancelled():
            raise JobCancelled("The job was cancelled.")

    def save_arrays(self, name: str, arrays: dict[str, np.ndarray]) -> str:
        """Write `name.npz` (plain arrays, never pickled objects) in the job folder; returns its path."""
        path = self.workdir / f"{name}.npz"
        np.savez(path, **{k: np.asarray(v) for k, v in arrays.items()})
        return str(path)
