"""What the run controller needs from the window it serves: a few panels and docks, the job bridge, and where to
say things.

`MainWindow` has all of it; the controller reads the window through this protocol, so that it need not import
the window that creates it. Results that other features show leave the controller as signals."""

from __future__ import annotations

from typing import Protocol

from PySide6.QtWidgets import QDockWidget, QLabel, QWidget

from app.core.model import OpenedModel
from app.ui.common.error_banner import ErrorBanner
from app.ui.precision.plan_controller import PlanController
from app.ui.results.view import ResultsView
from app.ui.run.job_bridge import JobBridge
from app.ui.run.panel import RunPanel


class RunHost(Protocol):
    """The window whose Run panel starts jobs and whose Results view shows comparisons and benchmarks."""

    opened: OpenedModel | None
    plan: PlanController
    jobs: JobBridge
    run_panel: RunPanel
    banner: ErrorBanner
    status_label: QLabel
    results_view: ResultsView
    summary_dock: QDockWidget
    run_dock: QDockWidget
    readiness_dock: QDockWidget

    def window(self) -> QWidget: ...

    def show_jobs(self) -> None: ...

    def show_results(self) -> None: ...
