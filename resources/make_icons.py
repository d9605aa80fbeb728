"""Render the application icon's PNG sizes from resources/trtlab.svg and copy the icons the app loads into the package.

    python resources/make_icons.py [--montage PATH]

resources/ is the source of the artwork: trtlab.svg, icons/*.svg (docks and actions) and the desktop entry. The PNGs
(png/trtlab-N.png) are rendered here with Qt's own SVG renderer, the one the app uses, so they match what the window
shows. The SVGs the app loads at run time are copied to app/resources/, package data that `pip install .` ships
(setuptools installs only files inside a package); tests/ui/test_resources.py fails when that copy is out of date.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QByteArray, QRectF, Qt  # noqa: E402
from PySide6.QtGui import QColor, QFont, QGuiApplication, QImage, QPainter  # noqa: E402
from PySide6.QtSvg import QSvgRenderer  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PACKAGED = ROOT / "app" / "resources"
PNG_SIZES = (16, 32, 48, 64, 128, 256, 512)


def render(svg: Path, size: int, data: bytes | None = None) -> QImage:
    """`svg` drawn at size x size (from `data` when given: the file's text with its colour filled in)."""
    renderer = QSvgRenderer(QByteArray(svg.read_bytes() if data is None else data))
    if not renderer.isValid():
        raise SystemExit(f"make_icons: {svg} is not a valid SVG; fix the file and run again.")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter, QRectF(0, 0, size, size))
    painter.end()
    return image


def write_pngs() -> list[Path]:
    out = HERE / "png"
    out.mkdir(exist_ok=True)
    written = []
    for size in PNG_SIZES:
        path = out / f"trtlab-{size}.png"
        if not render(HERE / "trtlab.svg", size).save(str(path)):
            raise SystemExit(f"make_icons: could not write {path}.")
        written.append(path)
    return written


def sync_package() -> list[Path]:
    """app/resources/ gets exactly the SVGs the app loads: a removed icon must not linger in the package. Its
    samples/ (the sample photos) and models/ (the demo model) are kept: they are not made from the artwork."""
    for old in [PACKAGED / "trtlab.svg", PACKAGED / "icons"]:
        if old.is_dir():
            shutil.rmtree(old)
        elif old.exists():
            old.unlink()
    (PACKAGED / "icons").mkdir(parents=True)
    copied = [Path(shutil.copy2(HERE / "trtlab.svg", PACKAGED / "trtlab.svg"))]
    for svg in sorted((HERE / "icons").glob("*.svg")):
        copied.append(Path(shutil.copy2(svg, PACKAGED / "icons" / svg.name)))
    return copied


def montage(path: Path) -> None:
    """One image to look at: every PNG size at 1:1, then every action/dock icon at 16, 24 and 32 px, on light and
    dark backgrounds (the app draws `currentColor` in the palette's text colour; black and white here)."""
    icons = sorted((HERE / "icons").glob("*.svg"))
    width = max(sum(PNG_SIZES) + 10 * len(PNG_SIZES) + 10, 20 + 110 * 8)
    rows = -(-len(icons) // 8)
    height = 10 + 512 + 20 + 2 * (rows * 60 + 10)
    image = QImage(width, height, QImage.Format.Format_ARGB32)
    image.fill(QColor("#f3f4f6"))
    p = QPainter(image)
    x = 10
    for size in PNG_SIZES:
        p.drawImage(x, 10, QImage(str(HERE / "png" / f"trtlab-{size}.png")))
        x += size + 10
    p.setFont(QFont("DejaVu Sans", 7))
    for band, (bg, fg) in enumerate((("#f3f4f6", "#1f2328"), ("#2b2d31", "#e6e6e6"))):
        top = 10 + 512 + 20 + band * (rows * 60 + 10)
        p.fillRect(0, top - 5, width, rows * 60 + 10, QColor(bg))
        for k, svg in enumerate(icons):
            cx, cy = 10 + (k % 8) * 110, top + (k // 8) * 60
            data = svg.read_bytes().replace(b"currentColor", fg.encode())
            ox = cx
            for size in (16, 24, 32):
                p.drawImage(ox, cy, render(svg, size, data))
                ox += size + 6
            p.setPen(QColor(fg))
            p.drawText(cx, cy + 46, svg.stem)
    p.end()
    image.save(str(path))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--montage", type=Path, help="also write a PNG showing every size and icon")
    args = parser.parse_args(argv)
    _app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    pngs = write_pngs()
    copied = sync_package()
    sys.stdout.write(f"wrote {len(pngs)} PNGs to {HERE / 'png'}; copied {len(copied)} SVGs to {PACKAGED}\n")
    if args.montage:
        montage(args.montage)
        sys.stdout.write(f"montage: {args.montage}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
