"""Run ▸ Tune Runtime Settings…: try ONNX Runtime's own settings on one target (CUDA graphs, NHWC, cuDNN's search and
workspace, the optimisation level; the CPU's threads and execution mode) and keep the fastest whose answers are the
target's own (the job of `trtlab tune`).

The target is a backend that has settings (ort-cuda, ort-cpu) and a precision; the batch is offered where the model
leaves it dynamic; each setting can be left out; each combination is timed in several sessions. Run sends a
`TuneRequest`; the run controller starts the job like every other (progress and Cancel in the Jobs panel), and the
Results dock's Tuning tab shows what it found, with "Use these settings" for the Run panel."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.backends import Availability
from app.backends.tasks.speed_specs import TUNE_SESSIONS, TuneSpec
from app.backends.tasks.tune import DEFAULT_KNOBS
from app.core.measure import Budget
from app.core.targets import KNOBS, Target
from app.ui.run.requests import ModelInputs

if TYPE_CHECKING:
    from app.core.model import OpenedModel

PRECISIONS = (("fp32", "FP32"), ("fp16", "FP16"), ("bf16", "BF16"), ("int8", "INT8"))
KNOB_WORDS = {"cuda_graph": "CUDA graph (capture once, replay)", "nhwc": "NHWC (channels-last convolutions)",
              "conv_algo": "cuDNN algorithm search", "conv_workspace": "cuDNN workspace",
              "opt": "Graph optimisation level", "threads": "Intra-op threads", "mode": "Execution mode",
              "inter_threads": "Inter-op threads (parallel mode)"}
ERROR_STYLE = "QLabel { background:#fdecea; color:#7f1d1d; border-radius:4px; padding:6px 8px; }"


@dataclass(frozen=True)
class TuneRequest:
    """Tune `target`'s runtime settings (`knobs`: those to try) at `batch` (None: the model's shapes)."""

    target: str
    knobs: tuple[str, ...]
    batch: int | None = None
    sessions: int = TUNE_SESSIONS
    warmup: str = "20"
    iterations: str = "100"

    def spec(self, base: ModelInputs) -> TuneSpec:
        """The tune's spec; the batch is already in `base.shapes` (the run controller sets it: `_at_value`)."""
        return TuneSpec(model=base.model, shapes=base.shapes, plan=base.plan, target=base.target(self.target),
                        knobs=self.knobs, sessions=self.sessions, warmup=self.warmup, iterations=self.iterations)


