"""The main window's workspace: which docks show where, the default layout, and the layout saved between runs.
Mixed into `MainWindow`, whose docks and settings it uses."""

from __future__ import annotations

from PySide6.QtCore import QByteArray, Qt
from PySide6.QtWidgets import QDockWidget, QTabBar, QWidget

from app.ui.common.docks import DOCK_ICONS, LAYOUT_VERSION
from app.ui.common.resources import icon


def output_dims(names: list[str], shapes: object) -> dict[str, list]:
    """Inferred dims of some tensors (ints where known, else None), for reading what each output means."""
    out = {}
    for name in names:
        info = shapes.get(name) if shapes is not None else None  # type: ignore[attr-defined]
        if info is not None and info.shape is not None:
            out[name] = [d if isinstance(d, int) and d > 0 else None for d in info.shape]
    return out


def photo_source(inputs: list, shapes: dict | None) -> object | None:
    """The sample photos fitted to a model's one image input (an InputSource), or None (no such input, or its
    shape still open)."""
    from app.core.errors import TrtlabError
    from app.core.measure import photo_source_for, resolve_input_shapes

    try:
        return photo_source_for(inputs, resolve_input_shapes(inputs, dict(shapes or {})))
    except TrtlabError:
        return None


def fitted_size(avail_w: int, avail_h: int, want: tuple[int, int] = (1400, 900)) -> tuple[int, int]:
    """The first window's size: `want` where the screen has room, else 92 % of what it has on that side."""
    return min(want[0], int(avail_w * 0.92)), min(want[1], int(avail_h * 0.92))


