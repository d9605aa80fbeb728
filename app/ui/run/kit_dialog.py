"""File ▸ Export Run Kit…: the folder the kit goes to and the precision its variant runs in (or the current plan).
The run controller writes the kit (`RunController.start_kit`: the variant job, then `finish_kit`)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

PRECISIONS = (("The current plan", ""), ("FP16", "fp16"), ("BF16", "bf16"), ("INT8", "int8"), ("FP32", "fp32"))


class KitDialog(QDialog):
    """Asks where the kit goes and what it runs; `kitRequested(folder, precision)` ("": the plan) on OK. The
    dialog stays open with the reason when the controller refuses (`show_refusal`)."""

    kitRequested = Signal(str, str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setModal(True)
        self.setMinimumWidth(560)  # the folder's whole path in sight
        col = QVBoxLayout(self)
        intro = QLabel("A folder that builds and runs this model with TensorRT on any GPU machine: the variant graph "
                       "(its precision written in the graph), the input samples, run_kit.py and a README. Run "
                       "<code>python run_kit.py</code> there, then bring the folder back (File ▸ Import TensorRT "
                       "Results…).")
        intro.setWordWrap(True)
        col.addWidget(intro)
        form = QFormLayout()
        row = QHBoxLayout()
        self.folder = QLineEdit()
        self.folder.setPlaceholderText("a new or empty folder")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        row.addWidget(self.folder, 1)
        row.addWidget(browse)
        form.addRow("Folder:", row)
        self.precision = QComboBox()
        for text, value in PRECISIONS:
            self.precision.addItem(text, value)
        form.addRow("Runs in:", self.precision)
        col.addLayout(form)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setStyleSheet("color:#9a3b00;")
        self.message.hide()
        col.addWidget(self.message)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        ok = buttons.button(QDialogButtonBox.StandardButton.Ok)
        if ok is not None:
            ok.setText("Write Kit")
        buttons.accepted.connect(self._ok)
        buttons.rejected.connect(self.reject)
        col.addWidget(buttons)

    def set_model(self, model: Path, plan_trivial: bool) -> None:
        """A model to write a kit for: the folder proposed beside it, the plan offered when it plans anything."""
        if not self.folder.text():
            self.folder.setText(str(model.with_name(f"{model.stem}-kit")))
        self.precision.setCurrentIndex(1 if plan_trivial else 0)
        self.message.hide()

    def chosen(self) -> tuple[str, str]:
        return self.folder.text().strip(), str(self.precision.currentData() or "")

    def show_refusal(self, text: str) -> None:
        self.message.setText(text)
        self.message.show()

    def _browse(self) -> None:
        start = self.folder.text() or str(Path.home())
        folder = QFileDialog.getExistingDirectory(self, "Folder for the run kit", start)
        if folder:
            self.folder.setText(folder)

    def _ok(self) -> None:
        folder, precision = self.chosen()
        if not folder:
            self.show_refusal("Give a folder for the kit.")
            return
        self.kitRequested.emit(folder, precision)
