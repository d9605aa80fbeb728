"""Choose backends, precisions, reference, input data and tolerance; start a comparison or a benchmark.

The actions sit at the top, outside the scrolling form, so they and their refusals are always in sight."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.backends import Availability
from app.core.errors import TrtlabError
from app.core.measure import RESIZE_RULES, InputSource, OutputKind
from app.core.model import OpenedModel
from app.core.targets import Target
from app.ui.run.backends import DEFAULT_PRECISIONS, BackendRows, PrecisionTicks
from app.ui.run.inputs import input_source, output_dims, photo_defaults, photo_source
from app.ui.run.output_kinds_box import OutputKindsBox, read_kinds
from app.ui.run.profile_editor import ProfileEditor
from app.ui.run.requests import BenchRequest, CompareRequest, DiagnoseRequest, JobSettings

SOURCES = [("auto", "Sample photos / random"),
           ("random", "Random data (seeded)"), ("npz", "A .npz / .npy file"), ("folder", "A folder of .npz files"),
           ("images", "A folder of images")]


@dataclass(frozen=True)
class ModelReading:
    """What the Run panel reads from a model: the sample photos fitted to its one image input (None: it has none)
    and each output's inferred kind."""

    photos: object | None
    kinds: dict[str, OutputKind]


def model_photos(opened: OpenedModel) -> ModelReading:
    """`show_model`'s part that reads the model, the sample photos and the outputs' kinds; safe on a worker thread
    (on a 50,000-node model it takes 0.1–0.3 s)."""
    outputs, inputs = _dims(opened)
    return ModelReading(photo_source(opened.summary.inputs, opened.input_shapes, opened.doc.model),
                        read_kinds(opened.doc.model, outputs, inputs))


def _dims(opened: OpenedModel) -> tuple[dict[str, list[int | None]], dict[str, list]]:
    """The outputs' inferred dims and the inputs' dims (the user's shapes, else declared), for reading the outputs'
    kinds."""
    s = opened.summary
    return (output_dims([o.name for o in s.outputs], opened.shapes),
            {i.name: list((opened.input_shapes or {}).get(i.name, i.shape or ())) for i in s.inputs})


