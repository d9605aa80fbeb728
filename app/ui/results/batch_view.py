"""A batch's results folder as a matrix: one row per model, one column per backend × precision × GPU kind; each cell
says how much faster the variant is than FP32 and how far its outputs moved, coloured so the broken cells stand out.
Activating a cell (double-click or Enter) asks the window to open that model with the batch's results for it."""

from __future__ import annotations

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

GOOD, SLOWER, BAD, EMPTY = QColor("#dff3e3"), QColor("#fff2cc"), QColor("#fbe0dd"), QColor("#f2f2f2")
CELL_ROLE = Qt.ItemDataRole.UserRole


def cell_text(cell: dict) -> str:
    """A cell in a few words: '1.84× · cos 0.99998', 'engine built', 'FAILED bench'."""
    if cell.get("failed"):
        return "FAILED " + ", ".join(f["kind"] for f in cell["failed"])
    parts = []
    if cell.get("speedup") is not None:
        parts.append(f"{cell['speedup']:.2f}×")
    elif cell.get("median_ms") is not None:
        parts.append(f"{cell['median_ms']:.2f} ms")
    if cell.get("cosine") is not None:
        parts.append(f"cos {cell['cosine']:.6f}")
    if cell.get("built"):
        parts.append("engine built")
    if not parts:
        return "not run" if any(j["status"] == "not run" for j in cell.get("jobs", {}).values()) else "reference"
    return " · ".join(parts)


def cell_colour(cell: dict) -> QColor:
    if cell.get("failed") or cell.get("passed") is False:
        return BAD
    if any(j["status"] == "not run" for j in cell.get("jobs", {}).values()):
        return EMPTY
    if cell.get("speedup") is not None and cell["speedup"] < 1.0:
        return SLOWER
    return GOOD


class BatchView(QWidget):
    """The matrix of a `trtlab batch` results folder."""

    modelRequested = Signal(str, object)  # the model's path, its cells (with their job ids) in this batch

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.folder: Path | None = None
        self.summary: dict = {}
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
        if not isinstance(summary, dict) or not isinstance(summary.get("cells"), list):
            raise TrtlabError(f"{path} is not a batch summary.", fix="Run the batch again to rewrite it.")
        self.folder, self.summary = folder, summary
        self._fill()

    def columns(self) -> list[tuple[str, str, str]]:
        cols: list[tuple[str, str, str]] = []
        for c in self.summary.get("cells", []):
            key = (c["backend"], c["precision"], c.get("gpu") or "")
            if key not in cols:
                cols.append(key)
        return cols

    def _fill(self) -> None:
        cells = self.summary.get("cells", [])
        models = list(dict.fromkeys(c["model"] for c in cells))
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
            self.table.setItem(models.index(c["model"]), cols.index((c["backend"], c["precision"], c.get("gpu") or "")),
                               item)
        counts = self.summary.get("jobs", {})
        self.title.setText(f"<b>{self.folder.name if self.folder else ''}</b> — {len(models)} model(s), "
                           f"{counts.get('done', 0)} of {counts.get('total', 0)} jobs done, "
                           f"{counts.get('failed', 0)} failed. Speed-up is against FP32 on the same backend; "
                           "double-click a cell to open the model with its results.")

    def _activated(self, row: int, column: int) -> None:
        item = self.table.item(row, column)
        cell = item.data(CELL_ROLE) if item is not None else None
        if cell:
            model = cell["model"]
            self.modelRequested.emit(model, [c for c in self.summary.get("cells", []) if c["model"] == model])


def _tooltip(c: dict) -> str:
    lines = [f"{Path(c['model']).name} — {c['backend']}:{c['precision']}" + (f" on {c['gpu']}" if c.get("gpu") else "")]
    if c.get("cosine") is not None:
        lines.append(f"worst cosine {c['cosine']:.6f}, max |Δ| {c.get('max_abs') or 0:.4g}"
                     + ("" if c.get("passed") is not False else " — tolerance NOT met"))
    if c.get("median_ms") is not None:
        lines.append(f"median {c['median_ms']:.3f} ms" + (f", {c['speedup']:.2f}× FP32" if c.get("speedup") else ""))
    if c.get("worst_layer"):
        lines.append(f"worst layer {c['worst_layer']}")
    for f in c.get("failed", []):
        lines.append(f"{f['kind']} failed: {f.get('error', '')} {f.get('exit_reason', '')}".strip())
    return "\n".join(lines)
