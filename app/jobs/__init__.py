"""Running work away from the GUI: JSON-safe job specs and events, a spawned child per job, cancel,
crashes reported as failed results. No Qt here; the GUI side is `app.ui.run.job_bridge`.

A job is a plain function ``fn(params, ctx: JobContext) -> dict`` named by a `JobSpec` (its JSON params; trtlab's
own jobs parse them back into their typed spec, app.backends.tasks.specs);
`JobRunner` runs it in a child process, `run_inline` in this one.
"""

from __future__ import annotations

from app.jobs.estimate import ESTIMATE_AFTER_S, time_left
from app.jobs.protocol import JobCancelled, JobContext, JobEvent, JobResult, JobSpec
from app.jobs.results import load_arrays, load_result, save_result
from app.jobs.runner import JobHandle, JobRunner, StopSignals, catch_stop_signals, run_inline

__all__ = ["ESTIMATE_AFTER_S", "JobCancelled", "JobContext", "JobEvent", "JobHandle", "JobResult", "JobRunner",
           "JobSpec", "StopSignals", "catch_stop_signals", "load_arrays", "load_result", "run_inline", "save_result",
           "time_left"]
