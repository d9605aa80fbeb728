"""Run ▸ Benchmark Sweep…: time each chosen target at several values of one dynamic dimension (the batch, by
default) and see where speed stops scaling.

The targets are a backend × precision grid, as in Evaluate on Dataset…; the dimension is one the model leaves
dynamic (a model with none is told so, and Run stays off); the values default to powers of two, fewer where only the
CPU runs and one batch of the inputs would be large. Run sends a `SweepRequest`; the run controller starts the job
like every other (its progress and Cancel in the Jobs panel)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.backends import Availability
from app.backends.tasks.speed_specs import MAX_SWEEP_POINTS, SweepSpec
from app.core.errors import TrtlabError
from app.core.targets import Target
from app.ui.run.backends import TargetGrid
from app.ui.run.requests import ModelInputs

if TYPE_CHECKING:
    from app.core.model import OpenedModel, TensorInfo

PRECISIONS = (("fp32", "FP32"), ("fp16", "FP16"), ("bf16", "BF16"), ("int8", "INT8"), ("plan", "Plan"))
DEFAULT_TARGETS = ("ort-cpu:fp32", "ort-cpu:fp16", "ort-cpu:int8")
POWERS = (1, 2, 4, 8, 16, 32, 64)
CPU_LARGEST = 16                  # the CPU's default sweep stops here: beyond, a batch only takes longer
CPU_BATCH_BYTES = 64 * 2**20      # … and where one batch of the inputs would pass this
DEFAULT_WARMUP = "5"
DEFAULT_ITERATIONS = "30"
ERROR_STYLE = "QLabel { background:#fdecea; color:#7f1d1d; border-radius:4px; padding:6px 8px; }"
DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "int8": 1, "uint8": 1, "bool": 1, "int16": 2, "float64": 8,
               "int64": 8, "double": 8}


@dataclass(frozen=True)
class SweepRequest:
    """Time each target at each value of one dimension: `input` "" is axis `axis` of every input (the batch)."""

    targets: tuple[str, ...]
    values: tuple[int, ...]
    input: str = ""
    axis: int = 0
    warmup: str = DEFAULT_WARMUP
    iterations: str = DEFAULT_ITERATIONS
    sessions: int = 0             # sessions timed per point; 0: 3 where a target runs on a GPU, else 1

    def spec(self, base: ModelInputs) -> SweepSpec:
        return SweepSpec(model=base.model, shapes=base.shapes, plan=base.plan, sweep_targets=base.distinct(
            self.targets), input=self.input, axis=self.axis, values=self.values, warmup=self.warmup,
            iterations=self.iterations, sessions=self.sessions)

    def swept(self, inputs: list[TensorInfo]) -> list[TensorInfo]:
        """The inputs whose dimension changes."""
        return [i for i in inputs if i.shape is not None and (i.name == self.input or not self.input)]


@dataclass(frozen=True)
class Dimension:
    """A dimension the model leaves dynamic, as the dimension choice lists it."""

    input: str   # "": axis `axis` of every input
    axis: int
    label: str


def sweepable(inputs: list[TensorInfo]) -> list[Dimension]:
    """The dimensions a sweep can change: the batch (axis 0 dynamic in every input) first, then each input's own."""
    from app.core.model import dynamic_dims

    shaped = [i for i in inputs if i.shape is not None]
    out: list[Dimension] = []
    if shaped and all(0 in dynamic_dims(i) for i in shaped):
        names = {str(i.shape[0]) for i in shaped if i.shape}
        named = f" '{next(iter(names))}'" if len(names) == 1 and not names & {"?", "-1"} else ""
        out.append(Dimension("", 0, f"batch{named} (axis 0 of {'every input' if len(shaped) > 1 else shaped[0].name})"))
    for info in shaped:
        for axis in dynamic_dims(info):
            if out and axis == 0 and not out[0].input and len(shaped) == 1:
                continue  # the batch already
            dim = info.shape[axis] if info.shape else "?"
            out.append(Dimension(info.name, axis, f"{info.name} axis {axis} ('{dim}')"))
    return out


def default_values(inputs: list[TensorInfo], dimension: Dimension, cpu_only: bool) -> tuple[int, ...]:
    """Powers of two; where only the CPU runs, up to 16, and fewer where one batch of the inputs would pass 64 MB
    (the dims that are not known count as one)."""
    if not cpu_only:
        return POWERS
    per_item = 0
    for info in inputs:
        if info.shape is None or (dimension.input and info.name != dimension.input):
            continue
        dims = [d if isinstance(d, int) and d > 0 else 1 for k, d in enumerate(info.shape) if k != dimension.axis]
        per_item += math.prod(dims) * DTYPE_BYTES.get(info.dtype, 4)
    out = tuple(v for v in POWERS if v <= CPU_LARGEST and v * per_item <= CPU_BATCH_BYTES)
    return out or (1,)


