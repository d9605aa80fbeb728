"""The one bridge between jobs and Qt: polls running jobs on a timer and re-emits their events as signals."""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

from app.jobs import JobHandle, JobResult, JobRunner, JobSpec


class JobBridge(QObject):
    started = Signal(str, str)            # job id, title
    progress = Signal(str, float, str)    # job id, fraction (-1: unknown), message
    logged = Signal(str, str, str)        # job id, level, message
    finished = Signal(str, object)        # job id, JobResult

    def __init__(self, parent: QObject | None = None, runner: JobRunner | None = None) -> None:
        super().__init__(parent)
        self.runner = runner or JobRunner()
        self.handles: dict[str, JobHandle] = {}
        self.results: dict[str, JobResult] = {}
        self._timer = QTimer(self, interval=30)
        self._timer.timeout.connect(self._poll)

    def start(self, spec: JobSpec) -> str:
        handle = self.runner.start(spec)
        self.handles[handle.id] = handle
        self.started.emit(handle.id, spec.title or spec.func)
        self._timer.start()
        return handle.id

    def cancel(self, job_id: str) -> None:
        handle = self.handles.get(job_id)
        if handle is not None and job_id not in self.results:
            handle.cancel()

    def running(self) -> list[str]:
        return [j for j in self.handles if j not in self.results]

    def _poll(self) -> None:
        # Non-blocking: each poll only reads what is already in the pipes.
        for job_id, handle in list(self.handles.items()):
            if job_id in self.results:
                continue
            for ev in handle.poll():
                if ev.kind == "progress":
                    self.progress.emit(job_id, -1.0 if ev.fraction is None else ev.fraction, ev.message)
                elif ev.kind == "log":
                    self.logged.emit(job_id, ev.level, ev.message)
            result = handle.result()
            if result is not None:
                self.results[job_id] = result
                self.finished.emit(job_id, result)
        if not self.running():
            self._timer.stop()

    def cancel_all(self, wait: float = 0.0) -> None:
        for job_id in self.running():
            self.handles[job_id].cancel()
        if wait:
            for job_id in self.running():
                self.handles[job_id].wait(timeout=wait)
