"""Start the GUI."""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import time
from pathlib import Path

from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QApplication

from app import __version__
from app.ui.common.resources import app_icon


def qt_environment() -> None:
    """What Qt must be told before the QApplication is made (a setting the user made wins).

    QT_NO_GUI_THREADPOOL: Qt's raster engine hands large fills and image conversions to a pool of its own threads
    and waits for them. With a job running beside the window, those threads wait for a core the job holds, and the
    window waits with them: on a 2-core machine one paint of the Sweep tab with 10 ms of work took 15-17 ms while a
    sweep ran, blocked 20 times on the pool. The window's fills are small; they are done where they are asked for."""
    os.environ.setdefault("QT_NO_GUI_THREADPOOL", "1")


def _application(argv: list[str]) -> QApplication:
    """The running QApplication (tests make one), else a new one with `argv` (after `qt_environment`)."""
    app = QApplication.instance()
    if isinstance(app, QApplication):
        return app
    qt_environment()
    return QApplication(argv)


def create_main_window(args: list[str]):  # -> MainWindow (imported lazily: Qt must exist first)
    """Make the window and schedule the model from the command line, or the demo model."""
    from app.ui.shell.main_window import MainWindow

    model = next((a for a in args if not a.startswith("-")), None)
    window = MainWindow()
    window.show()
    # No model given: open the generated demo so the first run shows a working graph.
    QTimer.singleShot(0, (lambda: window.open_path(Path(model))) if model else window.open_demo)
    return window


def run_gui(args: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    app = _application([sys.argv[0], *[a for a in args if a.startswith("-")]])
    app.setApplicationName("trtlab")
    app.setOrganizationName("trtlab")
    app.setApplicationVersion(__version__)
    app.setWindowIcon(app_icon())
    app.setDesktopFileName("trtlab")  # Wayland and task bars match the window to resources/trtlab.desktop
    _window = create_main_window(args)  # held until exit
    code = app.exec()
    # Everything is saved when the window closes. Leave without the interpreter's teardown: PySide6 6.12 with
    # pyqtgraph can abort in the final garbage collection, which would turn a clean exit into a crash report.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def selftest(timeout: float = 120.0) -> int:
    """`trtlab --selftest`: open the window on the demo model, check that it and its actions and docks show their
    icons, print what was seen and exit 0, or 1 naming what is missing. Meant for a built application
    (packaging/check_app.py runs it with QT_QPA_PLATFORM=offscreen); the user's settings are not touched."""
    from app.ui.common.resources import resources_dir
    from app.ui.shell.main_window import MainWindow

    app = _application([sys.argv[0]])
    app.setApplicationName("trtlab")
    app.setWindowIcon(app_icon())
    with tempfile.TemporaryDirectory(prefix="trtlab-selftest-") as tmp:
        window = MainWindow(QSettings(str(Path(tmp) / "settings.ini"), QSettings.Format.IniFormat))
        window.resize(1280, 800)
        window.show()
        window.open_demo()
        deadline = time.monotonic() + timeout
        while (window.loader.is_busy() or window.opened is None) and time.monotonic() < deadline:
            app.processEvents()
            time.sleep(0.01)
        app.processEvents()
        menus = window.menus
        actions = {a.text().replace("&", ""): a for a in (menus.act_open, menus.act_compare, menus.act_build)}
        problems = [p for p, bad in (
            ("no resources folder (looked in the package, the bundle and the source tree)", resources_dir() is None),
            ("the window has no icon", window.windowIcon().isNull()),
            ("the application has no icon", app.windowIcon().isNull()),
            ("the window is not shown", not window.isVisible()),
            (f"the demo model did not open within {timeout:.0f} s", window.opened is None),
            *((f"the action '{t}' has no icon", a.icon().isNull()) for t, a in actions.items()),
            *((f"the {d.windowTitle()} panel has no icon", d.windowIcon().isNull()) for d in window.model_docks()),
        ) if bad]
        sizes = [s.width() for s in window.windowIcon().availableSizes()]
        model = window.opened.path.name if window.opened is not None else "none"
        window.close()
    if problems:
        sys.stderr.write("trtlab selftest: FAILED: " + "; ".join(problems) + "\n")
        code = 1
    else:
        sys.stdout.write(f"trtlab selftest: ok: window {window.width()}x{window.height()}, icon at {sizes} px, "
                         f"{len(window.model_docks())} panel icons, model {model} open, "
                         f"resources in {resources_dir()}\n")
        code = 0
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # as run_gui: no interpreter teardown with Qt and pyqtgraph loaded
