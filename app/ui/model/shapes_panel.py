"""Input shapes for shape inference: one field per input, dynamic dims editable, validated on apply."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFormLayout, QGroupBox, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from app.core import errors
from app.core.engine import suggest_profile
from app.core.model import TensorInfo, dynamic_dims, validate_input_shape


class ShapesPanel(QGroupBox):
    """Edits the model's input shapes; emits a validated {name: dims} mapping."""

    applied = Signal(dict)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Input shapes", parent)
        self._col = QVBoxLayout(self)
        self._form = QFormLayout()
        self._col.addLayout(self._form)
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color:#b3261e;")
        self.error.hide()
        self._col.addWidget(self.error)
        self.apply_button = QPushButton("Apply shapes")
        self.apply_button.setToolTip("Infer every tensor's shape for these input shapes")
        self.apply_button.clicked.connect(self.apply)
        self._col.addWidget(self.apply_button)
        self.inputs: list[TensorInfo] = []
        self.edits: dict[str, QLineEdit] = {}
        self.set_inputs([], {})

    def set_inputs(self, inputs: list[TensorInfo], current: dict[str, tuple[int, ...]]) -> None:
        while self._form.rowCount():
            self._form.removeRow(0)
        self.inputs, self.edits = list(inputs), {}
        suggested = suggest_profile(self.inputs, current)
        for info in inputs:
            edit = QLineEdit()
            dims = current.get(info.name)
            if dims is not None:
                edit.setText("x".join(map(str, dims)))
            edit.setPlaceholderText("x".join(str(d) for d in info.shape) if info.shape is not None else "rank unknown")
            dyn = dynamic_dims(info)
            tip = f"{info.dtype} {info.shape_text()}"
            if dyn and info.name in suggested:
                p = suggested[info.name]  # one shape: the smallest batch, the suggested size elsewhere
                example = "x".join(map(str, (p.min[0], *p.opt[1:])))
                tip += f"; dynamic axes {dyn}: give every dim, e.g. {example}"
            edit.setToolTip(tip)
            edit.returnPressed.connect(self.apply)
            self._form.addRow(QLabel(info.name), edit)
            self.edits[info.name] = edit
        self.error.hide()
        self.setVisible(bool(inputs))

    def values(self) -> dict[str, tuple[int, ...]]:
        """The shapes typed so far, validated; raises ShapeSpecError naming the input."""
        out: dict[str, tuple[int, ...]] = {}
        by_name = {i.name: i for i in self.inputs}
        for name, edit in self.edits.items():
            text = edit.text().strip().lower().replace("×", "x").replace(",", "x").replace(" ", "")
            if not text:
                continue
            parts = text.split("x")
            if not all(p.isdigit() for p in parts):
                raise errors.ShapeSpecError(
                    f"Input '{name}': '{edit.text()}' is not a shape; write dims joined by 'x', e.g. 1x3x224x224.")
            dims = tuple(int(p) for p in parts)
            validate_input_shape(by_name[name], dims)
            out[name] = dims
        return out

    def apply(self) -> None:
        try:
            shapes = self.values()
        except errors.ShapeSpecError as exc:
            self.error.setText(str(exc))
            self.error.show()
            return
        self.error.hide()
        self.applied.emit(shapes)
