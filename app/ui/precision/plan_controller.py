"""The precision plan being edited: undoable edits, the resolved rows, and the graph's colours for them.

Every edit goes through a QUndoCommand on one QUndoStack, so Edit ▸ Undo/Redo (Ctrl+Z / Ctrl+Shift+Z)
works for node overrides, op-type rules, the default precision and loading a plan alike.

The rows say what the variant really runs (a node the transform keeps FP32 is FP32, with the reason); the
table, the graph's colours, the legend and the summary all count these same rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import onnx
from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack

from app.core.model import ShapeResult
from app.core.precision import GraphFacts, PlannedNode, PrecisionPlan
from app.ui.common.style import PRECISION_LABELS

COUNT_ORDER = ("fp32", "fp16", "bf16", "int8", "fixed")


def row_label(row: PlannedNode) -> str:
    """The precision a row shows: what runs, marked when it is not what was planned."""
    if row.precision == "fixed":
        return "fixed"
    text = row.precision.upper()
    if row.kept:
        return f"{text} (kept)"
    return f"{text} (model)" if row.differs else text


def differs_note(row: PlannedNode) -> str:
    """The note for a row that runs another precision than planned: what was planned, and the transform's why."""
    return f"planned {row.planned.upper()}, runs {row.precision.upper()}: {row.reason}" if row.differs else row.reason


def model_opsets(opset_import: Sequence[onnx.OperatorSetIdProto]) -> dict[str, int] | None:
    return {(o.domain or ""): int(o.version) for o in opset_import} or None


@dataclass(frozen=True)
class PreparedPlan:
    """A model's graph facts and a plan's rows, found off the GUI thread (`prepare`) for `set_model`: on a big
    model they take most of a second."""

    graph: onnx.GraphProto
    plan: PrecisionPlan
    facts: GraphFacts
    rows: list[PlannedNode]


def prepare(graph: onnx.GraphProto, shapes: ShapeResult | None, plan: PrecisionPlan,
            opset_import: Sequence[onnx.OperatorSetIdProto] = ()) -> PreparedPlan:
    """What `set_model` finds for a model and a plan, as a pure function of them (safe on a worker thread)."""
    facts = GraphFacts(graph, shapes, model_opsets(opset_import))
    return PreparedPlan(graph, plan, facts, plan.resolve(graph, shapes, facts=facts))


class _PlanEdit(QUndoCommand):
    """One edit, stored as the whole plan before and after: plans are values that no edit changes, so the step
    keeps both (no copies), and this cannot drift."""

    def __init__(self, ctl: PlanController, text: str, after: PrecisionPlan) -> None:
        super().__init__(text)
        self.ctl = ctl
        self.before = ctl.plan
        self.after = after

    def redo(self) -> None:
        self.ctl._replace(self.after)

    def undo(self) -> None:
        self.ctl._replace(self.before)