class RunPanel(QWidget):
    """Emits `compareRequested(CompareRequest)`, `benchRequested(BenchRequest)` and
    `diagnoseRequested(DiagnoseRequest)` (app.ui.run.requests); the controller adds the model.

    Candidates are every ticked backend × every ticked precision; `refused(text)` says why an action did not
    start (the window shows it as its banner too)."""

    compareRequested = Signal(object)
    benchRequested = Signal(object)
    diagnoseRequested = Signal(object)
    profileChanged = Signal()
    refused = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.plan_trivial = True  # the precision plan changes nothing yet (set by the window)
        self.photo_source = None  # the sample photos fitted to the open model, if it has one image input
        outer = QVBoxLayout(self)
        outer.setContentsMargins(4, 6, 4, 0)
        outer.setSpacing(4)
        outer.addLayout(self._build_actions())
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setStyleSheet("color:#4a4f57;")
        outer.addWidget(self.summary)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.setStyleSheet("color:#b3261e; background:#fdecea; border-radius:4px; padding:4px;")
        self.message.hide()
        outer.addWidget(self.message)

        form = QWidget()
        col = QVBoxLayout(form)
        col.setContentsMargins(0, 0, 4, 6)
        self._build_candidates(col)
        self._build_data(col)
        self.outputs_box = OutputKindsBox()
        col.addWidget(self.outputs_box)
        self._build_calibration(col)
        self.profile_box = ProfileEditor()
        self.profile_box.changed.connect(self.profileChanged)
        col.addWidget(self.profile_box)
        col.addWidget(self._build_engine_box())
        self._build_tolerance(col)
        col.addStretch(1)
        # The settings scroll inside the panel; the actions above them never scroll away.
        self.settings_scroll = QScrollArea()
        self.settings_scroll.setWidgetResizable(True)
        self.settings_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.settings_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.settings_scroll.setWidget(form)
        outer.addWidget(self.settings_scroll, 1)
        self._source_changed()
        self._update_summary()

    # ----------------------------------------------------------------- construction
    def _build_engine_box(self) -> QGroupBox:
        from app.core.engine import DEFAULT_LABEL, RTX_TARGETS

        box = QGroupBox("TensorRT for RTX engines")
        form = QFormLayout(box)
        self.rtx_targets = QLineEdit()
        self.rtx_targets.setPlaceholderText(DEFAULT_LABEL)
        self.rtx_targets.setToolTip("Compute capabilities the engine is built for, separated by commas (from "
                                    f"{', '.join(RTX_TARGETS)}); empty: {DEFAULT_LABEL}. Fewer targets build "
                                    "faster and make a smaller plan.")
        form.addRow("Targets", self.rtx_targets)
        return box

    def rtx_target_list(self) -> list[str]:
        """The typed targets, checked (raises TargetError naming the bad one); [] is RTX's default set."""
        from app.core.engine import parse_targets

        return list(parse_targets(self.rtx_targets.text()))

    def _build_actions(self) -> QHBoxLayout:
        buttons = QHBoxLayout()
        self.compare_button = QPushButton("Compare outputs")
        self.compare_button.setToolTip("Run the reference and every candidate (ticked backends × ticked "
                                       "precisions) on the same inputs (Ctrl+R)")
        self.compare_button.clicked.connect(self._compare)
        self.bench_button = QPushButton("Benchmark")
        self.bench_button.setToolTip("Measure the latency of the reference and every candidate, one after the "
                                     "other (Ctrl+B)")
        self.bench_button.clicked.connect(self._bench)
        self.diagnose_button = QPushButton("Diagnose")
        self.diagnose_button.clicked.connect(self._diagnose)
        for b in (self.compare_button, self.bench_button, self.diagnose_button):
            buttons.addWidget(b)
        return buttons

    def _build_candidates(self, col: QVBoxLayout) -> None:
        box = QGroupBox("Candidates: backends × precisions")
        bl = QVBoxLayout(box)
        self.backend_rows = BackendRows()
        self.checks = self.backend_rows.checks
        self.reasons = self.backend_rows.reasons
        bl.addWidget(self.backend_rows)
        self.precision_ticks = PrecisionTicks()
        self.precision_checks = self.precision_ticks.checks
        bl.addWidget(self.precision_ticks)
        self.backend_rows.changed.connect(self._update_summary)
        self.precision_ticks.changed.connect(self._update_summary)
        form = QFormLayout()
        self.reference = QComboBox()
        self.reference.setToolTip("What every candidate is compared with, and the speed-ups are relative to")
        self.reference.currentTextChanged.connect(self._update_summary)
        form.addRow("Reference", self.reference)
        self.tf32 = QCheckBox("Allow TF32 on CUDA (faster, not strict FP32)")
        form.addRow(self.tf32)
        bl.addLayout(form)
        # The runtime settings Run ▸ Tune Runtime Settings… chose, by the target they apply to (B:P -> B:P@…).
        self.tuned: dict[str, str] = {}
        tuned_row = QHBoxLayout()
        self.tuned_label = QLabel()
        self.tuned_label.setWordWrap(True)
        self.tuned_label.setStyleSheet("color:#1f5fa8;")
        self.tuned_clear = QPushButton("Clear")
        self.tuned_clear.setToolTip("Run every candidate with ONNX Runtime's default settings again")
        self.tuned_clear.clicked.connect(lambda: self.set_tuned({}))
        tuned_row.addWidget(self.tuned_label, 1)
        tuned_row.addWidget(self.tuned_clear)
        bl.addLayout(tuned_row)
        self.set_tuned({})
        col.addWidget(box)

    def set_tuned(self, tuned: dict[str, str]) -> None:
        """The runtime settings each B:P candidate runs with (from a tune), shown under the candidates; {} : none."""
        self.tuned = {str(Target.read(b).base): str(Target.read(t)) for b, t in tuned.items()}
        lines = [f"{b} runs as {t}" for b, t in self.tuned.items()]
        self.tuned_label.setText("Tuned: " + "; ".join(lines) if lines else "")
        self.tuned_label.setVisible(bool(lines))
        self.tuned_clear.setVisible(bool(lines))
        self._update_summary()

    def _build_data(self, col: QVBoxLayout) -> None:
        data = QGroupBox("Input data")
        df = QFormLayout(data)
        self.source = QComboBox()
        for key, text in SOURCES:
            self.source.addItem(text, key)
        self.source.setItemData(0, "trtlab's sample photos for a model with one image input, preprocessed by the "
                                   "model's preset (letterbox for Ultralytics exports, PaddleOCR's rules for its "
                                   "models, else resized with ImageNet's mean and std), shown in the fields below "
                                   "and editable there (the Results caption says how). Else seeded random data.",
                                Qt.ItemDataRole.ToolTipRole)
        df.addRow("Source", self.source)
        path_row = QHBoxLayout()
        self.path = QLineEdit()
        self.path.setPlaceholderText("not needed for random data")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        path_row.addWidget(self.path, 1)
        path_row.addWidget(browse)
        df.addRow("Path", path_row)
        self.seed = QSpinBox()
        self.seed.setRange(0, 2**31 - 1)
        df.addRow("Seed", self.seed)
        self.samples = QSpinBox()
        self.samples.setRange(1, 10_000)
        self.samples.setValue(5)  # trtlab's five sample photos
        df.addRow("Samples", self.samples)
        self.mean = QLineEdit()
        self.mean.setPlaceholderText("e.g. 0.485,0.456,0.406")
        self.std = QLineEdit()
        self.std.setPlaceholderText("e.g. 0.229,0.224,0.225")
        self.layout_combo = QComboBox()
        self.layout_combo.addItems(["NCHW", "NHWC"])
        self.color = QComboBox()
        self.color.addItems(["RGB", "BGR"])
        self.scale = QDoubleSpinBox()
        self.scale.setDecimals(6)
        self.scale.setRange(0.0, 1000.0)
        self.scale.setValue(1 / 255)
        self.preset_label = QLabel("")  # the model's preset the fields below start from, and why
        self.preset_label.setWordWrap(True)
        self.fit = QComboBox()
        self.fit.addItems(list(RESIZE_RULES))
        self.fit.setToolTip("stretch: resized to the input; letterbox: the aspect ratio kept, padded (Ultralytics); "
                            "height: text lines to the input's height, right-padded; limit: resized to the input "
                            "(PaddleOCR's detector)")
        self.pad = QDoubleSpinBox()
        self.pad.setDecimals(1)
        self.pad.setRange(0.0, 255.0)
        self.pad.setToolTip("the padding's pixel value, 0-255 before the scale (Ultralytics: 114)")
        df.addRow("Preset", self.preset_label)
        for label, w in (("Resize", self.fit), ("Padding", self.pad), ("Layout", self.layout_combo),
                         ("Colour order", self.color), ("Scale", self.scale), ("Mean", self.mean), ("Std", self.std)):
            df.addRow(label, w)
        self.image_rows = [self.fit, self.pad, self.layout_combo, self.color, self.scale, self.mean, self.std]
        self.source.currentIndexChanged.connect(self._source_changed)
        col.addWidget(data)

    def _build_calibration(self, col: QVBoxLayout) -> None:
        calib = QGroupBox("INT8 calibration")
        cf = QFormLayout(calib)
        self.calib_method = QComboBox()
        self.calib_method.addItems(["minmax", "entropy", "percentile"])
        self.calib_method.setToolTip("How activation ranges are chosen from the calibration data")
        cf.addRow("Method", self.calib_method)
        self.calib_samples = QSpinBox()
        self.calib_samples.setRange(1, 512)
        self.calib_samples.setValue(16)
        self.calib_samples.setToolTip("Samples of the input data above used to calibrate INT8 nodes")
        cf.addRow("Samples", self.calib_samples)
        col.addWidget(calib)

    def _build_tolerance(self, col: QVBoxLayout) -> None:
        tol = QGroupBox("Pass when")
        tf = QFormLayout(tol)
        self.min_cos = QDoubleSpinBox()
        self.min_cos.setDecimals(6)
        self.min_cos.setRange(0.0, 1.0)
        self.min_cos.setSingleStep(0.0001)
        self.min_cos.setValue(0.999)
        self.min_cos.setToolTip("For outputs judged element-wise (kind tensor or embedding). Masks, boxes, labels and "
                                "text are judged by their answers: mask IoU ≥ 0.9, no box missed or added, the same "
                                "top-1 label, the same decoded text.")
        tf.addRow("cosine ≥", self.min_cos)
        self.iterations = QLineEdit("100")
        self.iterations.setToolTip("Iterations: a count (100) or a time budget (3s)")
        tf.addRow("Benchmark runs", self.iterations)
        col.addWidget(tol)

    # ----------------------------------------------------------------- state
    def set_availability(self, table: dict[str, Availability]) -> None:
        self.reference.blockSignals(True)
        self.reference.clear()
        for name in self.checks:
            if table.get(name, Availability(False)).available:
                self.reference.addItem(f"{name}:fp32")
        self.reference.setCurrentText("ort-cpu:fp32")
        self.reference.blockSignals(False)
        self.backend_rows.set_availability(table)
        if not any(cb.isChecked() for cb in self.checks.values()):
            # Only the CPU here: comparing it with itself still checks that runs are repeatable.
            self.checks["ort-cpu"].setChecked(True)
        self._update_summary()

    def show_model(self, opened: OpenedModel, read: ModelReading | None = None) -> None:
        """The open model's inputs (profile fields, sample photos fitted to it) and what each output means.
        `read`: `model_photos(opened)`, worked out beforehand (off the GUI thread, for a big model)."""
        s = opened.summary
        read = read if read is not None else model_photos(opened)
        self.set_inputs(s.inputs, opened.input_shapes, s.metadata)
        self.set_photo_source(read.photos)
        self.outputs_box.set_model(opened.doc.model, *_dims(opened), inferred=read.kinds)

    def reveal_output_kind(self, output: str) -> None:
        """Scroll to an output's kind and open its list of kinds (the Results view's "change" link)."""
        combo = self.outputs_box.combos.get(output)
        if combo is not None:
            self.settings_scroll.ensureWidgetVisible(combo)
            combo.setFocus()
            combo.showPopup()

    def set_inputs(self, inputs: list, shapes: dict | None = None, metadata: dict | None = None) -> None:
        """One MIN:OPT:MAX field per input with a dynamic dim (for TensorRT engine builds): ProfileEditor."""
        self.inputs = list(inputs)
        self.profile_box.set_inputs(self.inputs, shapes, metadata)

    @property
    def profile_edits(self) -> dict[str, QLineEdit]:
        return self.profile_box.edits

    def profile_args(self) -> list[str]:
        """The typed ranges as `--profile` arguments (NAME:MIN:OPT:MAX)."""
        return self.profile_box.profile_args()

    def _source_changed(self) -> None:
        kind = self.source.currentData()
        self.path.setEnabled(kind not in ("random", "auto"))
        photos = kind == "auto" and getattr(self, "photo_source", None) is not None
        for w in self.image_rows:
            w.setEnabled(kind == "images" or photos)

    def _browse(self) -> None:
        kind = self.source.currentData()
        if kind == "npz":
            path, _ = QFileDialog.getOpenFileName(self, "Input sample", "", "NumPy (*.npz *.npy)")
        else:
            path = QFileDialog.getExistingDirectory(self, "Input folder")
        if path:
            self.path.setText(path)

    def input_source(self) -> dict | None:
        """The chosen input data as InputSource JSON (app.ui.run.inputs); None: seeded random data."""
        return input_source(self)

    def set_photo_source(self, source: object | None) -> None:
        """The sample photos fitted to the open model (None: it has no single image input)."""
        photo_defaults(self, source)
        self._source_changed()

    # ----------------------------------------------------------------- candidates
    def precisions(self) -> list[str]:
        return self.precision_ticks.checked()

    def set_precisions(self, keys: list[str] | tuple[str, ...]) -> None:
        self.precision_ticks.set_checked(keys)

    def candidates(self) -> list[str]:
        """Every ticked backend × every ticked precision, backend by backend."""
        names = [Target(b, p).name for b in self.backend_rows.checked() for p in self.precisions()]
        return [self.tuned.get(n, n) for n in names]  # a tuned B:P runs with the settings its tune chose

    def diagnose_candidate(self) -> str | None:
        """The candidate Diagnose (and the fallback search) takes: the first ticked one that changes the
        precision, else the first (an FP32 candidate only checks that runs repeat)."""
        cands = self.candidates()
        return next((c for c in cands if not Target.read(c).runs_fp32), cands[0] if cands else None)

    def _update_summary(self) -> None:
        cands = self.candidates()
        ref = self.reference.currentText() or "the reference"
        if cands:
            plan = (" (the plan is all FP32 so far: it runs as FP32)"
                    if self.plan_trivial and "plan" in self.precisions() else "")
            self.summary.setText(f"{len(cands)} candidate{'s' if len(cands) != 1 else ''} against {ref}: "
                                 + ", ".join(cands) + plan)
        else:
            self.summary.setText("Tick a backend and a precision below to choose what runs.")
        first = self.diagnose_candidate()
        self.diagnose_button.setToolTip(
            "Measure every layer's error of one candidate against the reference, shown in the Precision panel and "
            "on the graph (Ctrl+D). It takes the first ticked candidate that changes the precision"
            + (f": now {first}." if first else "."))

    def set_plan_trivial(self, trivial: bool) -> None:
        """A plan that starts changing precisions is what the user wants to test: it alone is ticked then; a plan
        back to all FP32 gives back FP16 and INT8 (never FP32 against itself)."""
        if trivial != self.plan_trivial:
            self.set_precisions(list(DEFAULT_PRECISIONS) if trivial else ["plan"])
        self.plan_trivial = trivial
        self._update_summary()

    def show_message(self, text: str) -> None:
        """A refusal next to the buttons (empty: none)."""
        self.message.setText(text)
        self.message.setVisible(bool(text))

    def _refuse(self, text: str) -> None:
        self.show_message(text)
        self.refused.emit(text)

    def job_settings(self) -> JobSettings | None:
        """The settings every job shares, read from the panel; None (and the refusal shown) where the chosen input
        data lacks its path."""
        try:
            src = self.input_source()
            source = InputSource.from_json(src) if src is not None else None  # read once: the jobs take it typed
        except ValueError as exc:
            self._refuse(str(exc))
            return None
        except TrtlabError as exc:
            self._refuse(f"{exc.message} {exc.fix}".strip())
            return None
        self.show_message("")
        return JobSettings(inputs=source, samples=self.samples.value(), tf32=self.tf32.isChecked(),
                           calib_method=self.calib_method.currentText(), calib_samples=self.calib_samples.value(),
                           output_kinds=self.outputs_box.chosen())

    def _checked_candidates(self, what: str) -> list[str] | None:
        cands = self.candidates()
        if not cands:
            missing = "a backend" if not self.backend_rows.checked() else "a precision"
            self._refuse(f"Nothing to {what}: tick {missing} under Candidates.")
            return None
        return cands

    def _compare(self) -> None:
        settings = self.job_settings()
        cands = self._checked_candidates("compare") if settings is not None else None
        if settings is None or cands is None:
            return
        self.compareRequested.emit(CompareRequest(settings, self.reference.currentText(), tuple(cands),
                                                  (f"cos:{self.min_cos.value()}",)))

    def _diagnose(self) -> None:
        settings = self.job_settings()
        cands = self._checked_candidates("diagnose") if settings is not None else None
        candidate = self.diagnose_candidate()
        if settings is None or cands is None or candidate is None:
            return
        self.diagnoseRequested.emit(DiagnoseRequest(settings.with_samples(1), self.reference.currentText(), candidate))

    def _bench(self) -> None:
        settings = self.job_settings()
        if settings is None:
            return
        ref = self.reference.currentText()
        targets = (ref, *[c for c in self.candidates() if c != ref])
        self.benchRequested.emit(BenchRequest(settings, targets, self.iterations.text().strip() or "100", "10"))
