"""What each output means, shown and editable: a row per model output with its kind (inferred from the graph and
its shape, with the reason in the tooltip) in a combo box. "auto" keeps trtlab's reading; any other choice is sent
with every comparison, diagnosis and fallback search as the output's kind (``--output-kind NAME=KIND``)."""

from __future__ import annotations

import onnx
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QFormLayout, QGroupBox, QLabel, QWidget

from app.core.measure import OutputKind, OutputKindError, infer_output_kinds

# The choices beside "auto": each kind in its usual reading, and the other layouts worth one click.
CHOICES = ("image", "image:nhwc", "classes", "detections", "detections:cxcywh", "yolo:v8", "yolo:v5", "sequence",
           "sequence:tnv", "audio", "embedding", "tensor")


class OutputKindsBox(QGroupBox):
    """A combo box per output: "auto (image)" or a kind the user chose."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Outputs: what they mean", parent)
        self.setToolTip("Each output is judged by what it means: masks by their overlap, boxes by matching, labels "
                        "by top-1, text by its decoded characters; embeddings and other tensors by cosine. "
                        "trtlab infers the kind; choose another where it guessed wrong.")
        self.form = QFormLayout(self)
        self.combos: dict[str, QComboBox] = {}
        self.inferred: dict[str, OutputKind] = {}
        self.empty = QLabel("Open a model to see its outputs.")
        self.empty.setStyleSheet("color:#5f6368;")
        self.form.addRow(self.empty)

    def set_model(self, model: onnx.ModelProto, output_dims: dict[str, list[int | None]],
                  input_dims: dict[str, list], inferred: dict[str, OutputKind] | None = None) -> None:
        """The model's outputs with their inferred kinds; choices made for outputs of the same name are kept.
        `inferred`: `read_kinds(model, output_dims, input_dims)`, worked out beforehand (off the GUI thread: on a
        50,000-node model it takes 100–200 ms)."""
        kept = self.kinds()
        while self.form.rowCount():
            self.form.removeRow(0)
        self.combos = {}
        self.inferred = read_kinds(model, output_dims, input_dims) if inferred is None else inferred
        if not self.inferred:
            self.empty = QLabel("Open a model to see its outputs.")
            self.form.addRow(self.empty)
        for name, kind in self.inferred.items():
            combo = QComboBox()
            # Narrow by default: a long kind must not widen the Run panel past its dock.
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(10)
            combo.addItem(f"auto ({kind.text()})", "")
            for choice in CHOICES:
                combo.addItem(choice, choice)
            combo.setToolTip(f"Inferred: {kind.text()} — {kind.reason}")
            if name in kept and combo.findData(kept[name]) >= 0:
                combo.setCurrentIndex(combo.findData(kept[name]))
            combo.currentIndexChanged.connect(self.changed)
            label = QLabel(name if len(name) <= 16 else name[:14] + "…")
            label.setToolTip(name)
            self.form.addRow(label, combo)
            self.combos[name] = combo

    def kinds(self) -> dict[str, str]:
        """The kinds the user chose ({output: kind} as text, what a project saves); outputs left on "auto" are not
        listed."""
        return {name: str(c.currentData()) for name, c in self.combos.items() if c.currentData()}

    def chosen(self) -> dict[str, OutputKind]:
        """The kinds the user chose, parsed (every choice the combos offer is a kind): what a job is given."""
        return {name: OutputKind.parse(text) for name, text in self.kinds().items()}

    def set_kinds(self, kinds: dict[str, str]) -> None:
        """Saved choices back (a project's); a kind this list does not offer is added as it is."""
        for name, combo in self.combos.items():
            want = (kinds or {}).get(name, "")
            if want and combo.findData(want) < 0 and _readable(want):
                combo.addItem(want, want)
            index = combo.findData(want)
            combo.setCurrentIndex(index if index >= 0 else 0)

    def kind_of(self, name: str) -> str:
        """The kind an output will be judged as (the user's, else inferred)."""
        chosen = self.kinds().get(name)
        if chosen:
            return chosen
        k = self.inferred.get(name)
        return k.text() if k else ""


def read_kinds(model: onnx.ModelProto, output_dims: dict[str, list[int | None]],
               input_dims: dict[str, list]) -> dict[str, OutputKind]:
    """Each output's inferred kind, as `OutputKindsBox.set_model` shows them ({} where the rules cannot read the
    model); safe on a worker thread."""
    try:
        return infer_output_kinds(model, output_dims, input_dims)
    except Exception:  # noqa: BLE001 - a model the rules cannot read still compares element-wise
        return {}


def _readable(text: str) -> bool:
    """A saved kind trtlab can read (a project from another version may name one it cannot)."""
    try:
        OutputKind.parse(text)
    except OutputKindError:
        return False
    return True
