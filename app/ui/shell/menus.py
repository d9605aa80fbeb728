"""The main window's menu bar (File, Edit, View, Precision, Run, Help) and its Help dialogs.
Mixed into `MainWindow`, whose slots the actions call."""

from __future__ import annotations

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QMessageBox

from app import __version__
from app.ui.common.resources import icon as load_icon
from app.ui.common.style import PRECISION_LABELS
from app.ui.results.batch_results import open_batch_dialog
from app.ui.results.report_export import export_report_dialog


class MenusMixin:
    """Builds the menus and their actions (kept as `act_*` attributes: enabled as a model opens or closes)."""

    def _action(self, menu: QMenu, text: str, slot: object, shortcut: QKeySequence | str | None = None,
                checkable: bool = False, tip: str = "", icon: str = "") -> QAction:
        act = QAction(text, self)
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

    def _build_menus(self) -> None:
        mb = self.menuBar()
        f = mb.addMenu("&File")
        self.act_open = self._action(f, "&Open Model…", self.open_dialog, QKeySequence.StandardKey.Open,
                                     icon="open")
        self._action(f, "Open &Demo Model", self.open_demo, "Ctrl+Shift+D")
        self.act_compare_model = self._action(f, "&Compare With Model…", self.compare_dialog, "Ctrl+Shift+K",
                                        tip="Another model beside this one, node by node: what changed, and where "
                                            "their answers start to differ")
        self._action(f, "Open &Project…", self.open_project_dialog, tip="Open a saved .trtlab project")
        self._action(f, "Open &Batch Results…", lambda: open_batch_dialog(self),
                     tip="Show a trtlab batch results folder as its matrix")
        self.recent_menu = f.addMenu("Open &Recent")
        self.act_reload = self._action(f, "Re&load", self.reload, "F5", icon="reload")
        f.addSeparator()
        self.act_save_project = self._action(f, "&Save Project", self.save_project_action,
                                             QKeySequence.StandardKey.Save, tip="Save the model's whole workspace",
                                             icon="save")
        self.act_save_project_as = self._action(f, "Save Project &As…", self.save_project_as_dialog, "Ctrl+Shift+S")
        f.addSeparator()
        self.act_export_png = self._action(f, "Export Graph as &PNG…", self.export_png_dialog, "Ctrl+E",
                                           icon="export")
        self.act_export_svg = self._action(f, "Export Graph as &SVG…", self.export_svg_dialog, "Ctrl+Shift+E",
                                           icon="export")
        self.act_export_report = self._action(f, "Export &Report…", lambda: export_report_dialog(self),
                                              tip="Write the results as one HTML report, plots included",
                                              icon="export")
        f.addSeparator()
        self.act_close = self._action(f, "&Close Model", self.close_model, QKeySequence.StandardKey.Close,
                                      icon="close")
        self._action(f, "&Quit", self.close, QKeySequence.StandardKey.Quit)
        e = mb.addMenu("&Edit")
        self.act_undo = self.plan.undo_stack.createUndoAction(self, "&Undo")
        self.act_undo.setShortcut(QKeySequence.StandardKey.Undo)
        self.act_redo = self.plan.undo_stack.createRedoAction(self, "&Redo")
        self.act_redo.setShortcuts([QKeySequence.StandardKey.Redo, QKeySequence("Ctrl+Shift+Z")])
        e.addAction(self.act_undo)
        e.addAction(self.act_redo)
        e.addSeparator()
        self.act_find = self._action(e, "&Find…", self.open_find, QKeySequence.StandardKey.Find,
                                     icon="find")
        self._action(e, "Find &Next", lambda: self.graph_page.search.next(), QKeySequence.StandardKey.FindNext)
        self._action(e, "Find &Previous", lambda: self.graph_page.search.previous(),
                     QKeySequence.StandardKey.FindPrevious)
        self._action(e, "Select &All Nodes", self._select_all, QKeySequence.StandardKey.SelectAll)
        self._action(e, "&Clear Selection", lambda: self.view.selection.clear(), "Ctrl+Shift+A")
        v = mb.addMenu("&View")
        self._action(v, "Zoom &In", self.view.zoom_in, QKeySequence.StandardKey.ZoomIn, icon="zoom-in")
        self._action(v, "Zoom &Out", self.view.zoom_out, QKeySequence.StandardKey.ZoomOut, icon="zoom-out")
        self._action(v, "&Fit Graph", self.view.fit_all, "Ctrl+0",
                     tip="Fit the graph's width (a tall graph then scrolls from its top)", icon="fit")
        self._action(v, "Show &Whole Graph", self.view.fit_whole, "Shift+F", tip="All of the graph at once")
        self._action(v, "&Actual Size", self.view.zoom_actual, "Ctrl+1")
        self._action(v, "&Back to Enclosing Graph", self.graph_page.go_back, "Alt+Left")
        v.addSeparator()
        groups = v.addMenu("&Groups")
        self.act_grouped = self._action(
            groups, "&Group by Name Scope", lambda on: self.graph_page.set_grouped(on), "Alt+G", checkable=True,
            tip="Draw the graph by the groups in its node names (a transformer: its layers), or flat: every node")
        self.act_fold = self._action(
            groups, "&Fold Shape Arithmetic", lambda on: self.graph_page.set_folded(on), "Alt+S", checkable=True,
            tip="Draw the Shape/Gather/Concat chains that only compute a shape as a badge on the node they feed "
                "(click a badge to show them)")
        groups.addSeparator()
        self.act_expand_all = self._action(groups, "&Expand All", self.graph_page.expand_all, "Ctrl+Alt+E",
                                           tip="Open every group (the whole graph, laid out by groups)")
        self.act_collapse_all = self._action(groups, "&Collapse All", self.graph_page.collapse_all, "Ctrl+Alt+C",
                                             tip="Close every group: the top level only")
        self.depth_actions = [self._action(groups, f"Show {d} Level{'s' if d > 1 else ''}",
                                           lambda _=False, d=d: self.graph_page.collapse_to_depth(d),
                                           f"Ctrl+Alt+{d}", tip=f"Open the groups {d} level(s) deep, close the rest")
                              for d in (1, 2, 3, 4)]
        v.addSeparator()
        self.act_minimap = self._action(v, "&Minimap", self._toggle_minimap, "Ctrl+M", checkable=True)
        self.act_legend = self._action(v, "&Legend", self._toggle_legend, "Ctrl+L", checkable=True)
        self.act_minimap.setChecked(True)
        self.act_legend.setChecked(True)
        self.act_presentation = self._action(
            v, "&Presentation", lambda: self.presentation.toggle(), "F11", checkable=True,
            tip="Larger text, only the graph and the results: for a projector (F11 or Ctrl+Shift+P toggles it)")
        self.act_presentation.setShortcuts([QKeySequence("F11"), QKeySequence("Ctrl+Shift+P")])
        v.addSeparator()
        panels = v.addMenu("&Panels")
        self.panel_actions = {}
        for k, dock in enumerate(self._model_docks()):
            act = self._action(panels, dock.windowTitle(), lambda _=False, d=dock: self.show_dock(d),
                               f"Alt+Shift+{k + 1}", tip=f"Show the {dock.windowTitle()} panel")
            act.setIcon(dock.windowIcon())
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
                                ("time", "Node &Time (Profile or Engine)", "Ctrl+Shift+5"),
                                ("device", "&Where Each Node Ran (Profile)", "Ctrl+Shift+6")):
            act = self._action(color_menu, text, lambda _=False, m=mode: self.set_color_mode(m), key, checkable=True)
            self.color_actions[mode] = act
        self.color_actions["op"].setChecked(True)
        pm.addSeparator()
        self.act_first_bad = self._action(pm, "Go to First &NaN/Inf", self.go_first_nonfinite, "Ctrl+Shift+N")
        self.act_worst = self._action(pm, "Go to &Worst Layer", self.go_worst, "Ctrl+Shift+W")
        pm.addSeparator()
        self.act_save_plan = self._action(pm, "&Save Plan…", self.save_plan_dialog, "Ctrl+Alt+S",
                                          icon="save")
        self.act_load_plan = self._action(pm, "&Load Plan…", self.load_plan_dialog, "Ctrl+Shift+O",
                                          icon="open")
        self.act_save_variant = self._action(pm, "Save &Variant as ONNX…", self.save_variant_dialog)
        self.act_fallback = self._action(pm, "&Find Fallback…", self.request_fallback, "Ctrl+Shift+F",
                                         tip="Find a few nodes to keep in FP32 so the candidate meets the target",
                                         icon="fallback")
        pm.addSeparator()
        self._action(pm, "Show Precision &Panel", lambda: self.show_dock(self.precision_dock), icon="precision")
        r = mb.addMenu("&Run")
        self.act_compare = self._action(r, "&Compare Outputs", lambda: self.run_panel.compare_button.click(), "Ctrl+R",
                                        icon="compare")
        self.act_bench = self._action(r, "&Benchmark", lambda: self.run_panel.bench_button.click(), "Ctrl+B",
                                      icon="benchmark")
        self.act_diagnose = self._action(r, "&Diagnose Layers", lambda: self.run_panel.diagnose_button.click(),
                                         "Ctrl+D", icon="diagnose")
        self.act_build = self._action(r, "Build &TensorRT Engine", lambda: self.run_controller.start_build(),
                                      "Ctrl+Shift+B", tip="Build the plan's variant into a TensorRT engine",
                                      icon="build")
        self.act_profile = self._action(r, "&Profile Nodes", lambda: self.run_controller.start_profile(), "Ctrl+Alt+P",
                                        icon="profile", tip="Time every node of the first ticked candidate against "
                                                            "the reference, and see where each ran")
        self._action(r, "Compare &Precisions Step by Step…", lambda: self.guided.begin(),
                     tip="FP16, BF16 and INT8 against FP32 in three steps, then a scorecard")
        self.act_cancel_all = self._action(r, "Cancel &All Jobs", lambda: self.run_controller.cancel_all(), "Ctrl+.",
                                           icon="cancel")
        h = mb.addMenu("&Help")
        self._action(h, "&Keyboard and Mouse", self.show_shortcuts, "F1")
        self._action(h, "&About trtlab", self.show_about)
        self._update_actions()

    # ----------------------------------------------------------------- help
    def show_shortcuts(self) -> None:
        QMessageBox.information(self, "Keyboard and mouse", SHORTCUTS_HTML)

    def show_about(self) -> None:
        QMessageBox.about(self, "About trtlab",
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
<tr><td><b>Ctrl+Alt+P</b>, <b>Ctrl+Shift+5/6</b></td><td>Profile every node; colour the graph by node time / by where
each node ran (GPU, CPU, fell back)</td></tr>
</table>
"""