class PlanController(QObject):
    changed = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.plan = PrecisionPlan()
        self.undo_stack = QUndoStack(self)
        self.graph: onnx.GraphProto | None = None
        self.shapes: ShapeResult | None = None
        self.facts: GraphFacts | None = None
        self.rows: list[PlannedNode] = []
        self._counts: dict[str, int] = {}
        self._differing: dict[str, int] = {}
        self.undo_stack.cleanChanged.connect(self.changed)

    @property
    def dirty(self) -> bool:
        """Edited since the plan was opened or last saved."""
        return not self.undo_stack.isClean()

    # ----------------------------------------------------------------- model
    def set_model(self, graph: onnx.GraphProto | None, shapes: ShapeResult | None, model_name: str = "",
                  keep_plan: bool = False, opset_import: Sequence[onnx.OperatorSetIdProto] = (),
                  prepared: PreparedPlan | None = None) -> None:
        """A new model (or the same one reloaded, with `keep_plan`): the plan's keys survive a reload.

        `opset_import` (the model's) decides which ops have FP16/BF16 kernels, as the transform reads it.
        `prepared` (`prepare`, run off the GUI thread) saves finding the graph's facts and the plan's rows here;
        rows prepared for another plan than the one kept are found again.
        """
        self.graph, self.shapes = graph, shapes
        # What no edit changes, found once: each edit then only looks its nodes up (fast on 10k-node graphs).
        if prepared is not None and prepared.graph is graph:
            self.facts = prepared.facts
        else:
            prepared = None
            self.facts = GraphFacts(graph, shapes, model_opsets(opset_import)) if graph is not None else None
        if not keep_plan:
            self.plan = PrecisionPlan(model_name=model_name)
            self.undo_stack.clear()
        self._resolve(prepared.rows if prepared is not None and prepared.plan == self.plan else None)

    def _resolve(self, rows: list[PlannedNode] | None = None) -> None:
        if rows is not None:
            self.rows = rows
        else:
            self.rows = self.plan.resolve(self.graph, self.shapes, facts=self.facts) if self.graph is not None \
                else []
        # Counted once per edit: the summary, the legend and its labels all read these.
        self._counts = dict(Counter(r.precision for r in self.rows))
        self._differing = dict(Counter(r.precision for r in self.rows if r.differs))
        self.changed.emit()

    def _replace(self, plan: PrecisionPlan) -> None:
        """The one place the current plan changes: the holder replaces its plan, then tells the window."""
        self.plan = plan
        self._resolve()

    def _edit(self, text: str, edit: Callable[[PrecisionPlan], PrecisionPlan]) -> None:
        after = edit(self.plan)
        if after != self.plan:
            self.undo_stack.push(_PlanEdit(self, text, after))

    # ----------------------------------------------------------------- edits
    def set_nodes(self, keys: Iterable[str], precision: str | None) -> None:
        keys = [k for k in keys if k]
        if not keys:
            return
        what = f"{len(keys)} nodes" if len(keys) > 1 else keys[0]
        text = f"Set {what} to {precision.upper()}" if precision else f"{what}: use the default"
        self._edit(text, lambda p: p.with_overrides(keys, precision))

    def set_op_rule(self, op_type: str, precision: str | None) -> None:
        text = f"All {op_type} nodes: {precision.upper()}" if precision else f"All {op_type} nodes: no rule"
        self._edit(text, lambda p: p.with_op_rule(op_type, precision))

    def set_default(self, precision: str) -> None:
        self._edit(f"Default precision {precision.upper()}", lambda p: p.with_default(precision))

    def load(self, plan: PrecisionPlan, name: str = "plan") -> None:
        """Take what `plan` asks (the current plan's model name kept), as one undo step."""
        self._edit(f"Load {name}", lambda p: p.with_rules_of(plan))

    def clear_overrides(self) -> None:
        self._edit("Clear overrides and rules", PrecisionPlan.cleared)

    def name_model(self, model_name: str) -> None:
        """The model the plan is for, as its file says; not an edit (nothing to undo, nothing resolved again)."""
        self.plan = self.plan.with_model_name(model_name)

    # ----------------------------------------------------------------- queries
    def key_of(self, onnx_index: int) -> str | None:
        return self.rows[onnx_index].key if 0 <= onnx_index < len(self.rows) else None

    def precision_of(self, onnx_index: int) -> str | None:
        return self.rows[onnx_index].precision if 0 <= onnx_index < len(self.rows) else None

    def counts(self) -> dict[str, int]:
        """Nodes per precision the variant runs (kept nodes count as FP32): the table, legend and summary's."""
        return dict(self._counts)

    def differing(self) -> dict[str, int]:
        """Per precision that runs, how many of its nodes were planned another one (kept FP32, or the model's)."""
        return dict(self._differing)

    def is_trivial(self) -> bool:
        """True when every changeable node is planned FP32 (the plan changes nothing)."""
        return all(r.planned == "fp32" or r.precision == "fixed" for r in self.rows)

    def count_label(self, precision: str) -> str:
        """'FP32', or 'FP32 (12 kept)' / 'FP32 (all kept)' when some were planned lower: the legend's and summary's
        words."""
        n = self._differing.get(precision, 0)
        word = PRECISION_LABELS[precision].split()[0]
        if not n:
            return word
        many = "all" if n == self._counts.get(precision) else f"{n:,}"
        return f"{word} ({many} kept)" if precision == "fp32" else f"{word} ({many} as in the model)"

    def summary(self) -> str:
        counts = self.counts()
        parts = [f"{counts[p]:,} {self.count_label(p)}" for p in COUNT_ORDER if counts.get(p)]
        return " · ".join(parts) or "no model"
