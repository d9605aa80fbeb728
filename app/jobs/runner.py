"""Start jobs in spawned child processes, relay their events, cancel them, and turn deaths into results.

The parent side never blocks for long and never raises because of what the child did: a segfault,
an abort or a kill becomes a failed `JobResult` with the exit reason and the last log lines.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import multiprocessing
import os
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from multiprocessing import spawn
from multiprocessing.connection import wait as wait_for
from pathlib import Path
from typing import Any

from app.jobs.child import child_main, execute
from app.jobs.outcome import Ending, LogTail, OutputReader, build_result, closing_event, describe_exit
from app.jobs.protocol import JobContext, JobEvent, JobResult, JobSpec

log = logging.getLogger(__name__)

PROCESS_PREFIX = "trtlab-job-"
EVENTS_PER_POLL = 2000          # a chatty job must not hold the GUI thread in one poll
GIVE_UP_AFTER_KILL = 5.0        # a process stuck in the kernel may ignore SIGKILL for a while
_ids = itertools.count(1)
_ids_lock = threading.Lock()

OnEvent = Callable[[JobEvent], None]


def _install_bare_main() -> None:
    """Job children skip re-importing the parent's ``__main__`` module.

    By default a spawned child first re-runs the parent's main script; for the GUI or a script that
    imports Qt at the top that would load Qt into every job (and cost start-up time). Job children
    never need it: their target is `app.jobs.child.child_main`, imported by name. Other processes
    keep the default, and the wrapper is installed once.
    """
    original = spawn.get_preparation_data
    if getattr(original, "_trtlab_bare", False):
        return

    def get_preparation_data(name: str) -> dict[str, Any]:
        data = original(name)
        if str(name).startswith(PROCESS_PREFIX):
            data.pop("init_main_from_path", None)
            data.pop("init_main_from_name", None)
        return data

    get_preparation_data._trtlab_bare = True  # type: ignore[attr-defined]  # a marker: installed once, not twice
    spawn.get_preparation_data = get_preparation_data


def _new_workdir(spec: JobSpec, root: str | None) -> Path:
    if spec.workdir:
        path = Path(spec.workdir)
        path.mkdir(parents=True, exist_ok=True)
        return path
    if root:
        Path(root).mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="trtlab-job-", dir=root))


class JobHandle:
    """A running or finished job. Call `poll()` often (the GUI bridge does, on a timer).

    Cancel asks the job to stop through its flag, terminates it after ``grace`` seconds and kills it
    ``kill_after`` seconds later; a process that lingers ``exit_grace`` seconds after sending its
    final event (a library hanging at exit) is stopped the same way.
    """

    def __init__(self, spec: JobSpec, *, grace: float = 0.5, kill_after: float = 0.5, exit_grace: float = 3.0,
                 workroot: str | None = None, env: dict[str, str] | None = None) -> None:
        with _ids_lock:
            self.id = f"job{next(_ids)}"
        spec_json = spec.to_json()       # refuses parameters that are not JSON-safe, before any process starts
        self.spec = JobSpec.from_json(spec_json)
        self.grace, self.kill_after, self.exit_grace = grace, kill_after, exit_grace
        self.started = time.time()
        self.events: list[JobEvent] = []      # everything delivered so far, in order
        self._pending: list[JobEvent] = []    # delivered but not yet returned by poll()
        self._tail = LogTail()
        self._final: JobEvent | None = None   # held back until the process is gone and its output read
        self._final_at: float | None = None
        self._cancel_at: float | None = None
        self._sent: dict[str, float] = {}     # signal name -> when it was sent
        self._result: JobResult | None = None
        self._events_open = True
        workdir = _new_workdir(self.spec, workroot)
        self.spec.workdir = spec_json["workdir"] = str(workdir)
        fd, out_path = tempfile.mkstemp(prefix="output-", suffix=".log", dir=workdir)
        os.close(fd)
        self.output_path = Path(out_path)
        self._output = OutputReader(self.output_path)
        ctx = multiprocessing.get_context("spawn")  # never fork: Qt and CUDA are not fork-safe
        self._events, child_events = ctx.Pipe(duplex=False)
        child_control, self._control = ctx.Pipe(duplex=False)
        _install_bare_main()
        self._proc = ctx.Process(target=child_main, name=PROCESS_PREFIX + self.id, daemon=True,
                                 args=(json.dumps(spec_json), child_events, child_control, out_path, env))
        self.pid: int | None = None
        try:
            self._proc.start()
            self.pid = self._proc.pid
        except Exception as exc:  # no process, no job: a failed result instead of an exception in the GUI
            log.exception("could not start %s", self.id)
            self._result = JobResult("failed", error=f"Could not start the job's process: {exc}",
                                     exit_reason="not started", error_type="crash", workdir=str(workdir))
            self._deliver(closing_event(self._result))
            self._close()
        finally:
            child_events.close()
            child_control.close()

    # ------------------------------------------------------------------ reading
    def _deliver(self, ev: JobEvent) -> None:
        self.events.append(ev)
        self._pending.append(ev)
        self._tail.add(ev)

    def _read_events(self, limit: int | None) -> None:
        count = 0
        while self._events_open and (limit is None or count < limit):
            try:
                if not self._events.poll():
                    return
                raw = self._events.recv_bytes()
            except (EOFError, OSError):
                self._events_open = False
                return
            count += 1
            try:
                ev = JobEvent.from_bytes(raw)
            except (ValueError, TypeError, KeyError):
                log.warning("%s sent an unreadable event (%d bytes)", self.id, len(raw))
                continue
            if self._final is not None:
                continue  # the final event is the last one, whatever a stray thread still sends
            if ev.final:
                self._final, self._final_at = ev, time.monotonic()
            else:
                self._deliver(ev)

    def _read_output(self, final: bool = False) -> None:
        for line in self._output.read(final=final):
            self._deliver(JobEvent("log", message=line, data={"stream": "stdio"}))

    def _update(self) -> None:
        if self._result is not None:
            return
        self._read_events(EVENTS_PER_POLL)
        self._read_output()
        if self._proc.is_alive():
            self._escalate()
            if not self._gave_up():
                return
        # Gone: whatever it wrote before dying is still in the pipe and the file.
        self._read_events(100 * EVENTS_PER_POLL)
        self._read_output(final=True)
        self._finish()

    def _gave_up(self) -> bool:
        # SIGKILL normally ends a process at once; one stuck in the kernel (a GPU driver call) is left
        # behind rather than keeping the caller waiting forever.
        killed = self._sent.get("SIGKILL")
        return killed is not None and time.monotonic() - killed > GIVE_UP_AFTER_KILL

    # ------------------------------------------------------------------ stopping
    def _escalate(self) -> None:
        due = []
        if self._cancel_at is not None:
            due.append(self._cancel_at + self.grace)
        if self._final_at is not None:
            due.append(self._final_at + self.exit_grace)
        if not due:
            return
        now = time.monotonic()
        if "SIGTERM" not in self._sent:
            if now >= min(due):
                self._signal("SIGTERM")
        elif "SIGKILL" not in self._sent and now >= self._sent["SIGTERM"] + self.kill_after:
            self._signal("SIGKILL")

    def _signal(self, name: str) -> None:
        self._sent[name] = time.monotonic()
        pid = self.pid
        if pid is not None and hasattr(os, "killpg"):
            try:
                os.killpg(pid, getattr(signal, name))  # the child leads its own group: reach its children too
                return
            except ProcessLookupError:
                pass  # not yet its own group (cancelled during start-up): signal the process alone
            except OSError as exc:
                log.debug("killpg(%s, %s): %s", pid, name, exc)
        try:
            self._proc.kill() if name == "SIGKILL" else self._proc.terminate()
        except (OSError, ValueError, AttributeError) as exc:
            log.debug("%s of %s failed: %s", name, self.id, exc)

    def _finish(self) -> None:
        code = self._proc.exitcode
        if code is None:
            reason = f"did not exit after SIGKILL (process {self.pid} left behind)"
        else:
            reason = describe_exit(code)
        sent = "SIGKILL" if "SIGKILL" in self._sent else "SIGTERM" if "SIGTERM" in self._sent else ""
        if sent and self._final is not None and self._cancel_at is None:
            reason += " (it did not exit after reporting its result)"
        ending = Ending(reason, cancel_requested=self._cancel_at is not None, signal_sent=sent)
        result = build_result(self._final, ending, self._tail.lines(), time.time() - self.started,
                              self.spec.workdir or "")
        self._deliver(self._final if self._final is not None else closing_event(result))
        self._result = result
        self._close()
        if code is not None:
            self._proc.close()  # frees its sentinel now rather than when the handle is collected

    def _close(self) -> None:
        for conn in (self._events, self._control):
            try:
                conn.close()
            except OSError:
                pass

    # ------------------------------------------------------------------ public
    def poll(self) -> list[JobEvent]:
        """Events received since the last poll, in order; never blocks. Also drives cancel and completion."""
        self._update()
        new, self._pending = self._pending, []
        return new

    def cancel(self) -> None:
        """Ask the job to stop: its flag at once, terminate after ``grace``, kill after ``kill_after`` more."""
        if self._cancel_at is not None or self._result is not None:
            return
        self._cancel_at = time.monotonic()
        try:
            self._control.send_bytes(b"cancel")
        except OSError:
            pass  # already gone: the next poll collects it

    def stop_now(self) -> None:
        """Cancel without the grace period: terminate at once, kill ``kill_after`` seconds later."""
        self.cancel()
        if self._cancel_at is not None:
            self._cancel_at = min(self._cancel_at, time.monotonic() - self.grace)

    def cancel_requested(self) -> bool:
        return self._cancel_at is not None

    def done(self) -> bool:
        """True once the job has ended and its result is ready (events stay queued for `poll`)."""
        self._update()
        return self._result is not None

    def result(self) -> JobResult | None:
        """The result once the job has ended, else None."""
        self._update()
        return self._result

    def wait(self, timeout: float | None = None, on_event: OnEvent | None = None) -> JobResult:
        """Block until the job ends, passing its events to ``on_event``; TimeoutError after ``timeout``."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            for ev in self.poll():
                if on_event is not None:
                    on_event(ev)
            if self._result is not None:
                return self._result
            left = 0.05 if end is None else min(0.05, end - time.monotonic())
            if left <= 0:
                raise TimeoutError(f"{self.id} ({self.spec.title or self.spec.func}) still running after {timeout} s")
            # Wakes on a new event or on the process ending; the short cap keeps output reading and
            # cancel escalation going.
            wait_for([self._events, self._proc.sentinel] if self._events_open else [self._proc.sentinel], left)


