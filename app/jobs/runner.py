"""Start jobs in spawned child processes, collect their events, cancel them, and turn deaths into results."""

from __future__ import annotations

import itertools
import logging
import multiprocessing
import os
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from app.jobs.protocol import JobContext, JobEvent, JobResult, JobSpec

log = logging.getLogger(__name__)

TAIL = 30
_ids = itertools.count(1)


def _signal_name(num: int) -> str:
    try:
        name = signal.Signals(num).name
    except ValueError:
        return f"signal {num}"
    what = {"SIGSEGV": "crashed", "SIGABRT": "aborted", "SIGKILL": "killed", "SIGTERM": "terminated",
            "SIGBUS": "crashed", "SIGFPE": "crashed", "SIGILL": "crashed"}.get(name, "stopped")
    hint = " (possibly out of memory)" if name == "SIGKILL" else ""
    return f"{what} by signal {num} ({name}){hint}"


def _tail(path: Path, lines: int = TAIL) -> list[str]:
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 64 * 1024))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line.strip()][-lines:]


class JobHandle:
    """A running or finished job; call `poll()` often (the GUI bridge does it on a timer)."""

    def __init__(self, spec: JobSpec, grace: float = 0.5) -> None:
        self.id = f"job{next(_ids)}"
        self.spec = spec
        self.grace = grace
        self.started = time.time()
        self.events: list[JobEvent] = []
        self._new: list[JobEvent] = []
        self._log: list[str] = []
        self._final: JobEvent | None = None
        self._result: JobResult | None = None
        self._cancel_at: float | None = None
        self._terminated = self._killed = False
        workdir = Path(spec.workdir or tempfile.mkdtemp(prefix="trtlab-job-"))
        workdir.mkdir(parents=True, exist_ok=True)
        self.spec.workdir = str(workdir)
        self.stderr_path = workdir / "child.log"
        ctx = multiprocessing.get_context("spawn")  # never fork: Qt and CUDA are not fork-safe
        self._cancel = ctx.Event()
        self._conn, child_conn = ctx.Pipe(duplex=False)
        from app.jobs.child import child_main

        self._proc = ctx.Process(target=child_main, daemon=True,
                                 args=(spec.to_json(), child_conn, self._cancel, str(self.stderr_path)))
        self._proc.start()
        child_conn.close()

    # ----------------------------------------------------------------- events
    def _drain(self) -> None:
        while True:
            try:
                if not self._conn.poll(0):
                    return
                ev = JobEvent.from_bytes(self._conn.recv_bytes())
            except (EOFError, OSError):
                return
            self.events.append(ev)
            self._new.append(ev)
            if ev.kind == "log":
                self._log.append(f"{ev.level}: {ev.message}")
            elif ev.kind in ("result", "error"):
                self._final = ev

    def poll(self) -> list[JobEvent]:
        """Events received since the last poll, in order; also drives cancel escalation and completion."""
        if self._result is None:
            self._drain()
            self._escalate()
            if not self._proc.is_alive():
                self._drain()
                self._finish()
        new, self._new = self._new, []
        return new

    def _escalate(self) -> None:
        if self._cancel_at is None or not self._proc.is_alive():
            return
        waited = time.monotonic() - self._cancel_at
        if waited > self.grace and not self._terminated:
            self._terminated = True
            self._signal(signal.SIGTERM)
        elif waited > 2 * self.grace and not self._killed:
            self._killed = True
            self._signal(signal.SIGKILL)

    def _signal(self, sig: int) -> None:
        pid = self._proc.pid
        if pid is None:
            return
        try:
            os.killpg(pid, sig)  # the child leads its own group
        except (ProcessLookupError, PermissionError, AttributeError, OSError):
            try:
                os.kill(pid, sig)
            except OSError:
                pass

    def _finish(self) -> None:
        self._proc.join(timeout=1)
        code = self._proc.exitcode
        tail = (self._log + _tail(self.stderr_path))[-TAIL:]
        seconds = time.time() - self.started
        r = JobResult(status="failed", log_tail=tail, seconds=seconds, workdir=self.spec.workdir or "")
        final = self._final
        if final is not None and final.kind == "result":
            r.status, r.data, r.exit_reason = "done", final.data, "exit code 0"
        elif final is not None and final.kind == "error":
            info = final.data or {}
            r.error, r.error_type = final.message, info.get("error_type", "")
            r.user_error, r.fix = bool(info.get("user_error")), info.get("fix", "")
            r.exit_reason = f"exit code {code}"
            if r.error_type == "JobCancelled":
                r.status = "cancelled"
        elif self._cancel_at is not None:
            r.status = "cancelled"
            r.exit_reason = "terminated after cancel" if self._terminated else f"exit code {code}"
            r.error = "The job was cancelled."
        else:
            r.exit_reason = _signal_name(-code) if code is not None and code < 0 else f"exit code {code}"
            r.error = f"The job's process {r.exit_reason} before it finished."
        if self._cancel_at is not None and r.status == "failed":
            r.status = "cancelled"
        self._result = r
        self._conn.close()

    # ----------------------------------------------------------------- control
    def cancel(self) -> None:
        """Cooperative first (the job's flag), then terminate after `grace`, then kill."""
        if self._cancel_at is None and self._result is None:
            self._cancel_at = time.monotonic()
            self._cancel.set()

    def done(self) -> bool:
        self.poll()
        return self._result is not None

    def result(self) -> JobResult | None:
        return self._result

    def wait(self, timeout: float | None = None, on_event: Callable[[JobEvent], None] | None = None) -> JobResult:
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            for ev in self.poll():
                if on_event is not None:
                    on_event(ev)
            if self._result is not None:
                return self._result
            if end is not None and time.monotonic() > end:
                raise TimeoutError(f"{self.id} still running after {timeout} s")
            self._conn.poll(0.02) if not self._conn.closed else time.sleep(0.02)