class TuneDialog(QDialog):
    """Emits `tuneRequested(TuneRequest)`."""

    tuneRequested = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Tune Runtime Settings")
        self.availability: dict[str, Availability] = {}
        lay = QVBoxLayout(self)
        intro = QLabel("Tries ONNX Runtime's own settings on one target, each in several sessions (cuDNN picks its "
                       "algorithms per session), and keeps the fastest whose answers are the default settings'.")
        intro.setWordWrap(True)
        lay.addWidget(intro)
        box = QGroupBox("Target")
        form = QFormLayout(box)
        self.backend = QComboBox()
        self.backend.currentIndexChanged.connect(self._backend_changed)
        form.addRow("Backend", self.backend)
        self.precision = QComboBox()
        for key, text in PRECISIONS:
            self.precision.addItem(text, key)
        self.precision.setCurrentIndex(1)
        form.addRow("Precision", self.precision)
        self.batch = QSpinBox()
        self.batch.setRange(1, 4096)
        self.batch.setToolTip("Dimension 0 of every input whose first dimension is dynamic")
        form.addRow("Batch", self.batch)
        lay.addWidget(box)
        self.knob_box = QGroupBox("Settings to try")
        self.knob_grid = QGridLayout(self.knob_box)
        self.knob_checks: dict[str, QCheckBox] = {}
        lay.addWidget(self.knob_box)
        timing = QGroupBox("Timing per combination")
        tf = QFormLayout(timing)
        self.sessions = QSpinBox()
        self.sessions.setRange(1, 20)
        self.sessions.setValue(TUNE_SESSIONS)
        tf.addRow("Sessions", self.sessions)
        self.warmup = QLineEdit("20")
        tf.addRow("Warm-up", self.warmup)
        self.iterations = QLineEdit("100")
        tf.addRow("Iterations", self.iterations)
        for edit in (self.warmup, self.iterations):
            edit.setToolTip("A number of runs (100) or a time (2s)")
            edit.textChanged.connect(self._sync)
        lay.addWidget(timing)
        self.problem_label = QLabel()
        self.problem_label.setWordWrap(True)
        self.problem_label.setStyleSheet(ERROR_STYLE)
        self.problem_label.hide()
        lay.addWidget(self.problem_label)
        lay.addStretch(1)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.run_button = self.buttons.addButton("Run", QDialogButtonBox.ButtonRole.AcceptRole)
        self.run_button.clicked.connect(self._run)
        self.buttons.rejected.connect(self.reject)
        lay.addWidget(self.buttons)

    def set_model(self, opened: OpenedModel, availability: dict[str, Availability]) -> None:
        """The open model's batch (offered where dynamic) and the backends with settings that run here."""
        self.availability = availability
        current = self.backend.currentData()
        self.backend.blockSignals(True)
        self.backend.clear()
        for name in KNOBS:
            a = availability.get(name)
            if a is None or a.available:
                self.backend.addItem(name, name)
        index = self.backend.findData(current)
        self.backend.setCurrentIndex(index if index >= 0 else 0)
        self.backend.blockSignals(False)
        first = [i.shape[0] if i.shape else 1 for i in opened.summary.inputs]
        dynamic = any(not (isinstance(d, int) and d > 0) for d in first)
        fixed = next((d for d in first if isinstance(d, int) and d > 0), 1)
        self.batch.setEnabled(dynamic)
        self.batch.setValue(int((opened.input_shapes or {}).get(opened.summary.inputs[0].name, (fixed,))[0] or 1)
                            if opened.summary.inputs else 1)
        self.batch.setToolTip("Dimension 0 of every input whose first dimension is dynamic" if dynamic else
                              f"The model fixes its batch at {fixed}")
        self._backend_changed()

    def _backend_changed(self, _index: int = 0) -> None:
        while self.knob_grid.count():
            item = self.knob_grid.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        self.knob_checks = {}
        backend = self.backend.currentData()
        for k, knob in enumerate(KNOBS.get(backend, {})):
            check = QCheckBox(KNOB_WORDS.get(knob, knob))
            check.setChecked(knob in DEFAULT_KNOBS.get(backend, ()))
            check.setToolTip(f"{knob}: {' | '.join(KNOBS[backend][knob])}")
            check.toggled.connect(self._sync)
            self.knob_checks[knob] = check
            self.knob_grid.addWidget(check, k // 2, k % 2)
        self._sync()

    def problem(self) -> str:
        """Why Run is off ("" : it is on)."""
        if self.backend.count() == 0:
            return "No backend with runtime settings runs here (ort-cpu or ort-cuda)."
        if not any(c.isChecked() for c in self.knob_checks.values()):
            return "Tick at least one setting to try."
        for name, edit in (("Warm-up", self.warmup), ("Iterations", self.iterations)):
            try:
                budget = Budget.parse(edit.text())
            except Exception:  # noqa: BLE001 - BudgetError: said in the dialog
                return f"{name} '{edit.text()}' is not a number of runs or a time such as 2s."
            if name == "Iterations" and budget.count == 0:
                return "Iterations 0 times nothing."
        return ""

    def _sync(self) -> None:
        text = self.problem()
        self.problem_label.setText(text)
        self.problem_label.setVisible(bool(text))
        self.run_button.setEnabled(not text)
        self.run_button.setToolTip(text or "Start the tune (its progress and Cancel are in the Jobs panel)")

    def request(self) -> TuneRequest:
        target = Target.of(str(self.backend.currentData()), str(self.precision.currentData())).name
        return TuneRequest(target, tuple(k for k, c in self.knob_checks.items() if c.isChecked()),
                           self.batch.value() if self.batch.isEnabled() else None, self.sessions.value(),
                           self.warmup.text().strip(), self.iterations.text().strip())

    def _run(self) -> None:
        if not self.problem():
            self.tuneRequested.emit(self.request())

    def show_refusal(self, text: str) -> None:
        self.problem_label.setText(text)
        self.problem_label.setVisible(bool(text))
