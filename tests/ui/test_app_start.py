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


def test_the_window_paints_its_fills_itself_not_on_qts_thread_pool(tmp_path):
    """The application tells Qt to keep raster fills on the thread that asks (QT_NO_GUI_THREADPOOL), before its
    QApplication exists: with a job holding the cores, a paint that waits for Qt's pool threads stalls the window.
    A fresh process as `trtlab` starts one: a window-sized gradient fill and a shape starts no pool thread, where a
    QApplication made without the setting starts Qt's pool for the same paint."""
    script = """
import os, sys
from PySide6.QtCore import QRectF
from PySide6.QtGui import QBrush, QColor, QImage, QLinearGradient, QPainter
from PySide6.QtWidgets import QApplication
if sys.argv[1] == "app":
    from app.ui.shell.app import _application
    app = _application([sys.argv[0]])
else:
    app = QApplication([sys.argv[0]])
image = QImage(1600, 1000, QImage.Format.Format_ARGB32_Premultiplied)
p = QPainter(image)
gradient = QLinearGradient(0, 0, 0, 1000)
gradient.setColorAt(0, QColor("white"))
gradient.setColorAt(1, QColor("gray"))
p.fillRect(QRectF(0, 0, 1600, 1000), QBrush(gradient))
p.setRenderHint(QPainter.RenderHint.Antialiasing)
p.setBrush(QColor(30, 100, 200, 120))
p.drawEllipse(QRectF(10, 10, 1500, 900))
p.end()
threads = [open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task")]
print(sum(t == "Thread (pooled)" for t in threads))
"""
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k != "QT_NO_GUI_THREADPOOL"}
    env.update(QT_QPA_PLATFORM="offscreen", HOME=str(tmp_path))

    def pooled(how: str) -> int:
        r = subprocess.run([sys.executable, "-c", script, how], capture_output=True, text=True, timeout=60, cwd=root,
                           env=env)
        assert r.returncode == 0, r.stderr
        return int(r.stdout.split()[-1])

    assert pooled("app") == 0
    assert pooled("bare") >= 1   # the paint does use Qt's pool where nothing says otherwise
