"""core, cli, jobs and backends never import Qt: the CLI runs in CI and on headless servers."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
QT_ROOTS = ("PySide6", "shiboken6", "pyqtgraph", "PyQt5", "PyQt6", "PySide2")

# Imports every module of the headless packages, then reports what ended up in sys.modules.
PROBE = r"""
import importlib, json, pkgutil, sys, traceback
imported, failed = [], {}
for pkg_name in sys.argv[1:]:
    pkg = importlib.import_module(pkg_name)
    imported.append(pkg_name)
    for info in pkgutil.walk_packages(getattr(pkg, "__path__", []), prefix=pkg_name + "."):
        try:
            importlib.import_module(info.name)
            imported.append(info.name)
        except Exception:
            failed[info.name] = traceback.format_exc(limit=3)
roots = __ROOTS__
qt = sorted(m for m in sys.modules if m.split(".")[0] in roots)
print(json.dumps({"imported": imported, "failed": failed, "qt": qt}))
""".replace("__ROOTS__", repr(QT_ROOTS))


def probe(*packages: str, preload: str = "") -> dict[str, object]:
    code = preload + "\n" + PROBE
    r = subprocess.run([sys.executable, "-c", code, *packages], cwd=REPO, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_headless_packages_do_not_import_qt() -> None:
    report = probe("app.core", "app.cli", "app.jobs", "app.backends")
    imported = set(report["imported"])
    # the probe really imported the modules it is meant to guard
    assert {"app.core.model.loader", "app.core.model.summary", "app.core.model.shapes", "app.core.model.weights",
            "app.core.model.display_graph", "app.cli.main", "app.cli.inspect_cmd", "app.jobs",
            "app.backends"} <= imported
    assert report["failed"] == {}, report["failed"]
    assert report["qt"] == [], f"Qt leaked into headless code: {report['qt']}"


@pytest.mark.skipif(importlib.util.find_spec("PySide6") is None, reason="PySide6 is not installed")
def test_probe_detects_qt_when_it_is_imported() -> None:
    """The same probe reports Qt when something does import it (so the check above can fail)."""
    report = probe("app.jobs", preload="import PySide6.QtCore")
    assert "PySide6.QtCore" in report["qt"]
