"""docs/architecture.md names real places: every module path and every `module: name` it mentions exists, so the
map cannot drift from the code unnoticed."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"


def _module(rel: str) -> Path | None:
    """A path as the doc writes it (`ui/run_panel.py`, `core/transforms/`, `backends/tasks/compare.py`)."""
    for base in (ROOT / "app", ROOT, ROOT / "tests"):
        p = base / rel
        if p.exists():
            return p
    return None


def test_every_module_the_map_names_exists():
    text = DOC.read_text(encoding="utf-8")
    paths = set(re.findall(r"`((?:[a-z_]+/)+[a-z_]*(?:\.py)?)(?::[^`]*)?`", text))
    paths |= set(re.findall(r"\b((?:ui|cli|core|backends|jobs|tasks)/[a-z_/]+\.py)", text))
    assert len(paths) > 25
    missing = sorted(p for p in paths if _module(p) is None and _module(f"backends/{p}") is None
                     and _module(f"core/{p}") is None and _module(f"core/engine/{p}") is None)
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def test_every_function_the_map_names_is_defined_there():
    text = DOC.read_text(encoding="utf-8")
    pairs = re.findall(r"`((?:[a-z_]+/)+[a-z_]+\.py): ([A-Za-z_]+)", text)
    assert len(pairs) >= 8
    for rel, name in pairs:
        path = _module(rel) or _module(f"backends/{rel}") or _module(f"core/{rel}")
        assert path is not None, rel
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)}
        assert name in defined, f"{rel} defines no {name}"


def test_job_paths_in_the_map_resolve():
    import importlib

    found = re.findall(r"`(app\.backends\.tasks\.[a-z]+):\s*([a-z_]+)`", DOC.read_text(encoding="utf-8"))
    assert found
    for module, func in found:
        assert callable(getattr(importlib.import_module(module), func))
