"""Start the GUI."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from app import __version__


def create_main_window(args: list[str]):  # -> MainWindow (imported lazily: Qt must exist first)
    """Make the window and schedule the model from the command line, or the demo model."""
    from app.ui.main_window import MainWindow

    model = next((a for a in args if not a.startswith("-")), None)
    window = MainWindow()
    window.show()
    # No model given: open the generated demo so the first run shows a working graph.
    QTimer.singleShot(0, (lambda: window.open_path(Path(model))) if model else window.open_demo)
    return window


def run_gui(args: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    app = QApplication.instance() or QApplication([sys.argv[0], *[a for a in args if a.startswith("-")]])
    app.setApplicationName("trtlab")
    app.setOrganizationName("trtlab")
    app.setApplicationVersion(__version__)
    _window = create_main_window(args)  # held until exit
    code = app.exec()
    # Everything is saved when the window closes. Leave without the interpreter's teardown: PySide6 6.12 with
    # pyqtgraph can abort in the final garbage collection, which would turn a clean exit into a crash report.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
