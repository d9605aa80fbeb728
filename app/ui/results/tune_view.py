"""The Results dock's Tuning tab: a `trtlab tune` result as a table of the combinations tried (median over the
sessions, spread, speed-up, the answers' verdict), the choice above it, and "Use these settings", which hands the
chosen target to the Run panel (its B:P candidates then run with them)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.core.results import TuneResult, TuneTrial

COLUMNS = ("Settings", "Median ms", "Spread", "Speed-up", "Answers")
CHOSEN_BG, REFUSED_BG = QColor("#e3f4e6"), QColor("#fbe4e2")
_STATUS = {"refused": "refused", "answers_differ": "answers changed", "failed": "failed"}


def trial_cells(t: TuneTrial) -> list[str]:
    """A combination's row as the table shows it."""
    settings = ", ".join(f"{k}={v}" for k, v in t.knobs.items()) or "its own settings"
    answers = (t.verdict or "the reference: every other row is judged against its answers") if t.status == "ok" \
        else f"{_STATUS.get(t.status, t.status)}: {t.message or t.verdict}"
    return [settings, "—" if t.median_ms is None else f"{t.median_ms:.3f}",
            "—" if t.spread is None else f"±{50 * t.spread:.1f} %",
            "—" if t.speedup is None else f"{t.speedup:.2f}×", answers]


class TuneView(QWidget):
    """Emits `useSettings(base, tuned)`: the target tuned (B:P) and the chosen one (B:P@…)."""

    useSettings = Signal(str, str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc: TuneResult | None = None
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        top = QHBoxLayout()
        self.choice = QLabel("Run ▸ Tune Runtime Settings… tries ONNX Runtime's own settings on one target.")
        self.choice.setWordWrap(True)
        self.choice.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        top.addWidget(self.choice, 1)
        self.use_button = QPushButton("Use these settings")
        self.use_button.setToolTip("The Run panel's candidate on this backend and precision runs with the chosen "
                                   "settings from now on (kept in the project)")
        self.use_button.setEnabled(False)
        self.use_button.clicked.connect(self._use)
        top.addWidget(self.use_button)
        lay.addLayout(top)
        self.facts = QLabel()
        self.facts.setWordWrap(True)
        self.facts.setStyleSheet("color:#4a4f57;")
        lay.addWidget(self.facts)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(len(COLUMNS) - 1, QHeaderView.ResizeMode.Stretch)
        lay.addWidget(self.table, 1)

    def set_tune(self, doc: TuneResult | None) -> None:
        self.doc = doc
        self.table.setRowCount(0)
        if doc is None:
            self.choice.setText("Run ▸ Tune Runtime Settings… tries ONNX Runtime's own settings on one target.")
            self.facts.setText("")
            self.use_button.setEnabled(False)
            return
        better = doc.best != doc.default.target and doc.best_speedup is not None
        self.choice.setText(f"<b>{doc.best}</b>: {doc.best_speedup:.2f}× its own settings at batch {doc.batch}, "
                            "answers unchanged." if better else
                            f"No setting beat {doc.target}'s own settings with the answers unchanged.")
        self.facts.setText(f"{doc.target} at batch {doc.batch}, {doc.mode.replace('_', '-')} timing; each "
                           f"combination timed in {doc.sessions} session(s): the median of their medians, the spread "
                           "± half the slowest less the fastest.")
        self.use_button.setEnabled(better)
        for t in (doc.default, *doc.trials):
            row = self.table.rowCount()
            self.table.insertRow(row)
            for col, text in enumerate(trial_cells(t)):
                item = QTableWidgetItem(text)
                if col in (1, 2, 3):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if t.target == doc.best and better:
                    item.setBackground(CHOSEN_BG)
                elif t.status != "ok":
                    item.setBackground(REFUSED_BG)
                if col == len(COLUMNS) - 1 and t.message:
                    item.setToolTip(t.message)
                self.table.setItem(row, col, item)

    def _use(self) -> None:
        if self.doc is not None:
            self.useSettings.emit(self.doc.target, self.doc.best)
