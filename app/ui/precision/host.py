"""What the precision controllers need of the rest of the window, as protocols: the panels of other features (the
Engine and Profile docks, the Run panel) named by what is used of them, and the window's parts that the
readiness check shows in.

Signals are read off instances, so they are `SignalInstance`s here. The other features' panels are read-only
properties: the window's are richer classes than these protocols, which a settable member would not accept."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from PySide6.QtCore import SignalInstance
from PySide6.QtWidgets import QDockWidget, QWidget

from app.core.model import DisplayGraph, OpenedModel
from app.core.results import BuildResult, LayerTiming, ProfileResult
from app.ui.graph.page import GraphPage
from app.ui.graph.view import GraphView
from app.ui.model.readiness_panel import ReadinessPanel
from app.ui.precision.plan_controller import PlanController


class EngineView(Protocol):
    """The Engine dock, as the colours and the build's result use it (app.ui.results.engine_panel)."""

    times: dict[str, LayerTiming]
    times_at: float
    nodeActivated: SignalInstance
    saveRequested: SignalInstance

    def set_build(self, doc: BuildResult | None) -> None: ...

    def set_times(self, times: Mapping[str, LayerTiming]) -> None: ...


class ProfileView(Protocol):
    """The Profile dock, as the colours use it (app.ui.results.profile_panel)."""

    doc_at: float
    nodeActivated: SignalInstance
    shownChanged: SignalInstance

    def has(self, mode: str) -> bool: ...

    def set_profile(self, doc: ProfileResult | None) -> None: ...

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


class ReadinessHost(Protocol):
    """The window's parts the readiness check reads and shows in."""

    opened: OpenedModel | None
    plan: PlanController
    graph_page: GraphPage
    view: GraphView
    readiness_panel: ReadinessPanel
    readiness_dock: QDockWidget

    @property
    def run_panel(self) -> ProfileSource: ...

    def window(self) -> QWidget: ...