def parse_values(text: str) -> tuple[int, ...]:
    """`1,2,4,8` (spaces or commas) as distinct positive whole numbers, sorted; raises TrtlabError with a fix."""
    parts = [p for p in re.split(r"[\s,;]+", text.strip()) if p]
    fix = "Give whole numbers above zero, e.g. 1,2,4,8,16."
    if not parts:
        raise TrtlabError("Give the values to sweep.", fix=fix)
    bad = [p for p in parts if not p.isdigit() or int(p) < 1]
    if bad:
        raise TrtlabError(f"{', '.join(bad)}: not a value of a dimension.", fix=fix)
    values = sorted({int(p) for p in parts})
    if len(values) > MAX_SWEEP_POINTS:
        raise TrtlabError(f"{len(values)} values: at most {MAX_SWEEP_POINTS}.", fix="Give fewer values.")
    return tuple(values)


class SweepDialog(QDialog):
    """The targets, the dimension, its values and the budget; `sweepRequested` carries what Run asks for."""

    sweepRequested = Signal(object)  # SweepRequest

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Benchmark Sweep")
        self.inputs: list[TensorInfo] = []
        self.dimensions: list[Dimension] = []
        self.model_problem = ""   # why the model cannot be swept ("": it can)
        self._values_edited = False
        self.sent = False  # Run sent a request since the dialog was last set up (or refused)
        outer = QVBoxLayout(self)
        targets = QGroupBox("Targets")
        tcol = QVBoxLayout(targets)
        self.target_grid = TargetGrid(PRECISIONS, spacing=14)
        self.target_grid.changed.connect(self._targets_changed)
        tcol.addWidget(self.target_grid)
        self.checks = self.target_grid.checks
        outer.addWidget(targets)
        sweep = QGroupBox("Dimension and values")
        form = QFormLayout(sweep)
        self.dimension_combo = QComboBox()
        self.dimension_combo.setToolTip("The dynamic dimension that grows; the model's other dims keep the Shapes "
                                        "panel's sizes")
        self.dimension_combo.currentIndexChanged.connect(self._dimension_changed)
        form.addRow("Sweep:", self.dimension_combo)
        self.values_edit = QLineEdit()
        self.values_edit.setToolTip("The values to time, e.g. 1,2,4,8,16 (each once)")
        self.values_edit.textEdited.connect(self._values_typed)
        form.addRow("Values:", self.values_edit)
        self.values_error = QLabel()
        self.values_error.setStyleSheet("color:#b3261e;")
        self.values_error.setWordWrap(True)
        self.values_error.hide()
        form.addRow("", self.values_error)
        outer.addWidget(sweep)
        budget = QGroupBox("Budget per point")
        bform = QFormLayout(budget)
        self.warmup_edit = QLineEdit(DEFAULT_WARMUP)
        self.warmup_edit.setToolTip("Untimed runs first at each value: a count (10) or a time (0.5s)")
        self.iterations_edit = QLineEdit(DEFAULT_ITERATIONS)
        self.iterations_edit.setToolTip("Timed runs at each value: a count (100) or a time (2s)")
        for edit in (self.warmup_edit, self.iterations_edit):
            edit.textChanged.connect(lambda _t: self._sync())
        bform.addRow("Warm-up:", self.warmup_edit)
        bform.addRow("Iterations:", self.iterations_edit)
        self.sessions_spin = QSpinBox()
        self.sessions_spin.setRange(0, 9)
        self.sessions_spin.setSpecialValueText("auto: 3 on a GPU, 1 on the CPU")
        self.sessions_spin.setToolTip("Each point timed in this many sessions, the median one shown: each GPU "
                                      "session picks its own cuDNN kernels, so one session's time is one draw")
        bform.addRow("Sessions:", self.sessions_spin)
        self.budget_error = QLabel()
        self.budget_error.setStyleSheet("color:#b3261e;")
        self.budget_error.setWordWrap(True)
        self.budget_error.hide()
        bform.addRow("", self.budget_error)
        outer.addWidget(budget)
        self.refusal = QLabel()
        self.refusal.setWordWrap(True)
        self.refusal.setStyleSheet(ERROR_STYLE)
        self.refusal.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.refusal.hide()
        outer.addWidget(self.refusal)
        outer.addStretch(1)
        self.buttons = QDialogButtonBox()
        self.run_button = self.buttons.addButton("Run", QDialogButtonBox.ButtonRole.AcceptRole)
        self.close_button = self.buttons.addButton(QDialogButtonBox.StandardButton.Close)
        for b in (self.run_button, self.close_button):
            b.setAutoDefault(False)
        self.run_button.clicked.connect(self._run)
        self.close_button.clicked.connect(self.reject)
        outer.addWidget(self.buttons)
        self._sync()

    # ----------------------------------------------------------------- the model and its backends
    def set_model(self, opened: OpenedModel, availability: dict[str, Availability]) -> None:
        """The model to sweep and the backends that can run here: one tick per backend × precision."""
        self.setWindowTitle(f"Benchmark Sweep of {opened.path.name}")
        self.inputs = list(opened.summary.inputs)
        available = [n for n, a in availability.items() if a.available] or ["ort-cpu"]
        self.target_grid.set_backends(available, DEFAULT_TARGETS)
        self.dimensions = sweepable(self.inputs)
        self.dimension_combo.blockSignals(True)
        self.dimension_combo.clear()
        for d in self.dimensions:
            self.dimension_combo.addItem(d.label)
        self.dimension_combo.blockSignals(False)
        self.model_problem = "" if self.dimensions else (
            f"{opened.path.name} has no dynamic dimension to sweep: every input's shape is fixed "
            f"({'; '.join(f'{i.name} {i.shape_text()}' for i in self.inputs)}). A sweep changes a dimension the "
            "model leaves open, such as the batch: export the model with a dynamic batch (for example "
            "torch.onnx.export(..., dynamic_axes={'input': {0: 'batch'}})) and open that.")
        self.dimension_combo.setEnabled(bool(self.dimensions))
        self.values_edit.setEnabled(bool(self.dimensions))
        self._values_edited = False
        self._default_values()
        self.refusal.hide()  # an earlier refusal was about the model shown then
        self.sent = False
        self._sync()

    def targets(self) -> list[str]:
        return [t for t, cb in self.checks.items() if cb.isChecked()]

    def dimension(self) -> Dimension | None:
        i = self.dimension_combo.currentIndex()
        return self.dimensions[i] if 0 <= i < len(self.dimensions) else None

    def _cpu_only(self) -> bool:
        chosen = self.targets()
        return all(Target.read(t).on_cpu for t in chosen) if chosen else True

    def _default_values(self) -> None:
        """The default values for the dimension and targets, unless the user typed their own."""
        d = self.dimension()
        if d is None or self._values_edited:
            return
        self.values_edit.setText(",".join(str(v) for v in default_values(self.inputs, d, self._cpu_only())))

    def _values_typed(self, _text: str) -> None:
        self._values_edited = True
        self._sync()

    def _targets_changed(self) -> None:
        self._default_values()
        self._sync()

    def _dimension_changed(self, _index: int) -> None:
        self._default_values()
        self._sync()

    # ----------------------------------------------------------------- checks
    def values_problem(self) -> str:
        try:
            parse_values(self.values_edit.text())
        except TrtlabError as exc:
            return f"{exc.message} {exc.fix}".strip()
        return ""

    def budget_problem(self) -> str:
        from app.core.measure import Budget

        for name, edit in (("Warm-up", self.warmup_edit), ("Iterations", self.iterations_edit)):
            try:
                Budget.parse(edit.text())
            except TrtlabError as exc:
                return f"{name}: {exc.message} {exc.fix}".strip()
        return ""

    def problem(self) -> str:
        """Why Run is off ("" : it is on)."""
        if self.model_problem:
            return self.model_problem
        if not self.targets():
            return "Tick at least one target."
        return self.values_problem() or self.budget_problem()

    def ready(self) -> bool:
        return not self.problem()

    def _sync(self) -> None:
        for label, text in ((self.values_error, self.values_problem() if self.dimensions else ""),
                            (self.budget_error, self.budget_problem())):
            label.setText(text)
            label.setVisible(bool(text))
        if self.model_problem:
            self.refusal.setText(self.model_problem)
            self.refusal.show()
        problem = self.problem()
        self.run_button.setEnabled(not problem)
        points = len(self.targets()) * len(parse_values(self.values_edit.text())) if not problem else 0
        self.run_button.setToolTip(problem or f"Time {points} point(s), one target at a time (a job: progress and "
                                              "Cancel in the Jobs panel)")

    def request(self) -> SweepRequest:
        d = self.dimension()
        assert d is not None  # Run is off without one
        return SweepRequest(targets=tuple(self.targets()), values=parse_values(self.values_edit.text()),
                            input=d.input, axis=d.axis, warmup=self.warmup_edit.text().strip(),
                            iterations=self.iterations_edit.text().strip(), sessions=self.sessions_spin.value())

    def _run(self) -> None:
        if self.sent or not self.ready():
            return
        self.refusal.hide()
        self.sent = True  # the dialog closes in the next turn: a second click meanwhile starts nothing
        self.sweepRequested.emit(self.request())

    def show_refusal(self, text: str) -> None:
        """Why Run did not start (the run controller's refusal)."""
        self.sent = False
        self.refusal.setText(text or "The sweep did not start.")
        self.refusal.show()
