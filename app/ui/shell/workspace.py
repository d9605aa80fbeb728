"""The main window's workspace: which docks show where, the default layout, and the layout saved between runs."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QByteArray, QSettings, Qt, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QDockWidget, QMainWindow, QTabBar, QWidget

from app.ui.common.docks import DOCK_ICONS, LAYOUT_VERSION
from app.ui.common.resources import icon


def fitted_size(avail_w: int, avail_h: int, want: tuple[int, int] = (1400, 900)) -> tuple[int, int]:
    """The first window's size: `want` where the screen has room, else 92 % of what it has on that side."""
    return min(want[0], int(avail_w * 0.92)), min(want[1], int(avail_h * 0.92))


class Workspace:
    """The main window's docks: made, placed, shown, raised, reset, saved and restored.

    It owns the docks it makes (`docks`, in the order the View ▸ Panels menu lists them) and the layout saved
    between runs; `showing_graph()` says whether the graph page is on show (the docks belong to it)."""

    def __init__(self, window: QMainWindow, settings: QSettings, showing_graph: Callable[[], bool]) -> None:
        self.w = window
        self.settings = settings
        self.showing_graph = showing_graph
        self.docks: list[QDockWidget] = []
        self.layout_shown = False  # a model's layout has been on show (only then is it worth saving)

    def dock(self, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self.w)
        dock.setObjectName(title.lower())
        if title.lower() in DOCK_ICONS:  # shown on the dock's tab when docks share an area, and when floating
            dock.setWindowIcon(icon(DOCK_ICONS[title.lower()]))
        dock.setWidget(widget)
        dock.setMinimumWidth(300)
        self.w.addDockWidget(area, dock)
        self.docks.append(dock)
        return dock

    def set_order(self, names: list[str]) -> None:
        """The order the docks are listed in (View ▸ Panels and its Alt+Shift+N keys, the layout's regrouping)."""
        self.docks = [self.named(n) for n in names] + [d for d in self.docks if d.objectName() not in names]

    def named(self, name: str) -> QDockWidget:
        return next(d for d in self.docks if d.objectName() == name)

    def hide_all(self) -> None:
        for dock in self.docks:
            dock.hide()

    def show_model_layout(self) -> None:
        """The docks as the user left them last time (saved on close), or the default layout."""
        state = self.settings.value("window/state")
        restored = isinstance(state, QByteArray) and self.w.restoreState(state, LAYOUT_VERSION)
        if not restored or not any(d.isVisible() for d in self.docks):
            self.default_layout()
        else:
            self.regroup_hidden_docks()
        self.layout_shown = True

    def regroup_hidden_docks(self) -> None:
        """Hidden docks rejoin a visible tab group of their area. A saved state can hold a tab group whose docks
        are all hidden (Results and Jobs before the first job), and Qt then draws that group's tab bar alone,
        over the panel below it."""
        for dock in self.docks:
            if dock.isVisible() or dock.isFloating():
                continue
            area = self.w.dockWidgetArea(dock)
            anchor = next((d for d in self.docks if d.isVisible() and not d.isFloating()
                           and self.w.dockWidgetArea(d) == area), None)
            if anchor is not None and dock not in self.w.tabifiedDockWidgets(anchor):
                self.w.tabifyDockWidget(anchor, dock)
                dock.hide()
        # Qt keeps the emptied group's tab bar on screen: hide every dock tab bar none of whose docks is shown.
        shown = {d.windowTitle() for d in self.docks if d.isVisible()}
        for bar in self.w.findChildren(QTabBar, options=Qt.FindChildOption.FindDirectChildrenOnly):
            if bar.isVisible() and not any(bar.tabText(i) in shown for i in range(bar.count())):
                bar.hide()

    def default_layout(self) -> None:
        """Summary on the left; Properties and Run on the right; Precision and Readiness below the graph (Results
        and Jobs join them with the first job)."""
        d = self.named
        for dock in self.docks:
            dock.setFloating(False)
        for name in ("summary", "properties", "run", "precision", "readiness"):
            d(name).show()
        for name in ("results", "jobs", "engine", "profile"):
            d(name).hide()
        d("properties").raise_()
        d("precision").raise_()
        self.w.resizeDocks([d("summary"), d("properties")], [300, 360], Qt.Orientation.Horizontal)
        self.w.resizeDocks([d("precision")], [int(self.w.height() * 0.28)], Qt.Orientation.Vertical)

    def save_layout(self) -> None:
        """Only a layout with a model on show is worth keeping: the start page hides every dock."""
        if self.layout_shown and self.showing_graph():
            self.settings.setValue("window/state", self.w.saveState(LAYOUT_VERSION))

    def reset_layout(self) -> None:
        self.settings.remove("window/state")
        if self.showing_graph():
            self.default_layout()

    def state(self) -> str:
        """The dock layout as text (a project keeps it)."""
        return bytes(self.w.saveState(LAYOUT_VERSION).toBase64().data()).decode("ascii")

    def restore_state(self, state: str) -> None:
        self.w.restoreState(QByteArray.fromBase64(state.encode("ascii")), LAYOUT_VERSION)
        self.regroup_hidden_docks()

    def show_dock(self, dock: QDockWidget) -> None:
        """View menu: bring a panel forward (shown, raised over its tab siblings, focused)."""
        dock.show()
        dock.raise_()
        dock.widget().setFocus()

    def raise_dock(self, name: str, at_least: float = 0.0, share: float = 0.0) -> None:
        """A feature's result: its dock shown and raised; one shorter than `at_least` of the window's height grows
        to `share` of it."""
        dock = self.named(name)
        dock.show()
        dock.raise_()
        if at_least and dock.height() < self.w.height() * at_least:
            self.w.resizeDocks([dock], [int(self.w.height() * share)], Qt.Orientation.Vertical)

    def show_jobs(self) -> None:
        if not self.showing_graph():
            return  # the docks belong to the graph page: a page filling the window (the guided flow) stays so
        jobs, results = self.named("jobs"), self.named("results")
        jobs.show()
        if results.isHidden():
            self.w.resizeDocks([jobs], [int(self.w.height() * 0.25)], Qt.Orientation.Vertical)
        jobs.raise_()

    def show_results(self) -> None:
        """Bring the results forward, tall enough for the plots to be read."""
        if not self.showing_graph():
            return
        results = self.named("results")
        results.show()
        results.raise_()
        if results.height() < self.w.height() * 0.4:
            self.w.resizeDocks([results], [int(self.w.height() * 0.55)], Qt.Orientation.Vertical)

    def fit_to_screen(self) -> None:
        """1400×900 where the screen has room, else 92 % of what it has: the first window never runs off a small
        screen (at 1280×800 the Properties panel and the status bar stayed out of sight)."""
        w = self.w
        screen = w.screen() or QGuiApplication.primaryScreen()
        avail = screen.availableGeometry() if screen is not None else None
        # Offscreen rendering has no real screen to fit: the tests' window keeps one size everywhere.
        if avail is None or avail.width() <= 0 or QGuiApplication.platformName() in ("offscreen", "minimal"):
            w.resize(1400, 900)
            return
        width, height = fitted_size(avail.width(), avail.height())
        w.resize(width, height)
        w.move(avail.x() + (avail.width() - width) // 2, avail.y() + (avail.height() - height) // 2)
        # The panels' minimum sizes can make the window wider than asked (1277 px at 1280×800): once laid out, it
        # is moved back inside the screen.
        QTimer.singleShot(0, lambda: w.move(
            max(avail.x(), min(w.x(), avail.x() + avail.width() - w.frameGeometry().width())),
            max(avail.y(), min(w.y(), avail.y() + avail.height() - w.frameGeometry().height()))))
