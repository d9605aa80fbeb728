"""What the precision work needs from the window it shows in, as protocols: the window has all of it, and the
panels of other features (the Engine and Profile docks, the Run panel) are named by what is used of them.

Signals are read off instances, so they are `SignalInstance`s here. The other features' panels are read-only
properties: the window's are richer classes than these protocols, which a settable member would not accept."""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import QSettings, Qt, SignalInstance
from PySide6.QtWidgets import QDockWidget, QLabel, QWidget

from app.core import errors
from app.core.model import DisplayGraph, OpenedModel
from app.ui.common.error_banner import ErrorBanner
from app.ui.graph.page import GraphPage
from app.ui.graph.view import GraphView
from app.ui.model.readiness_panel import ReadinessPanel
from app.ui.precision.panel import PrecisionPanel
from app.ui.precision.plan_controller import PlanController

COLOR_MODES = (("op", "&Op Type", "Ctrl+Shift+1"), ("precision", "&Planned Precision", "Ctrl+Shift+2"),
               ("error", "Diagnosis &Error", "Ctrl+Shift+3"),
               ("engine", "Precision That Ran in the &Engine", "Ctrl+Shift+4"),
               ("time", "Node &Time (Profile or Engine)", "Ctrl+Shift+5"),
               ("device", "&Where Each Node Ran (Profile)", "Ctrl+Shift+6"))


class EngineView(Protocol):
    """The Engine dock, as the colours and the build's result use it (app.ui.results.engine_panel)."""

    times: dict[str, dict]
    times_at: float
    nodeActivated: SignalInstance
    saveRequested: SignalInstance

    def set_build(self, doc: dict | None) -> None: ...

    def set_times(self, times: dict) -> None: ...


class ProfileView(Protocol):
    """The Profile dock, as the colours use it (app.ui.results.profile_panel)."""

    doc_at: float
    nodeActivated: SignalInstance
    shownChanged: SignalInstance

    def has(self, mode: str) -> bool: ...

    def set_profile(self, doc: dict | None) -> None: ...

    def colors(self, mode: str, graph: DisplayGraph, keys: list[str], mix: dict | None = None,
               notes: dict | None = None) -> tuple[list, list, str]: ...


class ProfileBox(Protocol):
    def set_problems(self, fixes: dict[str, tuple[str, str]]) -> None: ...


class ProfileSource(Protocol):
    """The Run panel, as readiness reads the TensorRT profile and RTX targets a build would use."""

    profileChanged: SignalInstance

    @property
    def profile_box(self) -> ProfileBox: ...

    def profile_args(self) -> list[str]: ...

    def rtx_target_list(self) -> list[str]: ...


class PrecisionHost(Protocol):
    """The window's parts this controller shows in."""

    opened: OpenedModel | None
    settings: QSettings
    plan: PlanController
    graph_page: GraphPage
    view: GraphView
    banner: ErrorBanner
    status_label: QLabel
    precision_panel: PrecisionPanel
    precision_dock: QDockWidget
    readiness_panel: ReadinessPanel
    readiness_dock: QDockWidget
    engine_dock: QDockWidget
    profile_dock: QDockWidget

    @property
    def engine_panel(self) -> EngineView: ...

    @property
    def profile_panel(self) -> ProfileView: ...

    @property
    def run_panel(self) -> ProfileSource: ...

    def window(self) -> QWidget: ...

    def height(self) -> int: ...

    def resizeDocks(self, docks: list, sizes: list, orientation: Qt.Orientation) -> None: ...  # noqa: N802

    def show_error(self, error: errors.TrtlabError) -> None: ...
