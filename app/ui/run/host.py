"""What the run controller needs from the window it serves: its panels, docks and a few actions.

`MainWindow` has all of it; the controller reads the window through this protocol, so that it need not import
the window that creates it (which would make an import cycle)."""

from __future__ import annotations

from typing import Protocol

from PySide6.QtWidgets import QDockWidget, QLabel, QWidget

from app.core.model import OpenedModel
from app.ui.common.error_banner import ErrorBanner
from app.ui.precision.panel import PrecisionPanel
from app.ui.precision.plan_controller import PlanController
from app.ui.results.view import ResultsView
from app.ui.run.engine_panel import EnginePanel
from app.ui.run.job_bridge import JobBridge
from app.ui.run.panel import RunPanel


class RunHost(Protocol):
    """The window whose Run panel starts jobs and whose panels show their results."""

    opened: OpenedModel | None
    engine: dict | None
    plan: PlanController
    jobs: JobBridge
    run_panel: RunPanel
    banner: ErrorBanner
    status_label: QLabel
    precision_panel: PrecisionPanel
    results_view: ResultsView
    engine_panel: EnginePanel
    summary_dock: QDockWidget
    run_dock: QDockWidget
    precision_dock: QDockWidget
    readiness_dock: QDockWidget

    def window(self) -> QWidget: ...

    def show_jobs(self) -> None: ...

    def show_results(self) -> None: ...

    def set_diagnosis(self, doc: dict | None) -> None: ...

    def set_engine(self, doc: dict | None) -> None: ...

    def set_profile(self, doc: dict | None) -> None: ...

    def set_color_mode(self, mode: str) -> None: ...

    def run_readiness(self, trt_version: str | None = None) -> object | None: ...

    def record_result(self, kind: str, spec_json: dict, data: dict, title: str = "") -> None: ...
