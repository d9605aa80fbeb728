"""Colours and fonts (one place, so the graph, overlays, legends and docks agree), and passing a new font on."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import QWidget

from app.core.model import ALL_CATEGORIES

# Dark enough that white header text on them reads at WCAG AA (4.5:1), except Quantization (black text).
CATEGORY_COLORS: dict[str, QColor] = {
    "Layer": QColor("#3b6fb6"),
    "Activation": QColor("#b5473a"),
    "Normalization": QColor("#3c8254"),
    "Pooling": QColor("#2b8181"),
    "Arithmetic": QColor("#6b6b6b"),
    "Reduce": QColor("#7a5aa8"),
    "Shape": QColor("#837437"),
    "Quantization": QColor("#c07a1a"),
    "Data": QColor("#8a5a3a"),
    "Control flow": QColor("#a03a7a"),
    "Custom domain": QColor("#cc3c82"),
    "Other": QColor("#505a66"),
    "Graph input": QColor("#1f1f1f"),
    "Graph output": QColor("#1f1f1f"),
}
assert set(CATEGORY_COLORS) == set(ALL_CATEGORIES)
GROUP = QColor("#34495e")            # a collapsed group's header (the drawing by name scopes)
FRAME_FILLS = (QColor(52, 73, 94, 14), QColor(52, 73, 94, 22))  # expanded groups' outlines, by depth
FRAME_BORDER = QColor("#9aa5b1")
FOLD_BADGE = QColor("#fff3bf")       # folded shape arithmetic on the node it feeds

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
TEXT_ON_HEADER = QColor("#ffffff")        # light title text, on dark header fills
# Dark title text, on light header fills. Black, not a softer near-black: on mid-tones that white cannot
# reach 4.5:1 against (luminance near 0.18), only black still does.
TEXT_ON_LIGHT_HEADER = QColor("#000000")
MIN_CONTRAST = 4.5                        # WCAG AA for normal text


def relative_luminance(c: QColor) -> float:
    """WCAG 2 relative luminance of an sRGB colour (0 black … 1 white)."""
    def lin(v: int) -> float:
        s = v / 255.0
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4
    return 0.2126 * lin(c.red()) + 0.7152 * lin(c.green()) + 0.0722 * lin(c.blue())


def contrast_ratio(a: QColor, b: QColor) -> float:
    """WCAG 2 contrast ratio, 1 (same) … 21 (black on white)."""
    la, lb = relative_luminance(a), relative_luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


_TEXT_ON: dict[int, QColor] = {}


def text_on(fill: QColor) -> QColor:
    """The title colour that reads best on a fill: white on dark fills, black on light ones.

    Cached per colour: the graph asks once per node when its colouring changes, never while painting."""
    key = fill.rgba()
    c = _TEXT_ON.get(key)
    if c is None:
        light, dark = contrast_ratio(TEXT_ON_HEADER, fill), contrast_ratio(TEXT_ON_LIGHT_HEADER, fill)
        # White whenever it is legible enough (the category colours are chosen for it), else the better one.
        c = _TEXT_ON[key] = TEXT_ON_HEADER if light >= MIN_CONTRAST or light >= dark else TEXT_ON_LIGHT_HEADER
    return c


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

# The precisions' colours and names, the same in the graph, the Precision dock, menus and legends.
PRECISION_COLORS = {
    "fp32": QColor("#8d99ae"),
    "fp16": QColor("#2a9d8f"),
    "bf16": QColor("#7b61c9"),
    "int8": QColor("#e76f51"),
    "fixed": QColor("#d9dce1"),
}
PRECISION_LABELS = {"fp32": "FP32", "fp16": "FP16", "bf16": "BF16", "int8": "INT8", "fixed": "fixed (cannot change)"}


def pass_font(window: QWidget) -> None:
    """Qt passes a parent's new font on to its children, except below a widget with a style sheet: that subtree
    keeps the font it was polished with. Each such child is given its parent's font here (parents come before
    their children in `findChildren`); a widget whose owner set its font (a heading's size) is left to it."""
    for child in window.findChildren(QWidget):
        parent = child.parentWidget()
        if parent is None or child.testAttribute(Qt.WidgetAttribute.WA_SetFont):
            continue
        child.setFont(parent.font())
        child.setAttribute(Qt.WidgetAttribute.WA_SetFont, False)  # still the parent's: it follows the next change
