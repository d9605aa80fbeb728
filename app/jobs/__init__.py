"""Running work away from the GUI: JSON-safe job specs and events, a spawned child per job, cancel, crash reports.

No Qt here; the GUI side is `app.ui.job_bridge`.
"""

from __future__ import annotations

from app.jobs.protocol import JobCancelled, JobContext, JobEvent, JobResult, JobSpec
from app.jobs.results import load_arrays, load_result, save_result
from app.jobs.runner import JobHandle, JobRunner, run_inline

__all__ = ["JobCancelled", "JobContext", "JobEvent", "JobHandle", "JobResult", "JobRunner", "JobSpec",
           "load_arrays", "load_result", "run_inline", "save_result"]
