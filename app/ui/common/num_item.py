"""A table cell that shows text and sorts by a number (times, shares, deltas)."""

from __future__ import annotations

from PySide6.QtWidgets import QTableWidgetItem


class NumItem(QTableWidgetItem):
    """Sorts by `value`, shows `text`."""

    def __init__(self, text: str, value: float) -> None:
        super().__init__(text)
        self.value = value

    def __lt__(self, other: QTableWidgetItem) -> bool:  # noqa: D105
        return self.value < getattr(other, "value", float("-inf"))
