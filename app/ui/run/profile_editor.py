"""The Run panel's TensorRT profile: one MIN:OPT:MAX field per dynamic input, marked where its sizes make the
graph's shapes disagree (app.core.readiness.shape_range), with a button that puts in the nearest valid sizes."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFormLayout, QGroupBox, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

_BAD = "QLineEdit { border: 2px solid #b3261e; border-radius: 3px; background: #fdecea; }"


class ProfileEditor(QGroupBox):
    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("TensorRT profile (dynamic inputs)", parent)
        self.form = QFormLayout(self)
        self.edits: dict[str, QLineEdit] = {}
        self.fix_buttons: dict[str, QPushButton] = {}
        self._fixes: dict[str, str] = {}   # input -> the fixed MIN:OPT:MAX its button puts in
        self.setToolTip("MIN:OPT:MAX shapes for each dynamic input, e.g. 1x3x224x224:8x3x224x224:32x3x224x224; "
                        "empty: the engine takes exactly the input shapes set above")
        self.hide()

    def set_inputs(self, inputs: list, shapes: dict | None = None, metadata: dict | None = None) -> None:
        """One field per input with a dynamic dim; the placeholder is a range from the model's own dims and the input
        shapes set (``shapes``); ``metadata`` (the model's metadata) may give an image size."""
        from app.core.engine import shape_text, suggest_profile
        from app.core.model import dynamic_dims

        while self.form.rowCount():
            self.form.removeRow(0)
        self.edits, self.fix_buttons, self._fixes = {}, {}, {}
        suggested = suggest_profile(list(inputs), shapes, metadata)
        for info in inputs:
            if not dynamic_dims(info):
                continue
            edit = QLineEdit()
            p = suggested[info.name]
            example = ":".join(shape_text(s) for s in (p.min, p.opt, p.max))
            edit.setPlaceholderText(f"MIN:OPT:MAX, e.g. {example}")
            edit.setToolTip(f"Shapes '{info.name}' may take in the engine ({info.shape_text()}), as MIN:OPT:MAX, "
                            f"e.g. {example}")
            edit.editingFinished.connect(self.changed)
            fix = QPushButton("Fix")
            fix.setObjectName(f"profile-fix-{info.name}")
            fix.clicked.connect(lambda _=False, name=info.name: self._apply(name))
            fix.hide()
            row = QWidget()  # the field, and under it (when its sizes break the graph) the button that fixes them
            line = QVBoxLayout(row)
            line.setContentsMargins(0, 0, 0, 0)
            line.setSpacing(2)
            line.addWidget(edit)
            line.addWidget(fix, 0, Qt.AlignmentFlag.AlignLeft)
            self.form.addRow(QLabel(info.name), row)
            self.edits[info.name] = edit
            self.fix_buttons[info.name] = fix
        self.setVisible(bool(self.edits))

    def profile_args(self) -> list[str]:
        """The typed ranges as `--profile` arguments (NAME:MIN:OPT:MAX)."""
        return [f"{name}:{edit.text().strip()}" for name, edit in self.edits.items() if edit.text().strip()]

    def set_problems(self, fixes: dict[str, tuple[str, str]]) -> None:
        """Mark the ranges whose sizes make the graph's shapes disagree ({input: (problem, fixed MIN:OPT:MAX)});
        each gets a button that puts the fixed range in. Ranges not named are unmarked."""
        self._fixes = {name: fixed for name, (_, fixed) in fixes.items()}
        for name, edit in self.edits.items():
            button = self.fix_buttons[name]
            if name not in fixes:
                edit.setStyleSheet("")
                edit.setToolTip(edit.toolTip().split("\n\n")[0])
                button.hide()
                continue
            problem, fixed = fixes[name]
            edit.setStyleSheet(_BAD)
            edit.setToolTip(f"{edit.toolTip().split(chr(10) + chr(10))[0]}\n\nThese sizes break the graph: {problem}")
            button.setText(f"Use {fixed}")
            button.setToolTip(f"Put in the nearest valid sizes: {fixed}")
            button.show()

    def _apply(self, name: str) -> None:
        if name in self._fixes and name in self.edits:
            self.edits[name].setText(self._fixes[name])
            self.changed.emit()