class JobRunner:
    """Starts jobs in spawned child processes (the GUI through `JobBridge`, the CLI through `run`)."""

    def __init__(self, grace: float = 0.5, kill_after: float = 0.5, exit_grace: float = 3.0,
                 workroot: str | None = None) -> None:
        self.grace, self.kill_after, self.exit_grace = grace, kill_after, exit_grace
        self.workroot = workroot      # parent folder of the temp workdirs; the system temp dir when None
        self.interrupted: int | None = None  # the first SIGINT/SIGTERM that cancelled the last `run`

    @staticmethod
    def start_tracker() -> None:
        """Start multiprocessing's resource tracker now rather than with the first job. Every spawned child is handed
        it, and it is a Python process of its own: started with the first job, it and the job's process start side
        by side, and on a 2-core machine the window that asked for the job waits for a core (the click on a sweep's
        Run stalled 20-26 ms with 10 ms of the window's own work). Harmless when it already runs; nothing on Windows,
        where spawned children are not handed one."""
        if os.name != "posix":
            return
        try:
            from multiprocessing import resource_tracker

            resource_tracker.ensure_running()
        except Exception:  # noqa: BLE001 - the first job starts it instead, as before
            log.debug("could not start the resource tracker early", exc_info=True)

    def start(self, spec: JobSpec, env: dict[str, str] | None = None) -> JobHandle:
        """Spawn the child and return at once; raises only for a spec that is not JSON-safe. ``env``: variables set
        in the child before its job is imported (a batch job's CUDA_VISIBLE_DEVICES)."""
        return JobHandle(spec, grace=self.grace, kill_after=self.kill_after, exit_grace=self.exit_grace,
                         workroot=self.workroot, env=env)

    def run(self, spec: JobSpec, on_event: OnEvent | None = None,
            on_interrupt: Callable[[int, bool], None] | None = None) -> JobResult:
        """Blocking (the CLI). Ctrl+C or SIGTERM cancels the job (a second one stops it at once) and still returns
        its result; ``interrupted`` then holds the first signal's number, and ``on_interrupt(signum, forced)``
        hears of each one."""
        self.interrupted = None
        with StopSignals() as stops:
            handle = self.start(spec)
            while True:
                try:
                    return handle.wait(timeout=0.1, on_event=on_event)
                except TimeoutError:
                    pass
                except KeyboardInterrupt:  # raised by a handler of the caller's where none could be installed here
                    stops.caught.append(signal.SIGINT)
                for signum, forced in stops.new():
                    self.interrupted = stops.first
                    if forced:
                        handle.stop_now()
                    else:
                        handle.cancel()
                    if on_interrupt is not None:
                        on_interrupt(signum, forced)


