"""Autosave and recovery of the main window's project: the work on a model written a moment after each change,
the offer to restore it after a crash, and the question on closing with unsaved results. Part of
`ProjectMixin` (window_project.py), whose project it writes.

The autosave of a model's work lives beside the window's settings (`<settings folder>/autosave/<model>-<hash>
.trtlab`, like the autosaved plans): opening that model again restores it. `autosave/session-<pid>.json` names
the autosave of a trtlab that is running; a clean close removes it, so finding one at start whose process is
gone means that trtlab was killed or crashed, and the window offers to restore its work.
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QMessageBox, QPushButton, QToolButton, QWidget

from app.core.fileio import atomic_write_text
from app.core.project import PROJECT_SUFFIX, ProjectError, save_project

log = logging.getLogger(__name__)

AUTOSAVE_DELAY_MS = 2000  # changes come in bursts (a benchmark is one job per target): write once they settle


class ProjectBanner(QFrame):
    """A notice about the project with the actions it offers (Restore / Discard, Locate model…)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("projectBanner")
        self.setStyleSheet("#projectBanner { background:#fff4e5; border-bottom:1px solid #ffd8a8; color:#663c00; }")
        self._row = QHBoxLayout(self)
        self._row.setContentsMargins(10, 6, 6, 6)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self._row.addWidget(self.label, 1)
        self.buttons: dict[str, QPushButton] = {}
        close = QToolButton(text="✕")
        close.setToolTip("Dismiss")
        close.clicked.connect(self.hide)
        self._close = close
        self._row.addWidget(close)
        self.kind = ""
        self.hide()

    def offer(self, kind: str, title: str, message: str, actions: list[tuple[str, Callable[[], None]]]) -> None:
        for b in self.buttons.values():
            b.deleteLater()
        self.buttons = {}
        self.kind = kind
        self.label.setText(f"<b>{html.escape(title)}</b> — {html.escape(message)}")
        for text, slot in actions:
            b = QPushButton(text)
            b.clicked.connect(slot)
            self._row.insertWidget(self._row.count() - 1, b)
            self.buttons[text] = b
        self.show()

    def text(self) -> str:
        return self.label.text()


class AutosaveMixin:
    """Autosave, crash recovery and the close question (see the module's doc)."""

    # ----------------------------------------------------------------- autosave and recovery
    def _autosave_dir(self) -> Path:
        return Path(self.settings.fileName()).parent / "autosave"

    def project_autosave_path(self, model_path: Path) -> Path:
        digest = hashlib.sha1(str(Path(model_path).resolve()).encode()).hexdigest()[:16]
        return self._autosave_dir() / f"{Path(model_path).stem}-{digest}{PROJECT_SUFFIX}"

    def _session_marker(self, pid: int | None = None) -> Path:
        """One per running trtlab: several may share the settings folder."""
        return self._autosave_dir() / f"session-{os.getpid() if pid is None else pid}.json"

    def autosave_project(self) -> Path | None:
        """Write this model's work to its autosave (when there is work: a result or a plan edit)."""
        self._autosave_timer.stop()
        if self.opened is None or (not self.session_results and not self.plan.undo_stack.count()):
            return None
        path = self.project_autosave_path(self.opened.path)
        try:
            save_project(self.gather_project(), path)
            atomic_write_text(self._session_marker(), json.dumps({
                "pid": os.getpid(), "autosave": str(path), "model": str(self.opened.path),
                "project": str(self.project_path) if self.project_path else None}))
        except (ProjectError, OSError) as exc:
            log.warning("could not autosave the project to %s: %s", path, getattr(exc, "message", exc))
            return None
        return path

    def _offer_recovery(self) -> None:
        """A session marker whose process is gone: that trtlab was killed or crashed; offer its autosave."""
        found = []
        for marker in sorted(self._autosave_dir().glob("session-*.json"), key=lambda m: m.stat().st_mtime):
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
        if not found:
            return
        info = self._recovery = found[-1]  # the latest; the older ones stay until it is dealt with
        self.project_banner.offer(
            "recovery", "trtlab did not close cleanly",
            f"Your work on {Path(str(info.get('model') or auto)).name} was autosaved. Restore it?",
            [("Restore", self.restore_recovered), ("Discard", self.discard_recovered)])

    def restore_recovered(self) -> None:
        info = getattr(self, "_recovery", None) or {}
        self.project_banner.hide()
        if info:
            Path(info["marker"]).unlink(missing_ok=True)
            self._recovered = True  # the work is back but in no saved project: the title says unsaved
            self.open_project(Path(info["autosave"]), Path(info["project"]) if info.get("project") else None)

    def discard_recovered(self) -> None:
        info = getattr(self, "_recovery", None) or {}
        self.project_banner.hide()
        if info.get("marker"):
            Path(info["marker"]).unlink(missing_ok=True)
        if info.get("autosave"):
            Path(info["autosave"]).unlink(missing_ok=True)
        self.status_label.setText("Discarded the autosaved work.")

    def _confirm_close(self) -> bool:
        """Before the window closes: unsaved results ask Save / Discard / Cancel. False: stay open."""
        unsaved = self.opened is not None and self.project_dirty and bool(self.session_results)
        discard = False
        if unsaved and self.ask_before_close:
            buttons = QMessageBox.StandardButton
            answer = QMessageBox.question(
                self, "Save the project?",
                f"This session has {len(self.session_results)} result(s) not saved in a project. Save them?",
                buttons.Save | buttons.Discard | buttons.Cancel, buttons.Save)
            if answer == buttons.Cancel or (answer == buttons.Save and not self.save_project_action()):
                return False
            discard = answer == buttons.Discard
        if discard:
            self._autosave_timer.stop()
            self.project_autosave_path(self.opened.path).unlink(missing_ok=True)
        elif self._autosave_timer.isActive():
            self.autosave_project()
        self._session_marker().unlink(missing_ok=True)  # a clean close: nothing to recover next time
        return True


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
