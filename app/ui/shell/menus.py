"""The main window's menu bar (File, Edit, View, Precision, Run, Help) and its Help dialogs.

`Menus` makes the actions (kept as `act_*` attributes: enabled as a model opens or closes) and connects each to the
feature that does it: the files, the project, the precision work, the run controller, the graph page, the
workspace, or one of the window's own commands (`WindowCommands`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow, QMenu, QMessageBox, QWidget

from app import __version__
from app.ui.common.resources import icon as load_icon
from app.ui.common.style import PRECISION_LABELS
from app.ui.graph.page import GraphPage
from app.ui.guided.flow import GuidedFlow
from app.ui.precision.colors import GraphColors
from app.ui.precision.plan_controller import PlanController
from app.ui.precision.plan_files import PlanFiles
from app.ui.precision.work import PrecisionWork
from app.ui.project.batch import BatchResults
from app.ui.project.controller import ProjectController
from app.ui.run.controller import RunController
from app.ui.run.imports import EngineImports
from app.ui.run.panel import RunPanel
from app.ui.shell.files import ModelFiles
from app.ui.shell.presentation import Presentation
from app.ui.shell.workspace import Workspace


class WindowCommands(Protocol):
    """The window's own commands the menus call."""

    def close_model(self) -> None: ...

    def reload(self) -> None: ...

    def open_find(self) -> None: ...

    def select_all(self) -> None: ...

    def reset_layout(self) -> None: ...

    def export_report(self) -> None: ...


