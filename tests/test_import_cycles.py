"""No import cycles among the UI modules: views and controllers reach each other through Qt signals or small
protocols (graph_canvas.py, run_host.py), not by importing each other.

Every import counts: module level, inside functions, and under `if TYPE_CHECKING:` (a cycle hidden there
still ties the modules together and returns as a runtime cycle the day someone needs the name at runtime)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import app

APP_DIR = Path(app.__file__).resolve().parent


def _module_name(path: Path, root: Path, package: str) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (anywhere in its source), by name."""
    files = {_module_name(p, root, package): p for p in sorted(root.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the module's own package, up level - 1
                    here = name.split(".") if is_package else name.split(".")[:-1]
                    here = here[: len(here) - (node.level - 1)]
                    base = ".".join([*here, base] if base else here)
                # `from pkg import mod` imports the module pkg.mod; `from mod import name` imports mod.
                targets = [base, *(f"{base}.{a.name}" for a in node.names)]
            else:
                continue
            for target in targets:
                # `import app.ui.x.y` runs the packages app.ui and app.ui.x too: each counts.
                while target:
                    if target in files and target != name:
                        deps.add(target)
                    target = target.rpartition(".")[0]
        graph[name] = deps
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or round a loop (strongly connected components
    of two or more modules), each sorted; empty when there is none."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        # Tarjan's algorithm; the UI has ~40 modules, so recursion depth is no concern.
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(groups)


def test_no_import_cycle_among_ui_modules():
    graph = import_graph(APP_DIR / "ui", "app.ui")
    # The walk sees the UI: the window imports its controllers and panels.
    assert "app.ui.run.controller" in graph["app.ui.shell.main_window"]
    assert "app.ui.graph.overlays" in graph["app.ui.graph.view"]
    assert import_cycles(graph) == []


def test_no_import_cycle_anywhere_in_app():
    """Every package of app, the same way: a module that imports its siblings by full path runs its own packages
    too (they are loading already: not a cycle), but no two modules may import each other round a loop."""
    graph = import_graph(APP_DIR, "app")
    graph = {m: {d for d in deps if not m.startswith(d + ".")} for m, deps in graph.items()}
    assert len(graph) > 200 and "app.core.engine.dim_params" in graph["app.core.engine.profiles"]
    assert import_cycles(graph) == []


def test_views_and_controllers_meet_through_protocols():
    graph = import_graph(APP_DIR / "ui", "app.ui")
    assert "app.ui.shell.main_window" not in graph["app.ui.run.controller"]
    assert "app.ui.run.host" in graph["app.ui.run.controller"]
    for module in ("app.ui.graph.overlays", "app.ui.graph.export"):
        assert "app.ui.graph.view" not in graph[module]
        assert "app.ui.graph.canvas" in graph[module]


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize("view_import", [
    "from pkg.controller import Controller\n",                                 # module level
    "def make():\n    from pkg.controller import Controller\n",                # inside a function
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import controller\n",  # for type hints only
    "from . import controller\n",                                              # relative
    "import pkg.controller.sub\n",                                             # a submodule runs its package
])
def test_a_cycle_is_found_however_it_is_imported(tmp_path, view_import):
    root = _write(tmp_path / "pkg", {
        "__init__.py": "",
        "view.py": view_import,
        "controller/__init__.py": "from pkg.view import *\n",
        "controller/sub.py": "",
        "plain.py": "import os\nfrom pkg import view\n",
    })
    graph = import_graph(root, "pkg")
    assert import_cycles(graph) == [["pkg.controller", "pkg.view"]]


def test_a_longer_loop_is_one_group_and_a_chain_is_none(tmp_path):
    root = _write(tmp_path / "pkg", {
        "__init__.py": "",
        "a.py": "from pkg import b\n",
        "b.py": "from pkg.c import thing\n",
        "c.py": "def f():\n    import pkg.a\n",
        "d.py": "from pkg import a\n",
    })
    assert import_cycles(import_graph(root, "pkg")) == [["pkg.a", "pkg.b", "pkg.c"]]
    (root / "c.py").write_text("thing = 1\n", encoding="utf-8")
    assert import_cycles(import_graph(root, "pkg")) == []
