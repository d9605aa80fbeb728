"""The Run panel's backend rows and precision ticks: one line per backend, candidates = backends × precisions."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPainter, QPaintEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from app.backends import BACKEND_NAMES, Availability
from app.core.measure import emulation

# The precision plan first: it is what the Precision panel edits; then one precision for every node.
CANDIDATE_PRECISIONS = (("plan", "Plan", "The precision plan made in the Precision panel"),
                        ("fp32", "FP32", "Every node in FP32 (the model as it is)"),
                        ("fp16", "FP16", "Every node in FP16, inputs and outputs kept FP32"),
                        ("bf16", "BF16", "Every node in BF16, inputs and outputs kept FP32"),
                        ("int8", "INT8", "Every node quantized to INT8 (calibrated on the input data)"))


class ElidedLabel(QLabel):
    """A one-line label that ends in "…" when narrower than its text; ``text()`` keeps the whole text."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setMinimumWidth(20)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt's name
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.setFont(self.font())
        shown = self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight, self.contentsRect().width())
        painter.drawText(self.contentsRect(), int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft), shown)
        painter.end()


class BackendRows(QWidget):
    """A checkbox per backend; an unavailable one is greyed, with its reason on the same line (elided), the
    whole reason and the install command on hover and under "details"."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        col.setSpacing(2)
        self.checks: dict[str, QCheckBox] = {}
        self.reasons: dict[str, ElidedLabel] = {}
        self.links: dict[str, QLabel] = {}
        self.details: dict[str, QLabel] = {}
        for name in BACKEND_NAMES:
            row = QHBoxLayout()
            row.setSpacing(6)
            cb = QCheckBox(name)
            cb.toggled.connect(self.changed)
            why = ElidedLabel()
            why.setStyleSheet("color:#7a7f87;")
            link = QLabel('<a href="details">details</a>')
            link.setToolTip("Show the whole reason and how to install it")
            link.linkActivated.connect(lambda _=None, n=name: self.toggle_details(n))
            more = QLabel()
            more.setWordWrap(True)
            more.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)  # to copy the command
            more.setStyleSheet("color:#4a4f57; font-size:11px; margin-left:22px;")
            more.hide()
            row.addWidget(cb)
            row.addWidget(why, 1)
            row.addWidget(link)
            col.addLayout(row)
            col.addWidget(more)
            self.checks[name], self.reasons[name], self.links[name], self.details[name] = cb, why, link, more

    def toggle_details(self, name: str) -> None:
        more = self.details[name]
        more.setVisible(not more.isVisible() and bool(more.text()))
        self.links[name].setText(f'<a href="details">{"hide" if more.isVisible() else "details"}</a>')

    def set_availability(self, table: dict[str, Availability]) -> None:
        for name, cb in self.checks.items():
            a = table.get(name, Availability(False, "unknown"))
            cb.blockSignals(True)
            cb.setEnabled(a.available)
            cb.setChecked(a.available and name != "ort-cpu")
            cb.blockSignals(False)
            why, more, link = self.reasons[name], self.details[name], self.links[name]
            reason = "" if a.available else (a.reason or "not available here")
            why.setText(reason)
            full = reason + (f"\nInstall: {a.install_hint}" if a.install_hint and not a.available else "")
            more.setText(full)
            why.setToolTip(full)
            cb.setToolTip(full or "available")
            why.setVisible(not a.available)
            link.setVisible(not a.available)
            if a.available or not more.text():
                more.hide()
                link.setText('<a href="details">details</a>')
        self.changed.emit()

    def checked(self) -> list[str]:
        return [n for n, cb in self.checks.items() if cb.isChecked() and cb.isEnabled()]


DEFAULT_PRECISIONS = ("fp16", "int8")


class PrecisionTicks(QWidget):
    """A tick per precision: every ticked one runs on every ticked backend."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(10)
        self.checks: dict[str, QCheckBox] = {}
        for i, (key, text, tip) in enumerate(CANDIDATE_PRECISIONS):
            cb = QCheckBox(text)
            cb.setToolTip(tip + self._emulation_tip(key))
            # FP16 and INT8 against FP32 by default: what people come to compare (never FP32 against itself).
            cb.setChecked(key in DEFAULT_PRECISIONS)
            cb.toggled.connect(self.changed)
            grid.addWidget(cb, i // 3, i % 3)
            self.checks[key] = cb

    @staticmethod
    def _emulation_tip(precision: str) -> str:
        e = emulation("ort-cpu", precision)
        return f".\nOn ort-cpu: {e.sentence}." if e else ""

    def checked(self) -> list[str]:
        return [k for k, cb in self.checks.items() if cb.isChecked()]

    def set_checked(self, keys: list[str] | tuple[str, ...]) -> None:
        for k, cb in self.checks.items():
            cb.setChecked(k in keys)


class TargetGrid(QWidget):
    """Targets as a backend × precision grid of ticks (the dialogs' candidates: Evaluate on Dataset…, Benchmark
    Sweep…): a row per backend that runs here, a column per precision; `changed` when a tick changes. `checks` (target
    → its tick) is one dict for the widget's life, refilled by `set_backends`."""

    changed = Signal()

    def __init__(self, precisions: tuple[tuple[str, str], ...], spacing: int = 12,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.precisions = precisions
        self.grid = QGridLayout(self)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setHorizontalSpacing(spacing)
        self.checks: dict[str, QCheckBox] = {}

    def set_backends(self, backends: list[str], default: tuple[str, ...] | set[str]) -> None:
        """A row per backend; the ticks kept from before (the first time: `default`)."""
        ticked = {t for t, cb in self.checks.items() if cb.isChecked()} if self.checks else set(default)
        for w in [*self.checks.values(), *self.findChildren(QLabel)]:
            self.grid.removeWidget(w)
            w.deleteLater()
        self.checks.clear()
        for c, (_key, text) in enumerate(self.precisions):
            head = QLabel(text)
            head.setAlignment(Qt.AlignmentFlag.AlignCenter)
            self.grid.addWidget(head, 0, c + 1)
        for r, backend in enumerate(backends):
            self.grid.addWidget(QLabel(backend), r + 1, 0)
            for c, (key, text) in enumerate(self.precisions):
                target = f"{backend}:{key}"
                cb = QCheckBox()
                cb.setToolTip(f"{target}: {text} on {backend}")
                cb.setChecked(target in ticked)
                cb.toggled.connect(lambda _on: self.changed.emit())
                self.grid.addWidget(cb, r + 1, c + 1, Qt.AlignmentFlag.AlignCenter)
                self.checks[target] = cb