class Menus:
    """Builds the menu bar of `window` and keeps its actions."""

    def __init__(self, window: QMainWindow, commands: WindowCommands, *, files: ModelFiles,
                 project: ProjectController, batch: BatchResults, precision: PrecisionWork, colors: GraphColors,
                 plan_files: PlanFiles, plan: PlanController, runs: RunController, run_panel: RunPanel,
                 graph_page: GraphPage, workspace: Workspace, presentation: Presentation, guided: GuidedFlow,
                 imports: EngineImports) -> None:
        self.w = window
        self.model_actions: list[QAction] = []  # usable only with a model open
        view = graph_page.view
        mb = window.menuBar()
        f = mb.addMenu("&File")
        self.act_open = self._action(f, "&Open Model…", files.open_dialog, QKeySequence.StandardKey.Open,
                                     icon="open")
        self._action(f, "Open &Demo Model", files.open_demo, "Ctrl+Shift+D")
        self.act_compare_model = self._action(
            f, "&Compare With Model…", files.compare_dialog, "Ctrl+Shift+K",
            tip="Another model beside this one, node by node: what changed, and where their answers start to differ")
        self._action(f, "Open &Project…", project.open_project_dialog, tip="Open a saved .trtlab project")
        self._action(f, "Open &Batch Results…", batch.open_dialog,
                     tip="Show a trtlab batch results folder as its matrix")
        self.recent_menu = f.addMenu("Open &Recent")
        self.act_reload = self._action(f, "Re&load", commands.reload, "F5", icon="reload")
        f.addSeparator()
        self.act_save_project = self._action(f, "&Save Project", project.save_project_action,
                                             QKeySequence.StandardKey.Save, tip="Save the model's whole workspace",
                                             icon="save")
        self.act_save_project_as = self._action(f, "Save Project &As…", project.save_project_as_dialog,
                                                "Ctrl+Shift+S")
        f.addSeparator()
        self.act_export_png = self._action(f, "Export Graph as &PNG…", files.export_png_dialog, "Ctrl+E",
                                           icon="export")
        self.act_export_svg = self._action(f, "Export Graph as &SVG…", files.export_svg_dialog, "Ctrl+Shift+E",
                                           icon="export")
        self.act_export_report = self._action(f, "Export &Report…", commands.export_report,
                                              tip="Write the results as one HTML report, plots included",
                                              icon="export")
        f.addSeparator()
        self.act_export_kit = self._action(
            f, "Export Run &Kit…", lambda: runs.open_kit_dialog(), "Ctrl+Alt+K", icon="export",
            tip="A folder that builds and runs this model's variant with trtexec on any GPU machine")
        self.act_import_trt = self._action(
            f, "&Import TensorRT Results…", imports.import_dialog, "Ctrl+Alt+I", icon="open",
            tip="A run kit's folder (or trtexec's files) brought back: the engine's layers on the graph")
        self.act_compare_trt = self._action(
            f, "Compare &With Another TensorRT Import…", imports.compare_dialog, "Ctrl+Alt+J", icon="open",
            tip="A second engine's folder compared with the import on show, ONNX node by ONNX node")
        f.addSeparator()
        self.act_close = self._action(f, "&Close Model", commands.close_model, QKeySequence.StandardKey.Close,
                                      icon="close")
        self._action(f, "&Quit", window.close, QKeySequence.StandardKey.Quit)
        e = mb.addMenu("&Edit")
        self.act_undo = plan.undo_stack.createUndoAction(window, "&Undo")
        self.act_undo.setShortcut(QKeySequence.StandardKey.Undo)
        self.act_redo = plan.undo_stack.createRedoAction(window, "&Redo")
        self.act_redo.setShortcuts([QKeySequence(QKeySequence.StandardKey.Redo), QKeySequence("Ctrl+Shift+Z")])
        e.addAction(self.act_undo)
        e.addAction(self.act_redo)
        e.addSeparator()
        self.act_find = self._action(e, "&Find…", commands.open_find, QKeySequence.StandardKey.Find, icon="find")
        self._action(e, "Find &Next", lambda: graph_page.search.next(), QKeySequence.StandardKey.FindNext)
        self._action(e, "Find &Previous", lambda: graph_page.search.previous(),
                     QKeySequence.StandardKey.FindPrevious)
        self._action(e, "Select &All Nodes", commands.select_all, QKeySequence.StandardKey.SelectAll)
        self._action(e, "&Clear Selection", lambda: view.selection.clear(), "Ctrl+Shift+A")
        v = mb.addMenu("&View")
        self._action(v, "Zoom &In", view.zoom_in, QKeySequence.StandardKey.ZoomIn, icon="zoom-in")
        self._action(v, "Zoom &Out", view.zoom_out, QKeySequence.StandardKey.ZoomOut, icon="zoom-out")
        self._action(v, "&Fit Graph", view.fit_all, "Ctrl+0",
                     tip="Fit the graph's width (a tall graph then scrolls from its top)", icon="fit")
        self._action(v, "Show &Whole Graph", view.fit_whole, "Shift+F", tip="All of the graph at once")
        self._action(v, "&Actual Size", view.zoom_actual, "Ctrl+1")
        self._action(v, "&Back to Enclosing Graph", graph_page.go_back, "Alt+Left")
        v.addSeparator()
        groups = v.addMenu("&Groups")
        self.act_grouped = self._action(
            groups, "&Group by Name Scope", lambda on: graph_page.set_grouped(on), "Alt+G", checkable=True,
            tip="Draw the graph by the groups in its node names (a transformer: its layers), or flat: every node")
        self.act_fold = self._action(
            groups, "&Fold Shape Arithmetic", lambda on: graph_page.set_folded(on), "Alt+S", checkable=True,
            tip="Draw the Shape/Gather/Concat chains that only compute a shape as a badge on the node they feed "
                "(click a badge to show them)")
        groups.addSeparator()
        self.act_expand_all = self._action(groups, "&Expand All", graph_page.expand_all, "Ctrl+Alt+E",
                                           tip="Open every group (the whole graph, laid out by groups)")
        self.act_collapse_all = self._action(groups, "&Collapse All", graph_page.collapse_all, "Ctrl+Alt+C",
                                             tip="Close every group: the top level only")
        self.depth_actions = [self._action(groups, f"Show {d} Level{'s' if d > 1 else ''}",
                                           lambda _=False, d=d: graph_page.collapse_to_depth(d),
                                           f"Ctrl+Alt+{d}", tip=f"Open the groups {d} level(s) deep, close the rest")
                              for d in (1, 2, 3, 4)]
        v.addSeparator()
        self.act_minimap = self._action(v, "&Minimap", lambda on: self._want(view.minimap, on), "Ctrl+M",
                                        checkable=True)
        self.act_legend = self._action(v, "&Legend", lambda on: self._want(view.legend, on), "Ctrl+L",
                                       checkable=True)
        self._show_overlays = view.show_overlays
        self.act_minimap.setChecked(True)
        self.act_legend.setChecked(True)
        self.act_presentation = self._action(
            v, "&Presentation", lambda: presentation.toggle(), "F11", checkable=True,
            tip="Larger text, only the graph and the results: for a projector (F11 or Ctrl+Shift+P toggles it)")
        self.act_presentation.setShortcuts([QKeySequence("F11"), QKeySequence("Ctrl+Shift+P")])
        presentation.activeChanged.connect(self.act_presentation.setChecked)
        v.addSeparator()
        panels = v.addMenu("&Panels")
        self.panel_actions = {}
        for k, dock in enumerate(workspace.docks):
            act = self._action(panels, dock.windowTitle(), lambda _=False, d=dock: workspace.show_dock(d),
                               f"Alt+Shift+{k + 1}", tip=f"Show the {dock.windowTitle()} panel")
            act.setIcon(dock.windowIcon())
            self.panel_actions[dock.objectName()] = act
        panels.addSeparator()
        self._action(panels, "&Reset Layout", commands.reset_layout, tip="Put every panel back where it starts")
        pm = mb.addMenu("&Precision")
        self.precision_actions = []
        for k, p in enumerate(("fp32", "fp16", "bf16", "int8")):
            act = self._action(pm, f"Set Selected Nodes to {PRECISION_LABELS[p]}",
                               lambda _=False, p=p: precision.set_selected_precision(p), f"Alt+{k + 1}")
            self.precision_actions.append(act)
        self.precision_actions.append(self._action(pm, "Selected Nodes Use the &Default",
                                                   lambda: precision.set_selected_precision(None), "Alt+0"))
        pm.addSeparator()
        color_menu = pm.addMenu("&Colour Graph By")
        for act in colors.color_actions.values():
            color_menu.addAction(act)
        pm.addSeparator()
        pm.addAction(precision.act_first_bad)
        pm.addAction(precision.act_worst)
        pm.addSeparator()
        self.act_save_plan = self._action(pm, "&Save Plan…", plan_files.save_plan_dialog, "Ctrl+Alt+S",
                                          icon="save")
        self.act_load_plan = self._action(pm, "&Load Plan…", plan_files.load_plan_dialog, "Ctrl+Shift+O",
                                          icon="open")
        self.act_save_variant = self._action(pm, "Save &Variant as ONNX…", plan_files.save_variant_dialog)
        self.act_fallback = self._action(pm, "&Find Fallback…", runs.start_fallback, "Ctrl+Shift+F",
                                         tip="Find a few nodes to keep in FP32 so the candidate meets the target",
                                         icon="fallback")
        pm.addSeparator()
        precision_dock = workspace.named("precision")
        self._action(pm, "Show Precision &Panel", lambda: workspace.show_dock(precision_dock), icon="precision")
        r = mb.addMenu("&Run")
        self.act_compare = self._action(r, "&Compare Outputs", lambda: run_panel.compare_button.click(), "Ctrl+R",
                                        icon="compare")
        self.act_bench = self._action(r, "&Benchmark", lambda: run_panel.bench_button.click(), "Ctrl+B",
                                      icon="benchmark")
        self.act_diagnose = self._action(r, "&Diagnose Layers", lambda: run_panel.diagnose_button.click(),
                                         "Ctrl+D", icon="diagnose")
        self.act_build = self._action(r, "Build &TensorRT Engine", lambda: runs.start_build(),
                                      "Ctrl+Shift+B", tip="Build the plan's variant into a TensorRT engine",
                                      icon="build")
        self.act_profile = self._action(r, "&Profile Nodes", lambda: runs.start_profile(), "Ctrl+Alt+P",
                                        icon="profile", tip="Time every node of the first ticked candidate against "
                                                            "the reference, and see where each ran")
        self.act_evaluate = self._action(
            r, "&Evaluate on Dataset…", lambda: runs.open_eval_dialog(), "Ctrl+Alt+D", icon="results",
            tip="Score FP32 and each precision on a labelled dataset (COCO, YOLO, class folders, masks, text lines)")
        self.act_sweep = self._action(
            r, "Benchmark S&weep…", lambda: runs.open_sweep_dialog(), "Ctrl+Alt+W", icon="benchmark",
            tip="Time each precision at several batch sizes: latency and throughput as the batch grows")
        self.act_tune = self._action(
            r, "T&une Runtime Settings…", lambda: runs.open_tune_dialog(), "Ctrl+Alt+U", icon="benchmark",
            tip="Try ONNX Runtime's own settings (CUDA graphs, NHWC, cuDNN search, threads) on one target and keep "
                "the fastest whose answers are unchanged")
        self._action(r, "Compare &Precisions Step by Step…", lambda: guided.begin(),
                     tip="FP16, BF16 and INT8 against FP32 in three steps, then a scorecard")
        self.act_cancel_all = self._action(r, "Cancel &All Jobs", lambda: runs.cancel_all(), "Ctrl+.",
                                           icon="cancel")
        h = mb.addMenu("&Help")
        self._action(h, "&Keyboard and Mouse", self.show_shortcuts, "F1")
        self._action(h, "&About trtlab", self.show_about)
        self.model_actions = [self.act_reload, self.act_export_png, self.act_export_svg, self.act_close,
                              self.act_find, self.act_compare, self.act_bench, self.act_diagnose, self.act_save_plan,
                              self.act_load_plan, self.act_save_variant, self.act_fallback, self.act_build,
                              self.act_profile, self.act_evaluate, self.act_export_kit, self.act_import_trt,
                              self.act_compare_trt,
                              self.act_sweep, self.act_tune, *self.precision_actions]
        self.set_model_open(False)

    def _action(self, menu: QMenu, text: str, slot: Callable,
                shortcut: QKeySequence | QKeySequence.StandardKey | str | None = None,
                checkable: bool = False, tip: str = "", icon: str = "") -> QAction:
        act = QAction(text, self.w)
        if icon:  # a name in resources/icons/
            act.setIcon(load_icon(icon))
        if shortcut is not None:
            act.setShortcut(QKeySequence(shortcut))
        act.setCheckable(checkable)
        if tip:
            act.setStatusTip(tip)
        act.triggered.connect(slot)
        menu.addAction(act)
        return act

    def _want(self, overlay: QWidget, on: bool) -> None:
        overlay.setProperty("wanted", on)
        self._show_overlays()

    def set_model_open(self, has: bool) -> None:
        for act in self.model_actions:
            act.setEnabled(has)

    def sync_groups(self, page: GraphPage) -> None:
        """View ▸ Groups says how the graph is drawn, and is usable where the graph has groups."""
        for act in (self.act_grouped, self.act_expand_all, self.act_collapse_all, *self.depth_actions):
            act.setEnabled(page.can_group)
        self.act_grouped.setChecked(page.grouped)
        self.act_fold.setEnabled(page.can_fold)
        self.act_fold.setChecked(page.folded)

    def show_recent(self, files: list[str], open_path: Callable[[str], None], clear: Callable[[], None]) -> None:
        from pathlib import Path

        self.recent_menu.clear()
        for f in files:
            act = self.recent_menu.addAction(Path(f).name)
            act.setStatusTip(f)
            act.setToolTip(f)
            act.triggered.connect(lambda _=False, f=f: open_path(f))
        if files:
            self.recent_menu.addSeparator()
            self.recent_menu.addAction("Clear Recent", clear)
        self.recent_menu.setEnabled(bool(files))

    # ----------------------------------------------------------------- help
    def show_shortcuts(self) -> None:
        QMessageBox.information(self.w, "Keyboard and mouse", SHORTCUTS_HTML)

    def show_about(self) -> None:
        QMessageBox.about(self.w, "About trtlab",
                          f"<b>trtlab {__version__}</b><br>ONNX graphs, precision variants, TensorRT and "
                          "ONNX Runtime comparisons.")


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
<tr><td><b>F11</b> / <b>Ctrl+Shift+P</b></td><td>Presentation mode: larger text, the graph and results only</td></tr>
<tr><td>Right-click, <b>Alt+1…4</b>, <b>Alt+0</b></td><td>Set the selected nodes to FP32 / FP16 / BF16 / INT8;
back to the default</td></tr>
<tr><td><b>Ctrl+Z</b> / <b>Ctrl+Shift+Z</b></td><td>Undo / redo plan edits</td></tr>
<tr><td><b>Ctrl+S</b> / <b>Ctrl+Shift+S</b></td><td>Save the project / save it as; <b>Ctrl+Alt+S</b> saves the plan
</td></tr>
<tr><td><b>Ctrl+Shift+1/2/3</b></td><td>Colour the graph by op type / planned precision / diagnosis error</td></tr>
<tr><td><b>Ctrl+D</b>, <b>Ctrl+Shift+N</b>, <b>Ctrl+Shift+W</b></td><td>Diagnose layers; go to the first NaN/Inf;
go to the worst layer</td></tr>
<tr><td><b>Ctrl+Shift+F</b></td><td>Find a fallback: nodes to keep in FP32 so the target is met</td></tr>
<tr><td><b>Ctrl+Shift+B</b>, <b>Ctrl+Shift+4</b></td><td>Build a TensorRT engine; colour the graph by the precision
that ran in it</td></tr>
<tr><td><b>Ctrl+Alt+K</b> / <b>Ctrl+Alt+I</b></td><td>Export a run kit for TensorRT on another machine / import
its results (the engine's layers on the graph)</td></tr>
<tr><td><b>Ctrl+Alt+J</b>, <b>Ctrl+Shift+7/8</b></td><td>Compare another imported engine with the one on show;
colour the graph by the engine layer each node was fused into / by each node's change of time (B against A)</td></tr>
<tr><td><b>Ctrl+Alt+D</b></td><td>Evaluate each precision on a labelled dataset (the Results' Dataset tab)
</td></tr>
<tr><td><b>Ctrl+Alt+W</b></td><td>Benchmark sweep: latency and throughput as the batch grows (the Results' Sweep tab)
</td></tr>
<tr><td><b>Ctrl+Alt+U</b></td><td>Tune ONNX Runtime's settings on one target (the Results' Tuning tab; "Use these
settings" for the Run panel)</td></tr>
<tr><td><b>Ctrl+Alt+P</b>, <b>Ctrl+Shift+5/6</b></td><td>Profile every node; colour the graph by node time / by where
each node ran (GPU, CPU, fell back)</td></tr>
</table>
"""