class StopSignals:
    """Ctrl+C and SIGTERM while its block runs (`catch_stop_signals`), handed out once each by `new()` as (signal
    number, forced): the first asks the work to cancel, any later one to stop at once. `first` holds the first.
    The one loop every runner of jobs uses (the CLI's, a local batch's, a Ray batch's)."""

    def __init__(self) -> None:
        self.caught: list[int] = []
        self.handled = 0
        self.first: int | None = None
        self._block: contextlib.AbstractContextManager[None] | None = None

    def __enter__(self) -> StopSignals:
        self._block = catch_stop_signals(self.caught)
        self._block.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._block is not None:
            self._block.__exit__(*exc)  # type: ignore[arg-type]  # exc is the (type, value, traceback) triple

    def new(self) -> Iterator[tuple[int, bool]]:
        while self.handled < len(self.caught):
            signum, forced = self.caught[self.handled], self.handled > 0
            self.first = signum if self.first is None else self.first
            self.handled += 1
            yield signum, forced


@contextlib.contextmanager
def catch_stop_signals(caught: list[int]) -> Iterator[None]:
    """SIGINT and SIGTERM append their number to ``caught`` instead of raising or ending the process, so the
    caller can cancel its job cleanly (its temp folder removed, its partial result kept). Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    names = (signal.SIGINT, signal.SIGTERM)
    previous = {s: signal.getsignal(s) for s in names}
    try:
        for s in names:
            signal.signal(s, lambda signum, _frame: caught.append(signum))
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)


def run_inline(spec: JobSpec, on_event: OnEvent | None = None, cancel: threading.Event | None = None,
               workroot: str | None = None) -> JobResult:
    """Run the job function in this process, with the same events and result shape as in a child.

    For tests, debugging and light work only: a crash here takes this process with it.
    """
    spec = JobSpec.from_json(spec.to_json())
    flag = cancel or threading.Event()
    spec.workdir = str(_new_workdir(spec, workroot))
    tail = LogTail()
    started = time.time()

    def emit(ev: JobEvent) -> None:
        tail.add(ev)
        if on_event is not None:
            on_event(ev)

    ctx = JobContext(spec.workdir, emit, flag.is_set)
    final = execute(spec, ctx, emit, reraise=(KeyboardInterrupt,))
    if final.kind == "error":
        # In a child the traceback reaches the log through stderr; here it is added by hand.
        tail.add_lines(str((final.data or {}).get("traceback", "")).splitlines())
    ending = Ending("ran in this process", cancel_requested=flag.is_set())
    result = build_result(final, ending, tail.lines(), time.time() - started, spec.workdir)
    if on_event is not None:
        on_event(final)
    return result
