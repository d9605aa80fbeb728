"""Running and finished jobs: progress, elapsed time, status, Cancel, and the selected job's log."""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass, field

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.jobs import JobResult, time_left
from app.ui.run.job_bridge import JobBridge

log = logging.getLogger(__name__)

COL_TITLE, COL_PROGRESS, COL_TIME, COL_STATUS, COL_CANCEL = range(5)
BAR_MAX = 1000
LOG_LINES = 5000                    # per job: enough to read, bounded for a job that never stops talking
FAILED_COLOR = "#b3261e"
JOB_ID_ROLE = Qt.ItemDataRole.UserRole


@dataclass
class _Job:
    title: QTableWidgetItem
    bar: QProgressBar
    elapsed: QTableWidgetItem
    status: QTableWidgetItem
    cancel: QPushButton
    started: float                  # wall clock, as JobHandle.started
    lines: deque[str] = field(default_factory=lambda: deque(maxlen=LOG_LINES))
    first: tuple[float, float] | None = None   # (time, fraction) of the first fraction reported: the estimate's start
    fraction: float = -1.0                     # the latest fraction (negative: busy, no fraction)
    result: JobResult | None = None


class JobsPanel(QWidget):
    """A table of jobs (title, progress, elapsed, status, Cancel) above the selected job's log."""

    def __init__(self, bridge: JobBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self._jobs: dict[str, _Job] = {}
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        head = QHBoxLayout()
        self.summary = QLabel("No jobs yet.")
        self.clear_button = QPushButton("Clear finished")
        self.clear_button.setEnabled(False)
        self.clear_button.clicked.connect(self.clear_finished)
        head.addWidget(self.summary, 1)
        head.addWidget(self.clear_button)
        lay.addLayout(head)

        self.table = QTableWidget(0, 5)
        self.table.setHorizontalHeaderLabels(["Job", "Progress", "Elapsed", "Status", ""])
        self.table.verticalHeader().hide()
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableWidget.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        hdr = self.table.horizontalHeader()
        hdr.setSectionResizeMode(COL_TITLE, QHeaderView.ResizeMode.Stretch)
        hdr.setSectionResizeMode(COL_STATUS, QHeaderView.ResizeMode.Stretch)
        hdr.setSectionResizeMode(COL_TIME, QHeaderView.ResizeMode.ResizeToContents)  # "12.3 s · about 40 s left"
        self.table.itemSelectionChanged.connect(self._show_selected)

        bottom = QWidget()
        bl = QVBoxLayout(bottom)
        bl.setContentsMargins(0, 0, 0, 0)
        self.error_label = QLabel()     # the selected job's error and exit reason, red
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.setStyleSheet(f"color: {FAILED_COLOR};")
        self.error_label.hide()
        self.log = QPlainTextEdit()
        self.log.setReadOnly(True)
        self.log.setMaximumBlockCount(LOG_LINES)
        self.log.setPlaceholderText("Select a job to see its log.")
        bl.addWidget(self.error_label)
        bl.addWidget(self.log, 1)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        split.addWidget(bottom)
        lay.addWidget(split)

        self._clock = QTimer(self)
        self._clock.setInterval(200)
        self._clock.timeout.connect(self._tick)
        bridge.started.connect(self._on_started)
        bridge.progress.connect(self._on_progress)
        bridge.logged.connect(self._on_log)
        bridge.finished.connect(self._on_finished)
        for handle in bridge.jobs():  # jobs started before this panel existed
            self._on_started(handle.id, handle.spec.title or handle.spec.func)
            if (result := bridge.result(handle.id)) is not None:
                self._on_finished(handle.id, result)

    # ------------------------------------------------------------------ queries (tests, main window)
    def job_ids(self) -> list[str]:
        return list(self._jobs)

    def row_of(self, job: str) -> int:
        return self._jobs[job].title.row()

    def bar(self, job: str) -> QProgressBar:
        return self._jobs[job].bar

    def cancel_button(self, job: str) -> QPushButton:
        return self._jobs[job].cancel

    def status_text(self, job: str) -> str:
        return self._jobs[job].status.text()

    def elapsed_text(self, job: str) -> str:
        return self._jobs[job].elapsed.text()

    def select(self, job: str) -> None:
        self.table.selectRow(self.row_of(job))

    def selected_job(self) -> str | None:
        items = self.table.selectedItems()
        for item in items:
            job = item.data(JOB_ID_ROLE)
            if job:
                return str(job)
        return None

    # ------------------------------------------------------------------ bridge signals
    def _on_started(self, job: str, title: str) -> None:
        if job in self._jobs:
            return
        row = self.table.rowCount()
        self.table.insertRow(row)
        title_item = QTableWidgetItem(title)
        title_item.setData(JOB_ID_ROLE, job)
        title_item.setToolTip(title)
        bar = QProgressBar()
        bar.setRange(0, 0)  # busy until the job reports a fraction
        bar.setTextVisible(False)
        button = QPushButton("Cancel")
        button.clicked.connect(lambda _=False, j=job: self._cancel(j))
        handle = self.bridge.handle(job)
        entry = _Job(title_item, bar, QTableWidgetItem("0.0 s"), QTableWidgetItem("starting…"), button,
                     handle.started if handle is not None else time.time())
        self.table.setItem(row, COL_TITLE, title_item)
        self.table.setCellWidget(row, COL_PROGRESS, bar)
        self.table.setItem(row, COL_TIME, entry.elapsed)
        self.table.setItem(row, COL_STATUS, entry.status)
        self.table.setCellWidget(row, COL_CANCEL, button)
        self._jobs[job] = entry
        selected = self.selected_job()
        if selected is None or selected in self.bridge.results:
            # Follow the new job (its progress and log) unless the user is watching one still running.
            self.table.selectRow(row)
            self.table.scrollToItem(title_item)
        self._clock.start()
        self._update_summary()

    def _on_progress(self, job: str, fraction: float, message: str) -> None:
        entry = self._jobs.get(job)
        if entry is None or entry.result is not None:
            return
        if fraction < 0:
            entry.bar.setRange(0, 0)
        else:
            entry.bar.setRange(0, BAR_MAX)
            entry.bar.setValue(round(min(1.0, fraction) * BAR_MAX))
            if entry.first is None or fraction < entry.first[1]:  # a job that starts its count again: afresh
                entry.first = (time.time(), fraction)
        entry.fraction = fraction
        if entry.cancel.isEnabled():  # keep "cancelling…" once the user asked
            entry.status.setText(message or "running")

    def _on_log(self, job: str, level: str, message: str) -> None:
        entry = self._jobs.get(job)
        if entry is None:
            return
        line = message if level == "info" else f"{level}: {message}"
        entry.lines.append(line)
        if entry.status.text() == "starting…":
            entry.status.setText("running")
        if self.selected_job() == job:
            self.log.appendPlainText(line)

    def _on_finished(self, job: str, result: object) -> None:
        entry = self._jobs.get(job)
        if entry is None or not isinstance(result, JobResult):
            return
        entry.result = result
        if result.status == "done":
            entry.bar.setRange(0, BAR_MAX)
            entry.bar.setValue(BAR_MAX)
            text = "done"
        else:
            if entry.bar.maximum() == 0:  # stop the busy animation where it is
                entry.bar.setRange(0, BAR_MAX)
                entry.bar.setValue(0)
            text = "cancelled" if result.status == "cancelled" else f"failed: {result.error} ({result.exit_reason})"
        entry.status.setText(text)
        entry.status.setToolTip(text)
        if result.status == "failed":
            entry.status.setForeground(QBrush(QColor(FAILED_COLOR)))
            entry.title.setForeground(QBrush(QColor(FAILED_COLOR)))
        entry.cancel.setEnabled(False)
        entry.cancel.setText("Cancel")
        entry.elapsed.setText(f"{result.seconds:.1f} s")
        entry.lines.append(f"--- {text} after {result.seconds:.1f} s")
        if self.selected_job() == job:
            self._show_selected()
        self._update_summary()

    # ------------------------------------------------------------------ actions
    def _cancel(self, job: str) -> None:
        entry = self._jobs.get(job)
        if entry is None or entry.result is not None:
            return
        self.bridge.cancel(job)
        entry.cancel.setEnabled(False)
        entry.cancel.setText("Cancelling…")
        entry.status.setText("cancelling…")

    def clear_finished(self) -> None:
        """Remove the finished jobs from the table (and from the bridge)."""
        for job in [j for j, e in self._jobs.items() if e.result is not None]:
            self.table.removeRow(self.row_of(job))
            del self._jobs[job]
            self.bridge.forget(job)
        self._show_selected()
        self._update_summary()

    # ------------------------------------------------------------------ display
    def _tick(self) -> None:
        now = time.time()
        running = [e for e in self._jobs.values() if e.result is None]
        for entry in running:
            left = time_left(entry.first, entry.fraction, now)
            entry.elapsed.setText(f"{now - entry.started:.1f} s" + (f" · about {left} left" if left else ""))
        if not running:
            self._clock.stop()

    def _update_summary(self) -> None:
        done = sum(e.result is not None for e in self._jobs.values())
        running = len(self._jobs) - done
        failed = sum(e.result is not None and e.result.status == "failed" for e in self._jobs.values())
        parts = [f"{running} running"] if running else []
        if done:
            parts.append(f"{done} finished" + (f" ({failed} failed)" if failed else ""))
        self.summary.setText(", ".join(parts) if parts else "No jobs yet.")
        self.clear_button.setEnabled(done > 0)

    def _show_selected(self) -> None:
        job = self.selected_job()
        entry = self._jobs.get(job) if job else None
        self.log.setPlainText("\n".join(entry.lines) if entry else "")
        self.log.verticalScrollBar().setValue(self.log.verticalScrollBar().maximum())
        result = entry.result if entry else None
        if result is not None and result.status == "failed":
            self.error_label.setText(f"{result.error}\nExit: {result.exit_reason}")
            self.error_label.show()
        else:
            self.error_label.clear()
            self.error_label.hide()
