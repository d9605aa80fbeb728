"""The one bridge between jobs and Qt: polls running jobs on a GUI-thread timer and re-emits their events.

Polling only reads what the child processes have already written (bounded per tick), so the GUI
thread never waits on a job.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, QTimer, Signal

from app.jobs import JobEvent, JobHandle, JobResult, JobRunner, JobSpec

log = logging.getLogger(__name__)

POLL_MS = 30
WARM_MS = 1000  # after the window is made: its first paint and the model's opening go first


class JobBridge(QObject):
    """Starts jobs through a `JobRunner` and turns their events into signals on the GUI thread."""

    started = Signal(str, str)            # job id, title
    progress = Signal(str, float, str)    # job id, fraction (-1: unknown), message
    partial = Signal(str, object)         # job id, a part of its result (dict: JobContext.partial)
    logged = Signal(str, str, str)        # job id, level, message
    finished = Signal(str, object)        # job id, JobResult

    def __init__(self, parent: QObject | None = None, runner: JobRunner | None = None,
                 interval_ms: int = POLL_MS) -> None:
        super().__init__(parent)
        self.runner = runner or JobRunner()
        self.handles: dict[str, JobHandle] = {}     # every job started, oldest first
        self.results: dict[str, JobResult] = {}     # the finished ones
        self.clean_workdirs = True
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._poll)
        # The process every job's process is handed, started once the window is up rather than with the first job.
        QTimer.singleShot(WARM_MS, self, self.warm)

    def warm(self) -> None:
        """Start what the first job would otherwise start beside it (JobRunner.start_tracker); a dialog that leads to
        a job calls it too, in case the first second has not passed."""
        self.runner.start_tracker()

    # ------------------------------------------------------------------ public
    def start(self, spec: JobSpec) -> str:
        """Start a job in a child process; returns its id at once."""
        handle = self.runner.start(spec)
        self.handles[handle.id] = handle
        self.started.emit(handle.id, spec.title or spec.func)
        self._timer.start()
        return handle.id

    def cancel(self, job_id: str) -> None:
        """Ask a running job to stop; it ends (as cancelled) within about a second."""
        handle = self.handles.get(job_id)
        if handle is not None and job_id not in self.results:
            handle.cancel()

    def cancel_all(self, wait: float = 0.0) -> None:
        """Cancel every running job; with ``wait`` > 0, block up to that long for each to end."""
        for job_id in self.running():
            self.handles[job_id].cancel()
        if wait > 0:
            for job_id in self.running():
                try:
                    self.handles[job_id].wait(timeout=wait)
                except TimeoutError:
                    log.warning("%s did not end within %.1f s of cancel", job_id, wait)
            self._poll()

    def jobs(self) -> list[JobHandle]:
        """Every job started through this bridge, oldest first (running and finished)."""
        return list(self.handles.values())

    def running(self) -> list[str]:
        """Ids of the jobs that have not finished yet."""
        return [j for j in self.handles if j not in self.results]

    def handle(self, job_id: str) -> JobHandle | None:
        return self.handles.get(job_id)

    def result(self, job_id: str) -> JobResult | None:
        return self.results.get(job_id)

    def forget(self, job_id: str) -> None:
        """Drop a finished job from the bridge (the panel's "Clear finished")."""
        if job_id in self.results:
            self.results.pop(job_id)
            self.handles.pop(job_id, None)

    # ------------------------------------------------------------------ polling
    def _poll(self) -> None:
        for job_id, handle in list(self.handles.items()):
            if job_id in self.results:
                continue
            try:
                events = handle.poll()
            except Exception:  # a bug here must not stop the timer for every other job
                log.exception("polling %s failed", job_id)
                continue
            self._relay(job_id, events)
            result = handle.result() if events and events[-1].final else None
            if result is not None:
                self.results[job_id] = result
                self.finished.emit(job_id, result)
                if self.clean_workdirs and result.workdir:
                    # Everything the GUI keeps is in the result (and the log lines it holds); variants live in
                    # the variant cache, so the job's folder (exposed models, temporary variants) can go.
                    import shutil

                    shutil.rmtree(result.workdir, ignore_errors=True)
        if not self.running():
            self._timer.stop()

    def _relay(self, job_id: str, events: list[JobEvent]) -> None:
        # Only the newest progress of a batch is shown: a job reporting thousands of steps a second
        # must not cost the GUI thousands of repaints.
        last_progress = max((i for i, ev in enumerate(events) if ev.kind == "progress"), default=-1)
        for i, ev in enumerate(events):
            if ev.kind == "log":
                self.logged.emit(job_id, ev.level, ev.message)
            elif ev.kind == "partial" and ev.data is not None:
                self.partial.emit(job_id, ev.data)
            elif ev.kind == "progress" and i == last_progress:
                self.progress.emit(job_id, -1.0 if ev.fraction is None else float(ev.fraction), ev.message)
