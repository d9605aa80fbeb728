"""What the graph is coloured by: the op types, the planned precisions, a diagnosis's errors, the precision each node
ran in an engine, node times (a profile's or an engine's), where each node ran, the engine layer each node was
fused into, and how each node's time changed between two imported engines. A controller the shell
assembles, given the graph page, the plan, the Engine and Profile docks and where to say things."""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QKeySequence

from app.core.results import BuildResult, DiagnoseResult, ImportComparison, ProfileResult
from app.ui.common.messages import Messages
from app.ui.graph.node_colors import (
    delta_colors,
    engine_colors,
    error_colors,
    fusion_colors,
    fusion_layers,
    node_time_shares,
    precision_colors,
    time_colors,
)
from app.ui.graph.page import GraphPage
from app.ui.precision.host import EngineView, ProfileView
from app.ui.precision.panel import node_errors
from app.ui.precision.plan_controller import PlanController

COLOR_MODES = (("op", "&Op Type", "Ctrl+Shift+1"), ("precision", "&Planned Precision", "Ctrl+Shift+2"),
               ("error", "Diagnosis &Error", "Ctrl+Shift+3"),
               ("engine", "Precision That Ran in the &Engine", "Ctrl+Shift+4"),
               ("time", "Node &Time (Profile or Engine)", "Ctrl+Shift+5"),
               ("device", "&Where Each Node Ran (Profile)", "Ctrl+Shift+6"),
               ("fusion", "Engine Layer Each Node Was &Fused Into", "Ctrl+Shift+7"),
               ("delta", "Time &Change Between Two Engines", "Ctrl+Shift+8"))


