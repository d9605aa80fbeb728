"""What the GUI tests share: waits for the main window's state (on conditions rather than for fixed times), real
clicks, and what a drawing shows (its ink, the overlays a node must stay clear of)."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, QPointF, QRect, QRectF, Qt
from PySide6.QtGui import QImage
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMainWindow, QPushButton, QTabBar


def dock_layout_applied(window: QMainWindow) -> bool:
    """The window's dock layout has been applied at its current size: every dock tab bar on show and every dock in
    front lies inside the window (before that, Qt keeps a restored layout's bars and docks at placeholder places
    outside it, and tab bars it no longer uses are still on show)."""
    inside = window.rect()
    bars = [b for b in window.findChildren(QTabBar, options=Qt.FindChildOption.FindDirectChildrenOnly)
            if b.isVisible()]
    docks = [d for d in window.model_docks() if d.isVisible() and not d.visibleRegion().isEmpty()]
    return all(inside.contains(b.geometry()) for b in bars) and all(inside.contains(d.geometry()) for d in docks)


def wait_for_dock_layout(qtbot, window: QMainWindow, timeout: int = 10_000) -> None:
    """Wait until the dock layout is applied (`dock_layout_applied`): what a layout would draw is drawn by then."""
    qtbot.waitUntil(lambda: dock_layout_applied(window), timeout=timeout)


def wait_for_size(qtbot, window: QMainWindow, size: tuple[int, int], timeout: int = 5_000) -> None:
    """Wait until the window has been resized to ``size`` (width, height) and its dock layout is applied at it."""
    def resized() -> None:
        assert (window.width(), window.height()) == tuple(size), (window.size(), size)
        assert dock_layout_applied(window), "the dock layout is not applied at the new size yet"

    qtbot.waitUntil(resized, timeout=timeout)


def wait_for_dock_shown(qtbot, window: QMainWindow, dock, timeout: int = 5_000) -> None:
    """Wait until ``dock`` is shown in front (some of it on screen) and the window's dock layout is applied with it:
    what is asserted next about its widgets (in sight, sizes, hints on show) is about the settled layout."""
    def shown() -> None:
        assert dock.isVisible() and not dock.visibleRegion().isEmpty(), f"{dock.objectName()} is not on show"
        assert dock_layout_applied(window), "the dock layout is not applied yet"

    qtbot.waitUntil(shown, timeout=timeout)


def delete_now() -> None:
    """Deliver the posted deferred deletes (``deleteLater``) at once, as the event loop would on its next turn."""
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


# ------------------------------------------------------------------------------------------------ clicks

class Clicks:
    """Real mouse clicks on real buttons, counted."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, button: QPushButton) -> None:
        assert button.isVisible() and button.isEnabled(), f"'{button.text()}' cannot be clicked"
        QTest.mouseClick(button, Qt.MouseButton.LeftButton)
        self.count += 1


# ------------------------------------------------------------------------------------------------ what is drawn

def non_background_fraction(img: QImage) -> float:
    """Share of pixels clearly different from the canvas background (#f7f7f5)."""
    img = img.convertToFormat(QImage.Format.Format_RGB32)
    arr = np.frombuffer(img.constBits(), dtype=np.uint8).reshape(img.height(), img.bytesPerLine())
    arr = arr[:, : img.width() * 4].reshape(img.height(), img.width(), 4)[..., :3].astype(int)
    bg = np.array([0xF5, 0xF7, 0xF7])  # BGR of the canvas background #f7f7f5
    return float((np.abs(arr - bg).sum(axis=2) > 30).mean())


def overlay_rect(view, widget) -> QRect:
    """An overlay's geometry (the minimap, the legend) in the view's viewport coordinates."""
    return QRect(view.viewport().mapFrom(view, widget.pos()), widget.size())


def on_screen(view, node: int) -> QRectF:
    """A node's box in the view's viewport coordinates."""
    return view.viewportTransform().mapRect(view.item.node_rect(node))


def assert_clear(view, node: int) -> None:
    """The node lies inside the viewport and under neither the minimap nor the legend (those on show)."""
    box = on_screen(view, node)
    for overlay in (view.minimap, view.legend):
        if overlay.isVisible():
            assert not box.intersects(QRectF(overlay_rect(view, overlay))), (node, box, overlay_rect(view, overlay))
    assert QRectF(view.viewport().rect()).contains(box), (node, box)


def centred_would_be_covered(view, node: int, legend_too: bool = False) -> bool:
    """Whether the node, centred in the viewport as a plain centreOn puts it, would lie under the minimap (or,
    `legend_too`, the legend)."""
    box = on_screen(view, node)
    c = QRectF(view.viewport().rect()).center()
    box.moveCenter(QPointF(c))
    overlays = (view.minimap, view.legend) if legend_too else (view.minimap,)
    return any(box.intersects(QRectF(overlay_rect(view, o))) for o in overlays)
