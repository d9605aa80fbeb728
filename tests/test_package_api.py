"""Each package of app.core names its public API in its ``__init__``; code outside a package imports only that.

A module outside ``app.core.P`` writes ``from app.core.P import name``, never ``from app.core.P.sub import name``,
``import app.core.P.sub`` or ``from app.core.P import sub``: the package can then move code between its modules
without touching its users. Inside a package, modules import their siblings by full submodule path (never names
from their own ``__init__``, which is still loading when they run). Tests may import internals.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app"
CORE = APP / "core"
PACKAGES = sorted(p.name for p in CORE.iterdir() if (p / "__init__.py").is_file())


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _submodules(package: str) -> set[str]:
    """Names of the modules and subpackages directly inside app.core.<package>."""
    folder = CORE / package
    return ({p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
            | {p.name for p in folder.iterdir() if (p / "__init__.py").is_file()})


def _api(package: str) -> set[str]:
    """The names in app.core.<package>'s __all__, read from its source (empty when it has none)."""
    tree = ast.parse((CORE / package / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module a (possibly relative) ``from ... import`` names."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _api_order(name: str) -> tuple[int, str]:
    """isort's order for __all__ (ruff's RUF022): CONSTANTS, then Classes, then functions and the rest."""
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _imports(path: Path):
    """(line, text, imported module, imported names) for every import in a file, those inside functions too."""
    source = path.read_text(encoding="utf-8")
    module = _module_name(path)
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if isinstance(node, ast.ImportFrom):
            target = _absolute(node, module, path.name == "__init__.py")
            yield node.lineno, ast.get_source_segment(source, node), target, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, ast.get_source_segment(source, node), alias.name, None


def _violations(package: str) -> list[str]:
    full = f"app.core.{package}"
    # A name in __all__ that is also a submodule's name (engine's named_dims function) imports the value.
    subs = _submodules(package) - _api(package)
    found = []
    for path in sorted(APP.rglob("*.py")):
        module = _module_name(path)
        where = path.relative_to(ROOT)
        for line, text, target, names in _imports(path):
            text = " ".join(text.split())
            if _inside(module, full):
                # Inside the package: only submodules may come through its own name, no names from its __init__.
                if target == full and names is not None and set(names) - subs:
                    found.append(f"{where}:{line}: `{text}` takes names from {full}'s own __init__, which is still "
                                 f"loading then; import them from the submodule that defines them")
                continue
            if target.startswith(full + ".") or (target == full and names is not None and set(names) & subs):
                found.append(f"{where}:{line}: `{text}` reaches inside {full}; import the names from {full} "
                             f"(add them to app/core/{package}/__init__.py and its __all__ if missing)")
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_outside_code_imports_only_the_package(package):
    found = _violations(package)
    assert not found, f"{len(found)} import(s) bypass app.core.{package}'s API:\n" + "\n".join(found)


@pytest.mark.parametrize("package", PACKAGES)
def test_all_names_the_api_others_use(package):
    full = f"app.core.{package}"
    mod = importlib.import_module(full)
    names = getattr(mod, "__all__", None)
    assert isinstance(names, list), f"{full} has no __all__ list naming its public API"
    assert names == sorted(set(names), key=_api_order), f"{full}.__all__ should be in isort order, no repeats: {names}"
    missing = [n for n in names if not hasattr(mod, n)]
    assert not missing, f"{full}.__all__ names what the package does not define: {missing}"
    modules = [n for n in names if type(getattr(mod, n)).__name__ == "module"]
    assert not modules, f"{full}.__all__ names submodules, not their contents: {modules}"
    # Every name another package takes from this one is in __all__, so __all__ is the whole public API.
    used = {}
    for path in sorted(APP.rglob("*.py")):
        if _inside(_module_name(path), full):
            continue
        for line, _text, target, imported in _imports(path):
            if target == full and imported:
                for name in imported:
                    used.setdefault(name, f"{path.relative_to(ROOT)}:{line}")
    unlisted = {n: at for n, at in sorted(used.items()) if n not in names}
    assert not unlisted, f"names imported from {full} but missing from its __all__: {unlisted}"


def test_every_core_package_is_checked():
    # The rule covers new packages as they come; this keeps the list from silently shrinking.
    assert {"engine", "layout", "measure", "model", "precision", "readiness"} <= set(PACKAGES)
