"""Starting the application the way the `trtlab` command does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QStandardPaths


def test_no_model_opens_the_demo(qtbot, tmp_path, monkeypatch):
    from app.ui.shell.app import create_main_window

    QStandardPaths.setTestModeEnabled(True)  # keep the demo file and settings out of the user's folders
    QCoreApplication.setOrganizationName("trtlab-tests")
    window = create_main_window([])
    qtbot.addWidget(window)
    qtbot.waitUntil(lambda: window.opened is not None, timeout=30_000)
    assert window.opened.path.name == "u2netp.onnx"  # the bundled real demo model
    assert window.stack.currentWidget() is window.graph_page
    assert window.view.graph.node_count > 30
    window.close()


def test_model_argument_opens_that_model(qtbot, models_dir):
    from app.ui.shell.app import create_main_window

    QStandardPaths.setTestModeEnabled(True)
    window = create_main_window([str(models_dir / "magika_standard_v3_3.onnx")])
    qtbot.addWidget(window)
    qtbot.waitUntil(lambda: window.opened is not None, timeout=30_000)
    assert window.opened.summary.nodes == 95
    window.close()


def test_the_selftest_opens_the_window_with_the_demo_and_its_icons(tmp_path):
    """`trtlab --selftest` (what the packaged app's check runs): the real window, the demo open, every icon."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HOME": str(tmp_path)}
    r = subprocess.run([sys.executable, "-m", "app", "--selftest"], capture_output=True, text=True, timeout=300,
                       env=env, cwd=Path(__file__).resolve().parents[2])
    assert r.returncode == 0, r.stderr[-2000:]
    assert "selftest: ok" in r.stdout and "model u2netp.onnx open" in r.stdout and "9 panel icons" in r.stdout
