"""A batch's results folder as a matrix: one row per model, one column per backend × precision × GPU kind; each cell
says how much faster the variant is than FP32, how far its outputs moved and, where the model was evaluated on a
dataset, its main metric with the change and the verdict, coloured so the broken cells stand out.
Activating a cell (double-click or Enter) asks the window to open that model with the batch's results for it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.core.results import BatchCell, BatchSummary, ResultFormatError

GOOD, SLOWER, BAD, EMPTY = QColor("#dff3e3"), QColor("#fff2cc"), QColor("#fbe0dd"), QColor("#f2f2f2")
CELL_ROLE = Qt.ItemDataRole.UserRole


def cell_text(cell: BatchCell) -> str:
    """A cell in a few words: '1.84× · cos 0.99998', 'engine built', 'FAILED bench', 'top1 0.950 → 0.940 (−1.0 pts)
    PASS'."""
    if cell.failed:
        return "FAILED " + ", ".join(f.kind for f in cell.failed)
    parts = []
    if cell.speedup is not None:
        parts.append(f"{cell.speedup:.2f}×")
    elif cell.median_ms is not None:
        parts.append(f"{cell.median_ms:.2f} ms")
    if cell.cosine is not None:
        parts.append(f"cos {cell.cosine:.6f}")
    if cell.built:
        parts.append("engine built")
    if cell.eval_metric is not None:
        parts.append(_short_accuracy(cell))
    if not parts:
        return "not run" if cell.not_run else "reference"
    return " · ".join(parts)


def _short_accuracy(cell: BatchCell) -> str:
    """The evaluation without its interval (the tooltip has it): 'top1 0.940 (−1.0 pts) PASS'."""
    value = "—" if cell.eval_value is None else f"{cell.eval_value:.3f}"
    if cell.eval_delta is None:
        return f"{cell.eval_metric} {value}" + (" (reference)" if cell.eval_passed is None else "")
    points = f"{cell.eval_delta * 100:+.1f}".replace("-", "−")
    verdict = "" if cell.eval_passed is None else " PASS" if cell.eval_passed else " FAIL"
    return f"{cell.eval_metric} {value} ({points} pts){verdict}"


def cell_colour(cell: BatchCell) -> QColor:
    if cell.failed or cell.passed is False or cell.eval_passed is False:
        return BAD
    if cell.not_run:
        return EMPTY
    if cell.speedup is not None and cell.speedup < 1.0:
        return SLOWER
    return GOOD


class BatchView(QWidget):
    """The matrix of a `trtlab batch` results folder."""

    modelRequested = Signal(str, object)  # the model's path, its cells (with their job ids) in this batch

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.folder: Path | None = None
        self.summary = BatchSummary()
        self.title = QLabel("Open a batch's results folder (File ▸ Open Batch Results…) to see its matrix here.")
        self.title.setWordWrap(True)
        self.table = QTableWidget(0, 0)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.cellActivated.connect(self._activated)
        self.table.cellDoubleClicked.connect(self._activated)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addWidget(self.table, 1)

    def load(self, folder: str | Path) -> None:
        """Show a results folder; raises a TrtlabError naming the problem when it is not one."""
        import json

        from app.core.errors import TrtlabError

        folder = Path(folder)
        path = folder / "summary.json"
        try:
            summary = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise TrtlabError(f"'{folder}' has no summary.json, so it is not a batch's results folder.",
                              fix="Choose the folder `trtlab batch` wrote (its -o, or MATRIX-results).") from None
        except (OSError, ValueError) as exc:
            raise TrtlabError(f"Cannot read {path}: {exc}.", fix="Run the batch again to rewrite it.") from exc
        shaped = isinstance(summary, Mapping) and isinstance(summary.get("cells"), list)
        try:
            read = BatchSummary.from_json(summary) if shaped else None
        except ResultFormatError:
            read = None
        if read is None:
            raise TrtlabError(f"{path} is not a batch summary.", fix="Run the batch again to rewrite it.")
        self.folder, self.summary = folder, read
        self._fill()

    def columns(self) -> list[tuple[str, str, str]]:
        cols: list[tuple[str, str, str]] = []
        for c in self.summary.cells:
            key = (c.backend, c.precision, c.gpu or "")
            if key not in cols:
                cols.append(key)
        return cols

    def _fill(self) -> None:
        cells = self.summary.cells
        models = list(dict.fromkeys(c.model for c in cells))
        cols = self.columns()
        self.table.clear()
        self.table.setRowCount(len(models))
        self.table.setColumnCount(len(cols))
        self.table.setHorizontalHeaderLabels([f"{b}\n{p}" + (f"\n{g}" if g else "") for b, p, g in cols])
        self.table.setVerticalHeaderLabels([Path(m).stem for m in models])
        for c in cells:
            item = QTableWidgetItem(cell_text(c))
            item.setBackground(cell_colour(c))
            item.setData(CELL_ROLE, c)
            item.setToolTip(_tooltip(c))
            item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
            self.table.setItem(models.index(c.model), cols.index((c.backend, c.precision, c.gpu or "")), item)
        counts = self.summary.jobs
        self.title.setText(f"<b>{self.folder.name if self.folder else ''}</b> — {len(models)} model(s), "
                           f"{counts.done} of {counts.total} jobs done, "
                           f"{counts.failed} failed. Speed-up is against FP32 on the same backend; "
                           "double-click a cell to open the model with its results.")

    def _activated(self, row: int, column: int) -> None:
        item = self.table.item(row, column)
        cell = item.data(CELL_ROLE) if item is not None else None
        if isinstance(cell, BatchCell):
            model = cell.model
            self.modelRequested.emit(model, [c for c in self.summary.cells if c.model == model])


def _tooltip(c: BatchCell) -> str:
    lines = [f"{Path(c.model).name} — {c.backend}:{c.precision}" + (f" on {c.gpu}" if c.gpu else "")]
    if c.cosine is not None:
        lines.append(f"worst cosine {c.cosine:.6f}, max |Δ| {c.max_abs or 0:.4g}"
                     + ("" if c.passed is not False else " — tolerance NOT met"))
    if c.median_ms is not None:
        lines.append(f"median {c.median_ms:.3f} ms" + (f", {c.speedup:.2f}× FP32" if c.speedup else ""))
    if c.worst_layer:
        lines.append(f"worst layer {c.worst_layer}")
    if c.eval_metric is not None:
        lines.append(f"on {Path(c.eval_dataset or '').name} ({c.eval_images} images): {c.accuracy_text()}")
        lines += [f"  {why}" for why in c.eval_failures or ()]
    for f in c.failed:
        lines.append(f"{f.kind} failed: {f.error} {f.exit_reason}".strip())
    return "\n".join(lines)
