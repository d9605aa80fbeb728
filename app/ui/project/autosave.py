"""The project's autosave: a model's work written a moment after each change (a plan edit or a result), beside the
window's settings (`<settings folder>/autosave/<model>-<hash>.trtlab`), so opening that model again restores it.

`autosave/session-<pid>.json` names the autosave of a trtlab that is running; a clean close removes it, so finding
one at start whose process is gone means that trtlab was killed or crashed (`recovery`)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, QSettings, QTimer

from app.core.fileio import atomic_write_text
from app.core.project import PROJECT_SUFFIX, Project, ProjectError, save_project

log = logging.getLogger(__name__)

AUTOSAVE_DELAY_MS = 2000  # changes come in bursts (a benchmark is one job per target): write once they settle


class ProjectAutosave(QObject):
    """`work()` gives what to write: the project, its model and the project file it belongs to (None: nothing to
    write yet)."""

    def __init__(self, settings: QSettings, work: Callable[[], tuple[Project, Path, Path | None] | None],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        self.work = work
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(AUTOSAVE_DELAY_MS)
        self._timer.timeout.connect(self.write)

    @property
    def folder(self) -> Path:
        return Path(self.settings.fileName()).parent / "autosave"

    def path(self, model_path: Path) -> Path:
        """Where the work on this model is autosaved."""
        digest = hashlib.sha1(str(Path(model_path).resolve()).encode()).hexdigest()[:16]
        return self.folder / f"{Path(model_path).stem}-{digest}{PROJECT_SUFFIX}"

    def marker(self, pid: int | None = None) -> Path:
        """One per running trtlab: several may share the settings folder."""
        return self.folder / f"session-{os.getpid() if pid is None else pid}.json"

    def soon(self) -> None:
        """Something changed: write a moment from now (once a burst of changes has settled)."""
        self._timer.start()

    def pending(self) -> bool:
        return self._timer.isActive()

    def cancel(self) -> None:
        self._timer.stop()

    def write(self) -> Path | None:
        """Write the work now (when there is work: a result or a plan edit), and the session marker naming it."""
        self._timer.stop()
        work = self.work()
        if work is None:
            return None
        project, model, project_path = work
        path = self.path(model)
        try:
            save_project(project, path)
            atomic_write_text(self.marker(), json.dumps({
                "pid": os.getpid(), "autosave": str(path), "model": str(model),
                "project": str(project_path) if project_path else None}))
        except (ProjectError, OSError) as exc:
            log.warning("could not autosave the project to %s: %s", path, getattr(exc, "message", exc))
            return None
        return path

    def recovery(self) -> dict | None:
        """The latest autosave of a trtlab whose process is gone (its marker's JSON, with "marker"), or None. The
        older ones stay until this one is dealt with."""
        found = []
        for marker in sorted(self.folder.glob("session-*.json"), key=lambda m: m.stat().st_mtime):
            try:
                info = json.loads(marker.read_text(encoding="utf-8"))
                pid, auto = int(info["pid"]), Path(info["autosave"])
            except (OSError, ValueError, KeyError, TypeError):
                marker.unlink(missing_ok=True)
                continue
            if pid == os.getpid() or _alive(pid):
                continue  # that window is still open (another trtlab), or it is this one
            if not auto.is_file():
                marker.unlink(missing_ok=True)
                continue
            found.append({**info, "marker": str(marker)})
        return found[-1] if found else None

    def closed_cleanly(self) -> None:
        """A clean close: nothing to recover next time."""
        self.marker().unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    except OSError:
        return False
    return True
