"""Start the GUI."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from app import __version__


def run_gui(args: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    model = next((a for a in args if not a.startswith("-")), None)
    app = QApplication.instance() or QApplication([sys.argv[0], *[a for a in args if a.startswith("-")]])
    app.setApplicationName("trtlab")
    app.setOrganizationName("trtlab")
    app.setApplicationVersion(__version__)
    from app.ui.main_window import MainWindow

    window = MainWindow()
    window.show()
    # No model given: open the generated demo so the first run shows a working graph.
    QTimer.singleShot(0, (lambda: window.open_path(Path(model))) if model else window.open_demo)
    return app.exec()
