"""Small job functions for tests of the job machinery (and a smoke test of a user's install)."""

from __future__ import annotations

import ctypes
import os
import sys
import time

import numpy as np

from app.core.errors import TrtlabError
from app.jobs.protocol import JobContext


def sleep_job(params: dict, ctx: JobContext) -> dict:
    steps = int(params.get("steps", 10))
    for i in range(steps):
        ctx.check_cancelled()
        time.sleep(float(params.get("step_s", 0.05)))
        ctx.progress((i + 1) / steps, f"step {i + 1} of {steps}")
    return {"steps": steps, "qt_loaded": "PySide6" in sys.modules}


def events_job(params: dict, ctx: JobContext) -> dict:
    for i in range(int(params.get("n", 50))):
        ctx.log(f"event {i}")
    return {"n": int(params.get("n", 50))}


def arrays_job(params: dict, ctx: JobContext) -> dict:
    rng = np.random.default_rng(int(params.get("seed", 0)))
    path = ctx.save_arrays("arrays", {"a": rng.random((3, 4), dtype=np.float32), "b": np.arange(5)})
    return {"npz": path}


def failing_job(params: dict, ctx: JobContext) -> dict:
    ctx.log("about to fail", "warning")
    if params.get("user"):
        raise TrtlabError("The input is wrong.", fix="Give a better input.")
    raise ValueError("something broke")


def abort_job(params: dict, ctx: JobContext) -> dict:
    ctx.log("aborting now")
    os.abort()


def segfault_job(params: dict, ctx: JobContext) -> dict:
    ctx.log("reading address 0")
    ctypes.string_at(0)
    return {}


def exit_job(params: dict, ctx: JobContext) -> dict:
    os._exit(int(params.get("code", 3)))


def stubborn_job(params: dict, ctx: JobContext) -> dict:
    """Never looks at the cancel flag: only terminate/kill stops it."""
    ctx.progress(None, "busy")
    end = time.monotonic() + float(params.get("seconds", 60))
    x = 0
    while time.monotonic() < end:
        x += 1
    return {"x": x}
