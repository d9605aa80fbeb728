"""The job side of the pipe: run one job function and report it as JSON events.

`child_main` is the entry point of the spawned process; `execute` is shared with `run_inline`, so a
job behaves the same in a child and in this process. This module imports nothing heavy: the child
starts with it, then imports the job's own module.
"""

from __future__ import annotations

import faulthandler
import importlib
import json
import logging
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any

from app.core.errors import TrtlabError, is_user_error
from app.jobs.protocol import JobCancelled, JobContext, JobEvent, JobSpec, to_json_safe

Emit = Callable[[JobEvent], None]


def resolve(func: str) -> Callable[[dict, JobContext], Any]:
    """The function named by ``"package.module:function"``."""
    module, sep, name = func.partition(":")
    if not sep or not module or not name:
        raise ValueError(f"job function {func!r} must be written as 'package.module:function'")
    target: Any = importlib.import_module(module)
    for part in name.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise TypeError(f"job function {func!r} is not callable")
    return target


def error_event(exc: BaseException) -> JobEvent:
    """The error event for an exception: a readable message, with the fix for user errors."""
    user = is_user_error(exc) and not isinstance(exc, JobCancelled)
    if isinstance(exc, TrtlabError):
        message = f"{exc.message} {exc.fix}".strip()
    else:
        text = str(exc)
        message = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    # A cancel is what the user asked for, not a fault: its log says "cancelled", without a traceback.
    tb = "" if isinstance(exc, JobCancelled) else "".join(traceback.format_exception(type(exc), exc,
                                                                                     exc.__traceback__))
    return JobEvent("error", message=message, data={
        "error_type": type(exc).__name__, "user_error": user, "fix": getattr(exc, "fix", "") or "",
        "traceback": tb})


def execute(spec: JobSpec, ctx: JobContext, emit: Emit, *, print_traceback: bool = False,
            reraise: tuple[type[BaseException], ...] = ()) -> JobEvent:
    """Run the job: emits ``started``, lets the job report through ``ctx``, returns the final event.

    The final event (result or error) is returned rather than emitted, so the caller decides when it
    goes out: it must be the last event of the job. Exceptions of the ``reraise`` types propagate
    (Ctrl+C when the job runs in the caller's process).
    """
    emit(JobEvent("started", message=spec.title))
    try:
        data = resolve(spec.func)(spec.params, ctx)
        if not isinstance(data, dict):
            data = {"value": data}
        return JobEvent("result", data=to_json_safe(data, "the job's result"))
    except BaseException as exc:  # everything, SystemExit included, becomes an error event
        if isinstance(exc, reraise):
            raise
        if print_traceback and not isinstance(exc, JobCancelled):
            traceback.print_exc()
        return error_event(exc)


class _Sender:
    """Sends events over the pipe from any thread; nothing goes out after the final event."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self._closed = False

    def send(self, ev: JobEvent) -> None:
        raw = ev.to_bytes()
        with self._lock:
            if self._closed:
                return
            self._closed = ev.final
            try:
                self._conn.send_bytes(raw)
            except OSError:
                pass  # the parent is gone; the watcher thread ends this process


class _ForwardLogging(logging.Handler):
    """Python logging inside the job (app.* at INFO, others at WARNING) becomes log events."""

    def __init__(self, emit: Emit) -> None:
        super().__init__(logging.INFO)
        self._emit = emit

    def emit(self, record: logging.LogRecord) -> None:
        try:
            level = {"WARNING": "warning", "ERROR": "error", "CRITICAL": "error", "DEBUG": "debug"}.get(
                record.levelname, "info")
            self._emit(JobEvent("log", message=f"{record.name}: {self.format(record)}", level=level))
        except Exception:  # logging must never break the job
            self.handleError(record)


def _own_session() -> None:
    # A session (and so a process group) of its own: terminate/kill of the group reaches whatever the
    # job starts, and the terminal's Ctrl+C goes to the parent, which cancels the job properly.
    try:
        os.setsid()
    except (AttributeError, OSError):
        pass


def _redirect_stdio(path: str) -> None:
    # fd-level redirection also catches native libraries' output and faulthandler's crash dumps,
    # and a file survives the process dying mid-write, unlike a pipe drained by a thread.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = os.fdopen(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)


def _die_with_parent() -> None:
    # The parent closed the control pipe by dying (or dropped the job): nobody will read the
    # results, so stop at once, with anything this job started.
    if hasattr(os, "killpg") and os.getpgrp() == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(1)


def _watch_control(control: Any, cancel: threading.Event) -> None:
    while True:
        try:
            msg = control.recv_bytes()
        except (EOFError, OSError):
            _die_with_parent()
            return
        if msg == b"cancel":
            cancel.set()


def child_main(spec_json: str, events: Any, control: Any, log_path: str, env: dict[str, str] | None = None) -> None:
    """Entry point of the spawned process: events go to ``events``, ``cancel`` arrives on ``control``; ``env`` is
    set before the job's module is imported (no CUDA library is loaded yet)."""
    os.environ.update(env or {})
    _own_session()
    _redirect_stdio(log_path)
    faulthandler.enable(file=sys.stderr, all_threads=True)  # a crash leaves its Python stacks in the log
    sender = _Sender(events)
    cancel = threading.Event()
    threading.Thread(target=_watch_control, args=(control, cancel), name="trtlab-job-control",
                     daemon=True).start()
    logging.getLogger().addHandler(_ForwardLogging(sender.send))
    logging.getLogger("app").setLevel(logging.INFO)

    spec = JobSpec.from_json(json.loads(spec_json))
    ctx = JobContext(spec.workdir or os.getcwd(), sender.send, cancel.is_set)
    final = execute(spec, ctx, sender.send, print_traceback=True)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        sender.send(final)
    except (TypeError, ValueError) as exc:  # cannot happen for checked data; report rather than vanish
        sender.send(error_event(exc))
    events.close()
    if final.kind == "error":
        sys.exit(1)
