"""FP32's card on the scorecard: the input photo and FP32's own answer beside the precisions' cards (the verdict
from what the outputs mean is app.core.measure's `task_verdict`); and the card of a precision still being compared."""

from __future__ import annotations

from PySide6.QtGui import QFont
from PySide6.QtWidgets import QFrame, QLabel, QVBoxLayout, QWidget

from app.core.measure import PRECISION_WORDS
from app.core.results import Answers
from app.core.targets import Target
from app.ui.results.answers_view import PictureLabel, pixmap_from_uri


class ReferenceCard(QFrame):
    """FP32's card beside the precisions': the input photo and FP32's own answer on the sample shown."""

    def __init__(self, answers: Answers, reference: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.answers = answers
        self.setObjectName("precisionCard")
        self.setStyleSheet("#precisionCard { background:white; border:1px solid #dadce0; border-radius:10px; }")
        col = QVBoxLayout(self)
        col.setContentsMargins(14, 12, 14, 12)
        self.title = QLabel("FP32")
        self.blurb = QLabel(f"The reference ({reference}): the input and what the model answers")
        self.blurb.setWordWrap(True)
        self.blurb.setStyleSheet("color:#5f6368;")
        self.photo, self.picture = PictureLabel(), PictureLabel()
        # Without a picture of its own (an input that is not an image, an answer drawn on every card): says so.
        self.no_picture = QLabel("The input is not an image, and FP32's answer is drawn on each precision's card "
                                 "beside that precision's own.")
        self.no_picture.setWordWrap(True)
        self.no_picture.setStyleSheet("color:#5f6368;")
        for w, stretch in ((self.title, 0), (self.blurb, 0), (self.no_picture, 0), (self.photo, 2),
                           (self.picture, 2)):
            col.addWidget(w, stretch)
        col.addStretch(0)
        self.set_sample(0)

    def set_sample(self, sample: int) -> None:
        inputs = self.answers.inputs
        entry = next(iter(self.answers.outputs.values()), None)
        ref = (entry.ref if entry is not None else None) or ()
        self.photo.set_picture(pixmap_from_uri(inputs[sample] if sample < len(inputs) else None))
        self.photo.setVisible(self.photo.has_picture())
        self.picture.set_picture(pixmap_from_uri(ref[sample] if sample < len(ref) else None))
        self.picture.setVisible(self.picture.has_picture())
        self.no_picture.setVisible(not self.photo.has_picture() and not self.picture.has_picture())

    def apply_fonts(self, base: QFont) -> None:
        f = QFont(base)
        f.setPointSizeF((base.pointSizeF() if base.pointSizeF() > 0 else 10.0) * 2.0)
        f.setBold(True)
        self.title.setFont(f)


class PendingCard(QFrame):
    """A precision whose answers are still being computed: its name and what it waits for, where its card goes."""

    def __init__(self, target: str, blurb: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.target = target
        self.setObjectName("precisionCard")
        self.setStyleSheet("#precisionCard { background:white; border:1px dashed #bdc1c6; border-radius:10px; }")
        col = QVBoxLayout(self)
        col.setContentsMargins(14, 12, 14, 12)
        col.setSpacing(6)
        self.title = QLabel(PRECISION_WORDS.get(Target.read(target).precision, target))
        self.title.setStyleSheet("color:#5f6368;")
        self.blurb = QLabel(blurb)
        self.blurb.setWordWrap(True)
        self.blurb.setStyleSheet("color:#5f6368;")
        self.state = QLabel("Comparing with FP32…")
        self.state.setStyleSheet("QLabel { color:#4a4f57; background:#f1f3f4; border-radius:6px; padding:6px 10px; }")
        self.detail = QLabel("Its answers appear here as soon as they are compared; then its speed is measured.")
        self.detail.setWordWrap(True)
        self.detail.setStyleSheet("color:#5f6368;")
        for w in (self.title, self.blurb, self.state, self.detail):
            col.addWidget(w)
        col.addStretch(1)

    def apply_fonts(self, base: QFont) -> None:
        size = base.pointSizeF() if base.pointSizeF() > 0 else 10.0
        for w, factor, bold in ((self.title, 2.0, True), (self.state, 1.7, True)):
            f = QFont(base)
            f.setPointSizeF(size * factor)
            f.setBold(bold)
            w.setFont(f)
