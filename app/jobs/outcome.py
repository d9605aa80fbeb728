"""From what a job left behind (its final event, exit code, output) to a `JobResult` a person can read."""

from __future__ import annotations

import os
import signal
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from app.jobs.protocol import JobEvent, JobResult

TAIL_LINES = 30
CANCELLED_MESSAGE = "The job was cancelled."


def describe_exit(code: int | None) -> str:
    """``"exit code 1"``, ``"killed by signal 11 (SIGSEGV)"``, ``"aborted (SIGABRT)"``..."""
    if code is None:
        return "no exit code"
    if code >= 0:
        return f"exit code {code}"
    num = -code
    try:
        name = signal.Signals(num).name
    except ValueError:
        return f"killed by signal {num}"
    if name == "SIGABRT":
        return "aborted (SIGABRT)"
    if name == "SIGTERM":
        return f"terminated by signal {num} (SIGTERM)"
    if name == "SIGKILL":
        return f"killed by signal {num} (SIGKILL; often the system running out of memory)"
    return f"killed by signal {num} ({name})"


class LogTail:
    """The last lines of a job's log: its ``ctx.log`` lines as "level: message", output lines as written."""

    def __init__(self, size: int = TAIL_LINES) -> None:
        self._lines: deque[str] = deque(maxlen=size)

    def add(self, ev: JobEvent) -> None:
        if ev.kind != "log":
            return
        stdio = bool(ev.data and ev.data.get("stream") == "stdio")
        self._lines.append(ev.message if stdio else f"{ev.level}: {ev.message}")

    def add_lines(self, lines: list[str]) -> None:
        self._lines.extend(line for line in lines if line.strip())

    def lines(self) -> list[str]:
        return list(self._lines)


class OutputReader:
    """Reads the child's stdout/stderr file as whole lines, a bounded amount per call.

    A child that floods its output must not stall the caller (the GUI thread polls this): beyond
    ``max_backlog`` unread bytes the reader skips ahead and says how much it skipped.
    """

    def __init__(self, path: Path, chunk: int = 256 * 1024, max_backlog: int = 4 * 1024 * 1024) -> None:
        self.path = path
        self.chunk = chunk
        self.max_backlog = max_backlog
        self._offset = 0
        self._partial = b""

    def read(self, final: bool = False) -> list[str]:
        """New complete lines; with ``final`` also the unterminated last line."""
        try:
            size = os.path.getsize(self.path)
        except OSError:
            return []
        lines: list[str] = []
        if size - self._offset > self.max_backlog:
            skip_to = size - self.chunk
            lines.append(f"[... {skip_to - self._offset} bytes of output skipped ...]")
            self._offset, self._partial = skip_to, b""
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self._offset)
                data = fh.read(size - self._offset if final else min(self.chunk, size - self._offset))
        except OSError:
            return lines
        self._offset += len(data)
        data = self._partial + data
        *complete, self._partial = data.split(b"\n")
        if final and self._partial:
            complete.append(self._partial)
            self._partial = b""
        lines += [raw.decode("utf-8", "replace").rstrip("\r") for raw in complete]
        return [line for line in lines if line.strip()]


@dataclass
class Ending:
    """How the job's process ended, as the parent saw it."""

    exit_reason: str                    # describe_exit(...) or a note such as "ran in this process"
    cancel_requested: bool = False
    signal_sent: str = ""               # "", "SIGTERM" or "SIGKILL": the strongest one the parent sent


def build_result(final: JobEvent | None, ending: Ending, tail: list[str], seconds: float,
                 workdir: str) -> JobResult:
    """The result for a final event (None when the process died without one)."""
    r = JobResult(status="failed", log_tail=tail, seconds=round(seconds, 3), workdir=workdir,
                  exit_reason=ending.exit_reason)
    if final is not None and final.kind == "result":
        r.status, r.data = "done", final.data
        return r
    if final is not None:
        info = final.data or {}
        r.error_type, r.user_error, r.fix = str(info.get("error_type", "")), bool(info.get("user_error")), \
            str(info.get("fix", ""))
        r.error = final.message
        r.data = {"error_type": r.error_type, "user_error": r.user_error, "fix": r.fix}
        if r.error_type == "JobCancelled" or ending.cancel_requested:
            r.status, r.error, r.user_error = "cancelled", CANCELLED_MESSAGE, False
            if r.error_type == "JobCancelled":
                r.exit_reason = "stopped after cancel"
        return r
    if ending.cancel_requested:
        r.status, r.error, r.error_type = "cancelled", CANCELLED_MESSAGE, "JobCancelled"
        if ending.signal_sent:
            r.exit_reason = f"{'killed' if ending.signal_sent == 'SIGKILL' else 'terminated'} after cancel"
        r.data = {"error_type": r.error_type, "user_error": False, "fix": ""}
        return r
    r.error_type = "crash"
    fatal = next((line.strip() for line in tail if line.startswith("Fatal Python error")), "")
    r.error = f"The job's process died before it finished: {ending.exit_reason}." + (f" {fatal}" if fatal else "")
    r.data = {"error_type": "crash", "user_error": False, "fix": ""}
    return r


def closing_event(result: JobResult) -> JobEvent:
    """The error event that ends the event stream of a job whose process did not send one."""
    return JobEvent("error", message=result.error, data={
        "error_type": result.error_type, "user_error": False, "fix": "", "exit_reason": result.exit_reason})
