"""Reading a project file off the GUI thread: the archive, its arrays and the model's SHA-256 (to say whether the
model changed since the project was saved), while the window keeps painting."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QEventLoop, QTimer

from app.core.project import Project, ProjectError, load_project, model_changed

log = logging.getLogger(__name__)


def read_project(path: Path, say: Callable[[str], None]) -> tuple[Project, bool]:
    """The project at `path` and whether its model changed since it was saved, read on a worker thread (the
    archive, its arrays, the model's SHA-256) while the window keeps painting and says how long it has been
    reading. ProjectError as load_project raises it."""
    read: list[tuple[Project, bool]] = []   # filled by the worker: the project and whether its model changed
    failed: list[ProjectError] = []

    def work() -> None:
        try:
            project = load_project(path)
            read.append((project, Path(project.model).is_file() and model_changed(project)))
        except ProjectError as exc:
            failed.append(exc)
        except Exception as exc:  # noqa: BLE001 - a fault of ours: shown, never a dead window
            log.exception("reading %s failed", path)
            failed.append(ProjectError(f"Reading the project {path.name} failed: {exc}",
                                       fix="This is a fault in trtlab; please report it with the file."))

    worker = threading.Thread(target=work, name="read-project", daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(0.05)  # most projects are read by now
    if worker.is_alive():
        loop = QEventLoop()
        timer = QTimer()
        timer.setInterval(50)

        def poll() -> None:
            if not worker.is_alive():
                loop.quit()
            else:
                say(f"Reading the project {path.name}… {time.monotonic() - started:.0f} s")
        timer.timeout.connect(poll)
        timer.start()
        loop.exec()
        timer.stop()
    if failed:
        raise failed[0]
    return read[0]
