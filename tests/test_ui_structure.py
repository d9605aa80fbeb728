"""The window's code keeps the shape docs/architecture.md describes: every module in a feature folder, no mixins,
the title set in one place, and no controller reaching into another object's private members. Read from the
source (no Qt needed)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

UI = Path(__file__).resolve().parents[1] / "app" / "ui"
FEATURES = {"shell", "guided", "project", "run", "precision", "results", "graph", "model", "common"}


def _modules() -> list[Path]:
    return sorted(p for p in UI.rglob("*.py") if p.name != "__init__.py")


def test_every_window_module_lives_in_a_feature_folder():
    modules = _modules()
    assert len(modules) > 50
    loose = [p.relative_to(UI).as_posix() for p in modules if p.parent == UI]
    assert not loose, f"modules outside a feature folder: {loose}"
    folders = {p.relative_to(UI).parts[0] for p in modules}
    assert folders == FEATURES


def test_no_mixins_make_up_a_window():
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b) for b in node.bases]
                assert not node.name.endswith("Mixin"), f"{path.name}: class {node.name}"
                assert not [b for b in bases if b.endswith("Mixin")], f"{path.name}: {node.name}({bases})"


def test_the_main_window_title_is_set_in_one_place():
    """Only MainWindow.update_title names the main window; other windows (the compare window, a dialog in its
    `*_dialog.py`) set their own."""
    setters: list[str] = []
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef):
                continue
            for call in ast.walk(func):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                        and call.func.attr == "setWindowTitle":
                    owner = ast.unparse(call.func.value)
                    if owner in ("self", "self.w", "window", "self.window()"):
                        setters.append(f"{path.relative_to(UI).as_posix()}:{func.name}:{owner}")
    main = [s for s in setters if s.startswith("shell/main_window.py")]
    assert main == ["shell/main_window.py:update_title:self"]
    others = [s for s in setters if not s.startswith("shell/main_window.py")]
    assert all(s.startswith("graph/compare_window.py") or s.split(":")[0].endswith("_dialog.py") for s in others), \
        others


def test_no_controller_reaches_into_another_objects_private_members():
    """`self.w._x`, `window._x`, `panel._x()`: a feature uses another's public interface only."""
    pattern = re.compile(r"\b(?:self\.w|self\.window|window|host|panel|run_controller|self\.w\.[a-z_]+)\._[a-z]\w*")
    found = []
    for path in _modules():
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line.split("#")[0]):
                found.append(f"{path.relative_to(UI).as_posix()}:{n}: {line.strip()}")
    assert not found, "\n".join(found)