class JobRunner:
    def __init__(self, grace: float = 0.5) -> None:
        self.grace = grace

    def start(self, spec: JobSpec) -> JobHandle:
        return JobHandle(JobSpec.from_json(spec.to_json()), grace=self.grace)

    def run(self, spec: JobSpec, on_event: Callable[[JobEvent], None] | None = None) -> JobResult:
        """Blocking (the CLI): Ctrl+C cancels the job and still returns its result."""
        handle = self.start(spec)
        try:
            return handle.wait(on_event=on_event)
        except KeyboardInterrupt:
            handle.cancel()
            return handle.wait(timeout=10)


def run_inline(spec: JobSpec, on_event: Callable[[JobEvent], None] | None = None,
               cancel: threading.Event | None = None) -> JobResult:
    """Run a job function in this process (tests, light work); same result shape as a child run."""
    from app.jobs.child import error_event, resolve

    flag = cancel or threading.Event()
    workdir = Path(spec.workdir or tempfile.mkdtemp(prefix="trtlab-job-"))
    workdir.mkdir(parents=True, exist_ok=True)
    logs: list[str] = []
    started = time.time()

    def emit(ev: JobEvent) -> None:
        if ev.kind == "log":
            logs.append(f"{ev.level}: {ev.message}")
        if on_event is not None:
            on_event(ev)

    ctx = JobContext(workdir, emit, flag.is_set)
    try:
        data = resolve(spec.func)(spec.params, ctx)
    except Exception as exc:
        ev = error_event(exc)
        info = ev.data or {}
        status = "cancelled" if info.get("error_type") == "JobCancelled" else "failed"
        return JobResult(status=status, error=ev.message, log_tail=(logs + info["traceback"].splitlines())[-TAIL:],
                         seconds=time.time() - started, workdir=str(workdir), error_type=info["error_type"],
                         user_error=bool(info["user_error"]), fix=info.get("fix", ""), exit_reason="in process")
    return JobResult(status="done", data=data if isinstance(data, dict) else {"value": data}, log_tail=logs[-TAIL:],
                     seconds=time.time() - started, workdir=str(workdir), exit_reason="in process")
