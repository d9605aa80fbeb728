"""The precision plan's work in the window: plan edits from the graph and the table, the diagnosis (its errors in
the table, going to the first NaN/Inf or the worst layer) and the fallback search's result. A controller the shell
assembles, given the plan, the Precision dock's panel, the graph's nodes and colours, and where to say things
(and point: `Messages` brings docks forward)."""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, QPoint, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu

from app.core.results import DiagnoseResult, FallbackResult
from app.core.targets import Target
from app.ui.common.messages import Messages
from app.ui.common.style import PRECISION_LABELS
from app.ui.precision.colors import GraphColors
from app.ui.precision.nodes import GraphNodes
from app.ui.precision.panel import PrecisionPanel, fill_precision_menu
from app.ui.precision.plan_controller import PlanController

log = logging.getLogger(__name__)

class PrecisionWork(QObject):
    """The precision plan's edits, the diagnosis and the fallback in the window.

    It owns what it shows: the diagnosis (`diagnosis`) and the actions that depend on it (`act_first_bad`,
    `act_worst`). It asks the run controller for a fallback search by signal (`fallbackRequested`)."""

    fallbackRequested = Signal()

    def __init__(self, plan: PlanController, panel: PrecisionPanel, nodes: GraphNodes, colors: GraphColors,
                 messages: Messages, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.plan = plan
        self.panel = panel
        self.nodes = nodes
        self.colors = colors
        self.messages = messages
        self.diagnosis: DiagnoseResult | None = None
        self.act_first_bad = QAction("Go to First &NaN/Inf", parent)
        self.act_first_bad.setShortcut(QKeySequence("Ctrl+Shift+N"))
        self.act_first_bad.triggered.connect(self.go_first_nonfinite)
        self.act_worst = QAction("Go to &Worst Layer", parent)
        self.act_worst.setShortcut(QKeySequence("Ctrl+Shift+W"))
        self.act_worst.triggered.connect(self.go_worst)
        self._sync_diagnosis_actions()

        panel.nodeActivated.connect(nodes.show_onnx_node)
        panel.goFirstNonfinite.connect(self.go_first_nonfinite)
        panel.goWorst.connect(self.go_worst)
        panel.fallbackRequested.connect(self.fallbackRequested)
        panel.applyFallback.connect(self.apply_fallback)

    def _sync_diagnosis_actions(self) -> None:
        self.act_first_bad.setEnabled(bool(self.diagnosis and self.diagnosis.first_nonfinite))
        self.act_worst.setEnabled(bool(self.diagnosis and self.diagnosis.worst))

    def model_opened(self, same: bool) -> None:
        """A model was opened (`same`: the same file again, or new input shapes): another model's results go."""
        if not same:
            self.set_diagnosis(None)
            self.panel.show_fallback(None)

    def model_closed(self) -> None:
        self.set_diagnosis(None)
        self.panel.show_fallback(None)

    def show_fallback(self, doc: FallbackResult) -> None:
        self.panel.show_fallback(doc)
        self.messages.raise_dock("precision")

    # ----------------------------------------------------------------- precision plan
    def selected_node_keys(self) -> list[str]:
        """Plan keys of what the user points at: the table's rows when it has focus, else the graph's nodes."""
        if self.panel.table.hasFocus():
            return self.panel.selected_keys()
        return self.nodes.selected_keys()

    def set_selected_precision(self, precision: str | None) -> None:
        keys = self.selected_node_keys()
        if not keys:
            self.messages.say("Select nodes in the graph (or rows in the Precision table) first."
                              if self.nodes.at_root() else "Precision is planned on the main graph: go back "
                              "(Alt+Left) to set it.")
            return
        self.plan.set_nodes(keys, precision)
        self.colors.prefer_precision()
        what = PRECISION_LABELS[precision] if precision else "the default precision"
        chosen = set(keys)
        # The plan records the wish; say at once where the variant will not follow it, and why.
        other = [r for r in self.plan.rows if r.key in chosen and r.differs]
        note = (f"; {len(other):,} of them run{'s' if len(other) == 1 else ''} {other[0].precision.upper()}: "
                f"{other[0].reason}" if other else "")
        self.messages.say(f"{len(keys):,} node{'s' if len(keys) != 1 else ''} set to {what}{note} (Ctrl+Z undoes)")

    def graph_menu(self, node: int | None, pos: QPoint) -> None:
        """The graph's context menu: the selected nodes' precision, and the diagnosis's places."""
        if self.nodes.page.picture is None:
            return
        menu = QMenu(self.messages.parent)
        keys = self.selected_node_keys()
        if keys and self.nodes.at_root():
            fill_precision_menu(menu, self.plan, keys, self.nodes.selected_ops())
            if self.colors.color_mode == "op":
                menu.triggered.connect(lambda _a: self.colors.set_color_mode("precision"))
            menu.addSeparator()
            index = self.nodes.onnx_index(node)
            if index is not None:
                menu.addAction("Show in Precision Table", lambda: self._show_in_table(index))
        elif not self.nodes.at_root():
            menu.addAction("Precision is planned on the main graph").setEnabled(False)
        menu.addAction(self.act_first_bad)
        menu.addAction(self.act_worst)
        menu.exec(pos)

    def _show_in_table(self, onnx_index: int) -> None:
        self.messages.raise_dock("precision")
        self.panel.select_node(onnx_index)

    # ----------------------------------------------------------------- diagnosis
    def set_diagnosis(self, doc: DiagnoseResult | None) -> None:
        """Show a diagnosis: errors in the table, the graph coloured by them."""
        self.diagnosis = doc
        self.panel.set_diagnosis(self.diagnosis)
        if self.diagnosis:
            self.messages.raise_dock("precision", at_least=0.3, share=0.35)
        self.colors.show_diagnosis(self.diagnosis)
        self._sync_diagnosis_actions()

    def _go_to_key(self, key: str | None, what: str) -> None:
        row = next((r for r in self.plan.rows if r.key == key), None) if key else None
        if row is None:
            self.messages.say(f"No {what} in the diagnosis.")
            return
        self.nodes.show_onnx_node(row.index)
        self.panel.select_node(row.index)
        self.messages.say(f"{what.capitalize()}: {key}")

    def go_first_nonfinite(self) -> None:
        self._go_to_key(self.diagnosis.first_nonfinite if self.diagnosis else None, "first NaN/Inf")

    def go_worst(self) -> None:
        self._go_to_key(self.diagnosis.worst if self.diagnosis else None, "worst layer")

    # ----------------------------------------------------------------- fallback
    def apply_fallback(self, doc: FallbackResult) -> None:
        """Make a fallback result the plan (one undo step)."""
        from app.core.precision import PrecisionPlan

        if not doc.plan:
            return
        keep = list(doc.keep_high_precision)
        if Target.read(doc.candidate).needs_plan:
            # The search ran the plan: add its nodes to the plan as it is now (edits made meanwhile stay).
            self.plan.set_nodes(keep, "fp32")
        else:
            self.plan.load(PrecisionPlan.from_json(dict(doc.plan)), "fallback result")
        self.colors.prefer_precision()
        n = len(doc.keep_high_precision)
        self.messages.say(f"Plan updated: {n} node{'s' if n != 1 else ''} kept in FP32 (Ctrl+Z undoes). "
                          "Run ▸ Compare checks it.")
