"""Colours and fonts of the graph drawing (one place, so overlays and legends agree)."""

from __future__ import annotations

from PySide6.QtGui import QColor, QFont

from app.core.ops import ALL_CATEGORIES

CATEGORY_COLORS: dict[str, QColor] = {
    "Layer": QColor("#3b6fb6"),
    "Activation": QColor("#b5473a"),
    "Normalization": QColor("#3f8a5a"),
    "Pooling": QColor("#2e8a8a"),
    "Arithmetic": QColor("#6b6b6b"),
    "Reduce": QColor("#7a5aa8"),
    "Shape": QColor("#8a7a3a"),
    "Quantization": QColor("#c07a1a"),
    "Data": QColor("#8a5a3a"),
    "Control flow": QColor("#a03a7a"),
    "Custom domain": QColor("#d04a8a"),
    "Other": QColor("#505a66"),
    "Graph input": QColor("#1f1f1f"),
    "Graph output": QColor("#1f1f1f"),
}
assert set(CATEGORY_COLORS) == set(ALL_CATEGORIES)

BACKGROUND = QColor("#f7f7f5")
NODE_FILL = QColor("#ffffff")
NODE_BORDER = QColor("#8a8f96")
EDGE = QColor("#6d7480")
EDGE_LABEL = QColor("#4a5260")
SELECTED = QColor("#1e88ff")
MATCH = QColor("#ffb000")
CURRENT_MATCH = QColor("#ff5a00")
TEXT = QColor("#1b1f24")
TEXT_DIM = QColor("#5d6670")
TEXT_ON_HEADER = QColor("#ffffff")


def title_font() -> QFont:
    f = QFont()
    f.setPixelSize(12)
    f.setBold(True)
    return f


def name_font() -> QFont:
    f = QFont()
    f.setPixelSize(10)
    return f


def label_font() -> QFont:
    f = QFont()
    f.setPixelSize(9)
    return f
