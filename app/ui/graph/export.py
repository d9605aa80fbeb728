"""The whole graph as a PNG or SVG file, written atomically."""

from __future__ import annotations

import math
from pathlib import Path

from PySide6.QtCore import QRectF, QSize
from PySide6.QtGui import QImage, QPainter

from app.ui.common import style
from app.ui.graph.canvas import GraphCanvas

EXPORT_MAX_SIDE = 16384
EXPORT_MAX_PIXELS = 150_000_000


def render_image(view: GraphCanvas, max_side: int = EXPORT_MAX_SIDE, max_pixels: int = EXPORT_MAX_PIXELS,
                 scale: float = 1.0) -> QImage:
    """Render the whole graph, scaled down if it would exceed the size limits."""
    if view.item is None:
        raise ValueError("No graph to export.")
    b = view.item.boundingRect()
    s = min(scale, max_side / b.width(), max_side / b.height(),
            math.sqrt(max_pixels / max(b.width() * b.height(), 1.0)))
    size = QSize(max(1, int(b.width() * s)), max(1, int(b.height() * s)))
    img = QImage(size, QImage.Format.Format_ARGB32_Premultiplied)
    img.fill(style.BACKGROUND)
    p = QPainter(img)
    p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    p.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
    view.scene().render(p, QRectF(0, 0, size.width(), size.height()), b)
    p.end()
    return img


def export_png(view: GraphCanvas, path: str | Path) -> Path:
    img = render_image(view)
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp.png")
    # the format follows the .png suffix (PySide6's stubs type `format` as bytes, but only a str is taken)
    if not img.save(str(tmp)):
        raise OSError(f"Could not write '{target}'.")
    tmp.replace(target)
    return target


def export_svg(view: GraphCanvas, path: str | Path) -> Path:
    from PySide6.QtSvg import QSvgGenerator

    if view.item is None:
        raise ValueError("No graph to export.")
    b = view.item.boundingRect()
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp.svg")
    gen = QSvgGenerator()
    gen.setFileName(str(tmp))
    gen.setSize(QSize(int(b.width()), int(b.height())))
    gen.setViewBox(QRectF(0, 0, b.width(), b.height()))
    gen.setTitle(view.graph.graph.name if view.graph is not None else "graph")
    gen.setDescription("Exported by trtlab")
    p = QPainter(gen)
    view.scene().render(p, QRectF(0, 0, b.width(), b.height()), b)
    p.end()
    tmp.replace(target)
    return target
