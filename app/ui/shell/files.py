"""The main window's files: opening models (the Open dialog, the demo, recent files), a model to compare with,
and exporting the graph."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from PySide6.QtCore import QObject, QSettings, QStandardPaths, Qt, Signal
from PySide6.QtWidgets import QApplication, QFileDialog, QLabel, QWidget

from app.core import errors
from app.core.model import ModelDiff, OpenedModel, bundled_demo_model, write_demo_model
from app.ui.graph.view import GraphView

MAX_RECENT = 10
ONNX_FILTER = ("Models and projects (*.onnx *.onnx.data *.pb *.trtlab);;ONNX models (*.onnx *.onnx.data *.pb);;"
               "trtlab projects (*.trtlab);;All files (*)")


class FilesHost(Protocol):
    opened: OpenedModel | None
    settings: QSettings
    status_label: QLabel
    view: GraphView

    def window(self) -> QWidget: ...

    def open_path(self, path: str | Path, shapes: dict | None = None) -> None: ...

    def show_error(self, error: errors.TrtlabError) -> None: ...


class ModelFiles(QObject):
    """Model files in (the Open dialog, the demo, recent files, a model to compare with) and graph images out
    (PNG, SVG). `recentChanged(files)` fires when the recent files change (the File menu and the start page
    list them)."""

    recentChanged = Signal(list)

    def __init__(self, host: FilesHost) -> None:
        super().__init__(host.window())
        self.w = host
        self.compare_windows: list[QWidget] = []

    # ----------------------------------------------------------------- opening
    def open_dialog(self) -> None:
        start = self.w.settings.value("paths/last_dir", str(Path.home()))
        path, _ = QFileDialog.getOpenFileName(self.w.window(), "Open ONNX model", str(start), ONNX_FILTER)
        if path:
            self.w.open_path(path)

    def compare_dialog(self) -> None:
        """File ▸ Compare With Model…: pick model B; the open model is A."""
        if self.w.opened is None:
            self.w.status_label.setText("Open a model first: it is model A of the comparison.")
            return
        start = self.w.settings.value("paths/last_dir", str(Path.home()))
        path, _ = QFileDialog.getOpenFileName(self.w.window(), f"Compare {self.w.opened.path.name} with…", str(start),
                                              "ONNX models (*.onnx *.pb);;All files (*)")
        if path:
            self.compare_with(path)

    def compare_with(self, path: str | Path) -> None:
        """Open model B off the GUI thread, diff it against the open model, and show both side by side."""
        from app.ui.common.task_thread import run_task
        from app.ui.graph.compare_window import CompareWindow, load_for_compare

        a = self.w.opened
        if a is None:
            return
        p = Path(path)
        self.w.status_label.setText(f"Comparing {a.path.name} with {p.name}…")

        def done(result: tuple[OpenedModel, ModelDiff]) -> None:
            b, diff = result
            win = CompareWindow(a, b, diff, a.input_shapes or None, self.w.window())
            win.setWindowFlag(Qt.WindowType.Window, True)
            self.compare_windows = [w for w in self.compare_windows if w.isVisible()] + [win]
            win.show()
            c = diff.counts()
            self.w.status_label.setText(f"{a.path.name} ↔ {p.name}: {c.changed:,} changed, "
                                        f"{c.added:,} only in B, {c.removed:,} only in A")

        def failed(message: str) -> None:
            self.w.show_error(errors.TrtlabError(f"Cannot compare with '{p.name}': {message}",
                                               fix="Pick an ONNX model file that ONNX can read."))

        self._compare_task = run_task(self.w.window(), lambda: load_for_compare(p, a), done, failed)

    def open_demo(self) -> None:
        """The demo: u2netp, a real salient-object segmenter shipped with trtlab, compared on its sample photos (its
        masks are the answers the Results panel and the scorecard show). A broken install without it falls back
        to the small classifier trtlab generates."""
        try:
            self.w.open_path(bundled_demo_model())
            return
        except errors.TrtlabError:
            pass
        folder = Path(QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppLocalDataLocation)
                      or Path.home() / ".trtlab")
        try:
            path = write_demo_model(folder)
        except OSError as exc:
            self.w.show_error(errors.TrtlabError(f"Cannot write the demo model into {folder}: {exc}",
                                               fix="Check that the folder is writable."))
            return
        # The generated demo opens ready to run: batch 1, so every edge shows a concrete shape.
        self.w.open_path(path, {"image": (1, 3, 64, 64)})

    # ----------------------------------------------------------------- export
    def _export_target(self, kind: str) -> Path | None:
        if self.w.view.item is None:
            return None
        base = self.w.opened.path.with_suffix(f".{kind}").name if self.w.opened else f"graph.{kind}"
        start = str(Path(str(self.w.settings.value("paths/export_dir", str(Path.home())))) / base)
        path, _ = QFileDialog.getSaveFileName(self.w.window(), f"Export graph as {kind.upper()}", start,
                                              f"{kind.upper()} image (*.{kind})")
        if not path:
            return None
        p = Path(path)
        if p.suffix.lower() != f".{kind}":
            p = p.with_name(p.name + f".{kind}")
        self.w.settings.setValue("paths/export_dir", str(p.parent))
        return p

    def export_png_dialog(self) -> None:
        p = self._export_target("png")
        if p is not None:
            self.export_to(p)

    def export_svg_dialog(self) -> None:
        p = self._export_target("svg")
        if p is not None:
            self.export_to(p)

    def export_to(self, path: Path) -> bool:
        try:
            QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
            if path.suffix.lower() == ".svg":
                self.w.view.export_svg(path)
            else:
                self.w.view.export_png(path)
        except (OSError, ValueError) as exc:
            self.w.show_error(errors.TrtlabError(f"Could not export to '{path}': {exc}",
                                               fix="Choose a folder you can write to."))
            return False
        finally:
            QApplication.restoreOverrideCursor()
        self.w.status_label.setText(f"Exported the graph to {path}")
        return True

    # ----------------------------------------------------------------- recent files
    def recent_files(self) -> list[str]:
        value = self.w.settings.value("recent/files", [])
        if isinstance(value, str):  # one file, as an INI file gives it back
            value = [value]
        return [str(v) for v in value] if isinstance(value, Iterable) else []

    def add_recent(self, path: Path) -> None:
        p = str(path.resolve())
        files = [p] + [f for f in self.recent_files() if f != p]
        self.w.settings.setValue("recent/files", files[:MAX_RECENT])
        self.refresh_recent()

    def refresh_recent(self) -> None:
        self.recentChanged.emit(self.recent_files())

    def clear_recent(self) -> None:
        self.w.settings.setValue("recent/files", [])
        self.refresh_recent()