class WorkspaceMixin:
    """Dock placement of the main window: shown, raised, reset, saved and restored."""

    # ----------------------------------------------------------------- workspace
    def _show_model_layout(self) -> None:
        """The docks as the user left them last time (saved on close), or the default layout."""
        state = self.settings.value("window/state")
        restored = isinstance(state, QByteArray) and self.restoreState(state, LAYOUT_VERSION)
        if not restored or not any(d.isVisible() for d in self._model_docks()):
            self.default_layout()
        else:
            self._regroup_hidden_docks()
        self._layout_shown = True

    def _regroup_hidden_docks(self) -> None:
        """Hidden docks rejoin a visible tab group of their area. A saved state can hold a tab group whose docks
        are all hidden (Results and Jobs before the first job), and Qt then draws that group's tab bar alone,
        over the panel below it."""
        for dock in self._model_docks():
            if dock.isVisible() or dock.isFloating():
                continue
            area = self.dockWidgetArea(dock)
            anchor = next((d for d in self._model_docks() if d.isVisible() and not d.isFloating()
                           and self.dockWidgetArea(d) == area), None)
            if anchor is not None and dock not in self.tabifiedDockWidgets(anchor):
                self.tabifyDockWidget(anchor, dock)
                dock.hide()
        # Qt keeps the emptied group's tab bar on screen: hide every dock tab bar none of whose docks is shown.
        shown = {d.windowTitle() for d in self._model_docks() if d.isVisible()}
        for bar in self.findChildren(QTabBar, options=Qt.FindChildOption.FindDirectChildrenOnly):
            if bar.isVisible() and not any(bar.tabText(i) in shown for i in range(bar.count())):
                bar.hide()

    def default_layout(self) -> None:
        """Summary on the left; Properties and Run on the right; Precision and Readiness below the graph (Results
        and Jobs join them with the first job)."""
        for dock in self._model_docks():
            dock.setFloating(False)
        for dock in (self.summary_dock, self.properties_dock, self.run_dock, self.precision_dock,
                     self.readiness_dock):
            dock.show()
        for dock in (self.results_dock, self.jobs_dock, self.engine_dock, self.profile_dock):
            dock.hide()
        self.properties_dock.raise_()
        self.precision_dock.raise_()
        self.resizeDocks([self.summary_dock, self.properties_dock], [300, 360], Qt.Orientation.Horizontal)
        self.resizeDocks([self.precision_dock], [int(self.height() * 0.28)], Qt.Orientation.Vertical)

    def _save_layout(self) -> None:
        """Only a layout with a model on show is worth keeping: the start page hides every dock."""
        if getattr(self, "_layout_shown", False) and self.stack.currentWidget() is self.graph_page:
            self.settings.setValue("window/state", self.saveState(LAYOUT_VERSION))

    def reset_layout(self) -> None:
        self.settings.remove("window/state")
        if self.stack.currentWidget() is self.graph_page:
            self.default_layout()
        self.status_label.setText("Panels back to the default layout.")

    def show_dock(self, dock: QDockWidget) -> None:
        """View menu: bring a panel forward (shown, raised over its tab siblings, focused)."""
        dock.show()
        dock.raise_()
        dock.widget().setFocus()

    def show_jobs(self) -> None:
        if self.stack.currentWidget() is not self.graph_page:
            return  # the docks belong to the graph page: a page filling the window (the guided flow) stays so
        self.jobs_dock.show()
        if self.results_dock.isHidden():
            self.resizeDocks([self.jobs_dock], [int(self.height() * 0.25)], Qt.Orientation.Vertical)
        self.jobs_dock.raise_()

    def show_results(self) -> None:
        """Bring the results forward, tall enough for the plots to be read."""
        if self.stack.currentWidget() is not self.graph_page:
            return
        self.results_dock.show()
        self.results_dock.raise_()
        if self.results_dock.height() < self.height() * 0.4:
            self.resizeDocks([self.results_dock], [int(self.height() * 0.55)], Qt.Orientation.Vertical)

    def _model_docks(self) -> list[QDockWidget]:
        return [self.summary_dock, self.properties_dock, self.run_dock, self.precision_dock, self.results_dock,
                self.jobs_dock, self.engine_dock, self.profile_dock, self.readiness_dock]

    # ----------------------------------------------------------------- construction
    def _dock(self, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(title.lower())
        if title.lower() in DOCK_ICONS:  # shown on the dock's tab when docks share an area, and when floating
            dock.setWindowIcon(icon(DOCK_ICONS[title.lower()]))
        dock.setWidget(widget)
        dock.setMinimumWidth(300)
        self.addDockWidget(area, dock)
        return dock

    def _fit_to_screen(self) -> None:
        """1400×900 where the screen has room, else 92 % of what it has: the first window never runs off a small
        screen (at 1280×800 the Properties panel and the status bar stayed out of sight)."""
        from PySide6.QtGui import QGuiApplication

        screen = self.screen() or QGuiApplication.primaryScreen()
        avail = screen.availableGeometry() if screen is not None else None
        # Offscreen rendering has no real screen to fit: the tests' window keeps one size everywhere.
        if avail is None or avail.width() <= 0 or QGuiApplication.platformName() in ("offscreen", "minimal"):
            self.resize(1400, 900)
            return
        w, h = fitted_size(avail.width(), avail.height())
        self.resize(w, h)
        self.move(avail.x() + (avail.width() - w) // 2, avail.y() + (avail.height() - h) // 2)
        # The panels' minimum sizes can make the window wider than asked (1277 px at 1280×800): once laid out, it
        # is moved back inside the screen.
        from PySide6.QtCore import QTimer

        QTimer.singleShot(0, lambda: self.move(
            max(avail.x(), min(self.x(), avail.x() + avail.width() - self.frameGeometry().width())),
            max(avail.y(), min(self.y(), avail.y() + avail.height() - self.frameGeometry().height()))))

    def _change_output_kind(self, output: str) -> None:
        """The Run panel, scrolled to the output's kind, which opens its list of kinds."""
        combo = self.run_panel.outputs_box.combos.get(output)
        self.run_dock.show()
        self.run_dock.raise_()
        if combo is not None:
            self.run_panel.scroll.ensureWidgetVisible(combo)
            combo.setFocus()
            combo.showPopup()
