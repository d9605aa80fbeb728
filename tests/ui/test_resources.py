"""The application icon, the dock and action icons, the packaged copy of the artwork, and the desktop entry."""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtGui import QColor, QIcon, QImage
from PySide6.QtSvg import QSvgRenderer
from PySide6.QtWidgets import QTabBar

from app.ui.common import resources
from app.ui.common.docks import DOCK_ICONS

ROOT = Path(__file__).resolve().parents[2]
ART = ROOT / "resources"
PACKAGED = ROOT / "app" / "resources"


def _names_in_code() -> set[str]:
    """Every icon name the UI code asks for: `icon="name"` arguments, `icon("name")` calls and the dock table."""
    names = set(DOCK_ICONS.values())
    for path in (ROOT / "app" / "ui").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        names |= set(re.findall(r"""\bicon\s*=\s*["']([\w-]+)["']""", text))
        names |= set(re.findall(r"""\b(?:icon|load_icon)\(\s*["']([\w-]+)["']""", text))
    return names


def _inked(image: QImage) -> list[QColor]:
    """The colours of the pixels an icon drew (alpha above half)."""
    image = image.convertToFormat(QImage.Format.Format_ARGB32)
    return [c for y in range(image.height()) for x in range(image.width())
            if (c := image.pixelColor(x, y)).alpha() > 128]


def test_every_icon_named_in_code_exists_and_draws_at_16_and_32_px(qapp):
    names = _names_in_code()
    assert {"open", "save", "compare", "benchmark", "build", "cancel", "diagnose", "fit"} <= names
    for name in sorted(names):
        assert (ART / "icons" / f"{name}.svg").is_file(), f"resources/icons/{name}.svg is named in app/ui"
        icon = resources.icon(name)
        assert not icon.isNull(), name
        for size in (16, 32):
            pixmap = icon.pixmap(size, size)
            assert pixmap.width() == size and pixmap.height() == size, (name, size)
            inked = _inked(pixmap.toImage())
            # Something is drawn, and it is a line drawing, not a filled square.
            assert 0.03 * size * size < len(inked) < 0.7 * size * size, (name, size, len(inked))


def test_every_svg_is_valid_and_uses_the_shared_stroke_style():
    icons = sorted((ART / "icons").glob("*.svg"))
    assert len(icons) >= 20
    for svg in icons:
        assert QSvgRenderer(str(svg)).isValid(), svg.name
        text = svg.read_text(encoding="utf-8")
        assert 'viewBox="0 0 24 24"' in text and 'stroke-width="2"' in text, svg.name


def test_icons_take_the_palette_text_colour(qapp):
    """Strokes drawn in currentColor follow the theme: white on a dark palette, near black on a light one."""
    light = _inked(resources._icon("find", "#ffffff").pixmap(32, 32).toImage())
    dark = _inked(resources._icon("find", "#202020").pixmap(32, 32).toImage())
    assert light and all(c.lightness() > 200 for c in light)
    assert dark and all(c.lightness() < 80 for c in dark)
    # Accent colours are kept: Run is green whatever the palette.
    run = _inked(resources._icon("run", "#ffffff").pixmap(32, 32).toImage())
    assert run and all(c.green() > c.red() + 60 for c in run)


def test_an_unknown_icon_is_null_and_logged(qapp, caplog):
    assert resources.icon("no-such-icon").isNull()
    assert "no-such-icon" in caplog.text


def test_resources_are_found_in_the_package_and_a_bundle_is_searched(monkeypatch, tmp_path):
    assert resources.resources_dir() == PACKAGED
    monkeypatch.setattr("sys._MEIPASS", str(tmp_path), raising=False)
    assert tmp_path / "resources" in resources.resource_dirs()


def test_the_app_icon_pngs_have_their_sizes_and_show_the_bolt():
    for size in (16, 32, 48, 64, 128, 256, 512):
        image = QImage(str(ART / "png" / f"trtlab-{size}.png"))
        assert (image.width(), image.height()) == (size, size), size
    inked = _inked(QImage(str(ART / "png" / "trtlab-32.png")))
    assert any(c.red() > 200 and c.green() > 150 and c.blue() < 100 for c in inked), "no yellow bolt at 32 px"
    assert any(c.blue() > 120 and c.red() < 80 for c in inked), "no blue ground at 32 px"


def test_the_window_shows_the_app_icon(window):
    icon: QIcon = window.windowIcon()
    assert not icon.isNull()
    assert {16, 32, 256} <= {s.width() for s in icon.availableSizes()}
    inked = _inked(icon.pixmap(32, 32).toImage())
    assert any(c.red() > 200 and c.green() > 150 and c.blue() < 100 for c in inked)


def test_menu_actions_and_docks_have_icons(window, qtbot):
    for name in ("act_open", "act_reload", "act_export_png", "act_close", "act_find", "act_save_plan",
                 "act_load_plan", "act_fallback", "act_compare", "act_bench", "act_diagnose", "act_build",
                 "act_cancel_all"):
        assert not getattr(window.menus, name).icon().isNull(), name
    for dock in window.model_docks():
        assert not dock.windowIcon().isNull(), dock.windowTitle()
        assert not window.menus.panel_actions[dock.objectName()].icon().isNull(), dock.windowTitle()
    window.open_demo()
    qtbot.waitUntil(lambda: window.opened is not None and not window.loader.is_busy(), timeout=30_000)

    def tab_icons() -> dict:
        return {bar.tabText(i): bar.tabIcon(i) for bar in window.findChildren(QTabBar) if bar.isVisible()
                for i in range(bar.count())}

    # Docks sharing an area show their icons on their tabs (once the model's docks are laid out).
    qtbot.waitUntil(lambda: {"Precision", "Readiness"} <= set(tab_icons()), timeout=5_000)
    tabs = tab_icons()
    assert not tabs["Precision"].isNull() and not tabs["Readiness"].isNull()


def test_the_run_menu_draws_its_icons(window, qtbot):
    """What a person sees: the Run menu, opened, paints Cancel All Jobs' red icon at the left of its row (menu text
    is never red, so red pixels there are the icon)."""
    menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Run")
    menu.popup(window.mapToGlobal(window.rect().center()))
    qtbot.waitUntil(menu.isVisible)
    image = menu.grab().toImage()
    menu.hide()

    def red_pixels(action) -> int:
        geo = menu.actionGeometry(action)
        return sum(1 for y in range(geo.top(), geo.bottom() + 1) for x in range(geo.left(), geo.left() + 32)
                   if (c := image.pixelColor(x, y)).red() > 150 and c.green() < 110 and c.blue() < 110)

    assert red_pixels(window.menus.act_cancel_all) > 8, "no red cancel icon left of Cancel All Jobs"
    assert red_pixels(window.menus.act_compare) == 0  # the compare icon is drawn in the text colour


def test_make_icons_renders_what_is_committed(qapp):
    """resources/make_icons.py reproduces the committed PNGs (same renderer), so they are never stale."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_icons", ART / "make_icons.py")
    make_icons = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_icons)
    fresh = make_icons.render(ART / "trtlab.svg", 48).convertToFormat(QImage.Format.Format_ARGB32)
    committed = QImage(str(ART / "png" / "trtlab-48.png")).convertToFormat(QImage.Format.Format_ARGB32)
    assert fresh == committed, "run python resources/make_icons.py"
