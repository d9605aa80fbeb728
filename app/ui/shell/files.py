"""The main window's files: opening models (dialog, demo, recent files, reload) and exporting the graph.
Mixed into `MainWindow`, whose loader, settings and view it uses."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QStandardPaths, Qt
from PySide6.QtWidgets import QApplication, QFileDialog

from app.core import errors
from app.core.model import bundled_demo_model, write_demo_model

MAX_RECENT = 10
ONNX_FILTER = ("Models and projects (*.onnx *.onnx.data *.pb *.trtlab);;ONNX models (*.onnx *.onnx.data *.pb);;"
               "trtlab projects (*.trtlab);;All files (*)")


class FilesMixin:
    """Model files in (open, reload, recent) and graph images out (PNG, SVG)."""

    # ----------------------------------------------------------------- opening
    def open_dialog(self) -> None:
        start = self.settings.value("paths/last_dir", str(Path.home()))
        path, _ = QFileDialog.getOpenFileName(self, "Open ONNX model", str(start), ONNX_FILTER)
        if path:
            self.open_path(path)

    def compare_dialog(self) -> None:
        """File ▸ Compare With Model…: pick model B; the open model is A."""
        if self.opened is None:
            self.status_label.setText("Open a model first: it is model A of the comparison.")
            return
        start = self.settings.value("paths/last_dir", str(Path.home()))
        path, _ = QFileDialog.getOpenFileName(self, f"Compare {self.opened.path.name} with…", str(start),
                                              "ONNX models (*.onnx *.pb);;All files (*)")
        if path:
            self.compare_with(path)

    def compare_with(self, path: str | Path) -> None:
        """Open model B off the GUI thread, diff it against the open model, and show both side by side."""
        from app.ui.common.task_thread import run_task
        from app.ui.graph.compare_window import CompareWindow, load_for_compare

        a = self.opened
        if a is None:
            return
        p = Path(path)
        self.status_label.setText(f"Comparing {a.path.name} with {p.name}…")

        def done(result: object) -> None:
            b, diff = result  # type: ignore[misc]
            win = CompareWindow(a, b, diff, a.input_shapes or None, self)
            win.setWindowFlag(Qt.WindowType.Window, True)
            self.compare_windows = [w for w in getattr(self, "compare_windows", []) if w.isVisible()] + [win]
            win.show()
            c = diff.counts()
            self.status_label.setText(f"{a.path.name} ↔ {p.name}: {c['changed']:,} changed, {c['added']:,} only in B, "
                                      f"{c['removed']:,} only in A")

        def failed(message: str) -> None:
            self.show_error(errors.TrtlabError(f"Cannot compare with '{p.name}': {message}",
                                               fix="Pick an ONNX model file that ONNX can read."))

        self._compare_task = run_task(self, lambda: load_for_compare(p, a), done, failed)

    def open_demo(self) -> None:
        """The demo: u2netp, a real salient-object segmenter shipped with trtlab, compared on its sample photos (its
        masks are the answers the Results panel and the scorecard show). A broken install without it falls back
        to the small classifier trtlab generates."""
        try:
            self.open_path(bundled_demo_model())
            return
        except errors.TrtlabError:
            pass
        folder = Path(QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppLocalDataLocation)
                      or Path.home() / ".trtlab")
        try:
            path = write_demo_model(folder)
        except OSError as exc:
            self.show_error(errors.TrtlabError(f"Cannot write the demo model into {folder}: {exc}",
                                               fix="Check that the folder is writable."))
            return
        # The generated demo opens ready to run: batch 1, so every edge shows a concrete shape.
        self.open_path(path, {"image": (1, 3, 64, 64)})

    def open_path(self, path: str | Path, shapes: dict[str, tuple[int, ...]] | None = None) -> None:
        p = Path(path)
        if p.suffix.lower() == ".trtlab":  # a project (from Open…, the recent files, a drop, the command line)
            self.open_project(p)
            return
        self._pending_path = p
        self.banner.hide()
        self.status_label.setText(f"Opening {p.name}…")
        self.loader.load(p, shapes)

    def reload(self) -> None:
        if self.opened is not None:
            self.open_path(self.opened.path, self.opened.input_shapes)

    def apply_shapes(self, shapes: dict[str, tuple[int, ...]]) -> None:
        """Re-infer shapes with the user's input shapes (the drawing stays, edge labels change)."""
        if self.opened is not None:
            self.open_path(self.opened.path, shapes)

    # ----------------------------------------------------------------- export
    def _export_target(self, kind: str) -> Path | None:
        if self.view.item is None:
            return None
        base = self.opened.path.with_suffix(f".{kind}").name if self.opened else f"graph.{kind}"
        start = str(Path(str(self.settings.value("paths/export_dir", str(Path.home())))) / base)
        path, _ = QFileDialog.getSaveFileName(self, f"Export graph as {kind.upper()}", start,
                                              f"{kind.upper()} image (*.{kind})")
        if not path:
            return None
        p = Path(path)
        if p.suffix.lower() != f".{kind}":
            p = p.with_name(p.name + f".{kind}")
        self.settings.setValue("paths/export_dir", str(p.parent))
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
                self.view.export_svg(path)
            else:
                self.view.export_png(path)
        except (OSError, ValueError) as exc:
            self.show_error(errors.TrtlabError(f"Could not export to '{path}': {exc}",
                                               fix="Choose a folder you can write to."))
            return False
        finally:
            QApplication.restoreOverrideCursor()
        self.status_label.setText(f"Exported the graph to {path}")
        return True

    # ----------------------------------------------------------------- recent files
    def recent_files(self) -> list[str]:
        value = self.settings.value("recent/files", [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in (value or [])]

    def _add_recent(self, path: Path) -> None:
        p = str(path.resolve())
        files = [p] + [f for f in self.recent_files() if f != p]
        self.settings.setValue("recent/files", files[:MAX_RECENT])
        self._refresh_recent()

    def _refresh_recent(self) -> None:
        files = self.recent_files()
        self.recent_menu.clear()
        for f in files:
            act = self.recent_menu.addAction(Path(f).name)
            act.setStatusTip(f)
            act.setToolTip(f)
            act.triggered.connect(lambda _=False, f=f: self.open_path(f))
        if files:
            self.recent_menu.addSeparator()
            self.recent_menu.addAction("Clear Recent", self._clear_recent)
        self.recent_menu.setEnabled(bool(files))
        self.start_page.set_recent(files)

    def _clear_recent(self) -> None:
        self.settings.setValue("recent/files", [])
        self._refresh_recent()
