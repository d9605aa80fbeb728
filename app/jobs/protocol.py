"""Job specs, events, results and the context a job function receives: all JSON-safe, no Qt.

A job function has the signature ``fn(params: dict, ctx: JobContext) -> dict``; it runs in a spawned
child process (`app.jobs.runner.JobRunner`) or in this process (`run_inline`), and reports through
``ctx``. Everything that crosses the process boundary is JSON, never pickle.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from app.core.errors import TrtlabError

if TYPE_CHECKING:  # numpy is imported lazily so that a bare child starts fast
    import numpy as np

EVENT_KINDS = ("started", "progress", "partial", "log", "result", "error")
FINAL_KINDS = ("result", "error")
LEVELS = ("debug", "info", "warning", "error")
STATUSES = ("done", "failed", "cancelled")


class JobCancelled(TrtlabError):
    """Raised by `JobContext.check_cancelled` once the parent asked the job to stop."""

    title = "Cancelled"


def to_json_safe(value: Any, where: str = "value") -> Any:
    """``value`` as plain JSON types: numpy scalars become numbers, tuples lists, paths strings.

    Arrays are refused on purpose: they belong in ``.npz`` files (`JobContext.save_arrays`).
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"{where}: dict keys must be strings, got {type(k).__name__} {k!r}")
            out[k] = to_json_safe(v, f"{where}[{k!r}]")
        return out
    if isinstance(value, (list, tuple)):
        return [to_json_safe(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, PurePath):
        return str(value)
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        return value.item()
    raise TypeError(f"{where} is not JSON-safe ({type(value).__name__}); "
                    "save arrays with ctx.save_arrays() and return the path")


def _known(cls: type, d: Mapping[str, Any]) -> dict[str, Any]:
    # Files written by a newer version may carry keys this one does not know: ignore them.
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in d.items() if k in names}


@dataclass
class JobSpec:
    """What to run: a function named ``"package.module:function"`` and its JSON-safe parameters."""

    func: str
    params: dict = field(default_factory=dict)
    title: str = ""                 # shown in the jobs panel
    workdir: str | None = None      # where the job writes its files; a temp dir when None

    def to_json(self) -> dict:
        return {"func": self.func, "params": to_json_safe(self.params, "params"), "title": self.title,
                "workdir": self.workdir}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> JobSpec:
        return cls(func=str(d["func"]), params=dict(d.get("params") or {}), title=str(d.get("title") or ""),
                   workdir=d.get("workdir"))


@dataclass
class JobEvent:
    """One message from a job; ``result`` or ``error`` is always the last one of a job."""

    kind: str                       # one of EVENT_KINDS
    time: float = field(default_factory=time.time)
    fraction: float | None = None   # progress: 0..1, None = indeterminate
    message: str = ""
    level: str = "info"             # log: one of LEVELS
    data: dict | None = None        # result payload, a partial result, error details, or {"stream": "stdio"}

    @property
    def final(self) -> bool:
        return self.kind in FINAL_KINDS

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> JobEvent:
        return cls(**_known(cls, d))

    def to_bytes(self) -> bytes:
        return json.dumps(self.to_json()).encode("utf-8")

    @classmethod
    def from_bytes(cls, raw: bytes) -> JobEvent:
        return cls.from_json(json.loads(raw.decode("utf-8")))


@dataclass
class JobResult:
    """How a job ended. For failed jobs ``data`` holds the error details (error_type, user_error, fix)."""

    status: str                     # one of STATUSES
    data: dict | None = None        # the function's return value when done
    error: str = ""                 # one paragraph a person can read
    exit_reason: str = ""           # "exit code 1", "killed by signal 11 (SIGSEGV)", "terminated after cancel"
    log_tail: list[str] = field(default_factory=list)
    seconds: float = 0.0
    workdir: str = ""
    error_type: str = ""            # exception class name, "crash" when the process died, "" when done
    user_error: bool = False        # the job stopped on the user's input (a TrtlabError), not on a bug
    fix: str = ""                   # what the user can do, for user errors

    @property
    def ok(self) -> bool:
        return self.status == "done"

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> JobResult:
        return cls(**_known(cls, d))


class JobContext:
    """What a job function gets: progress, log, the cancel flag, and a folder for its arrays."""

    def __init__(self, workdir: str | os.PathLike[str], emit: Callable[[JobEvent], None],
                 cancelled: Callable[[], bool]) -> None:
        self.workdir = Path(workdir)
        self._emit = emit
        self._cancelled = cancelled
        self._last_progress: tuple[float | None, str] | None = None

    def progress(self, fraction: float | None, message: str = "") -> None:
        """Report progress (0..1, None when unknown); repeats of the same report are not sent again."""
        if fraction is not None:
            fraction = float(fraction)
            fraction = None if math.isnan(fraction) else min(1.0, max(0.0, fraction))
        key = (fraction, str(message))
        if key == self._last_progress:
            return
        self._last_progress = key
        self._emit(JobEvent("progress", fraction=fraction, message=str(message)))

    def partial(self, data: Mapping[str, Any]) -> None:
        """A part of the result, sent as soon as it is known (JSON-safe, shaped as the final result is): a
        viewer can show it before the job ends. The final result still holds everything."""
        self._emit(JobEvent("partial", data=to_json_safe(data, "the job's partial result")))

    def log(self, message: str, level: str = "info") -> None:
        """A line for the job's log (shown in the jobs panel, printed by the CLI for warnings)."""
        self._emit(JobEvent("log", message=str(message), level=level if level in LEVELS else "info"))

    def cancelled(self) -> bool:
        """True once the parent asked the job to stop; check it between steps."""
        return self._cancelled()

    def check_cancelled(self) -> None:
        """Raise `JobCancelled` if the job was asked to stop."""
        if self._cancelled():
            raise JobCancelled("The job was cancelled.")

    def save_arrays(self, name: str, arrays: Mapping[str, np.ndarray]) -> str:
        """Write ``workdir/name.npz`` atomically (plain arrays, never pickled objects); returns its path."""
        import numpy as np

        if not name or name != os.path.basename(name) or name in (".", ".."):
            raise ValueError(f"save_arrays: {name!r} must be a plain file name without folders")
        plain = {}
        for key, value in arrays.items():
            arr = np.asarray(value)
            if arr.dtype.hasobject:
                raise TypeError(f"save_arrays: {key!r} holds Python objects ({arr.dtype}); "
                                "only numeric, bool and string arrays can be saved without pickle")
            plain[key] = arr
        self.workdir.mkdir(parents=True, exist_ok=True)
        path = self.workdir / f"{name}.npz"
        # Written beside the target and renamed, so a reader never sees half a file.
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=self.workdir)
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, **plain)  # type: ignore[arg-type]  # numpy's stub types **kwds as allow_pickle
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return str(path)
