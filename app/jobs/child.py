"""The child-process side: run one job function, report over a pipe as JSON events."""

from __future__ import annotations

import faulthandler
import importlib
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from app.jobs.protocol import JobCancelled, JobContext, JobEvent, JobSpec


def resolve(func: str) -> Any:
    module, _, name = func.partition(":")
    return getattr(importlib.import_module(module), name)


def error_event(exc: BaseException) -> JobEvent:
    from app.core.errors import TrtlabError

    user = isinstance(exc, TrtlabError)
    message = exc.message if user else f"{type(exc).__name__}: {exc}"
    return JobEvent("error", message=message, data={
        "error_type": type(exc).__name__, "user_error": user and not isinstance(exc, JobCancelled),
        "fix": getattr(exc, "fix", ""), "traceback": traceback.format_exc()})


def child_main(spec_json: dict, conn: Any, cancel_event: Any, stderr_path: str) -> None:
    """Entry point of the spawned process."""
    try:
        os.setpgrp()  # its own process group, so terminate/kill also reach what it starts
    except (AttributeError, OSError):
        pass
    fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 2)
    os.dup2(fd, 1)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    faulthandler.enable(file=sys.stderr)  # a segfault leaves its Python stack in the log

    def emit(ev: JobEvent) -> None:
        conn.send_bytes(ev.to_bytes())

    spec = JobSpec.from_json(spec_json)
    emit(JobEvent("started", message=spec.title))
    ctx = JobContext(Path(spec.workdir or "."), emit, cancel_event.is_set)
    try:
        data = resolve(spec.func)(spec.params, ctx)
        emit(JobEvent("result", data=data if isinstance(data, dict) else {"value": data}))
    except BaseException as exc:  # everything becomes an error event; the parent decides what it means
        traceback.print_exc()
        emit(error_event(exc))
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        conn.close()
