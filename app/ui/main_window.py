"""The main window: menus, start page, graph page, summary and properties docks, status bar."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QByteArray, QEvent, QSettings, QStandardPaths, Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QStackedWidget,
    QTabBar,
    QVBoxLayout,
    QWidget,
)

from app import __version__
from app.core import errors
from app.core.demo import write_demo_model
from app.core.opened import OpenedModel, lay_out
from app.core.units import human_bytes
from app.ui.engine_panel import EnginePanel
from app.ui.error_banner import ErrorBanner
from app.ui.graph_page import GraphPage
from app.ui.job_bridge import JobBridge
from app.ui.jobs_panel import JobsPanel
from app.ui.loader_thread import ModelLoader
from app.ui.plan_controller import PRECISION_LABELS, PlanController
from app.ui.precision_panel import PrecisionPanel
from app.ui.properties_panel import PropertiesPanel
from app.ui.readiness_panel import ReadinessPanel
from app.ui.results_view import ResultsView
from app.ui.run_controller import RunController
from app.ui.run_panel import RunPanel
from app.ui.shapes_panel import ShapesPanel
from app.ui.start_page import StartPage
from app.ui.summary_panel import SummaryPanel
from app.ui.window_precision import PrecisionWindowMixin

log = logging.getLogger(__name__)
MAX_RECENT = 10
LAYOUT_VERSION = 2  # bump when the set of docks changes: an older saved layout is then ignored
ONNX_FILTER = "ONNX models (*.onnx *.onnx.data *.pb);;All files (*)"


class MainWindow(PrecisionWindowMixin, QMainWindow):
    def __init__(self, settings: QSettings | None = None) -> None:
        super().__init__()
        self.settings = settings or QSettings("trtlab", "trtlab")
        self.setWindowTitle("trtlab")
        self.resize(1400, 900)
        self.setAcceptDrops(True)
        self.opened: OpenedModel | None = None
        self.loader = ModelLoader(self)
        self._pending_path: Path | None = None

        central = QWidget()
        col = QVBoxLayout(central)
        col.setContentsMargins(0, 0, 0, 0)
        col.setSpacing(0)
        self.banner = ErrorBanner()
        col.addWidget(self.banner)
        self.stack = QStackedWidget()
        self.start_page = StartPage()
        self.graph_page = GraphPage()
        self.stack.addWidget(self.start_page)
        self.stack.addWidget(self.graph_page)
        col.addWidget(self.stack, 1)
        self.setCentralWidget(central)
        self.view = self.graph_page.view

        self.summary_panel = SummaryPanel()
        self.shapes_panel = ShapesPanel()
        summary_box = QWidget()
        sb = QVBoxLayout(summary_box)
        sb.setContentsMargins(0, 0, 0, 0)
        sb.addWidget(self.shapes_panel)
        sb.addWidget(self.summary_panel, 1)
        self.summary_dock = self._dock("Summary", summary_box, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.properties_panel = PropertiesPanel()
        self.properties_dock = self._dock("Properties", self.properties_panel, Qt.DockWidgetArea.RightDockWidgetArea)
        self.run_panel = RunPanel()
        # The panel scrolls its settings itself, below its action buttons (always in sight).
        self.run_dock = self._dock("Run", self.run_panel, Qt.DockWidgetArea.RightDockWidgetArea)
        self.tabifyDockWidget(self.properties_dock, self.run_dock)
        self.properties_dock.raise_()
        self.results_view = ResultsView()
        self.results_dock = self._dock("Results", self.results_view, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.plan = PlanController(self)
        self.diagnosis: dict | None = None
        self.color_mode = "op"
        self.precision_panel = PrecisionPanel(self.plan)
        self.precision_dock = self._dock("Precision", self.precision_panel, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.readiness = None
        self._readiness_cache = None
        self.readiness_panel = ReadinessPanel()
        self.readiness_dock = self._dock("Readiness", self.readiness_panel, Qt.DockWidgetArea.BottomDockWidgetArea)
        self._readiness_timer = QTimer(self)
        self._readiness_timer.setSingleShot(True)
        self._readiness_timer.setInterval(250)  # plan edits come in bursts: check once they settle
        self._readiness_timer.timeout.connect(self.run_readiness)
        self.engine: dict | None = None
        self.engine_panel = EnginePanel()
        self.engine_dock = self._dock("Engine", self.engine_panel, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.jobs = JobBridge(self)
        self.jobs_panel = JobsPanel(self.jobs)
        self.jobs_dock = self._dock("Jobs", self.jobs_panel, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.tabifyDockWidget(self.results_dock, self.jobs_dock)
        self.tabifyDockWidget(self.results_dock, self.precision_dock)
        self.tabifyDockWidget(self.results_dock, self.engine_dock)
        self.tabifyDockWidget(self.results_dock, self.readiness_dock)
        self.run_controller = RunController(self)

        self.status_label = QLabel("Ready")
        self.status_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # Hover hints get a label of their own: they never replace what the last action said.
        self.hint_label = QLabel("")
        self.hint_label.setStyleSheet("color:#7a7f87;")
        self.zoom_label = QLabel("")
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.setTextVisible(False)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop opening this model (Esc)")
        self.cancel_button.clicked.connect(self.loader.cancel)
        sbar = self.statusBar()
        sbar.addPermanentWidget(self.status_label, 3)
        sbar.addPermanentWidget(self.hint_label, 2)
        sbar.addPermanentWidget(self.progress)
        sbar.addPermanentWidget(self.cancel_button)
        sbar.addPermanentWidget(self.zoom_label)
        self._set_busy(False)

        self._build_menus()
        self._connect()
        self._refresh_recent()
        geom = self.settings.value("window/geometry")
        if isinstance(geom, QByteArray):
            self.restoreGeometry(geom)
        self._layout_shown = False
        self._show_start_page()

    def _show_start_page(self) -> None:
        """The start page stands alone: the model docks have nothing to show yet."""
        self._save_layout()
        self.stack.setCurrentWidget(self.start_page)
        for dock in self._model_docks():
            dock.hide()

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
        for dock in (self.results_dock, self.jobs_dock, self.engine_dock):
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
        self.jobs_dock.show()
        if self.results_dock.isHidden():
            self.resizeDocks([self.jobs_dock], [int(self.height() * 0.25)], Qt.Orientation.Vertical)
        self.jobs_dock.raise_()

    def show_results(self) -> None:
        """Bring the results forward, tall enough for the plots to be read."""
        self.results_dock.show()
        self.results_dock.raise_()
        if self.results_dock.height() < self.height() * 0.4:
            self.resizeDocks([self.results_dock], [int(self.height() * 0.55)], Qt.Orientation.Vertical)

    def _model_docks(self) -> list[QDockWidget]:
        return [self.summary_dock, self.properties_dock, self.run_dock, self.precision_dock, self.results_dock,
                self.jobs_dock, self.engine_dock, self.readiness_dock]

    # ----------------------------------------------------------------- construction
    def _dock(self, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(title.lower())
        dock.setWidget(widget)
        dock.setMinimumWidth(300)
        self.addDockWidget(area, dock)
        return dock

    def _action(self, menu: QMenu, text: str, slot: object, shortcut: QKeySequence | str | None = None,
                checkable: bool = False, tip: str = "") -> QAction:
        act = QAction(text, self)
        if shortcut is not None:
            act.setShortcut(QKeySequence(shortcut))
        act.setCheckable(checkable)
        if tip:
            act.setStatusTip(tip)
        act.triggered.connect(slot)
        menu.addAction(act)
        return act

    def _build_menus(self) -> None:
        mb = self.menuBar()
        f = mb.addMenu("&File")
        self.act_open = self._action(f, "&Open Model…", self.open_dialog, QKeySequence.StandardKey.Open)
        self._action(f, "Open &Demo Model", self.open_demo, "Ctrl+Shift+D")
        self.recent_menu = f.addMenu("Open &Recent")
        self.act_reload = self._action(f, "Re&load", self.reload, "F5")
        f.addSeparator()
        self.act_export_png = self._action(f, "Export Graph as &PNG…", self.export_png_dialog, "Ctrl+E")
        self.act_export_svg = self._action(f, "Export Graph as &SVG…", self.export_svg_dialog, "Ctrl+Shift+E")
        f.addSeparator()
        self.act_close = self._action(f, "&Close Model", self.close_model, QKeySequence.StandardKey.Close)
        self._action(f, "&Quit", self.close, QKeySequence.StandardKey.Quit)
        e = mb.addMenu("&Edit")
        self.act_undo = self.plan.undo_stack.createUndoAction(self, "&Undo")
        self.act_undo.setShortcut(QKeySequence.StandardKey.Undo)
        self.act_redo = self.plan.undo_stack.createRedoAction(self, "&Redo")
        self.act_redo.setShortcuts([QKeySequence.StandardKey.Redo, QKeySequence("Ctrl+Shift+Z")])
        e.addAction(self.act_undo)
        e.addAction(self.act_redo)
        e.addSeparator()
        self.act_find = self._action(e, "&Find…", self.open_find, QKeySequence.StandardKey.Find)
        self._action(e, "Find &Next", lambda: self.graph_page.search.next(), QKeySequence.StandardKey.FindNext)
        self._action(e, "Find &Previous", lambda: self.graph_page.search.previous(),
                     QKeySequence.StandardKey.FindPrevious)
        self._action(e, "Select &All Nodes", self._select_all, QKeySequence.StandardKey.SelectAll)
        self._action(e, "&Clear Selection", lambda: self.view.selection.clear(), "Ctrl+Shift+A")
        v = mb.addMenu("&View")
        self._action(v, "Zoom &In", self.view.zoom_in, QKeySequence.StandardKey.ZoomIn)
        self._action(v, "Zoom &Out", self.view.zoom_out, QKeySequence.StandardKey.ZoomOut)
        self._action(v, "&Fit Graph", self.view.fit_all, "Ctrl+0",
                     tip="Fit the graph's width (a tall graph then scrolls from its top)")
        self._action(v, "Show &Whole Graph", self.view.fit_whole, "Shift+F", tip="All of the graph at once")
        self._action(v, "&Actual Size", self.view.zoom_actual, "Ctrl+1")
        self._action(v, "&Back to Enclosing Graph", self.graph_page.go_back, "Alt+Left")
        v.addSeparator()
        self.act_minimap = self._action(v, "&Minimap", self._toggle_minimap, "Ctrl+M", checkable=True)
        self.act_legend = self._action(v, "&Legend", self._toggle_legend, "Ctrl+L", checkable=True)
        self.act_minimap.setChecked(True)
        self.act_legend.setChecked(True)
        v.addSeparator()
        panels = v.addMenu("&Panels")
        self.panel_actions = {}
        for k, dock in enumerate(self._model_docks()):
            act = self._action(panels, dock.windowTitle(), lambda _=False, d=dock: self.show_dock(d),
                               f"Alt+Shift+{k + 1}", tip=f"Show the {dock.windowTitle()} panel")
            self.panel_actions[dock.objectName()] = act
        panels.addSeparator()
        self._action(panels, "&Reset Layout", self.reset_layout, tip="Put every panel back where it starts")
        pm = mb.addMenu("&Precision")
        self.precision_actions = []
        for k, p in enumerate(("fp32", "fp16", "bf16", "int8")):
            act = self._action(pm, f"Set Selected Nodes to {PRECISION_LABELS[p]}",
                               lambda _=False, p=p: self.set_selected_precision(p), f"Alt+{k + 1}")
            self.precision_actions.append(act)
        self.precision_actions.append(self._action(pm, "Selected Nodes Use the &Default",
                                                   lambda: self.set_selected_precision(None), "Alt+0"))
        pm.addSeparator()
        color_menu = pm.addMenu("&Colour Graph By")
        self.color_actions = {}
        for mode, text, key in (("op", "&Op Type", "Ctrl+Shift+1"), ("precision", "&Planned Precision", "Ctrl+Shift+2"),
                                ("error", "Diagnosis &Error", "Ctrl+Shift+3"),
                                ("engine", "Precision That Ran in the &Engine", "Ctrl+Shift+4"),
                                ("time", "Engine Layer &Time", "Ctrl+Shift+5")):
            act = self._action(color_menu, text, lambda _=False, m=mode: self.set_color_mode(m), key, checkable=True)
            self.color_actions[mode] = act
        self.color_actions["op"].setChecked(True)
        pm.addSeparator()
        self.act_first_bad = self._action(pm, "Go to First &NaN/Inf", self.go_first_nonfinite, "Ctrl+Shift+N")
        self.act_worst = self._action(pm, "Go to &Worst Layer", self.go_worst, "Ctrl+Shift+W")
        pm.addSeparator()
        self.act_save_plan = self._action(pm, "&Save Plan…", self.save_plan_dialog, "Ctrl+Shift+S")
        self.act_load_plan = self._action(pm, "&Load Plan…", self.load_plan_dialog, "Ctrl+Shift+O")
        self.act_save_variant = self._action(pm, "Save &Variant as ONNX…", self.save_variant_dialog)
        self.act_fallback = self._action(pm, "&Find Fallback…", self.request_fallback, "Ctrl+Shift+F",
                                         tip="Find a few nodes to keep in FP32 so the candidate meets the target")
        pm.addSeparator()
        self._action(pm, "Show Precision &Panel", lambda: self.show_dock(self.precision_dock))
        r = mb.addMenu("&Run")
        self.act_compare = self._action(r, "&Compare Outputs", lambda: self.run_panel.compare_button.click(), "Ctrl+R")
        self.act_bench = self._action(r, "&Benchmark", lambda: self.run_panel.bench_button.click(), "Ctrl+B")
        self.act_diagnose = self._action(r, "&Diagnose Layers", lambda: self.run_panel.diagnose_button.click(),
                                         "Ctrl+D")
        self.act_build = self._action(r, "Build &TensorRT Engine", lambda: self.run_controller.start_build(),
                                      "Ctrl+Shift+B", tip="Build the plan's variant into a TensorRT engine")
        self._action(r, "Cancel &All Jobs", lambda: self.run_controller.cancel_all(), "Ctrl+.")
        h = mb.addMenu("&Help")
        self._action(h, "&Keyboard and Mouse", self.show_shortcuts, "F1")
        self._action(h, "&About trtlab", self.show_about)
        self._update_actions()

    def _connect(self) -> None:
        self.start_page.openRequested.connect(self.open_dialog)
        self.start_page.demoRequested.connect(self.open_demo)
        self.start_page.recentRequested.connect(self.open_path)
        self.loader.progress.connect(self._on_progress)
        self.loader.loaded.connect(self._on_loaded)
        self.loader.failed.connect(self._on_failed)
        self.loader.cancelled.connect(self._on_cancelled)
        self.loader.busyChanged.connect(self._set_busy)
        self.view.zoomChanged.connect(lambda s: self.zoom_label.setText(f"{s * 100:.0f}%"))
        self.view.nodeActivated.connect(self._on_node_activated)
        self.graph_page.levelChanged.connect(self._on_level_changed)
        self.properties_panel.jumpToNode.connect(lambda n: self.view.center_on_node(n))
        self.properties_panel.openSubgraph.connect(self.open_subgraph)
        self.shapes_panel.applied.connect(self.apply_shapes)
        self.view.selection.subscribe(self._on_selection)
        self.view.contextMenuRequested.connect(self._graph_menu)
        self.plan.changed.connect(self._on_plan_changed)
        self.precision_panel.nodeActivated.connect(self._show_onnx_node)
        self.precision_panel.goFirstNonfinite.connect(self.go_first_nonfinite)
        self.precision_panel.goWorst.connect(self.go_worst)
        self.precision_panel.save_button.clicked.connect(self.save_plan_dialog)
        self.precision_panel.load_button.clicked.connect(self.load_plan_dialog)
        self.precision_panel.fallbackRequested.connect(self.request_fallback)
        self.precision_panel.applyFallback.connect(self.apply_fallback)
        self.engine_panel.nodeActivated.connect(self._show_key)
        self.readiness_panel.nodeActivated.connect(self._show_key)
        self.readiness_panel.versionChanged.connect(lambda _v: self.run_readiness())
        self.run_panel.profileChanged.connect(self._readiness_timer.start)
        self.engine_panel.saveRequested.connect(self.save_engine_dialog)
        self.results_view.exported.connect(self.status_label.setText)

    # ----------------------------------------------------------------- opening
    def open_dialog(self) -> None:
        start = self.settings.value("paths/last_dir", str(Path.home()))
        path, _ = QFileDialog.getOpenFileName(self, "Open ONNX model", str(start), ONNX_FILTER)
        if path:
            self.open_path(path)

    def open_demo(self) -> None:
        folder = Path(QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppLocalDataLocation)
                      or Path.home() / ".trtlab")
        try:
            path = write_demo_model(folder)
        except OSError as exc:
            self.show_error(errors.TrtlabError(f"Cannot write the demo model into {folder}: {exc}",
                                               fix="Check that the folder is writable."))
            return
        # The demo opens ready to run: batch 1, so every edge shows a concrete shape.
        self.open_path(path, {"image": (1, 3, 64, 64)})

    def open_path(self, path: str | Path, shapes: dict[str, tuple[int, ...]] | None = None) -> None:
        p = Path(path)
        self._pending_path = p
        self.banner.hide()
        self.status_label.setText(f"Opening {p.name}…")
        self.loader.load(p, shapes)

    def reload(self) -> None:
        if self.opened is not None:
            self.open_path(self.opened.path, self.opened.input_shapes)

    def apply_shapes(self, shapes: dict[str, tuple[int, ...]]) -> None:
        """Re-infer shapes with the user's input shapes (the drawing stays, edge labels change)."""
        if self.opened is not None:
            self.open_path(self.opened.path, shapes)

    def _on_progress(self, fraction: float, message: str) -> None:
        if fraction < 0:
            self.progress.setRange(0, 0)
        else:
            self.progress.setRange(0, 1000)
            self.progress.setValue(int(fraction * 1000))
        self.status_label.setText(message)

    def _set_busy(self, busy: bool) -> None:
        self.progress.setVisible(busy)
        self.cancel_button.setVisible(busy)
        if busy:
            self.progress.setRange(0, 0)

    def _on_loaded(self, opened: OpenedModel) -> None:
        same = self.opened is not None and self.opened.path == opened.path
        self.opened = opened
        # Reloading the same file (or new input shapes) keeps the plan: it is keyed by node name.
        self.plan.set_model(opened.doc.model.graph, opened.shapes, opened.path.name, keep_plan=same,
                            opset_import=opened.doc.model.opset_import)
        if not same:
            self.set_diagnosis(None)
            self.precision_panel.show_fallback(None)
            self.set_engine(None)
        s = opened.summary
        self.summary_panel.show_summary(s, opened.shapes, opened.timings.get("total"))
        self.shapes_panel.set_inputs(s.inputs, opened.input_shapes)
        self.run_panel.set_inputs(s.inputs, opened.input_shapes, s.metadata)
        if self.stack.currentWidget() is self.start_page:
            self._show_model_layout()
        self.results_view.set_model(str(opened.path))  # another model's results go; the same one's stay
        if not self.run_controller._availability_loaded:
            self.run_controller.refresh_availability()
        self.stack.setCurrentWidget(self.graph_page)  # first, so the view has its real size
        self.graph_page.show_root(opened.path.name, opened.picture)
        self.setWindowTitle(f"{opened.path.name} — trtlab")
        t = opened.timings
        self.status_label.setText(
            f"Opened {opened.path.name} in {t['total']:.2f} s (read {t['load']:.2f} s, shapes {t['shapes']:.2f} s, "
            f"layout {t['layout']:.2f} s) · {s.nodes:,} nodes · {human_bytes(s.file_size)}"
            + ("" if opened.shapes.ok else " · shape inference failed, see Summary"))
        if opened.doc.warnings:
            self.banner.show_message("Opened with warnings", " ".join(opened.doc.warnings), "", level="warning")
        self.settings.setValue("paths/last_dir", str(opened.path.parent))
        self._add_recent(opened.path)
        self.view.setFocus()
        self._update_actions()
        if not same:
            self._readiness_cache = None
            self._restore_autosaved_plan(opened.path)
        report = self.run_readiness()
        if report is not None and report.errors and not same:
            # A model TensorRT cannot take: say so at once, not when a build fails minutes later.
            self.readiness_dock.show()
            self.readiness_dock.raise_()

    def _on_failed(self, error: errors.TrtlabError) -> None:
        self.show_error(error)
        self.status_label.setText(f"Could not open {self._pending_path.name if self._pending_path else 'the file'}")

    def _on_cancelled(self) -> None:
        self.status_label.setText("Opening cancelled.")

    def show_error(self, error: errors.TrtlabError) -> None:
        self.banner.show_message(getattr(error, "title", "Error"), error.message, error.fix)

    def close_model(self) -> None:
        self.loader.cancel(silent=True)
        self.opened = None
        self.view.clear()
        self.graph_page.levels = []
        self.summary_panel.show_summary(None)
        self.shapes_panel.set_inputs([], {})
        self.properties_panel.set_context(None, None, None)
        self.plan.set_model(None, None)
        self.readiness = None
        self.readiness_panel.set_report(None)
        self.readiness_dock.setWindowTitle("Readiness")
        self.set_engine(None)
        self.set_diagnosis(None)
        self.precision_panel.show_fallback(None)
        self._show_start_page()
        self.setWindowTitle("trtlab")
        self.status_label.setText("Ready")
        self._update_actions()

    # ----------------------------------------------------------------- graph interaction
    def _on_level_changed(self) -> None:
        self._apply_badges()
        pic = self.graph_page.picture
        self.properties_panel.set_context(pic.graph if pic else None, self.opened.shapes if self.opened else None,
                                          self.opened.path if self.opened else None)
        self._apply_overlay_visibility()
        self._apply_colors()

    def _on_selection(self) -> None:
        sel = self.view.selection
        current = sel.current if sel.current is not None else (next(iter(sel.selected)) if len(sel) == 1 else None)
        self.properties_panel.show_node(current, len(sel))

    def _on_node_activated(self, node: int) -> None:
        pic = self.graph_page.picture
        if pic is not None and pic.graph.subgraphs.get(node):
            self.open_subgraph(node, 0)

    def open_subgraph(self, node: int, index: int) -> None:
        pic = self.graph_page.picture
        if pic is None or self.opened is None:
            return
        subs = pic.graph.subgraphs.get(node, [])
        if index >= len(subs):
            return
        attr_name, sub = subs[index]
        sub_picture = lay_out(sub, self.opened.shapes)
        self.graph_page.push(f"{pic.graph.names[node]} / {attr_name}", sub_picture)

    def open_find(self) -> None:
        if self.stack.currentWidget() is self.graph_page:
            self.graph_page.search.open_bar()

    def _select_all(self) -> None:
        if self.view.graph is not None:
            self.view.selection.set(range(self.view.graph.node_count))

    def _toggle_minimap(self) -> None:
        self.view.minimap.setProperty("wanted", self.act_minimap.isChecked())
        self._apply_overlay_visibility()

    def _toggle_legend(self) -> None:
        self.view.legend.setProperty("wanted", self.act_legend.isChecked())
        self._apply_overlay_visibility()

    def _apply_overlay_visibility(self) -> None:
        has = self.view.item is not None
        self.view.minimap.setVisible(has and self.act_minimap.isChecked())
        self.view.legend.setVisible(has and self.act_legend.isChecked())

    # ----------------------------------------------------------------- export
    def _export_target(self, kind: str) -> Path | None:
        if self.view.item is None:
            return None
        base = self.opened.path.with_suffix(f".{kind}").name if self.opened else f"graph.{kind}"
        start = str(Path(str(self.settings.value("paths/export_dir", str(Path.home())))) / base)
        path, _ = QFileDialog.getSaveFileName(self, f"Export graph as {kind.upper()}", start,
                                              f"{kind.upper()} image (*.{kind})")
        if not path:
            return None
        p = Path(path)
        if p.suffix.lower() != f".{kind}":
            p = p.with_name(p.name + f".{kind}")
        self.settings.setValue("paths/export_dir", str(p.parent))
        return p

    def export_png_dialog(self) -> None:
        p = self._export_target("png")
        if p is not None:
            self.export_to(p)

    def export_svg_dialog(self) -> None:
        p = self._export_target("svg")
        if p is not None:
            self.export_to(p)

    def export_to(self, path: Path) -> bool:
        try:
            QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
            if path.suffix.lower() == ".svg":
                self.view.export_svg(path)
            else:
                self.view.export_png(path)
        except (OSError, ValueError) as exc:
            self.show_error(errors.TrtlabError(f"Could not export to '{path}': {exc}",
                                               fix="Choose a folder you can write to."))
            return False
        finally:
            QApplication.restoreOverrideCursor()
        self.status_label.setText(f"Exported the graph to {path}")
        return True

    # ----------------------------------------------------------------- recent files
    def recent_files(self) -> list[str]:
        value = self.settings.value("recent/files", [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in (value or [])]

    def _add_recent(self, path: Path) -> None:
        p = str(path.resolve())
        files = [p] + [f for f in self.recent_files() if f != p]
        self.settings.setValue("recent/files", files[:MAX_RECENT])
        self._refresh_recent()

    def _refresh_recent(self) -> None:
        files = self.recent_files()
        self.recent_menu.clear()
        for f in files:
            act = self.recent_menu.addAction(Path(f).name)
            act.setStatusTip(f)
            act.setToolTip(f)
            act.triggered.connect(lambda _=False, f=f: self.open_path(f))
        if files:
            self.recent_menu.addSeparator()
            self.recent_menu.addAction("Clear Recent", self._clear_recent)
        self.recent_menu.setEnabled(bool(files))
        self.start_page.set_recent(files)

    def _clear_recent(self) -> None:
        self.settings.setValue("recent/files", [])
        self._refresh_recent()

    def _update_actions(self) -> None:
        has = self.opened is not None
        for act in (self.act_reload, self.act_export_png, self.act_export_svg, self.act_close, self.act_find,
                    self.act_compare, self.act_bench, self.act_diagnose, self.act_save_plan, self.act_load_plan,
                    self.act_save_variant, self.act_fallback, self.act_build, *self.precision_actions):
            act.setEnabled(has)
        self.act_first_bad.setEnabled(bool(self.diagnosis and self.diagnosis.get("first_nonfinite")))
        self.act_worst.setEnabled(bool(self.diagnosis and self.diagnosis.get("worst")))

    # ----------------------------------------------------------------- drag and drop, help, close
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802
        urls = event.mimeData().urls()
        if urls and urls[0].isLocalFile():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802
        urls = event.mimeData().urls()
        if urls and urls[0].isLocalFile():
            self.open_path(urls[0].toLocalFile())
            event.acceptProposedAction()

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.StatusTip:
            self.hint_label.setText(event.tip())
            return True
        return super().event(event)

    def keyPressEvent(self, event: object) -> None:  # noqa: N802
        if getattr(event, "key", lambda: None)() == Qt.Key.Key_Escape and self.loader.is_busy():
            self.loader.cancel()
            return
        super().keyPressEvent(event)

    def show_shortcuts(self) -> None:
        QMessageBox.information(self, "Keyboard and mouse", SHORTCUTS_HTML)

    def show_about(self) -> None:
        QMessageBox.about(self, "About trtlab",
                          f"<b>trtlab {__version__}</b><br>ONNX graphs, precision variants, TensorRT and "
                          "ONNX Runtime comparisons.")

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        self.loader.cancel(silent=True)
        self.run_controller.cancel_all()
        self.jobs.cancel_all(wait=2)
        # A parse in native code cannot be interrupted: hide the window and let it end.
        self._save_layout()
        self.hide()
        self.loader.wait(60_000)
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.sync()
        super().closeEvent(event)


SHORTCUTS_HTML = """
<table cellpadding='3'>
<tr><td><b>Ctrl+O</b></td><td>Open a model (or drop a .onnx file on the window)</td></tr>
<tr><td><b>Ctrl+F</b>, Enter, Shift+Enter</td><td>Find nodes, op types, tensors; next; previous</td></tr>
<tr><td>Wheel, <b>Ctrl++</b>, <b>Ctrl+-</b></td><td>Zoom</td></tr>
<tr><td><b>Ctrl+0</b> / <b>F</b></td><td>Fit the graph; <b>Ctrl+1</b> actual size</td></tr>
<tr><td>Drag, middle-drag, arrow keys</td><td>Pan</td></tr>
<tr><td>Click, <b>Ctrl</b>+click</td><td>Select a node; add or remove it</td></tr>
<tr><td><b>Shift</b>+drag, <b>Ctrl</b>+drag</td><td>Select the nodes in a rectangle</td></tr>
<tr><td>Double-click</td><td>Open an If/Loop/Scan node's subgraph; <b>Alt+Left</b> goes back</td></tr>
<tr><td><b>Ctrl+E</b> / <b>Ctrl+Shift+E</b></td><td>Export the graph as PNG / SVG</td></tr>
<tr><td><b>Ctrl+M</b> / <b>Ctrl+L</b></td><td>Minimap / legend</td></tr>
<tr><td>Right-click, <b>Alt+1…4</b>, <b>Alt+0</b></td><td>Set the selected nodes to FP32 / FP16 / BF16 / INT8;
back to the default</td></tr>
<tr><td><b>Ctrl+Z</b> / <b>Ctrl+Shift+Z</b></td><td>Undo / redo plan edits</td></tr>
<tr><td><b>Ctrl+Shift+1/2/3</b></td><td>Colour the graph by op type / planned precision / diagnosis error</td></tr>
<tr><td><b>Ctrl+D</b>, <b>Ctrl+Shift+N</b>, <b>Ctrl+Shift+W</b></td><td>Diagnose layers; go to the first NaN/Inf;
go to the worst layer</td></tr>
<tr><td><b>Ctrl+Shift+F</b></td><td>Find a fallback: nodes to keep in FP32 so the target is met</td></tr>
<tr><td><b>Ctrl+Shift+B</b>, <b>Ctrl+Shift+4</b></td><td>Build a TensorRT engine; colour the graph by the precision
that ran in it</td></tr>
</table>
"""
