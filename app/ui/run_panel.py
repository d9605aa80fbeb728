"""Choose backends, reference, input data and tolerance; start a comparison or a benchmark."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.backends import BACKEND_NAMES, Availability

SOURCES = [("random", "Random data (seeded)"), ("npz", "A .npz / .npy file"), ("folder", "A folder of .npz files"),
           ("images", "A folder of images")]


CANDIDATE_PRECISIONS = (("plan", "the precision plan"), ("fp32", "FP32"), ("fp16", "FP16 everywhere"),
                        ("bf16", "BF16 everywhere"), ("int8", "INT8 everywhere"))


class RunPanel(QWidget):
    """Emits `compareRequested(params)` / `benchRequested(params)` with JSON-safe job parameters (model added later)."""

    compareRequested = Signal(dict)
    benchRequested = Signal(dict)
    diagnoseRequested = Signal(dict)
    profileChanged = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        col = QVBoxLayout(self)
        box = QGroupBox("Backends")
        bl = QVBoxLayout(box)
        self.checks: dict[str, QCheckBox] = {}
        self.reasons: dict[str, QLabel] = {}
        for name in BACKEND_NAMES:
            cb = QCheckBox(f"{name}:plan")
            self.checks[name] = cb
            bl.addWidget(cb)
            why = QLabel()
            why.setWordWrap(True)
            why.setStyleSheet("color:#7a7f87; font-size:11px; margin-left:22px;")
            why.hide()
            self.reasons[name] = why
            bl.addWidget(why)
        form = QFormLayout()
        self.precision = QComboBox()
        for key, text in CANDIDATE_PRECISIONS:
            self.precision.addItem(text, key)
        self.precision.setToolTip("What the checked backends run: the precision plan (Precision panel) or one "
                                  "precision for every node")
        self.precision.currentIndexChanged.connect(self._relabel)
        form.addRow("Candidates run", self.precision)
        self.reference = QComboBox()
        form.addRow("Reference", self.reference)
        self.tf32 = QCheckBox("Allow TF32 on CUDA (faster, not strict FP32)")
        form.addRow(self.tf32)
        bl.addLayout(form)
        col.addWidget(box)

        data = QGroupBox("Input data")
        df = QFormLayout(data)
        self.source = QComboBox()
        for key, text in SOURCES:
            self.source.addItem(text, key)
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
        self.samples.setValue(4)
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
        for label, w in (("Layout", self.layout_combo), ("Colour order", self.color), ("Scale", self.scale),
                         ("Mean", self.mean), ("Std", self.std)):
            df.addRow(label, w)
        self.image_rows = [self.layout_combo, self.color, self.scale, self.mean, self.std]
        self.source.currentIndexChanged.connect(self._source_changed)
        col.addWidget(data)

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

        self.profile_box = QGroupBox("TensorRT profile (dynamic inputs)")
        self.profile_form = QFormLayout(self.profile_box)
        self.profile_edits: dict[str, QLineEdit] = {}
        self.profile_box.setToolTip("MIN:OPT:MAX shapes for each dynamic input, e.g. 1x3x224x224:8x3x224x224:"
                                    "32x3x224x224; empty: the engine takes exactly the input shapes set above")
        self.profile_box.hide()
        col.addWidget(self.profile_box)

        tol = QGroupBox("Pass when")
        tf = QFormLayout(tol)
        self.min_cos = QDoubleSpinBox()
        self.min_cos.setDecimals(6)
        self.min_cos.setRange(0.0, 1.0)
        self.min_cos.setSingleStep(0.0001)
        self.min_cos.setValue(0.999)
        tf.addRow("cosine ≥", self.min_cos)
        self.iterations = QLineEdit("100")
        self.iterations.setToolTip("Iterations: a count (100) or a time budget (3s)")
        tf.addRow("Benchmark runs", self.iterations)
        col.addWidget(tol)

        buttons = QHBoxLayout()
        self.compare_button = QPushButton("Compare outputs")
        self.compare_button.setToolTip("Run the reference and each checked backend on the same inputs (Ctrl+R)")
        self.compare_button.clicked.connect(self._compare)
        self.bench_button = QPushButton("Benchmark")
        self.bench_button.setToolTip("Measure the latency of the reference and each checked backend (Ctrl+B)")
        self.bench_button.clicked.connect(self._bench)
        self.diagnose_button = QPushButton("Diagnose")
        self.diagnose_button.setToolTip("Measure every layer's error of the first checked backend against the "
                                        "reference, shown in the Precision panel and on the graph (Ctrl+D)")
        self.diagnose_button.clicked.connect(self._diagnose)
        buttons.addWidget(self.compare_button)
        buttons.addWidget(self.bench_button)
        buttons.addWidget(self.diagnose_button)
        col.addLayout(buttons)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setStyleSheet("color:#b3261e;")
        col.addWidget(self.message)
        col.addStretch(1)
        self._source_changed()

    def set_availability(self, table: dict[str, Availability]) -> None:
        self.reference.clear()
        for name, cb in self.checks.items():
            a = table.get(name, Availability(False, "unknown"))
            cb.setEnabled(a.available)
            cb.setChecked(a.available and name != "ort-cpu")
            why = self.reasons[name]
            why.setText("" if a.available else f"{a.reason} {('Install: ' + a.install_hint) if a.install_hint else ''}")
            why.setVisible(not a.available)
            cb.setToolTip(why.text() or "available")
            if a.available:
                self.reference.addItem(f"{name}:fp32")
        self.reference.setCurrentText("ort-cpu:fp32")
        if not any(cb.isChecked() for cb in self.checks.values()):
            # Only the CPU here: comparing it with itself still checks that runs are repeatable.
            self.checks["ort-cpu"].setChecked(True)

    def set_inputs(self, inputs: list) -> None:
        """One MIN:OPT:MAX field per input with a dynamic dim (for TensorRT engine builds)."""
        from app.core.shapes import dynamic_dims

        while self.profile_form.rowCount():
            self.profile_form.removeRow(0)
        self.profile_edits = {}
        self.inputs = list(inputs)
        for info in inputs:
            if not dynamic_dims(info):
                continue
            edit = QLineEdit()
            edit.setPlaceholderText("MIN:OPT:MAX, e.g. " + ":".join(
                "x".join(str(d) if isinstance(d, int) and d > 0 else str(n) for d in (info.shape or ()))
                for n in (1, 8, 32)))
            edit.editingFinished.connect(self.profileChanged)
            self.profile_form.addRow(QLabel(info.name), edit)
            self.profile_edits[info.name] = edit
        self.profile_box.setVisible(bool(self.profile_edits))

    def profile_args(self) -> list[str]:
        """The typed ranges as `--profile` arguments (NAME:MIN:OPT:MAX)."""
        return [f"{name}:{edit.text().strip()}" for name, edit in self.profile_edits.items() if edit.text().strip()]

    def _source_changed(self) -> None:
        kind = self.source.currentData()
        self.path.setEnabled(kind != "random")
        for w in self.image_rows:
            w.setEnabled(kind == "images")

    def _browse(self) -> None:
        kind = self.source.currentData()
        if kind == "npz":
            path, _ = QFileDialog.getOpenFileName(self, "Input sample", "", "NumPy (*.npz *.npy)")
        else:
            path = QFileDialog.getExistingDirectory(self, "Input folder")
        if path:
            self.path.setText(path)

    def input_source(self) -> dict:
        kind = self.source.currentData()
        src: dict[str, object] = {"kind": kind, "seed": self.seed.value()}
        if kind != "random":
            if not self.path.text().strip():
                raise ValueError("Choose a file or folder for the input data (or use random data).")
            src["path"] = self.path.text().strip()
        if kind == "images":
            pre: dict[str, object] = {"layout": self.layout_combo.currentText(), "color": self.color.currentText(),
                                      "scale": self.scale.value()}
            for key, edit in (("mean", self.mean), ("std", self.std)):
                if edit.text().strip():
                    try:
                        pre[key] = [float(v) for v in edit.text().split(",")]
                    except ValueError as exc:
                        raise ValueError(f"{key.capitalize()} must be numbers separated by commas.") from exc
            src["preprocess"] = pre
        return src

    def candidates(self) -> list[str]:
        p = self.precision.currentData()
        return [f"{n}:{p}" for n, cb in self.checks.items() if cb.isChecked()]

    def _relabel(self) -> None:
        p = self.precision.currentData()
        for name, cb in self.checks.items():
            cb.setText(f"{name}:{p}")

    def _common(self) -> dict | None:
        try:
            src = self.input_source()
        except ValueError as exc:
            self.message.setText(str(exc))
            return None
        self.message.setText("")
        return {"inputs": src, "samples": self.samples.value(), "options": {"tf32": self.tf32.isChecked()},
                "calib_method": self.calib_method.currentText(), "calib_samples": self.calib_samples.value()}

    def _compare(self) -> None:
        params = self._common()
        if params is None:
            return
        cands = self.candidates()
        if not cands:
            self.message.setText("Check at least one backend to compare with the reference.")
            return
        params.update({"reference": self.reference.currentText(), "candidates": cands,
                       "tolerances": [f"cos:{self.min_cos.value()}"]})
        self.compareRequested.emit(params)

    def _diagnose(self) -> None:
        params = self._common()
        if params is None:
            return
        cands = self.candidates()
        if not cands:
            self.message.setText("Check the backend to diagnose.")
            return
        params.update({"reference": self.reference.currentText(), "candidate": cands[0], "samples": 1})
        self.diagnoseRequested.emit(params)

    def _bench(self) -> None:
        params = self._common()
        if params is None:
            return
        ref = self.reference.currentText()
        targets = [ref, *[c for c in self.candidates() if c != ref]]
        params.update({"targets": targets, "iterations": self.iterations.text().strip() or "100", "warmup": "10"})
        self.benchRequested.emit(params)

