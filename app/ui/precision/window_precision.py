"""The main window's precision work, kept apart from opening, viewing and exporting models: plan edits from
the graph and the table, plan files and autosave, graph colour modes, diagnosis, fallback, readiness,
TensorRT engine results. Mixed into `MainWindow`, whose widgets and controllers it uses."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog, QMenu

from app.core import errors
from app.ui.common.style import PRECISION_LABELS
from app.ui.graph.node_colors import engine_colors, error_colors, node_time_shares, precision_colors, time_colors
from app.ui.model.readiness_panel import SEVERITY_COLORS
from app.ui.precision.panel import fill_precision_menu, node_errors

log = logging.getLogger(__name__)


class PrecisionWindowMixin:
    """Precision-plan, diagnosis, fallback, readiness and engine behaviour of the main window."""

    # ----------------------------------------------------------------- precision plan
    def _at_root(self) -> bool:
        return len(self.graph_page.levels) == 1

    def selected_node_keys(self) -> list[str]:
        """Plan keys of what the user points at: the table's rows when it has focus, else the graph's nodes."""
        if self.precision_panel.table.hasFocus():
            return self.precision_panel.selected_keys()
        pic = self.graph_page.picture
        if pic is None or not self._at_root():
            return []
        g = pic.graph  # a group box stands for every node inside it
        indices = sorted({m for n in self.view.selection.selected for m in g.onnx_nodes(n)})
        return [k for m in indices if (k := self.plan.key_of(m)) is not None]

    def set_selected_precision(self, precision: str | None) -> None:
        keys = self.selected_node_keys()
        if not keys:
            self.status_label.setText("Select nodes in the graph (or rows in the Precision table) first."
                                      if self._at_root() else "Precision is planned on the main graph: go back "
                                      "(Alt+Left) to set it.")
            return
        self.plan.set_nodes(keys, precision)
        if self.color_mode == "op":
            self.set_color_mode("precision")
        what = PRECISION_LABELS[precision] if precision else "the default precision"
        chosen = set(keys)
        # The plan records the wish; say at once where the variant will not follow it, and why.
        other = [r for r in self.plan.rows if r.key in chosen and r.differs]
        note = (f"; {len(other):,} of them run{'s' if len(other) == 1 else ''} {other[0].precision.upper()}: "
                f"{other[0].reason}" if other else "")
        self.status_label.setText(f"{len(keys):,} node{'s' if len(keys) != 1 else ''} set to {what}{note} "
                                  "(Ctrl+Z undoes)")

    def _graph_menu(self, node: int | None, pos: object) -> None:
        pic = self.graph_page.picture
        if pic is None:
            return
        menu = QMenu(self)
        keys = self.selected_node_keys()
        if keys and self._at_root():
            nodes = self.view.selection.selected
            ops = sorted({pic.graph.graph.node[m].op_type for n in nodes for m in pic.graph.onnx_nodes(n)})
            fill_precision_menu(menu, self.plan, keys, ops)
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
        self.precision_dock.show()
        self.precision_dock.raise_()
        self.precision_panel.select_node(onnx_index)

    def _show_onnx_node(self, onnx_index: int) -> None:
        """Show an ONNX node of the main graph in the canvas, going back up from a subgraph if needed."""
        while len(self.graph_page.levels) > 1:
            self.graph_page.go_back()
        pic = self.graph_page.picture
        flat = pic.all_nodes.node_of_onnx(onnx_index) if pic is not None else None
        node = self.graph_page.reveal(flat) if flat is not None else None  # the groups around it open
        if node is not None:
            self.view.center_on_node(node)

    def _autosave_path(self, model_path: Path) -> Path:
        import hashlib

        digest = hashlib.sha1(str(model_path.resolve()).encode()).hexdigest()[:16]
        return Path(self.settings.fileName()).parent / "plans" / f"{model_path.stem}-{digest}.json"

    def _autosave_plan(self) -> None:
        """Every plan edit is written at once, so a crash or a closed window loses nothing."""
        if self.opened is None or self.plan.graph is None:
            return
        path = self._autosave_path(self.opened.path)
        try:
            if self.plan.undo_stack.count() == 0:
                return  # nothing edited in this session (a freshly opened model must not wipe the saved edits)
            self.plan.plan.model_name = self.opened.path.name
            self.plan.plan.save(path)
        except OSError as exc:
            log.warning("could not autosave the plan to %s: %s", path, exc)

    def _restore_autosaved_plan(self, model_path: Path) -> None:
        from app.core.precision import PlanError, PrecisionPlan

        path = self._autosave_path(model_path)
        if not path.exists():
            return
        try:
            plan = PrecisionPlan.load(path)
        except PlanError as exc:
            log.warning("ignoring a damaged autosaved plan %s: %s", path, exc.message)
            return
        if plan.to_json() == PrecisionPlan(model_name=plan.model_name).to_json():
            return
        self.plan.load(plan, "the plan you were editing")
        if self.color_mode == "op":
            self.set_color_mode("precision")
        self.status_label.setText(f"Restored the precision plan you were editing ({self.plan.summary()}); "
                                  "Ctrl+Z discards it.")

    def _on_plan_changed(self) -> None:
        self._autosave_plan()
        self._apply_colors()
        if self.opened is not None:
            self._readiness_timer.start()
        if self.opened is not None:
            self.setWindowTitle(f"{self.opened.path.name}{' •' if self.plan.dirty else ''} — trtlab")

    def set_color_mode(self, mode: str) -> None:
        if mode == "error" and not self.diagnosis:
            self.status_label.setText("No diagnosis yet: Run ▸ Diagnose Layers (Ctrl+D) measures each layer.")
            mode = self.color_mode
        if mode == "time" and not (self.engine and self.engine_panel.times) and not self.profile_panel.has(mode):
            self.status_label.setText("No node times yet: Run ▸ Profile Nodes (Ctrl+Alt+P) times every node.")
            mode = self.color_mode
        if mode == "device" and not self.profile_panel.has(mode):
            self.status_label.setText("No profile yet: Run ▸ Profile Nodes (Ctrl+Alt+P) shows where each node ran.")
            mode = self.color_mode
        if mode == "engine" and not (self.engine and self.engine.get("ran")):
            self.status_label.setText("No engine yet: Run ▸ Build TensorRT Engine (Ctrl+Shift+B) builds one.")
            mode = self.color_mode
        self.color_mode = mode
        for m, act in self.color_actions.items():
            act.setChecked(m == mode)
        self._apply_colors()

    def _time_source(self) -> str | None:
        """Where the "time" colours come from: the newer of a profile and an engine's layer times."""
        engine = bool(self.engine and self.engine_panel.times)
        profile = self.profile_panel.has("time")
        if engine and profile:
            return "engine" if self.engine_panel.times_at > self.profile_panel.doc_at else "profile"
        return "engine" if engine else "profile" if profile else None

    def _apply_colors(self) -> None:
        pic = self.graph_page.picture
        item = self.view.item
        if pic is None or item is None:
            return
        mode = self.color_mode if self._at_root() else "op"
        mix: dict = {}    # group boxes: their nodes' colours by share
        notes: dict = {}  # and a line of words (worst error, share of the time)
        if mode == "precision" and self.plan.rows:
            # What the variant runs (kept nodes in FP32), counted as the Precision table and its summary count.
            colors, legend = precision_colors(pic.graph, [r.precision for r in self.plan.rows], self.plan.counts(),
                                              self._legend_label, mix)
            item.set_node_fill(colors, mix)
            self.view.legend.set_entries("Planned precision", legend)
        elif mode == "error" and self.diagnosis:
            errs = node_errors(self.diagnosis.get("layers", []))
            by_index = {r.index: (errs[r.key].cosine, errs[r.key].nonfinite > 0) for r in self.plan.rows
                        if r.key in errs}
            colors, legend = error_colors(pic.graph, by_index, mix, notes)
            item.set_node_fill(colors, mix, notes)
            self.view.legend.set_entries(f"Error of {self.diagnosis.get('candidate', '')}", legend)
        elif mode == "device" and self.profile_panel.has(mode) or mode == "time" and self._time_source() == "profile":
            colors, legend, title = self.profile_panel.colors(mode, pic.graph, [r.key for r in self.plan.rows], mix,
                                                              notes)
            item.set_node_fill(colors, mix, notes)
            self.view.legend.set_entries(title, legend)
        elif mode == "time" and self._time_source() == "engine":
            shares = node_time_shares(self.engine.get("layers", []), self.engine_panel.times)
            colors, legend = time_colors(pic.graph, [shares.get(r.key) for r in self.plan.rows], notes=notes)
            item.set_node_fill(colors, None, notes)
            self.view.legend.set_entries("Share of the engine's time", legend)
        elif mode == "engine" and self.engine and self.engine.get("ran"):
            ran = self.engine["ran"]
            colors, legend = engine_colors(pic.graph, [ran.get(r.key) for r in self.plan.rows], mix)
            item.set_node_fill(colors, mix)
            self.view.legend.set_entries("Ran in the engine", legend)
        else:
            if item.node_fill is not None:
                item.set_node_fill(None)
            self.view.legend.set_graph(pic.graph)
        self.view.minimap.update()
        self._apply_overlay_visibility()

    def _legend_label(self, precision: str) -> str:
        return "fixed (cannot change)" if precision == "fixed" else self.plan.count_label(precision)

    def set_diagnosis(self, doc: dict | None) -> None:
        """Show a diagnosis: errors in the table, the graph coloured by them."""
        self.diagnosis = doc or None
        self.precision_panel.set_diagnosis(self.diagnosis)
        if self.diagnosis:
            self.precision_dock.show()
            self.precision_dock.raise_()
            if self.precision_dock.height() < self.height() * 0.3:
                self.resizeDocks([self.precision_dock], [int(self.height() * 0.35)], Qt.Orientation.Vertical)
            self.set_color_mode("error")
        elif self.color_mode == "error":
            self.set_color_mode("precision" if not self.plan.is_trivial() else "op")
        self._update_actions()

    def _go_to_key(self, key: str | None, what: str) -> None:
        row = next((r for r in self.plan.rows if r.key == key), None) if key else None
        if row is None:
            self.status_label.setText(f"No {what} in the diagnosis.")
            return
        self._show_onnx_node(row.index)
        self.precision_panel.select_node(row.index)
        self.status_label.setText(f"{what.capitalize()}: {key}")

    def go_first_nonfinite(self) -> None:
        self._go_to_key((self.diagnosis or {}).get("first_nonfinite"), "first NaN/Inf")

    def go_worst(self) -> None:
        self._go_to_key((self.diagnosis or {}).get("worst"), "worst layer")

    def run_readiness(self, trt_version: str | None = None) -> object | None:
        """Check the model (and the plan) for what would break a TensorRT build; badges on the graph.
        `trt_version` overrides the Readiness panel's choice (a build checks against the TensorRT it uses)."""
        from app.core.readiness import ScanCache, check_model

        self._readiness_timer.stop()
        if self.opened is None:
            return None
        if self._readiness_cache is None:
            self._readiness_cache = ScanCache()
        plan = None if self.plan.is_trivial() and not self.plan.plan.overrides else self.plan.plan
        profile = None
        if self.run_panel.profile_args():
            from app.core.engine import parse_profile_args

            try:
                profile = parse_profile_args(self.run_panel.profile_args(), self.opened.summary.inputs,
                                             self.opened.input_shapes or None, dim_names={})  # a finding below
            except errors.TrtlabError:
                profile = None  # the Run panel says what is wrong with it when a build is asked for
        version = trt_version or self.readiness_panel.version.currentData()
        targets = None
        if version == "rtx":
            try:
                targets = self.run_panel.rtx_target_list() or None
            except errors.TrtlabError:
                targets = None  # the Run panel names the bad target when a build is asked for
        try:
            report = check_model(self.opened.doc.model, plan=plan, shapes=self.opened.input_shapes or None,
                                 profile=profile, targets=targets,
                                 trt_version=version,
                                 model_path=str(self.opened.path), shape_result=self.opened.shapes,
                                 cache=self._readiness_cache, shape_budget_s=0.5)
        except Exception as exc:  # a check must never take the window down
            log.exception("readiness check failed")
            self.readiness_panel.summary.setText(f"The readiness check failed: {exc}")
            return None
        self.readiness = report
        self.run_panel.profile_box.set_problems(report.profile_fixes)  # bad ranges marked, with their fix
        self.readiness_panel.set_report(report)
        self._apply_badges()
        self.readiness_dock.setWindowTitle(f"Readiness ({report.errors} ✗, {report.warnings} ⚠)"
                                           if report.errors or report.warnings else "Readiness")
        return report

    def _apply_badges(self) -> None:
        item, pic = self.view.item, self.graph_page.picture
        if item is None or pic is None:
            return
        if self.readiness is None or not self._at_root():
            item.set_badges({})
            return
        index = {r.key: r.index for r in self.plan.rows}
        worst: dict[int, str] = {}  # a group box shows the worst finding inside it
        for key, sev in self.readiness.node_severity().items():
            if sev == "info" or key not in index:
                continue
            node = pic.graph.node_of_onnx(index[key])
            if node is not None and (node not in worst or sev == "error"):
                worst[node] = sev
        item.set_badges({node: SEVERITY_COLORS[sev] for node, sev in worst.items()})

    def set_profile(self, doc: dict | None) -> None:
        """Show a profile: its nodes in the Profile dock, the graph coloured by where they ran when some fell back to
        the CPU, else by their time."""
        self.profile_panel.set_profile(doc)
        if doc:
            self.profile_dock.show()
            self.profile_dock.raise_()
            if self.profile_dock.height() < self.height() * 0.35:  # the reasons and a dozen rows in sight
                self.resizeDocks([self.profile_dock], [int(self.height() * 0.42)], Qt.Orientation.Vertical)
            self.set_color_mode("device" if doc.get("fallback_nodes") else "time")
        elif self.color_mode in ("time", "device") and not (self.engine and self.engine_panel.times):
            self.set_color_mode("op")

    def set_engine(self, doc: dict | None) -> None:
        """Show a TensorRT build: its layers in the Engine dock, the graph coloured by what ran."""
        self.engine = doc or None
        self.engine_panel.set_build(self.engine)
        if self.engine and not self.engine.get("ok", True):
            self.engine_dock.show()
            self.engine_dock.raise_()
            bad = [e for e in self.engine.get("parse_errors", []) if e.get("node")]
            self.banner.show_message("TensorRT cannot parse this graph",
                                     f"{len(self.engine.get('parse_errors', []))} parser error(s)"
                                     + (f", first at node {bad[0]['node']}: {bad[0]['message']}" if bad else "."),
                                     bad[0]["fix"] if bad else "See the Engine panel.")
            rows = {r.key: r.index for r in self.plan.rows}
            in_model = [e for e in bad if e["node"] in rows]  # a node only the variant has (a Cast, Q/DQ) is not drawn
            pic = self.graph_page.picture
            found = [pic.graph.node_of_onnx(rows[e["node"]]) for e in in_model] if pic else []
            nodes = [n for n in found if n is not None]
            if nodes:
                self._show_onnx_node(rows[in_model[0]["node"]])
                self.view.selection.set(nodes, nodes[0])
        elif self.engine:
            self.engine_dock.show()
            self.engine_dock.raise_()
            if self.engine.get("ran"):
                self.set_color_mode("engine")
            warn = [m for m in self.engine.get("mismatches", []) if m.get("severity") == "warning"]
            if warn:
                self.banner.show_message("The engine did not run as planned",
                                         f"{len(warn)} node(s) ran in another precision than the plan asked, e.g. "
                                         f"{warn[0]['message']}", "The Engine panel lists them.", level="warning")
        elif self.color_mode == "engine":
            self.set_color_mode("op")

    def _show_key(self, key: str) -> None:
        row = next((r for r in self.plan.rows if r.key == key), None)
        if row is not None:
            self._show_onnx_node(row.index)

    def save_engine_dialog(self) -> None:
        if not self.engine or not self.engine.get("engine"):
            return
        start = str(Path(self._plan_dir()) / f"{Path(self.engine['model']).stem}.engine")
        path, _ = QFileDialog.getSaveFileName(self, "Save TensorRT engine", start, "TensorRT engines (*.engine *.plan)")
        if path:
            self.save_engine(Path(path))

    def save_engine(self, path: Path) -> bool:
        import shutil

        from app.core.fileio import atomic_write_bytes

        src = Path(self.engine["engine"])
        try:
            atomic_write_bytes(path, src.read_bytes())
            shutil.copyfile(src.with_name(src.name + ".json"), path.with_name(path.name + ".json"))
        except OSError as exc:
            self.show_error(errors.TrtlabError(f"Could not save the engine to '{path}': {exc.strerror or exc}.",
                                               fix="Choose a folder you can write to."))
            return False
        self.status_label.setText(f"Engine saved to {path} (with its build facts in {path.name}.json)")
        return True

    def request_fallback(self) -> None:
        self.run_controller.start_fallback()

    def apply_fallback(self, doc: dict) -> None:
        """Make a fallback result the plan (one undo step)."""
        from app.core.precision import PrecisionPlan

        if not doc.get("plan"):
            return
        keep = list(doc.get("keep_high_precision", []))
        if str(doc.get("candidate", "")).endswith(":plan"):
            # The search ran the plan: add its nodes to the plan as it is now (edits made meanwhile stay).
            self.plan.set_nodes(keep, "fp32")
        else:
            self.plan.load(PrecisionPlan.from_json(doc["plan"]), "fallback result")
        if self.color_mode == "op":
            self.set_color_mode("precision")
        n = len(doc.get("keep_high_precision", []))
        self.status_label.setText(f"Plan updated: {n} node{'s' if n != 1 else ''} kept in FP32 (Ctrl+Z undoes). "
                                  "Run ▸ Compare checks it.")

    def _plan_dir(self) -> str:
        return str(self.settings.value("paths/plan_dir", str(self.opened.path.parent if self.opened else Path.home())))

    def save_plan_dialog(self) -> None:
        if self.opened is None:
            return
        start = str(Path(self._plan_dir()) / f"{self.opened.path.stem}.plan.json")
        path, _ = QFileDialog.getSaveFileName(self, "Save precision plan", start, "Precision plans (*.json)")
        if path:
            self.save_plan(Path(path))

    def save_plan(self, path: Path) -> bool:
        try:
            self.plan.plan.model_name = self.opened.path.name if self.opened else ""
            self.plan.plan.save(path)
        except OSError as exc:
            self.show_error(errors.TrtlabError(f"Could not save the plan to '{path}': {exc.strerror or exc}.",
                                               fix="Choose a folder you can write to."))
            return False
        self.plan.undo_stack.setClean()
        self.settings.setValue("paths/plan_dir", str(path.parent))
        self.status_label.setText(f"Plan saved to {path} (use it with trtlab run/compare/bench --plan)")
        self._on_plan_changed()
        return True

    def load_plan_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Load precision plan", self._plan_dir(),
                                              "Precision plans (*.json);;All files (*)")
        if path:
            self.load_plan(Path(path))

    def load_plan(self, path: Path) -> bool:
        from app.core.precision import PrecisionPlan

        try:
            plan = PrecisionPlan.load(path)
        except errors.TrtlabError as exc:
            self.show_error(exc)
            return False
        unknown = plan.unknown_keys(self.plan.graph) if self.plan.graph is not None else []
        self.plan.load(plan, path.name)
        self.settings.setValue("paths/plan_dir", str(path.parent))
        if unknown:
            self.banner.show_message("Plan loaded with warnings",
                                     f"{len(unknown)} node(s) in the plan are not in this model (e.g. "
                                     f"'{unknown[0]}'); they are ignored.",
                                     "Was the plan made for another model? Ctrl+Z undoes the load.", level="warning")
        if self.color_mode == "op":
            self.set_color_mode("precision")
        self.status_label.setText(f"Loaded plan {path.name}: {self.plan.summary()}")
        return True

    def save_variant_dialog(self) -> None:
        if self.opened is None:
            return
        start = str(Path(self._plan_dir()) / f"{self.opened.path.stem}.variant.onnx")
        path, _ = QFileDialog.getSaveFileName(self, "Save variant as ONNX", start, "ONNX models (*.onnx)")
        if not path:
            return
        if not path.lower().endswith(".onnx"):
            path += ".onnx"
        if Path(path).resolve() == self.opened.path.resolve():
            self.show_error(errors.TrtlabError("The variant would replace the model it is made from.",
                                               fix="Choose another file name."))
            return
        params = self.run_panel._common()
        if params is not None:
            self.run_controller.save_variant(path, params)
