"""Tests that cannot flake or lie, kept so: no test module imports another test module or a benchmark (what several
need lives in tests/support/), and nothing outside tests/support/ sleeps or waits a fixed time (wait on the event
or condition instead: `qtbot.waitUntil`, `qtbot.waitSignal`, `tests.support.waiting`)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SUPPORT = TESTS / "support"

# (file under tests/, rule) -> why it stays. A fixed sleep that is the work being measured or simulated (a fake
# evaluation that takes time, a function a time budget is spent on) guards no assert.
ALLOWED: dict[tuple[str, str], str] = {
    ("core/precision/test_fallback.py", "sleep"): "a fake evaluation that takes time, for the search's time budget",
    ("core/measure/test_latency.py", "sleep"): "the measured function itself: a time budget is spent on it (and "
                                               "`elapsed >= 0.1` checks the budget was spent: a lower bound, which "
                                               "a busy machine cannot break)",
}


def _module_of(path: Path) -> str:
    return ".".join(path.relative_to(TESTS.parent).with_suffix("").parts)


def _imported(node: ast.Import | ast.ImportFrom, here: str) -> list[str]:
    """Full names of the modules (and of names that may be modules) an import statement reaches."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        parts = here.split(".")[: -node.level]
        base = ".".join([*parts, base] if base else parts)
    return [base, *(f"{base}.{a.name}" for a in node.names)]


def _is_test_module(name: str) -> bool:
    return name.rsplit(".", 1)[-1].startswith("test_")


def _fixed_wait(call: ast.Call) -> str | None:
    """'sleep', 'qtbot.wait' or 'qWait' for a call that waits a fixed time, else None."""
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    owner = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""
    if name == "sleep" and owner in ("time", ""):
        return "sleep"
    if name == "qWait":
        return "qWait"
    if name == "wait" and owner == "qtbot" and call.args and isinstance(call.args[0], ast.Constant) \
            and isinstance(call.args[0].value, (int, float)):
        return "qtbot.wait"
    return None


def findings() -> dict[tuple[str, str], list[str]]:
    """(file, rule) -> the places: rule is 'imports a test module', 'imports benchmarks' or a fixed wait's name."""
    found: dict[tuple[str, str], list[str]] = {}
    for path in sorted(TESTS.rglob("*.py")):
        rel = path.relative_to(TESTS).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        here = _module_of(path)
        in_support = path.is_relative_to(SUPPORT)
        for node in ast.walk(tree):
            rules = []
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = _imported(node, here)
                if any(n == "benchmarks" or n.startswith("benchmarks.") for n in names):
                    rules.append("imports benchmarks")
                if any(n.startswith("tests.") and _is_test_module(n) for n in names):
                    rules.append("imports a test module")
            elif isinstance(node, ast.Call) and not in_support:
                wait = _fixed_wait(node)
                if wait:
                    rules.append(wait)
            for rule in rules:
                found.setdefault((rel, rule), []).append(f"{rel}:{node.lineno}")
    return found


def test_no_test_imports_another_test_or_a_benchmark_and_none_waits_a_fixed_time():
    bad = {key: places for key, places in findings().items() if key not in ALLOWED}
    assert not bad, "\n".join(f"{rule}: {', '.join(places)}" for (_, rule), places in sorted(bad.items()))


def test_every_exception_is_still_needed():
    found = findings()
    stale = sorted(key for key in ALLOWED if key not in found)
    assert not stale, f"no longer needed, take them out of the lists: {stale}"


def test_the_checks_see_what_they_look_for(tmp_path):
    code = ("import time\nfrom tests.ui import test_x\nfrom benchmarks.shared import y\nfrom .test_z import w\n"
            "def t(qtbot):\n    time.sleep(1)\n    qtbot.wait(20)\n    qtbot.wait(signal)\n    QTest.qWait(5)\n")
    tree = ast.parse(code)
    imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    reached = [_imported(n, "tests.ui.test_here") for n in imports]
    assert _is_test_module(reached[1][1]) and reached[2][0] == "benchmarks.shared"
    assert reached[3][0] == "tests.ui.test_z"
    waits = [_fixed_wait(n) for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert sorted(w for w in waits if w) == ["qWait", "qtbot.wait", "sleep"]
