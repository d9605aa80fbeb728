"""The precision plan's work in the window: plan edits from the graph and the table, plan files, the diagnosis,
the fallback, a TensorRT build's result and a profile, and what the graph is coloured by. A controller
the window assembles: it owns this state and reaches the window through `PrecisionHost`."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QObject, QPoint, Qt, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMenu

from app.core import errors
from app.ui.common.style import PRECISION_LABELS
from app.ui.graph.node_colors import engine_colors, error_colors, node_time_shares, precision_colors, time_colors
from app.ui.precision.host import COLOR_MODES, PrecisionHost
from app.ui.precision.panel import fill_precision_menu, node_errors

log = logging.getLogger(__name__)

class PrecisionWork(QObject):
    """The precision plan's work in the window, and the graph's colours and badges.

    It owns what it shows: the diagnosis, the engine, the colour mode and the actions that
    depend on them (`color_actions`, `act_first_bad`, `act_worst`). It asks the run controller for jobs by
    signal (`fallbackRequested`, `variantRequested`) and never reads the window's private members."""

    fallbackRequested = Signal()
    variantRequested = Signal(str)   # the file the plan's variant is saved to

    def __init__(self, host: PrecisionHost) -> None:
        super().__init__(host.window())
        self.w = host
        self.color_mode = "op"
        self.diagnosis: dict | None = None
        self.engine: dict | None = None
        parent = host.window()
        self.color_actions: dict[str, QAction] = {}
        for mode, text, key in COLOR_MODES:
            act = QAction(text, parent)
            act.setShortcut(QKeySequence(key))
            act.setCheckable(True)
            act.triggered.connect(lambda _=False, m=mode: self.set_color_mode(m))
            self.color_actions[mode] = act
        self.color_actions["op"].setChecked(True)
        self.act_first_bad = QAction("Go to First &NaN/Inf", parent)
        self.act_first_bad.setShortcut(QKeySequence("Ctrl+Shift+N"))
        self.act_first_bad.triggered.connect(self.go_first_nonfinite)
        self.act_worst = QAction("Go to &Worst Layer", parent)
        self.act_worst.setShortcut(QKeySequence("Ctrl+Shift+W"))
        self.act_worst.triggered.connect(self.go_worst)
        self._sync_diagnosis_actions()

        host.plan.changed.connect(self._on_plan_changed)
        host.view.contextMenuRequested.connect(self._graph_menu)
        panel = host.precision_panel
        panel.nodeActivated.connect(self._show_onnx_node)
        panel.goFirstNonfinite.connect(self.go_first_nonfinite)
        panel.goWorst.connect(self.go_worst)
        panel.save_button.clicked.connect(self.save_plan_dialog)
        panel.load_button.clicked.connect(self.load_plan_dialog)
        panel.fallbackRequested.connect(self.fallbackRequested)
        panel.applyFallback.connect(self.apply_fallback)
        host.engine_panel.nodeActivated.connect(self.show_key)
        host.engine_panel.saveRequested.connect(self.save_engine_dialog)
        host.readiness_panel.nodeActivated.connect(self.show_key)
        host.profile_panel.nodeActivated.connect(self.show_key)
        host.profile_panel.shownChanged.connect(self.apply_colors)

    def _sync_diagnosis_actions(self) -> None:
        self.act_first_bad.setEnabled(bool(self.diagnosis and self.diagnosis.get("first_nonfinite")))
        self.act_worst.setEnabled(bool(self.diagnosis and self.diagnosis.get("worst")))

    def model_opened(self, same: bool) -> None:
        """A model was opened (`same`: the same file again, or new input shapes): another model's results go."""
        if not same:
            self.set_diagnosis(None)
            self.w.precision_panel.show_fallback(None)
            self.set_engine(None)
            self.set_profile(None)

    def model_closed(self) -> None:
        self.set_engine(None)
        self.set_profile(None)
        self.set_diagnosis(None)
        self.w.precision_panel.show_fallback(None)

    def graph_changed(self) -> None:
        """The drawing changed (another level, groups opened or closed): its colours again."""
        self.apply_colors()

    def show_fallback(self, doc: dict) -> None:
        self.w.precision_panel.show_fallback(doc)
        self.w.precision_dock.show()
        self.w.precision_dock.raise_()

    def show_layer_times(self, target: str, times: dict) -> None:
        """A benchmark's per-layer times: shown where they are the engine on show's (same model and target)."""
        if (self.engine or {}).get("target") == target:
            self.w.engine_panel.set_times(times)
            self.set_color_mode("time")

    # ----------------------------------------------------------------- precision plan
    def _at_root(self) -> bool:
        return len(self.w.graph_page.levels) == 1

    def selected_node_keys(self) -> list[str]:
        """Plan keys of what the user points at: the table's rows when it has focus, else the graph's nodes."""
        if self.w.precision_panel.table.hasFocus():
            return self.w.precision_panel.selected_keys()
        pic = self.w.graph_page.picture
        if pic is None or not self._at_root():
            return []
        g = pic.graph  # a group box stands for every node inside it
        indices = sorted({m for n in self.w.view.selection.selected for m in g.onnx_nodes(n)})
        return [k for m in indices if (k := self.w.plan.key_of(m)) is not None]

    def set_selected_precision(self, precision: str | None) -> None:
        keys = self.selected_node_keys()
        if not keys:
            self.w.status_label.setText("Select nodes in the graph (or rows in the Precision table) first."
                                      if self._at_root() else "Precision is planned on the main graph: go back "
                                      "(Alt+Left) to set it.")
            return
        self.w.plan.set_nodes(keys, precision)
        if self.color_mode == "op":
            self.set_color_mode("precision")
        what = PRECISION_LABELS[precision] if precision else "the default precision"
        chosen = set(keys)
        # The plan records the wish; say at once where the variant will not follow it, and why.
        other = [r for r in self.w.plan.rows if r.key in chosen and r.differs]
        note = (f"; {len(other):,} of them run{'s' if len(other) == 1 else ''} {other[0].precision.upper()}: "
                f"{other[0].reason}" if other else "")
        self.w.status_label.setText(f"{len(keys):,} node{'s' if len(keys) != 1 else ''} set to {what}{note} "
                                  "(Ctrl+Z undoes)")

    def _graph_menu(self, node: int | None, pos: QPoint) -> None:
        pic = self.w.graph_page.picture
        if pic is None:
            return
        menu = QMenu(self.w.window())
        keys = self.selected_node_keys()
        if keys and self._at_root():
            nodes = self.w.view.selection.selected
            ops = sorted({pic.graph.graph.node[m].op_type for n in nodes for m in pic.graph.onnx_nodes(n)})
            fill_precision_menu(menu, self.w.plan, keys, ops)
            if self.color_mode == "op":
                menu.triggered.connect(lambda _a: self.set_color_mode("precision"))
            menu.addSeparator()
            if node is not None and pic.graph.onnx_index[node] >= 0:
                menu.addAction("Show in Precision Table",
                               lambda: self._show_in_table(int(pic.graph.onnx_index[node])))
        elif not self._at_root():
            menu.addAction("Precision is planned on the main graph").setEnabled(False)
        menu.addAction(self.act_first_bad)
        menu.addAction(self.act_worst)
        menu.exec(pos)

    def _show_in_table(self, onnx_index: int) -> None:
        self.w.precision_dock.show()
        self.w.precision_dock.raise_()
        self.w.precision_panel.select_node(onnx_index)

    def _show_onnx_node(self, onnx_index: int) -> None:
        """Show an ONNX node of the main graph in the canvas, going back up from a subgraph if needed."""
        while len(self.w.graph_page.levels) > 1:
            self.w.graph_page.go_back()
        pic = self.w.graph_page.picture
        flat = pic.all_nodes.node_of_onnx(onnx_index) if pic is not None else None
        node = self.w.graph_page.reveal(flat) if flat is not None else None  # the groups around it open
        if node is not None:
            self.w.view.center_on_node(node)

    def _on_plan_changed(self) -> None:
        self.apply_colors()

    def set_color_mode(self, mode: str) -> None:
        if mode == "error" and not self.diagnosis:
            self.w.status_label.setText("No diagnosis yet: Run ▸ Diagnose Layers (Ctrl+D) measures each layer.")
            mode = self.color_mode
        if mode == "time" and not (self.engine and self.w.engine_panel.times) and not self.w.profile_panel.has(mode):
            self.w.status_label.setText("No node times yet: Run ▸ Profile Nodes (Ctrl+Alt+P) times every node.")
            mode = self.color_mode
        if mode == "device" and not self.w.profile_panel.has(mode):
            self.w.status_label.setText("No profile yet: Run ▸ Profile Nodes (Ctrl+Alt+P) shows where each node ran.")
            mode = self.color_mode
        if mode == "engine" and not (self.engine and self.engine.get("ran")):
            self.w.status_label.setText("No engine yet: Run ▸ Build TensorRT Engine (Ctrl+Shift+B) builds one.")
            mode = self.color_mode
        self.color_mode = mode
        for m, act in self.color_actions.items():
            act.setChecked(m == mode)
        self.apply_colors()

    def _time_source(self) -> str | None:
        """Where the "time" colours come from: the newer of a profile and an engine's layer times."""
        engine = bool(self.engine and self.w.engine_panel.times)
        profile = self.w.profile_panel.has("time")
        if engine and profile:
            return "engine" if self.w.engine_panel.times_at > self.w.profile_panel.doc_at else "profile"
        return "engine" if engine else "profile" if profile else None

    def apply_colors(self) -> None:
        pic = self.w.graph_page.picture
        item = self.w.view.item
        if pic is None or item is None:
            return
        mode = self.color_mode if self._at_root() else "op"
        mix: dict = {}    # group boxes: their nodes' colours by share
        notes: dict = {}  # and a line of words (worst error, share of the time)
        if mode == "precision" and self.w.plan.rows:
            # What the variant runs (kept nodes in FP32), counted as the Precision table and its summary count.
            colors, legend = precision_colors(pic.graph, [r.precision for r in self.w.plan.rows], self.w.plan.counts(),
                                              self._legend_label, mix)
            item.set_node_fill(colors, mix)
            self.w.view.legend.set_entries("Planned precision", legend)
        elif mode == "error" and self.diagnosis:
            errs = node_errors(self.diagnosis.get("layers", []))
            by_index = {r.index: (errs[r.key].cosine, errs[r.key].nonfinite > 0) for r in self.w.plan.rows
                        if r.key in errs}
            colors, legend = error_colors(pic.graph, by_index, mix, notes)
            item.set_node_fill(colors, mix, notes)
            self.w.view.legend.set_entries(f"Error of {self.diagnosis.get('candidate', '')}", legend)
        elif mode == "device" and self.w.profile_panel.has(mode) or mode == "time" and self._time_source() == "profile":
            colors, legend, title = self.w.profile_panel.colors(mode, pic.graph, [r.key for r in self.w.plan.rows], mix,
                                                              notes)
            item.set_node_fill(colors, mix, notes)
            self.w.view.legend.set_entries(title, legend)
        elif mode == "time" and self.engine and self._time_source() == "engine":  # "engine" implies self.engine
            shares = node_time_shares(self.engine.get("layers", []), self.w.engine_panel.times)
            colors, legend = time_colors(pic.graph, [shares.get(r.key) for r in self.w.plan.rows], notes=notes)
            item.set_node_fill(colors, None, notes)
            self.w.view.legend.set_entries("Share of the engine's time", legend)
        elif mode == "engine" and self.engine and self.engine.get("ran"):
            ran = self.engine["ran"]
            colors, legend = engine_colors(pic.graph, [ran.get(r.key) for r in self.w.plan.rows], mix)
            item.set_node_fill(colors, mix)
            self.w.view.legend.set_entries("Ran in the engine", legend)
        else:
            if item.node_fill is not None:
                item.set_node_fill(None)
            self.w.view.legend.set_graph(pic.graph)
        self.w.view.minimap.update()
        self.w.view.show_overlays()

    def _legend_label(self, precision: str) -> str:
        return "fixed (cannot change)" if precision == "fixed" else self.w.plan.count_label(precision)

    def set_diagnosis(self, doc: dict | None) -> None:
        """Show a diagnosis: errors in the table, the graph coloured by them."""
        self.diagnosis = doc or None
        self.w.precision_panel.set_diagnosis(self.diagnosis)
        if self.diagnosis:
            self.w.precision_dock.show()
            self.w.precision_dock.raise_()
            if self.w.precision_dock.height() < self.w.height() * 0.3:
                self.w.resizeDocks([self.w.precision_dock], [int(self.w.height() * 0.35)], Qt.Orientation.Vertical)
            self.set_color_mode("error")
        elif self.color_mode == "error":
            self.set_color_mode("precision" if not self.w.plan.is_trivial() else "op")
        self._sync_diagnosis_actions()

    def _go_to_key(self, key: str | None, what: str) -> None:
        row = next((r for r in self.w.plan.rows if r.key == key), None) if key else None
        if row is None:
            self.w.status_label.setText(f"No {what} in the diagnosis.")
            return
        self._show_onnx_node(row.index)
        self.w.precision_panel.select_node(row.index)
        self.w.status_label.setText(f"{what.capitalize()}: {key}")

    def go_first_nonfinite(self) -> None:
        self._go_to_key((self.diagnosis or {}).get("first_nonfinite"), "first NaN/Inf")

    def go_worst(self) -> None:
        self._go_to_key((self.diagnosis or {}).get("worst"), "worst layer")

    def set_profile(self, doc: dict | None) -> None:
        """Show a profile: its nodes in the Profile dock, the graph coloured by where they ran when some fell back to
        the CPU, else by their time."""
        self.w.profile_panel.set_profile(doc)
        if doc:
            self.w.profile_dock.show()
            self.w.profile_dock.raise_()
            if self.w.profile_dock.height() < self.w.height() * 0.35:  # the reasons and a dozen rows in sight
                self.w.resizeDocks([self.w.profile_dock], [int(self.w.height() * 0.42)], Qt.Orientation.Vertical)
            self.set_color_mode("device" if doc.get("fallback_nodes") else "time")
        elif self.color_mode in ("time", "device") and not (self.engine and self.w.engine_panel.times):
            self.set_color_mode("op")

    def set_engine(self, doc: dict | None) -> None:
        """Show a TensorRT build: its layers in the Engine dock, the graph coloured by what ran."""
        self.engine = doc or None
        self.w.engine_panel.set_build(self.engine)
        if self.engine and not self.engine.get("ok", True):
            self.w.engine_dock.show()
            self.w.engine_dock.raise_()
            bad = [e for e in self.engine.get("parse_errors", []) if e.get("node")]
            self.w.banner.show_message("TensorRT cannot parse this graph",
                                     f"{len(self.engine.get('parse_errors', []))} parser error(s)"
                                     + (f", first at node {bad[0]['node']}: {bad[0]['message']}" if bad else "."),
                                     bad[0]["fix"] if bad else "See the Engine panel.")
            rows = {r.key: r.index for r in self.w.plan.rows}
            in_model = [e for e in bad if e["node"] in rows]  # a node only the variant has (a Cast, Q/DQ) is not drawn
            pic = self.w.graph_page.picture
            found = [pic.graph.node_of_onnx(rows[e["node"]]) for e in in_model] if pic else []
            nodes = [n for n in found if n is not None]
            if nodes:
                self._show_onnx_node(rows[in_model[0]["node"]])
                self.w.view.selection.set(nodes, nodes[0])
        elif self.engine:
            self.w.engine_dock.show()
            self.w.engine_dock.raise_()
            if self.engine.get("ran"):
                self.set_color_mode("engine")
            warn = [m for m in self.engine.get("mismatches", []) if m.get("severity") == "warning"]
            if warn:
                self.w.banner.show_message("The engine did not run as planned",
                                         f"{len(warn)} node(s) ran in another precision than the plan asked, e.g. "
                                         f"{warn[0]['message']}", "The Engine panel lists them.", level="warning")
        elif self.color_mode == "engine":
            self.set_color_mode("op")

    def show_key(self, key: str) -> None:
        row = next((r for r in self.w.plan.rows if r.key == key), None)
        if row is not None:
            self._show_onnx_node(row.index)

    def save_engine_dialog(self) -> None:
        if not self.engine or not self.engine.get("engine"):
            return
        start = str(Path(self._plan_dir()) / f"{Path(self.engine['model']).stem}.engine")
        path, _ = QFileDialog.getSaveFileName(self.w.window(), "Save TensorRT engine", start,
                                              "TensorRT engines (*.engine *.plan)")
        if path:
            self.save_engine(Path(path))

    def save_engine(self, path: Path) -> bool:
        import shutil

        from app.core.fileio import atomic_write_bytes

        assert self.engine is not None, "save_engine needs a built engine"  # as save_engine_dialog checks
        src = Path(self.engine["engine"])
        try:
            atomic_write_bytes(path, src.read_bytes())
            shutil.copyfile(src.with_name(src.name + ".json"), path.with_name(path.name + ".json"))
        except OSError as exc:
            self.w.show_error(errors.TrtlabError(f"Could not save the engine to '{path}': {exc.strerror or exc}.",
                                               fix="Choose a folder you can write to."))
            return False
        self.w.status_label.setText(f"Engine saved to {path} (with its build facts in {path.name}.json)")
        return True

    def apply_fallback(self, doc: dict) -> None:
        """Make a fallback result the plan (one undo step)."""
        from app.core.precision import PrecisionPlan

        if not doc.get("plan"):
            return
        keep = list(doc.get("keep_high_precision", []))
        if str(doc.get("candidate", "")).endswith(":plan"):
            # The search ran the plan: add its nodes to the plan as it is now (edits made meanwhile stay).
            self.w.plan.set_nodes(keep, "fp32")
        else:
            self.w.plan.load(PrecisionPlan.from_json(doc["plan"]), "fallback result")
        if self.color_mode == "op":
            self.set_color_mode("precision")
        n = len(doc.get("keep_high_precision", []))
        self.w.status_label.setText(f"Plan updated: {n} node{'s' if n != 1 else ''} kept in FP32 (Ctrl+Z undoes). "
                                  "Run ▸ Compare checks it.")

    def _plan_dir(self) -> str:
        here = self.w.opened.path.parent if self.w.opened else Path.home()
        return str(self.w.settings.value("paths/plan_dir", str(here)))

    def save_plan_dialog(self) -> None:
        if self.w.opened is None:
            return
        start = str(Path(self._plan_dir()) / f"{self.w.opened.path.stem}.plan.json")
        path, _ = QFileDialog.getSaveFileName(self.w.window(), "Save precision plan", start, "Precision plans (*.json)")
        if path:
            self.save_plan(Path(path))

    def save_plan(self, path: Path) -> bool:
        try:
            self.w.plan.plan.model_name = self.w.opened.path.name if self.w.opened else ""
            self.w.plan.plan.save(path)
        except OSError as exc:
            self.w.show_error(errors.TrtlabError(f"Could not save the plan to '{path}': {exc.strerror or exc}.",
                                               fix="Choose a folder you can write to."))
            return False
        self.w.plan.undo_stack.setClean()
        self.w.settings.setValue("paths/plan_dir", str(path.parent))
        self.w.status_label.setText(f"Plan saved to {path} (use it with trtlab run/compare/bench --plan)")
        return True

    def load_plan_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.w.window(), "Load precision plan", self._plan_dir(),
                                              "Precision plans (*.json);;All files (*)")
        if path:
            self.load_plan(Path(path))

    def load_plan(self, path: Path) -> bool:
        from app.core.precision import PrecisionPlan

        try:
            plan = PrecisionPlan.load(path)
        except errors.TrtlabError as exc:
            self.w.show_error(exc)
            return False
        unknown = plan.unknown_keys(self.w.plan.graph) if self.w.plan.graph is not None else []
        self.w.plan.load(plan, path.name)
        self.w.settings.setValue("paths/plan_dir", str(path.parent))
        if unknown:
            self.w.banner.show_message("Plan loaded with warnings",
                                     f"{len(unknown)} node(s) in the plan are not in this model (e.g. "
                                     f"'{unknown[0]}'); they are ignored.",
                                     "Was the plan made for another model? Ctrl+Z undoes the load.", level="warning")
        if self.color_mode == "op":
            self.set_color_mode("precision")
        self.w.status_label.setText(f"Loaded plan {path.name}: {self.w.plan.summary()}")
        return True

    def save_variant_dialog(self) -> None:
        if self.w.opened is None:
            return
        start = str(Path(self._plan_dir()) / f"{self.w.opened.path.stem}.variant.onnx")
        path, _ = QFileDialog.getSaveFileName(self.w.window(), "Save variant as ONNX", start, "ONNX models (*.onnx)")
        if not path:
            return
        if not path.lower().endswith(".onnx"):
            path += ".onnx"
        if Path(path).resolve() == self.w.opened.path.resolve():
            self.w.show_error(errors.TrtlabError("The variant would replace the model it is made from.",
                                               fix="Choose another file name."))
            return
        self.variantRequested.emit(path)