class GraphColors(QObject):
    """The graph's colour mode (`color_mode`, with a checkable action per mode in `color_actions`) and its
    colours and legend.

    It keeps what it paints: `diagnosis` (the precision work shows it) and `engine` (the engine results show
    it); a profile and an engine's layer times are read off their docks."""

    def __init__(self, page: GraphPage, plan: PlanController, engine_panel: EngineView, profile_panel: ProfileView,
                 messages: Messages, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.page = page
        self.view = page.view
        self.plan = plan
        self.engine_panel = engine_panel
        self.profile_panel = profile_panel
        self.messages = messages
        self.color_mode = "op"
        self.diagnosis: DiagnoseResult | None = None
        self.engine: BuildResult | None = None
        self.comparison: ImportComparison | None = None
        self._fusion: tuple[BuildResult, int, list[int | None], dict[int, int], dict[int, str]] | None = None
        self.color_actions: dict[str, QAction] = {}
        for mode, text, key in COLOR_MODES:
            act = QAction(text, parent)
            act.setShortcut(QKeySequence(key))
            act.setCheckable(True)
            act.triggered.connect(lambda _=False, m=mode: self.set_color_mode(m))
            self.color_actions[mode] = act
        self.color_actions["op"].setChecked(True)
        plan.changed.connect(self.apply_colors)
        profile_panel.shownChanged.connect(self.apply_colors)

    def _at_root(self) -> bool:
        return len(self.page.levels) == 1

    def graph_changed(self) -> None:
        """The drawing changed (another level, groups opened or closed): its colours again."""
        self.apply_colors()

    def prefer_precision(self) -> None:
        """The plan was edited: the op types' colours give way to the plan's."""
        if self.color_mode == "op":
            self.set_color_mode("precision")

    def show_diagnosis(self, doc: DiagnoseResult | None) -> None:
        """A diagnosis (None: none): the graph coloured by its errors, or no longer."""
        self.diagnosis = doc
        if doc is not None:
            self.set_color_mode("error")
        elif self.color_mode == "error":
            self.set_color_mode("precision" if not self.plan.is_trivial() else "op")

    def show_engine(self, doc: BuildResult | None) -> None:
        """A TensorRT build (None: none): the graph coloured by what ran in it, or no longer."""
        self.engine = doc
        if doc is None:
            self.comparison = None  # its engines went with the model
        if doc is not None:
            if doc.ok and doc.ran:
                self.set_color_mode("engine")
        elif self.color_mode in ("engine", "fusion", "delta"):
            self.set_color_mode("op")

    def show_comparison(self, doc: ImportComparison | None) -> None:
        """Two imported engines compared (None: none): the graph coloured by each node's change of time, or no
        longer."""
        self.comparison = doc
        if doc is not None:
            self.set_color_mode("delta")
        elif self.color_mode == "delta":
            self.set_color_mode("engine" if self.engine and self.engine.ran else "op")

    def show_profile(self, doc: ProfileResult | None) -> None:
        """A profile (None: none): the graph coloured by where its nodes ran when some fell back to the CPU, else by
        their time."""
        if doc is not None:
            self.set_color_mode("device" if doc.fallback_nodes else "time")
        elif self.color_mode in ("time", "device") and not (self.engine and self.engine_panel.times):
            self.set_color_mode("op")

    def set_color_mode(self, mode: str) -> None:
        say = self.messages.say
        if mode == "error" and not self.diagnosis:
            say("No diagnosis yet: Run ▸ Diagnose Layers (Ctrl+D) measures each layer.")
            mode = self.color_mode
        if mode == "time" and not (self.engine and self.engine_panel.times) and not self.profile_panel.has(mode):
            say("No node times yet: Run ▸ Profile Nodes (Ctrl+Alt+P) times every node.")
            mode = self.color_mode
        if mode == "device" and not self.profile_panel.has(mode):
            say("No profile yet: Run ▸ Profile Nodes (Ctrl+Alt+P) shows where each node ran.")
            mode = self.color_mode
        if mode == "engine" and not (self.engine and self.engine.ran):
            say("No engine yet: Run ▸ Build TensorRT Engine (Ctrl+Shift+B) builds one.")
            mode = self.color_mode
        if mode == "fusion" and not (self.engine and self.engine.layers):
            say("No engine yet: Run ▸ Build TensorRT Engine (Ctrl+Shift+B) builds one, or File ▸ Import TensorRT "
                "Results… (Ctrl+Alt+I) shows one built elsewhere.")
            mode = self.color_mode
        if mode == "delta" and self.comparison is None:
            say("No two engines compared yet: import one (Ctrl+Alt+I), then File ▸ Compare With Another TensorRT "
                "Import….")
            mode = self.color_mode
        self.color_mode = mode
        for m, act in self.color_actions.items():
            act.setChecked(m == mode)
        self.apply_colors()

    def _time_source(self) -> str | None:
        """Where the "time" colours come from: the newer of a profile and an engine's layer times."""
        engine = bool(self.engine and self.engine_panel.times)
        profile = self.profile_panel.has("time")
        if engine and profile:
            return "engine" if self.engine_panel.times_at > self.profile_panel.doc_at else "profile"
        return "engine" if engine else "profile" if profile else None

    def apply_colors(self) -> None:
        pic = self.page.picture
        item = self.view.item
        if pic is None or item is None:
            return
        mode = self.color_mode if self._at_root() else "op"
        rows = self.plan.rows
        mix: dict = {}    # group boxes: their nodes' colours by share
        notes: dict = {}  # and a line of words (worst error, share of the time)
        if mode == "precision" and rows:
            # What the variant runs (kept nodes in FP32), counted as the Precision table and its summary count.
            colors, legend = precision_colors(pic.graph, [r.precision for r in rows], self.plan.counts(),
                                              self._legend_label, mix)
            item.set_node_fill(colors, mix)
            self.view.legend.set_entries("Planned precision", legend)
        elif mode == "error" and self.diagnosis:
            errs = node_errors(self.diagnosis.layers)
            by_index = {r.index: (errs[r.key].cosine, errs[r.key].nonfinite > 0) for r in rows if r.key in errs}
            colors, legend = error_colors(pic.graph, by_index, mix, notes)
            item.set_node_fill(colors, mix, notes)
            self.view.legend.set_entries(f"Error of {self.diagnosis.candidate}", legend)
        elif mode == "device" and self.profile_panel.has(mode) or mode == "time" and self._time_source() == "profile":
            colors, legend, title = self.profile_panel.colors(mode, pic.graph, [r.key for r in rows], mix, notes)
            item.set_node_fill(colors, mix, notes)
            self.view.legend.set_entries(title, legend)
        elif mode == "time" and self.engine and self._time_source() == "engine":  # "engine" implies self.engine
            shares = node_time_shares(self.engine.layers, self.engine_panel.times)
            colors, legend = time_colors(pic.graph, [shares.get(r.key) for r in rows], notes=notes)
            item.set_node_fill(colors, None, notes)
            self.view.legend.set_entries("Share of the engine's time", legend)
        elif mode == "delta" and self.comparison is not None:
            c = self.comparison
            pairs = {n.node: (n.ms_a, n.ms_b) for n in c.nodes}
            colors, legend = delta_colors(pic.graph, [pairs.get(r.key) for r in rows], notes)
            item.set_node_fill(colors, None, notes)
            self.view.legend.set_entries("Time change, engine B against A", legend)
        elif mode == "fusion" and self.engine and self.engine.layers:
            slots, sizes, names = self._fusion_map(self.engine, [r.key for r in rows])
            colors, legend = fusion_colors(pic.graph, slots, sizes, notes, names)
            item.set_node_fill(colors, None, notes)
            self.view.legend.set_entries("Engine layer each node was fused into", legend)
        elif mode == "engine" and self.engine and self.engine.ran:
            ran = self.engine.ran
            colors, legend = engine_colors(pic.graph, [ran.get(r.key) for r in rows], mix)
            item.set_node_fill(colors, mix)
            self.view.legend.set_entries("Ran in the engine", legend)
        else:
            if item.node_fill is not None:
                item.set_node_fill(None)
            self.view.legend.set_graph(pic.graph)
        self.view.minimap.update()
        self.view.show_overlays()

    def _fusion_map(self, engine: BuildResult, keys: list[str]
                    ) -> tuple[list[int | None], dict[int, int], dict[int, str]]:
        """Each ONNX node's colour slot (its layer numbered in the order the graph first reaches it, so the layers
        next to each other on the graph take different colours) and each slot's count of nodes; made once per
        engine and graph (a big graph is coloured again on every level change); each slot's layer name."""
        if self._fusion is None or self._fusion[0] is not engine or self._fusion[1] != len(keys):
            layer_of = fusion_layers(engine.layers)
            slot: dict[int, int] = {}
            slots: list[int | None] = []
            sizes: dict[int, int] = {}
            names: dict[int, str] = {}
            for key in keys:
                k = layer_of.get(key)
                if k is None:
                    slots.append(None)
                    continue
                s = slot.setdefault(k, len(slot))
                names.setdefault(s, engine.layers[k].name)
                slots.append(s)
                sizes[s] = sizes.get(s, 0) + 1
            self._fusion = (engine, len(keys), slots, sizes, names)
        return self._fusion[2], self._fusion[3], self._fusion[4]

    def _legend_label(self, precision: str) -> str:
        return "fixed (cannot change)" if precision == "fixed" else self.plan.count_label(precision)
