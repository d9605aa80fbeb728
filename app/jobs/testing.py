"""Small job functions for tests of the job machinery: progress, floods of events, errors and crashes."""

from __future__ import annotations

import ctypes
import os
import sys
import time

from app.core.errors import TrtlabError
from app.jobs.protocol import JobContext


def sleep_job(params: dict, ctx: JobContext) -> dict:
    """``steps`` sleeps of ``step_s`` seconds with progress after each; checks the cancel flag."""
    steps = int(params.get("steps", 10))
    for i in range(steps):
        ctx.check_cancelled()
        time.sleep(float(params.get("step_s", 0.05)))
        ctx.progress((i + 1) / steps, f"step {i + 1} of {steps}")
    return {"steps": steps, "qt_loaded": "PySide6" in sys.modules}


def events_job(params: dict, ctx: JobContext) -> dict:
    """``n`` log lines, with a progress report every tenth."""
    n = int(params.get("n", 50))
    for i in range(n):
        ctx.log(f"event {i}")
        if i % 10 == 0:
            ctx.progress(i / n, f"event {i}")
    return {"n": n}


def arrays_job(params: dict, ctx: JobContext) -> dict:
    """Random arrays saved to an ``.npz`` file; returns its path and a few JSON types."""
    import numpy as np

    rng = np.random.default_rng(int(params.get("seed", 0)))
    a = rng.random((3, 4), dtype=np.float32)
    path = ctx.save_arrays("arrays", {"a": a, "b": np.arange(5), "names": np.array(["x", "y"])})
    return {"npz": path, "sum": np.float32(a.sum()), "shape": a.shape, "nested": {"ok": True, "none": None}}


def modules_job(params: dict, ctx: JobContext) -> dict:
    """Which interesting modules the child has loaded (Qt must not be among them)."""
    names = ("PySide6", "shiboken6", "pyqtgraph", "numpy", "pytest")
    return {**{name: name in sys.modules for name in names},
            "main_file": getattr(sys.modules["__main__"], "__file__", None)}


def logging_job(params: dict, ctx: JobContext) -> dict:
    """Uses Python logging, as library code inside a job does."""
    import logging

    logging.getLogger("app.jobs.testing").info("via logging")
    logging.getLogger("somelib").warning("library warning")
    logging.getLogger("somelib").info("library chatter")  # below the forwarded level for non-app loggers
    return {}


def failing_job(params: dict, ctx: JobContext) -> dict:
    """Logs a warning, then raises a ValueError, or a TrtlabError with ``user``."""
    ctx.log("about to fail", "warning")
    if params.get("user"):
        raise TrtlabError("The input is wrong.", fix="Give a better input.")
    raise ValueError("something broke")


def abort_job(params: dict, ctx: JobContext) -> dict:
    """Calls abort(), like a failed assertion in native code."""
    ctx.log("aborting now")
    sys.stderr.write("about to abort\n")
    sys.stderr.flush()
    os.abort()


def segfault_job(params: dict, ctx: JobContext) -> dict:
    """Reads address 0, like a crash in native code."""
    ctx.log("reading address 0")
    ctypes.string_at(0)
    return {}


def exit_job(params: dict, ctx: JobContext) -> dict:
    """Leaves with ``os._exit(code)``, without reporting a result."""
    sys.stdout.write("leaving with os._exit\n")
    sys.stdout.flush()
    os._exit(int(params.get("code", 3)))


def stubborn_job(params: dict, ctx: JobContext) -> dict:
    """A busy loop that never looks at the cancel flag: only terminate or kill stops it."""
    ctx.progress(None, "busy")
    end = time.monotonic() + float(params.get("seconds", 60))
    x = 0
    while time.monotonic() < end:
        x += 1
    return {"x": x}


def lingering_job(params: dict, ctx: JobContext) -> dict:
    """Returns a result but leaves a non-daemon thread that keeps the process from exiting."""
    import threading

    threading.Thread(target=time.sleep, args=(float(params.get("seconds", 60)),), daemon=False).start()
    return {"ok": True}


def invalid_variant_job(params: dict, ctx: JobContext) -> dict:
    """Raises the error a variant failing its validation gives: a fault of trtlab's, with a message and a fix."""
    from app.core.precision import InvalidVariant

    ctx.log("validating the variant")
    raise InvalidVariant("ONNX Runtime's load", "Type Error: Type (tensor(bfloat16)) of input parameter of node "
                         "(Mul_3) Op (Mul) is invalid.", node="Mul_3", precision="bf16")
