"""The application's icons, found wherever trtlab runs from, and drawn in the palette's text colour.

The SVGs the app loads are package data (app/resources/, copied from the artwork in the top-level resources/ by
resources/make_icons.py), so one lookup covers the source tree, an installed package and a PyInstaller bundle (whose
`app` package lives under sys._MEIPASS). The top-level resources/ and the bundle's copy of it are searched after it.
"""

from __future__ import annotations

import logging
import sys
from functools import lru_cache
from pathlib import Path

from PySide6.QtCore import QByteArray, QRectF, Qt
from PySide6.QtGui import QGuiApplication, QIcon, QImage, QPainter, QPalette, QPixmap
from PySide6.QtSvg import QSvgRenderer

log = logging.getLogger(__name__)

APP_ICON = "trtlab.svg"
# Rendered once per size: menus use 16, dock tabs and toolbars 16-24, hi-DPI screens twice that.
ICON_SIZES = (16, 20, 24, 32, 48, 64)
APP_ICON_SIZES = (16, 24, 32, 48, 64, 128, 256)


def resource_dirs() -> list[Path]:
    """Where the resources may be, in the order searched."""
    package = Path(__file__).resolve().parents[2]  # the `app` package
    dirs = [package / "resources"]
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        dirs.append(Path(bundle) / "resources")
    dirs.append(package.parent / "resources")  # the source tree's artwork, should the package copy be missing
    return dirs


@lru_cache(maxsize=1)
def resources_dir() -> Path | None:
    """The first folder holding the app icon and icons/; None (logged once) when none does: the window then shows
    no icons rather than failing to start."""
    for folder in resource_dirs():
        if (folder / APP_ICON).is_file() and (folder / "icons").is_dir():
            return folder
    log.warning("trtlab's icons were not found (looked in: %s); reinstall trtlab, or run resources/make_icons.py "
                "in a source checkout", ", ".join(map(str, resource_dirs())))
    return None


def icon_path(name: str) -> Path | None:
    """The SVG file of the icon `name` (e.g. "open"), or None when it does not exist."""
    folder = resources_dir()
    path = folder / "icons" / f"{name}.svg" if folder is not None else None
    return path if path is not None and path.is_file() else None


def _render(svg: bytes, size: int) -> QPixmap:
    renderer = QSvgRenderer(QByteArray(svg))
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    if renderer.isValid():
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter, QRectF(0, 0, size, size))
        painter.end()
    return QPixmap.fromImage(image)


def _svg_icon(path: Path, sizes: tuple[int, ...], color: str | None = None) -> QIcon:
    data = path.read_bytes()
    if color is not None:
        # Strokes drawn in `currentColor` take the palette's text colour: the icons stay legible on a dark theme.
        data = data.replace(b"currentColor", color.encode())
    out = QIcon()
    for size in sizes:
        out.addPixmap(_render(data, size))
    return out


def _text_color() -> str:
    app_ = QGuiApplication.instance()  # a QCoreApplication, without a palette, where no GUI application runs
    palette = app_.palette() if isinstance(app_, QGuiApplication) else QPalette()
    return palette.color(QPalette.ColorRole.WindowText).name()


def icon(name: str) -> QIcon:
    """The icon `name` from resources/icons/ (a null QIcon, logged, if there is no such icon)."""
    return _icon(name, _text_color())


@lru_cache(maxsize=256)
def _icon(name: str, color: str) -> QIcon:
    path = icon_path(name)
    if path is None:
        folder = resources_dir()
        if folder is not None:
            log.warning("no icon named %r in %s", name, folder / "icons")
        return QIcon()
    return _svg_icon(path, ICON_SIZES, color)


@lru_cache(maxsize=1)
def app_icon() -> QIcon:
    """The application icon (window, task bar, About box), drawn at the sizes window managers ask for."""
    folder = resources_dir()
    return QIcon() if folder is None else _svg_icon(folder / APP_ICON, APP_ICON_SIZES)
