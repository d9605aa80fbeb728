"""The main window: start page, graph page, docks, status bar; opening a model and showing it.

A thin shell: the features are controllers it assembles (files.py, workspace.py, menus.py here; the precision
work, the project, the run controller and the guided flow in their own folders), each owning its state."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QByteArray, QEvent, QSettings, Qt, Signal
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDropEvent, QKeyEvent, QStatusTipEvent
from PySide6.QtWidgets import (
    QDockWidget,
    QMainWindow,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from app.core import errors
from app.core.model import ModelDrawing, OpenedModel, lay_out
from app.core.units import human_bytes
from app.ui.common.error_banner import ErrorBanner
from app.ui.common.messages import Messages
from app.ui.common.resources import app_icon
from app.ui.graph.page import GraphPage
from app.ui.guided.flow import GuidedFlow
from app.ui.model.loader_thread import ModelLoader
from app.ui.model.properties_panel import PropertiesPanel
from app.ui.model.readiness_panel import ReadinessPanel
from app.ui.model.shapes_panel import ShapesPanel
from app.ui.model.summary_panel import SummaryPanel
from app.ui.precision.colors import GraphColors
from app.ui.precision.engine_results import EngineResults
from app.ui.precision.nodes import GraphNodes
from app.ui.precision.panel import PrecisionPanel
from app.ui.precision.plan_controller import PlanController, PreparedPlan, prepare
from app.ui.precision.plan_files import PlanFiles
from app.ui.precision.readiness import ReadinessCheck
from app.ui.precision.steps import FILL_LATER_NODES, FillSteps, wait_workers
from app.ui.precision.work import PrecisionWork
from app.ui.project.batch import BatchResults
from app.ui.project.controller import ProjectController
from app.ui.project.report_export import export_report_dialog
from app.ui.results.engine_panel import EnginePanel
from app.ui.results.profile_panel import ProfilePanel
from app.ui.results.view import ResultsView
from app.ui.run.controller import RunController
from app.ui.run.host import JobModel
from app.ui.run.imports import EngineImports
from app.ui.run.job_bridge import JobBridge
from app.ui.run.jobs_panel import JobsPanel
from app.ui.run.panel import RunPanel, model_photos
from app.ui.shell.files import ModelFiles
from app.ui.shell.menus import Menus
from app.ui.shell.presentation import Presentation
from app.ui.shell.start_page import StartPage
from app.ui.shell.status import StatusParts
from app.ui.shell.workspace import Workspace

log = logging.getLogger(__name__)



class MainWindow(QMainWindow):
    """The shell: it makes the pages, panels and docks, assembles the features' controllers (files, workspace,
    precision work, project, run controller, guided flow, menus) and connects them. It sets the title (one
    place: `update_title`) and tells the features, in a fixed order, when a model is shown or closed."""

    modelShown = Signal(object)   # OpenedModel, once the window has shown it (panels filled, project applied)
    openFailed = Signal(object)   # the TrtlabError that stopped a model opening; None: cancelled
    compareRequested = Signal()   # the start page's "Compare precisions" (the guided flow)

    def __init__(self, settings: QSettings | None = None) -> None:
        super().__init__()
        self.settings = settings or QSettings("trtlab", "trtlab")
        self.setWindowIcon(app_icon())
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
        self.setCentralWidget(central)
        self.view = self.graph_page.view
        self.workspace = Workspace(self, self.settings, lambda: self.stack.currentWidget() is self.graph_page)
        self.workspace.fit_to_screen()

        self.summary_panel = SummaryPanel()
        self.shapes_panel = ShapesPanel()
        summary_box = QWidget()
        sb = QVBoxLayout(summary_box)
        sb.setContentsMargins(0, 0, 0, 0)
        sb.addWidget(self.shapes_panel)
        sb.addWidget(self.summary_panel, 1)
        dock = self.workspace.dock
        left, right, bottom = (Qt.DockWidgetArea.LeftDockWidgetArea, Qt.DockWidgetArea.RightDockWidgetArea,
                               Qt.DockWidgetArea.BottomDockWidgetArea)
        self.summary_dock = dock("Summary", summary_box, left)
        self.properties_panel = PropertiesPanel()
        self.properties_dock = dock("Properties", self.properties_panel, right)
        self.run_panel = RunPanel()
        # The panel scrolls its settings itself, below its action buttons (always in sight).
        self.run_dock = dock("Run", self.run_panel, right)
        self.tabifyDockWidget(self.properties_dock, self.run_dock)
        self.properties_dock.raise_()
        self.results_view = ResultsView()
        self.results_dock = dock("Results", self.results_view, bottom)
        self.plan = PlanController(self)
        self.precision_panel = PrecisionPanel(self.plan)
        self.precision_dock = dock("Precision", self.precision_panel, bottom)
        self.readiness_panel = ReadinessPanel()
        self.readiness_dock = dock("Readiness", self.readiness_panel, bottom)
        self.engine_panel = EnginePanel()
        self.engine_dock = dock("Engine", self.engine_panel, bottom)
        self.profile_panel = ProfilePanel()
        self.profile_dock = dock("Profile", self.profile_panel, bottom)
        self.jobs = JobBridge(self)
        self.jobs_panel = JobsPanel(self.jobs)
        self.jobs_dock = dock("Jobs", self.jobs_panel, bottom)
        for other in (self.jobs_dock, self.precision_dock, self.engine_dock, self.profile_dock, self.readiness_dock):
            self.tabifyDockWidget(self.results_dock, other)
        self.workspace.set_order(["summary", "properties", "run", "precision", "results", "jobs", "engine", "profile",
                                  "readiness"])  # View ▸ Panels: Alt+Shift+1 … 9 in this order

        self.status = StatusParts(self.statusBar(), self.loader.cancel)
        self.status_label, self.hint_label = self.status.status_label, self.status.hint_label
        self.cancel_button = self.status.cancel_button
        self.messages = Messages(self.status_label, self.banner, self, self.workspace)

        # The features' controllers, each owning its state; the precision and run controllers are given the few
        # parts they use, never the window.
        self.files = ModelFiles(self)
        self.nodes = GraphNodes(self.graph_page, self.plan)
        self.colors = GraphColors(self.graph_page, self.plan, self.engine_panel, self.profile_panel, self.messages,
                                  self)
        self.plan_files = PlanFiles(self.plan, lambda: self.opened, self.settings, self.colors, self.messages, self)
        self.precision = PrecisionWork(self.plan, self.precision_panel, self.nodes, self.colors, self.messages, self)
        self.engine_results = EngineResults(self.engine_panel, self.profile_panel, self.colors, self.messages,
                                            self.plan_files.plan_dir, self)
        self.readiness = ReadinessCheck(self)
        self.project = ProjectController(self)
        col.insertWidget(1, self.project.project_banner)
        col.addWidget(self.stack, 1)
        self.batch = BatchResults(self)
        self.run_controller = RunController(self.run_panel, self.jobs, JobModel(lambda: self.opened, self.plan,
                                                                               self.readiness.run),
                                            self.results_view, self.messages, self)
        self.imports = EngineImports(self.engine_results, self.engine_panel, self.results_view, self.messages,
                                     lambda: self.opened)
        self.presentation = Presentation(self, self)
        self.guided = GuidedFlow(self)
        self.menus = Menus(self, self, files=self.files, project=self.project, batch=self.batch,
                           precision=self.precision, colors=self.colors, plan_files=self.plan_files, plan=self.plan,
                           runs=self.run_controller,
                           run_panel=self.run_panel, graph_page=self.graph_page, workspace=self.workspace,
                           presentation=self.presentation, guided=self.guided, imports=self.imports)
        self._connect()
        self.project.start()
        self.files.refresh_recent()
        self._show_start_page()
        self.update_title()
        # Sized again once the docks are hidden: while they all stood side by side (just made) their minimum widths
        # set the window's, and a window sized then stayed 1583 px wide whatever it was asked.
        layout = self.layout()  # a QMainWindow always has its own
        if layout is not None:
            layout.activate()
        geom = self.settings.value("window/geometry")
        if not (isinstance(geom, QByteArray) and self.restoreGeometry(geom)):
            self.workspace.fit_to_screen()

    # ----------------------------------------------------------------- what the features ask of the window
    def model_docks(self) -> list[QDockWidget]:
        return list(self.workspace.docks)

    def show_model_layout(self) -> None:
        self.workspace.show_model_layout()

    def show_jobs(self) -> None:
        self.workspace.show_jobs()

    def show_results(self) -> None:
        self.workspace.show_results()

    def dock_state(self) -> str:
        return self.workspace.state()

    def restore_dock_state(self, state: str) -> None:
        self.workspace.restore_state(state)

    def add_recent(self, path: Path) -> None:
        self.files.add_recent(path)

    def open_demo(self) -> None:
        self.files.open_demo()

    def show_error(self, error: errors.TrtlabError) -> None:
        self.messages.show_error(error)

    def update_title(self) -> None:
        """The one place the title is set: the project's file (else the model's), marked while work is unsaved."""
        name = self.project.title_name()
        self.setWindowTitle("trtlab" if name is None else f"{name}{' •' if self.project.unsaved else ''} — trtlab")

    def reset_layout(self) -> None:
        self.workspace.reset_layout()
        self.status_label.setText("Panels back to the default layout.")

    def export_report(self) -> None:
        export_report_dialog(self)

    def _show_start_page(self) -> None:
        """The start page stands alone: the model docks have nothing to show yet."""
        self.workspace.save_layout()
        self.stack.setCurrentWidget(self.start_page)
        self.workspace.hide_all()

    def _connect(self) -> None:
        self.start_page.openRequested.connect(self.files.open_dialog)
        self.start_page.demoRequested.connect(self.files.open_demo)
        self.start_page.recentRequested.connect(self.open_path)
        self.start_page.compareRequested.connect(self.compareRequested)
        self.files.recentChanged.connect(self._show_recent)
        self.loader.progress.connect(self.status.show_progress)
        self.loader.drawn.connect(self._on_drawn)
        self.loader.shapesPending.connect(self.graph_page.set_shapes_pending)
        self.loader.loaded.connect(self._on_loaded)
        self.loader.failed.connect(self._on_failed)
        self.loader.cancelled.connect(self._on_cancelled)
        self.loader.busyChanged.connect(self.status.set_busy)
        self.view.zoomChanged.connect(lambda s: self.status.zoom_label.setText(f"{s * 100:.0f}%"))
        self.view.nodeActivated.connect(self._on_node_activated)
        self.graph_page.levelChanged.connect(self._on_level_changed)
        self.graph_page.groupsChanged.connect(self._on_groups_changed)
        self.graph_page.regroupStarted.connect(self.status_label.setText)
        self.properties_panel.jumpToNode.connect(lambda n: self.view.center_on_node(n))
        self.properties_panel.openSubgraph.connect(self.open_subgraph)
        self.shapes_panel.applied.connect(self.apply_shapes)
        self.view.selection.subscribe(self._on_selection)
        self.plan.changed.connect(self.update_title)
        self.plan.undo_stack.cleanChanged.connect(self.update_title)  # a plan or project saved
        self.project.changed.connect(self.update_title)
        self.view.contextMenuRequested.connect(self.precision.graph_menu)
        self.precision_panel.save_button.clicked.connect(self.plan_files.save_plan_dialog)
        self.precision_panel.load_button.clicked.connect(self.plan_files.load_plan_dialog)
        self.engine_panel.nodeActivated.connect(self.nodes.show_key)
        self.engine_panel.compare.nodeActivated.connect(lambda key: self.nodes.select_keys([key]))
        self.readiness_panel.nodeActivated.connect(self.nodes.show_key)
        self.profile_panel.nodeActivated.connect(self.nodes.show_key)
        self.engine_results.nodesToShow.connect(self.nodes.select_keys)
        self.precision.fallbackRequested.connect(lambda: self.run_controller.start_fallback())
        self.plan_files.variantRequested.connect(self.run_controller.save_variant)
        self.run_controller.resultReady.connect(self.project.record_result)
        self.imports.imported.connect(self.project.record_result)
        self.run_controller.diagnosed.connect(self.precision.set_diagnosis)
        self.run_controller.built.connect(self.engine_results.set_engine)
        self.run_controller.profiled.connect(self.engine_results.set_profile)
        self.run_controller.fallbackFound.connect(self.precision.show_fallback)
        self.run_controller.layerTimes.connect(self.engine_results.show_layer_times)
        self.profile_panel.profileRequested.connect(lambda: self.run_controller.start_profile())
        self.profile_panel.pointsRequested.connect(lambda n, m: self.run_controller.start_profile(n, m))
        self.results_view.exported.connect(self.status_label.setText)
        self.results_view.kindChangeRequested.connect(self._change_output_kind)

    def _show_recent(self, files: list[str]) -> None:
        self.menus.show_recent(files, self.open_path, self.files.clear_recent)
        self.start_page.set_recent(files)

    def _change_output_kind(self, output: str) -> None:
        """The Run panel, scrolled to the output's kind, which opens its list of kinds."""
        self.run_dock.show()
        self.run_dock.raise_()
        self.run_panel.reveal_output_kind(output)

    def _on_drawn(self, drawing: ModelDrawing) -> None:
        """A model's graph laid out before its shapes are known: drawn at once, edge labels blank; `_on_loaded`
        fills the panels and labels this drawing when the shapes are in. The model on show opened again (other
        input shapes) keeps its drawing until then."""
        if self.opened is not None and self.opened.path == drawing.path:
            return
        if self.opened is not None:  # another model's findings must not mark this drawing
            self.readiness.model_closed()
            self.properties_panel.set_context(None, None, None)
        if self.stack.currentWidget() is self.start_page:
            self.workspace.show_model_layout()
        self.stack.setCurrentWidget(self.graph_page)
        self.graph_page.show_drawing(drawing.path.name, drawing.picture)
        self.status_label.setText(f"Drew {drawing.path.name} in {sum(drawing.timings.values()):.2f} s · "
                                  "inferring shapes…")

    def _on_loaded(self, opened: OpenedModel) -> None:
        self.project.flush_autosave()  # the work on the model shown until now, before anything replaces it
        same = self.opened is not None and self.opened.path == opened.path
        self.opened = opened
        # A big model's plan, Run panel and readiness check follow over the next event-loop turns (`_fill_later`):
        # in one turn they held the GUI thread for seconds. Until then its plan has no rows.
        later = len(opened.doc.model.graph.node) >= FILL_LATER_NODES
        # Reloading the same file (or new input shapes) keeps the plan: it is keyed by node name.
        self.plan.set_model(None if later else opened.doc.model.graph, None if later else opened.shapes,
                            opened.path.name, keep_plan=same, opset_import=opened.doc.model.opset_import)
        s = opened.summary
        self.summary_panel.show_summary(s, opened.shapes, opened.timings.get("total"))
        self.shapes_panel.set_inputs(s.inputs, opened.input_shapes)
        if not later:
            self.run_panel.show_model(opened)
        if self.stack.currentWidget() is self.start_page:
            self.workspace.show_model_layout()
        self.results_view.set_model(str(opened.path))  # another model's results go; the same one's stay
        if self.run_controller.availability is None and not later:
            self.run_controller.refresh_availability()
        self.stack.setCurrentWidget(self.graph_page)  # first, so the view has its real size
        self.graph_page.show_root(opened.path.name, opened.picture)
        t = opened.timings
        self.status_label.setText(
            f"Opened {opened.path.name} in {t['total']:.2f} s (read {t['load']:.2f} s, shapes {t['shapes']:.2f} s, "
            f"layout {t['layout']:.2f} s) · {s.nodes:,} nodes · {human_bytes(s.file_size)}"
            + ("" if opened.shapes.ok else " · shape inference failed, see Summary"))
        if opened.doc.warnings:
            self.banner.show_message("Opened with warnings", " ".join(opened.doc.warnings), "", level="warning")
        self.settings.setValue("paths/last_dir", str(opened.path.parent))
        self.files.add_recent(opened.path)
        self.view.setFocus()
        self.menus.set_model_open(True)
        if later:
            self._fill_later(opened, same)
            return
        self.precision.model_opened(same)
        self.engine_results.model_opened(same)
        self.readiness.model_opened(same)
        self._model_shown(opened, same)

    def _model_shown(self, opened: OpenedModel, same: bool) -> None:
        self.project.model_opened(same)  # a project being opened is applied now; another model: a new project
        self.update_title()
        self.modelShown.emit(opened)

    def _fill_later(self, opened: OpenedModel, same: bool) -> None:
        """A big model's panels, filled over several event-loop turns while the drawing stays live: its plan's
        rows found on a worker thread, then the Precision table, the Run panel, the readiness check (on a worker
        thread too); `modelShown` once all are in. Dropped if another model (or none) is shown meanwhile."""
        steps = FillSteps(self, lambda: self.opened is opened)
        model = opened.doc.model

        def prepared(result: PreparedPlan) -> None:
            self.plan.set_model(model.graph, opened.shapes, opened.path.name, keep_plan=True,
                                opset_import=model.opset_import, prepared=result)
            steps.then(lambda: self.precision.model_opened(same))
            steps.then(lambda: self.engine_results.model_opened(same))
            if self.run_controller.availability is None:
                steps.then(self.run_controller.refresh_availability)
            steps.work(lambda: model_photos(opened), lambda photos: self.run_panel.show_model(opened, photos))
            steps.then(lambda: self.readiness.model_opened(same))
            steps.when(lambda: not self.readiness.busy(), lambda: self._model_shown(opened, same))

        plan = self.plan.plan
        steps.work(lambda: prepare(model.graph, opened.shapes, plan, model.opset_import), prepared)

    def _on_failed(self, error: errors.TrtlabError) -> None:
        self.show_error(error)
        self.status_label.setText(f"Could not open {self._pending_path.name if self._pending_path else 'the file'}")
        self.openFailed.emit(error)

    def _on_cancelled(self) -> None:
        self.status_label.setText("Opening cancelled.")
        self.openFailed.emit(None)

    # ----------------------------------------------------------------- opening and closing
    def open_path(self, path: str | Path, shapes: dict[str, tuple[int, ...]] | None = None) -> None:
        """A model (off the GUI thread, with progress and Cancel) or a `.trtlab` project."""
        p = Path(path)
        if p.suffix.lower() == ".trtlab":  # a project (from Open…, the recent files, a drop, the command line)
            self.project.open_project(p)
            return
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

    def close_model(self) -> None:
        self.loader.cancel(silent=True)
        self.project.flush_autosave()
        self.opened = None
        self.view.clear()
        self.graph_page.levels = []
        self.summary_panel.show_summary(None)
        self.shapes_panel.set_inputs([], {})
        self.properties_panel.set_context(None, None, None)
        self.plan.set_model(None, None)
        self.engine_results.model_closed()
        self.precision.model_closed()
        self.readiness.model_closed()
        self._show_start_page()
        self.status_label.setText("Ready")
        self.menus.set_model_open(False)
        self.update_title()

    # ----------------------------------------------------------------- graph interaction
    def _on_level_changed(self) -> None:
        self.menus.sync_groups(self.graph_page)
        pic = self.graph_page.picture
        self.properties_panel.set_context(pic.graph if pic else None, self.opened.shapes if self.opened else None,
                                          self.opened.path if self.opened else None)
        self.view.show_overlays()
        self.readiness.graph_changed()
        self.colors.graph_changed()

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

    def select_all(self) -> None:
        if self.view.graph is not None:
            self.view.selection.set(range(self.view.graph.node_count))

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
        if event.type() == QEvent.Type.StatusTip and isinstance(event, QStatusTipEvent):
            self.hint_label.setText(event.tip())
            return True
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        if event.key() == Qt.Key.Key_Escape and self.loader.is_busy():
            self.loader.cancel()
            return
        super().keyPressEvent(event)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        if not self.project.confirm_close():  # unsaved results: Save / Discard / Cancel
            event.ignore()
            return
        self.loader.cancel(silent=True)
        self.run_controller.cancel_all()
        self.jobs.cancel_all(wait=2)
        # A parse in native code cannot be interrupted: hide the window and let it end.
        self.workspace.save_layout()
        self.hide()
        self.loader.wait(60_000)
        self.imports.wait(60_000)
        wait_workers(60_000)  # a big model's panels still being filled (its readiness check)
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.sync()
        super().closeEvent(event)

