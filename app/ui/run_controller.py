"""Turns the Run panel's requests into jobs and the jobs' results into the Results view."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject

from app.core.errors import TrtlabError
from app.jobs import JobSpec

if TYPE_CHECKING:
    from app.ui.main_window import MainWindow

log = logging.getLogger(__name__)


class RunController(QObject):
    """Comparisons run as one job; benchmarks one target at a time, so they never compete for the machine."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.w = window
        self.kinds: dict[str, str] = {}          # job id -> "compare" | "bench"
        self.bench_queue: list[dict] = []
        self.running: set[str] = set()
        window.run_panel.compareRequested.connect(self.start_compare)
        window.run_panel.benchRequested.connect(self.start_bench)
        window.jobs.finished.connect(self._finished)
        self._availability_loaded = False

    def refresh_availability(self) -> None:
        from app.backends import all_availability

        self.w.run_panel.set_availability(all_availability())
        self._availability_loaded = True

    def _base_params(self, params: dict) -> dict | None:
        opened = self.w.opened
        if opened is None:
            self.w.run_panel.message.setText("Open a model first.")
            return None
        from app.core.inputs import resolve_input_shapes

        try:
            shapes = resolve_input_shapes(opened.summary.inputs, opened.input_shapes)
        except TrtlabError as exc:
            # Caught here, before any job starts: the message names the input and its dynamic dim.
            self.w.run_panel.message.setText(f"{exc.message} {exc.fix}".strip())
            self.w.summary_dock.raise_()
            return None
        return {**params, "model": str(opened.path), "shapes": {k: list(v) for k, v in shapes.items()}}

    def start_compare(self, params: dict) -> str | None:
        full = self._base_params(params)
        if full is None:
            return None
        title = f"Compare {', '.join(full['candidates'])} with {full['reference']}"
        job = self.w.jobs.start(JobSpec(func="app.backends.tasks:compare_task", params=full, title=title))
        self.kinds[job] = "compare"
        self.running.add(job)
        self.w.show_jobs()
        self.w.status_label.setText(f"Started: {title}")
        return job

    def start_bench(self, params: dict) -> None:
        full = self._base_params(params)
        if full is None:
            return
        targets = full.pop("targets")
        self.w.results_view.bench = {}
        self.bench_queue = [{**full, "target": t, "mode": "end_to_end" if t.startswith("ort-cpu") else "device_only"}
                            for t in targets]
        self._next_bench()

    def _next_bench(self) -> None:
        if not self.bench_queue:
            return
        params = self.bench_queue.pop(0)
        job = self.w.jobs.start(JobSpec(func="app.backends.tasks:bench_task", params=params,
                                        title=f"Benchmark {params['target']}"))
        self.kinds[job] = "bench"
        self.running.add(job)
        self.w.show_jobs()

    def cancel_all(self) -> None:
        self.bench_queue = []
        for job in list(self.running):
            self.w.jobs.cancel(job)

    def _finished(self, job: str, result: object) -> None:
        kind = self.kinds.pop(job, None)
        self.running.discard(job)
        if kind is None:
            return
        status = getattr(result, "status", "failed")
        if status == "done":
            data = result.data or {}
            if kind == "compare":
                self.w.results_view.set_compare(data)
                self.w.status_label.setText("Comparison finished.")
            else:
                self.w.results_view.set_bench(data["backend"], data)
                self.w.status_label.setText(f"Benchmark of {data['backend']} finished.")
            self.w.show_results()
            if kind == "bench":
                self._next_bench()
        elif status == "cancelled":
            self.bench_queue = []
            self.w.status_label.setText("Job cancelled.")
        else:
            self.bench_queue = []
            reason = getattr(result, "exit_reason", "")
            self.w.banner.show_message("Job failed", getattr(result, "error", "") or "The job failed.",
                                       f"Exit: {reason}. The Jobs panel has its log." if reason else
                                       "The Jobs panel has its log.")
            self.w.show_jobs()
