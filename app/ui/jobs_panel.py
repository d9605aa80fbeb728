"""Running and finished jobs: progress, elapsed time, Cancel, and the selected job's log."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QHeaderView, QPlainTextEdit, QProgressBar, QPushButton, QSplitter, QTableWidget, QTableWidgetItem, QVBoxLayout,
    QWidget,
)

from app.ui.job_bridge import JobBridge

COL_TITLE, COL_PROGRESS, COL_TIME, COL_STATUS, COL_CANCEL = range(5)


class JobsPanel(QWidget):
    def __init__(self, bridge: JobBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        split = QSplitter(Qt.Orientation.Vertical)
        self.table = QTableWidget(0, 5)
        self.table.setHorizontalHeaderLabels(["Job", "Progress", "Elapsed", "Status", ""])
        self.table.verticalHeader().hide()
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        hdr = self.table.horizontalHeader()
        hdr.setSectionResizeMode(COL_TITLE, QHeaderView.ResizeMode.Stretch)
        hdr.setSectionResizeMode(COL_STATUS, QHeaderView.ResizeMode.Stretch)
        self.table.itemSelectionChanged.connect(self._show_log)
        self.log = QPlainTextEdit()
        self.log.setReadOnly(True)
        self.log.setPlaceholderText("Select a job to see its log.")
        split.addWidget(self.table)
        split.addWidget(self.log)
        lay.addWidget(split)
        self.rows: dict[str, int] = {}
        self.bars: dict[str, QProgressBar] = {}
        self.cancel_buttons: dict[str, QPushButton] = {}
        self.logs: dict[str, list[str]] = {}
        self.started_at: dict[str, float] = {}
        self.ended_at: dict[str, float] = {}
        bridge.started.connect(self._on_started)
        bridge.progress.connect(self._on_progress)
        bridge.logged.connect(self._on_log)
        bridge.finished.connect(self._on_finished)
        self._clock = QTimer(self, interval=250)
        self._clock.timeout.connect(self._tick)
        self._clock.start()

    def _on_started(self, job: str, title: str) -> None:
        row = self.table.rowCount()
        self.table.insertRow(row)
        self.rows[job] = row
        self.table.setItem(row, COL_TITLE, QTableWidgetItem(title))
        bar = QProgressBar()
        bar.setRange(0, 0)
        self.table.setCellWidget(row, COL_PROGRESS, bar)
        self.bars[job] = bar
        self.table.setItem(row, COL_TIME, QTableWidgetItem("0.0 s"))
        self.table.setItem(row, COL_STATUS, QTableWidgetItem("starting…"))
        button = QPushButton("Cancel")
        button.clicked.connect(lambda _=False, j=job: self.bridge.cancel(j))
        self.table.setCellWidget(row, COL_CANCEL, button)
        self.cancel_buttons[job] = button
        self.logs[job] = []
        self.started_at[job] = time.monotonic()
        self.table.selectRow(row)

    def _on_progress(self, job: str, fraction: float, message: str) -> None:
        bar = self.bars.get(job)
        if bar is None:
            return
        if fraction < 0:
            bar.setRange(0, 0)
        else:
            bar.setRange(0, 1000)
            bar.setValue(int(fraction * 1000))
        if message:
            self.table.item(self.rows[job], COL_STATUS).setText(message)

    def _on_log(self, job: str, level: str, message: str) -> None:
        self.logs.setdefault(job, []).append(f"{level}: {message}")
        if self._selected() == job:
            self.log.appendPlainText(f"{level}: {message}")

    def _on_finished(self, job: str, result: object) -> None:
        row = self.rows.get(job)
        if row is None:
            return
        self.ended_at[job] = time.monotonic()
        status = getattr(result, "status", "failed")
        bar = self.bars[job]
        bar.setRange(0, 1000)
        bar.setValue(1000 if status == "done" else bar.value())
        text = {"done": "done", "cancelled": "cancelled"}.get(status, f"failed: {result.error} ({result.exit_reason})")
        item = self.table.item(row, COL_STATUS)
        item.setText(text)
        item.setToolTip(text)
        if status == "failed":
            item.setForeground(QBrush(QColor("#b3261e")))
        self.cancel_buttons[job].setEnabled(False)
        self.logs[job] = self.logs.get(job, []) + [f"--- {text}"] + list(getattr(result, "log_tail", []))
        if self._selected() == job:
            self._show_log()
        self._tick()

    def _tick(self) -> None:
        now = time.monotonic()
        for job, row in self.rows.items():
            end = self.ended_at.get(job, now)
            self.table.item(row, COL_TIME).setText(f"{end - self.started_at[job]:.1f} s")

    def _selected(self) -> str | None:
        rows = {i.row() for i in self.table.selectedIndexes()}
        for job, row in self.rows.items():
            if row in rows:
                return job
        return None

    def _show_log(self) -> None:
        job = self._selected()
        self.log.setPlainText("\n".join(self.logs.get(job, [])) if job else "")

    def status_text(self, job: str) -> str:
        return self.table.item(self.rows[job], COL_STATUS).text()
