"""The window's controllers are given the few parts they use, never the window: no module of `app/ui` but the
window itself and the one that starts it imports or names `MainWindow`. Read from the source with `ast` (no Qt
needed), so a name in a docstring or a comment does not count, and one in an annotation or a string
annotation does."""

from __future__ import annotations

import ast
from pathlib import Path

UI = Path(__file__).resolve().parents[2] / "app" / "ui"
WINDOW = "MainWindow"
# The window is defined in one module and made in another (the start: `create_main_window`).
ALLOWED = {"shell/main_window.py", "shell/app.py"}


def _modules() -> list[Path]:
    return sorted(p for p in UI.rglob("*.py") if p.name != "__init__.py")


def _names_in(tree: ast.AST) -> list[tuple[int, str]]:
    """Where a module names the window: imports, names, attributes, and annotations written as strings."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            module = (node.module or "") if isinstance(node, ast.ImportFrom) else ""
            for alias in node.names:
                if alias.name.split(".")[-1] == WINDOW or alias.name.endswith("main_window"):
                    found.append((node.lineno, f"imports {alias.name}"))
            if module.endswith("main_window"):
                found.append((node.lineno, f"imports from {module}"))
        elif isinstance(node, ast.Name) and node.id == WINDOW:
            found.append((node.lineno, WINDOW))
        elif isinstance(node, ast.Attribute) and node.attr == WINDOW:
            found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.arg | ast.AnnAssign | ast.FunctionDef | ast.AsyncFunctionDef):
            annotations = ([node.annotation] if isinstance(node, ast.arg | ast.AnnAssign) else [node.returns])
            for ann in annotations:
                if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
                    try:
                        inner = ast.parse(ann.value, mode="eval")
                    except SyntaxError:
                        continue
                    if any(isinstance(n, ast.Name) and n.id == WINDOW for n in ast.walk(inner)):
                        found.append((node.lineno, f"annotation '{ann.value}'"))
    return found


def window_references() -> list[str]:
    """Every place outside the window's own modules that imports or names `MainWindow`."""
    out = []
    for path in _modules():
        rel = path.relative_to(UI).as_posix()
        if rel in ALLOWED:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        out += [f"app/ui/{rel}:{line}: {what}" for line, what in _names_in(tree)]
    return out


def test_no_controller_imports_or_names_the_main_window():
    found = window_references()
    assert not found, "controllers are given their collaborators, not the window:\n" + "\n".join(found)


def test_the_controllers_are_there_to_check():
    """The check reads the real modules: the controllers it guards exist and are classes of theirs."""
    classes = {node.name for path in _modules() for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
               if isinstance(node, ast.ClassDef)}
    assert {"PrecisionWork", "RunController", "GraphColors", "PlanFiles", "EngineResults"} <= classes
    assert (UI / "shell" / "main_window.py").is_file() and (UI / "shell" / "app.py").is_file()


def test_the_check_finds_a_window_named_in_each_way():
    """What the check counts: an import, a name, an attribute and a string annotation; not a docstring."""
    source = '''
"""Not this MainWindow."""
from app.ui.shell.main_window import MainWindow
import app.ui.shell.main_window as mw

def f(w: "MainWindow") -> None:
    x = mw.MainWindow
    y: MainWindow = w
'''
    found = [what for _line, what in _names_in(ast.parse(source))]
    assert "imports MainWindow" in found and "imports from app.ui.shell.main_window" in found
    assert "imports app.ui.shell.main_window" in found
    assert "mw.MainWindow" in found and "annotation 'MainWindow'" in found and WINDOW in found
    assert not _names_in(ast.parse('"""A docstring naming MainWindow."""\n# and a comment: MainWindow\n'))


def test_the_run_controller_starts_every_single_job_by_one_path():
    """Diagnose, fallback, profile, build, variant and compare all start through `RunController._launch`."""
    path = UI / "run" / "controller.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "RunController")
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    for name in ("start_diagnose", "start_fallback", "start_profile", "start_build", "save_variant", "start_compare"):
        calls = {ast.unparse(c.func) for c in ast.walk(methods[name]) if isinstance(c, ast.Call)}
        assert "self._launch" in calls, name
        assert "self._start" not in calls and "self._spec" not in calls, name


CONTROLLERS = {"precision/work.py": "PrecisionWork", "precision/colors.py": "GraphColors",
               "precision/plan_files.py": "PlanFiles", "precision/engine_results.py": "EngineResults",
               "precision/nodes.py": "GraphNodes", "run/controller.py": "RunController"}


def test_each_controller_is_given_five_collaborators_at_the_most():
    """A controller's hands are narrow: its constructor takes the few parts it uses (five at the most, besides the
    Qt parent it lives and dies with), never the window."""
    for rel, name in CONTROLLERS.items():
        tree = ast.parse((UI / rel).read_text(encoding="utf-8"))
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
        init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
        given = [a.arg for a in [*init.args.args, *init.args.kwonlyargs] if a.arg not in ("self", "parent")]
        assert 2 <= len(given) <= 5, f"{name} takes {len(given)} collaborators: {given}"
