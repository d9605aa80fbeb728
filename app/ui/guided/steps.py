"""The guided comparison's three steps as widgets: the model, its input shapes, the precisions (and the run).

Each step only shows and reads its fields; app/ui/guided/flow.py moves between them and starts the jobs."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.core import errors
from app.core.model import TensorInfo, dynamic_dims, validate_input_shape
from app.ui.common.style import pass_font

BIG_BUTTON = "QPushButton { padding:10px 18px; }"
PRIMARY_BUTTON = ("QPushButton { background:#1a73e8; color:white; border:none; border-radius:6px; padding:10px 22px; "
                  "font-weight:600; } QPushButton:hover { background:#1967d2; } "
                  "QPushButton:disabled { background:#a8c7fa; }")
ERROR_STYLE = "color:#a3221b; background:#fdecea; border-radius:6px; padding:6px 10px;"
NOTE_STYLE = "color:#4a4f57;"
# What the precisions step offers: FP32 is the reference and always runs; the ticked ones are what a first
# comparison wants to see (half precision and integers); BF16 is there for those who know they need it. What INT8
# is calibrated on is added once the model and its inputs are known (PrecisionsStep.set_inputs_words).
CHOICES = (("fp16", "FP16", "16-bit floating point: half the memory", True),
           ("bf16", "BF16", "16-bit floating point with FP32's range", False),
           ("int8", "INT8", "8-bit integers", True))


def _heading(text: str) -> QLabel:
    # A size relative to the widget's font (not a fixed one): presentation mode's larger font scales it too.
    return QLabel(f"<span style='font-size:x-large; font-weight:600'>{text}</span>")


def _note(text: str = "") -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setStyleSheet(NOTE_STYLE)
    return label


def _error_label() -> QLabel:
    label = QLabel()
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    label.setStyleSheet(ERROR_STYLE)
    label.hide()
    return label


def show_error(label: QLabel, text: str) -> None:
    label.setText(text)
    label.setVisible(bool(text))


class ModelStep(QWidget):
    """Step 1: the demo model (one click) or a file."""

    demoChosen = Signal()
    fileChosen = Signal(str)
    openChosen = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        col = QVBoxLayout(self)
        col.setContentsMargins(28, 22, 28, 22)
        col.addWidget(_heading("Which model?"))
        self.intro = _note()
        col.addWidget(self.intro)
        row = QHBoxLayout()
        self.open_button = QPushButton("")
        self.open_button.setStyleSheet(PRIMARY_BUTTON)
        self.open_button.clicked.connect(self.openChosen)
        self.open_button.hide()
        row.addWidget(self.open_button)
        self.demo_button = QPushButton("Use the demo model")
        self.demo_button.setStyleSheet(PRIMARY_BUTTON)
        self.demo_button.clicked.connect(self.demoChosen)
        self.file_button = QPushButton("Choose a model file…")
        self.file_button.setStyleSheet(BIG_BUTTON)
        self.file_button.clicked.connect(self._browse)
        row.addWidget(self.demo_button)
        row.addWidget(self.file_button)
        row.addStretch(1)
        col.addLayout(row)
        self.status = _note()
        col.addWidget(self.status)
        self.error = _error_label()
        col.addWidget(self.error)
        col.addStretch(1)
        self.start_dir = ""

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose an ONNX model", self.start_dir,
                                              "ONNX models (*.onnx);;All files (*)")
        if path:
            self.fileChosen.emit(path)

    def set_demo_words(self, demo: str) -> None:
        """The sentence about the demo model (app/ui/guided/words.py: demo_words), then the other choice."""
        self.intro.setText(f"{demo} Or choose an ONNX model of your own.")

    def set_open_model(self, name: str | None) -> None:
        """The model already open in the window, offered first (None: none is)."""
        self.open_button.setText(f"Use {name}" if name else "")
        self.open_button.setVisible(bool(name))
        self.demo_button.setStyleSheet(BIG_BUTTON if name else PRIMARY_BUTTON)

    def set_busy(self, text: str) -> None:
        self.status.setText(text)
        for button in (self.open_button, self.demo_button, self.file_button):
            button.setEnabled(not text)


class ShapesStep(QWidget):
    """Step 2: one field per input, filled with what the model says; only what it leaves open is asked."""

    nextRequested = Signal()
    backRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        col = QVBoxLayout(self)
        col.setContentsMargins(28, 22, 28, 22)
        col.addWidget(_heading("Input shapes"))
        self.intro = _note()
        col.addWidget(self.intro)
        self.grid = QGridLayout()
        self.grid.setHorizontalSpacing(12)
        col.addLayout(self.grid)
        self.error = _error_label()
        col.addWidget(self.error)
        row = QHBoxLayout()
        self.back_button = QPushButton("Back")
        self.back_button.clicked.connect(self.backRequested)
        self.next_button = QPushButton("Next: precisions")
        self.next_button.setStyleSheet(PRIMARY_BUTTON)
        self.next_button.clicked.connect(self.nextRequested)
        row.addWidget(self.back_button)
        row.addStretch(1)
        row.addWidget(self.next_button)
        col.addLayout(row)
        col.addStretch(1)
        self.inputs: list[TensorInfo] = []
        self.edits: dict[str, QLineEdit] = {}

    def set_inputs(self, model_name: str, inputs: list[TensorInfo], known: dict[str, tuple[int, ...]],
                   about: str = "") -> None:
        """Fields for ``inputs``: the shapes already set (``known``), else the guess; empty where a dim
        cannot be guessed. ``about``: what the model is, said first (the demo's description)."""
        while self.grid.count():
            item = self.grid.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        self.inputs, self.edits = list(inputs), {}
        open_dims = 0
        for r, info in enumerate(inputs):
            dims, why = guess_shape(info)
            dims = known.get(info.name, dims)
            edit = QLineEdit("x".join(map(str, dims)) if dims else "")
            edit.setPlaceholderText(f"e.g. {example_shape(info)}")
            edit.setToolTip(f"{info.dtype} {info.shape_text()} in the model")
            edit.returnPressed.connect(self.nextRequested)
            note = _note(why if dims else f"The model leaves {info.shape_text()} open: type every size, "
                                          f"e.g. {example_shape(info)}.")
            open_dims += not dims
            self.grid.addWidget(QLabel(f"<b>{info.name}</b>"), r, 0)
            self.grid.addWidget(edit, r, 1)
            self.grid.addWidget(note, r, 2)
            self.edits[info.name] = edit
        self.grid.setColumnStretch(1, 1)
        self.grid.setColumnStretch(2, 2)
        one = len(inputs) == 1
        self.intro.setText((f"{about} " if about else "")
                           + f"{'It' if about else model_name} takes {len(inputs)} input{'' if one else 's'}. "
                           + (f"{'Its size comes' if one else 'Their sizes come'} from the model: nothing to change "
                              "unless you want another size." if not open_dims else
                              "Fill in the empty fields: the model does not say those sizes."))
        show_error(self.error, "")
        pass_font(self)  # the new rows' style sheets would keep the font they were made with

    def values(self) -> dict[str, tuple[int, ...]]:
        """The typed shapes, checked against the model; raises ShapeSpecError naming the input and the fix."""
        out: dict[str, tuple[int, ...]] = {}
        by_name = {i.name: i for i in self.inputs}
        for name, edit in self.edits.items():
            text = edit.text().strip().lower().replace("×", "x").replace(",", "x").replace(" ", "")
            parts = text.split("x") if text else []
            if not parts or not all(p.isdigit() for p in parts):
                raise errors.ShapeSpecError(
                    f"Input '{name}': '{edit.text()}' is not a shape." if text else f"Input '{name}' needs a shape.",
                    fix=f"Write its sizes joined by 'x', e.g. {example_shape(by_name[name])}.")
            dims = tuple(int(p) for p in parts)
            validate_input_shape(by_name[name], dims)
            out[name] = dims
        return out


def guess_shape(info: TensorInfo) -> tuple[tuple[int, ...] | None, str]:
    """The shape the flow runs, and why: static dims as they are, a dynamic batch (axis 0) set to 1; None when
    another dim is open (only the person knows it)."""
    if info.shape is None:
        return None, ""
    dyn = dynamic_dims(info)
    if not dyn:
        return tuple(int(d) for d in info.shape), "from the model"
    if dyn == [0] and len(info.shape) > 1:
        return (1, *(int(d) for d in info.shape[1:])), "from the model, one sample at a time (batch 1)"
    return None, ""


def example_shape(info: TensorInfo) -> str:
    if info.shape is None:
        return "1x3x224x224"
    from app.core.engine import suggest_profile

    p = suggest_profile([info])[info.name]
    return "x".join(map(str, (p.min[0], *p.opt[1:])))


class PrecisionsStep(QWidget):
    """Step 3: which precisions, optional images, and the one Run button (with progress and Cancel)."""

    runRequested = Signal()
    cancelRequested = Signal()
    backRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        col = QVBoxLayout(self)
        col.setContentsMargins(28, 22, 28, 22)
        self._inputs_text = ("", "")  # set_inputs_words: what the comparison runs on, INT8's calibration
        self.images_wanted = True
        self.heading = _heading("Which precisions?")
        col.addWidget(self.heading)
        self.intro = _note("Each one runs on the same inputs as FP32, the reference: trtlab compares their answers "
                           "and times them.")
        col.addWidget(self.intro)
        ref = QCheckBox("FP32 — the reference (always runs)")
        ref.setChecked(True)
        ref.setEnabled(False)
        col.addWidget(ref)
        self.reference_box = ref
        self.checks: dict[str, QCheckBox] = {}
        for key, text, tip, ticked in CHOICES:
            cb = QCheckBox(f"{text} — {tip}")
            cb.setChecked(ticked)
            cb.toggled.connect(self._update_run)
            cb.toggled.connect(self._update_inputs)
            col.addWidget(cb)
            self.checks[key] = cb
        # What the comparison runs on, and INT8's calibration data: the flow fills it from the job's own choice.
        self.inputs_note = _note()
        self.inputs_note.setContentsMargins(0, 8, 0, 0)
        col.addWidget(self.inputs_note)
        self.images_box = QWidget()
        ib = QVBoxLayout(self.images_box)
        ib.setContentsMargins(0, 4, 0, 0)
        ib.addWidget(QLabel("<b>Your images</b> (optional)"))
        row = QHBoxLayout()
        self.folder = QLineEdit()
        self.folder.setToolTip("A folder of your images: the comparison runs on them and INT8 is calibrated on them")
        browse = QPushButton("Choose folder…")
        browse.clicked.connect(self._browse)
        row.addWidget(self.folder, 1)
        row.addWidget(browse)
        ib.addLayout(row)
        col.addWidget(self.images_box)
        actions = QHBoxLayout()
        self.back_button = QPushButton("Back")
        self.back_button.clicked.connect(self.backRequested)
        self.run_button = QPushButton("Run")
        self.run_button.setStyleSheet(PRIMARY_BUTTON)
        self.run_button.setMinimumWidth(160)
        self.run_button.clicked.connect(self.runRequested)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setStyleSheet(BIG_BUTTON)
        self.cancel_button.clicked.connect(self.cancelRequested)
        self.cancel_button.hide()
        actions.addWidget(self.back_button)
        actions.addStretch(1)
        actions.addWidget(self.cancel_button)
        actions.addWidget(self.run_button)
        col.addLayout(actions)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(False)
        self.progress.hide()
        col.addWidget(self.progress)
        self.status = _note()
        col.addWidget(self.status)
        self.error = _error_label()
        col.addWidget(self.error)
        col.addStretch(1)

    def _browse(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "A folder of images")
        if path:
            self.folder.setText(path)

    def set_inputs_words(self, runs_on: str, calibration: str, int8: str, default: str) -> None:
        """What the comparison runs on (``runs_on``), what INT8 is calibrated on (``calibration``, said while INT8
        is ticked; ``int8``: the same in a few words, on its tick box), and what runs with no folder
        (``default``, the folder field's placeholder)."""
        self._inputs_text = (runs_on, calibration)
        key, text, tip, _ = next(c for c in CHOICES if c[0] == "int8")
        self.checks[key].setText(f"{text} — {tip}, {int8}")
        self.folder.setPlaceholderText(f"no folder: {default}")
        self._update_inputs()

    def _update_inputs(self) -> None:
        runs_on, calibration = self._inputs_text
        self.inputs_note.setText(runs_on + (f" {calibration}" if calibration and "int8" in self.precisions() else ""))

    def _update_run(self) -> None:
        self.run_button.setEnabled(bool(self.precisions()) and not self.cancel_button.isVisible())

    def precisions(self) -> list[str]:
        return [k for k, cb in self.checks.items() if cb.isChecked()]

    def set_compact(self, compact: bool) -> None:
        """While the answers come in below it: only the progress, what runs now and Cancel (the choices stay as
        they were and come back when the run ends)."""
        for w in (self.heading, self.intro, self.reference_box, *self.checks.values(), self.inputs_note,
                  self.back_button, self.run_button):
            w.setVisible(not compact)
        self.images_box.setVisible(not compact and self.images_wanted)

    def set_images_wanted(self, wanted: bool) -> None:
        """Whether the model takes images, so that a folder of them may be chosen."""
        self.images_wanted = wanted
        self.images_box.setVisible(wanted)

    def set_running(self, running: bool) -> None:
        self.cancel_button.setVisible(running)
        self.progress.setVisible(running)
        self.back_button.setEnabled(not running)
        self.images_box.setEnabled(not running)
        for cb in self.checks.values():
            cb.setEnabled(not running)
        self._update_run()
        if running:
            self.progress.setValue(0)
            show_error(self.error, "")
