"""The main window: start page, graph page, docks, status bar; opening a model and showing it.

Menus (menus.py), dock layout (window_layout.py), files (window_files.py) and precision work
(window_precision.py) are mixins of `MainWindow`."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QByteArray, QEvent, QSettings, Qt, QTimer
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QLabel, QMainWindow, QProgressBar, QPushButton, QStackedWidget, QVBoxLayout, QWidget

from app.core import errors
from app.core.model import OpenedModel, lay_out
from app.core.units import human_bytes
from app.ui.common.error_banner import ErrorBanner
from app.ui.common.resources import app_icon
from app.ui.graph.page import GraphPage
from app.ui.guided.flow import GuidedFlow
from app.ui.model.loader_thread import ModelLoader
from app.ui.model.properties_panel import PropertiesPanel
from app.ui.model.readiness_panel import ReadinessPanel
from app.ui.model.shapes_panel import ShapesPanel
from app.ui.model.summary_panel import SummaryPanel
from app.ui.precision.panel import PrecisionPanel
from app.ui.precision.plan_controller import PlanController
from app.ui.precision.window_precision import PrecisionWindowMixin
from app.ui.project.window_project import ProjectMixin
from app.ui.results.profile_panel import ProfilePanel
from app.ui.results.view import ResultsView
from app.ui.run.controller import RunController
from app.ui.run.engine_panel import EnginePanel
from app.ui.run.job_bridge import JobBridge
from app.ui.run.jobs_panel import JobsPanel
from app.ui.run.panel import RunPanel
from app.ui.shell.files import FilesMixin
from app.ui.shell.menus import MenusMixin
from app.ui.shell.presentation import Presentation
from app.ui.shell.start_page import StartPage
from app.ui.shell.workspace import WorkspaceMixin, output_dims, photo_source

log = logging.getLogger(__name__)



class MainWindow(ProjectMixin, PrecisionWindowMixin, WorkspaceMixin, MenusMixin, FilesMixin, QMainWindow):
    def __init__(self, settings: QSettings | None = None) -> None:
        super().__init__()
        self.settings = settings or QSettings("trtlab", "trtlab")
        self.setWindowTitle("trtlab")
        self.setWindowIcon(app_icon())
        self._fit_to_screen()
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
        self.profile_panel = ProfilePanel()
        self.profile_dock = self._dock("Profile", self.profile_panel, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.jobs = JobBridge(self)
        self.jobs_panel = JobsPanel(self.jobs)
        self.jobs_dock = self._dock("Jobs", self.jobs_panel, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.tabifyDockWidget(self.results_dock, self.jobs_dock)
        self.tabifyDockWidget(self.results_dock, self.precision_dock)
        self.tabifyDockWidget(self.results_dock, self.engine_dock)
        self.tabifyDockWidget(self.results_dock, self.profile_dock)
        self.tabifyDockWidget(self.results_dock, self.readiness_dock)
        self.run_controller = RunController(self, self)

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

        self.presentation = Presentation(self)
        self._build_menus()
        self._connect()
        self._init_projects()
        # After the window's own slots: the flow's run after them (the window shows a loaded model, the flow
        # then takes its place back).
        self.guided = GuidedFlow(self)
        self._refresh_recent()
        self._layout_shown = False
        self._show_start_page()
        # Sized again once the docks are hidden: while they all stood side by side (just made) their minimum widths
        # set the window's, and a window sized then stayed 1583 px wide whatever it was asked.
        self.layout().activate()
        geom = self.settings.value("window/geometry")
        if not (isinstance(geom, QByteArray) and self.restoreGeometry(geom)):
            self._fit_to_screen()

    def _show_start_page(self) -> None:
        """The start page stands alone: the model docks have nothing to show yet."""
        self._save_layout()
        self.stack.setCurrentWidget(self.start_page)
        for dock in self._model_docks():
            dock.hide()

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
        self.graph_page.groupsChanged.connect(self._on_groups_changed)
        self.graph_page.regroupStarted.connect(self.status_label.setText)
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
        self.profile_panel.nodeActivated.connect(self._show_key)
        self.profile_panel.profileRequested.connect(lambda: self.run_controller.start_profile())
        self.profile_panel.shownChanged.connect(self._apply_colors)
        self.results_view.exported.connect(self.status_label.setText)
        self.results_view.kindChangeRequested.connect(self._change_output_kind)

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
            self.set_profile(None)
        s = opened.summary
        self.summary_panel.show_summary(s, opened.shapes, opened.timings.get("total"))
        self.shapes_panel.set_inputs(s.inputs, opened.input_shapes)
        self.run_panel.set_inputs(s.inputs, opened.input_shapes, s.metadata)
        self.run_panel.set_photo_source(photo_source(s.inputs, opened.input_shapes))
        self.run_panel.outputs_box.set_model(opened.doc.model, output_dims([o.name for o in s.outputs], opened.shapes),
                                             {i.name: list((opened.input_shapes or {}).get(i.name, i.shape or ()))
                                              for i in s.inputs})
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
        self._after_model_loaded(same)  # a project being opened is applied now; another model: a new project

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
        self.set_profile(None)
        self.set_diagnosis(None)
        self.precision_panel.show_fallback(None)
        self._show_start_page()
        self.setWindowTitle("trtlab")
        self.status_label.setText("Ready")
        self._update_actions()

    # ----------------------------------------------------------------- graph interaction
    def _on_level_changed(self) -> None:
        self._sync_group_actions()
        self._apply_badges()
        pic = self.graph_page.picture
        self.properties_panel.set_context(pic.graph if pic else None, self.opened.shapes if self.opened else None,
                                          self.opened.path if self.opened else None)
        self._apply_overlay_visibility()
        self._apply_colors()

    def _on_groups_changed(self) -> None:
        self._on_level_changed()
        pic = self.graph_page.picture
        if pic is not None:
            boxes = len(pic.graph.group_of)
            how = (f"by groups: {pic.graph.node_count:,} boxes, {boxes:,} of them closed groups" if pic.grouped
                   else f"flat: {pic.graph.node_count:,} of {pic.all_nodes.node_count:,} nodes")
            if pic.folded and pic.folds is not None:
                how += f", shape arithmetic folded ({pic.folds.folded:,} nodes in badges)"
            self.status_label.setText(f"Graph drawn {how} ({1000 * self.graph_page.last_regroup_s:.0f} ms)")

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

    def _sync_group_actions(self) -> None:
        """View ▸ Groups says how the graph is drawn, and is usable where the graph has groups."""
        page = self.graph_page
        for act in (self.act_grouped, self.act_expand_all, self.act_collapse_all, *self.depth_actions):
            act.setEnabled(page.can_group)
        self.act_grouped.setChecked(page.grouped)
        self.act_fold.setEnabled(page.can_fold)
        self.act_fold.setChecked(page.folded)

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

    def _update_actions(self) -> None:
        has = self.opened is not None
        for act in (self.act_reload, self.act_export_png, self.act_export_svg, self.act_close, self.act_find,
                    self.act_compare, self.act_bench, self.act_diagnose, self.act_save_plan, self.act_load_plan,
                    self.act_save_variant, self.act_fallback, self.act_build, self.act_profile,
                    *self.precision_actions):
            act.setEnabled(has)
        self.act_first_bad.setEnabled(bool(self.diagnosis and self.diagnosis.get("first_nonfinite")))
        self.act_worst.setEnabled(bool(self.diagnosis and self.diagnosis.get("worst")))

    # ----------------------------------------------------------------- drag and drop, close
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

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        if not self._confirm_close():  # unsaved results: Save / Discard / Cancel
            event.ignore()
            return
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

