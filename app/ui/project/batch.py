"""File ▸ Open Batch Results…: a `trtlab batch` results folder shown as its matrix in a dock
(app.ui.results.batch_view); a double-clicked cell opens that model with the batch's results for it, as a project
would (app.ui.project.controller)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QDockWidget, QFileDialog, QLabel, QWidget

from app.core.errors import TrtlabError
from app.ui.project.controller import ProjectController
from app.ui.results.batch_view import BatchView


class BatchHost(Protocol):
    """The main window: the Batch dock is added to it, tabbed with its Results dock."""

    settings: QSettings
    status_label: QLabel
    results_dock: QDockWidget
    project: ProjectController

    def window(self) -> QWidget: ...

    def addDockWidget(self, area: Qt.DockWidgetArea, dockwidget: QDockWidget, /) -> None: ...  # noqa: N802

    def tabifyDockWidget(self, first: QDockWidget, second: QDockWidget, /) -> None: ...  # noqa: N802

    def show_error(self, error: TrtlabError) -> None: ...


class BatchResults:
    """The Batch dock (made the first time a results folder is opened) and what a double-click on it opens."""

    def __init__(self, host: BatchHost) -> None:
        self.w = host
        self.view: BatchView | None = None
        self.dock: QDockWidget | None = None

    def open_dialog(self) -> None:
        start = self.w.settings.value("paths/batch_dir", str(Path.home()))
        folder = QFileDialog.getExistingDirectory(self.w.window(), "Open batch results", str(start))
        if folder:
            self.open(folder)

    def open(self, folder: str | Path) -> BatchView | None:
        """Show a results folder's matrix; a folder that is not one is said in the banner, and the window keeps
        what it shows."""
        if self.view is None or self.dock is None:
            self.view = BatchView()
            self.view.modelRequested.connect(lambda model, cells: self.open_model(model))
            self.dock = QDockWidget("Batch", self.w.window())
            self.dock.setObjectName("batch")
            self.dock.setWidget(self.view)
            self.dock.setMinimumWidth(300)
            self.w.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.dock)
            self.w.tabifyDockWidget(self.w.results_dock, self.dock)
        view = self.view
        try:
            view.load(folder)
        except TrtlabError as exc:
            self.w.show_error(exc)
            return None
        self.w.settings.setValue("paths/batch_dir", str(Path(folder).parent))
        self.dock.show()
        self.dock.raise_()
        n = len({c.model for c in view.summary.cells})
        self.w.status_label.setText(
            f"Batch results of {n} model(s) from {Path(folder).name}: double-click a cell to open its model with them.")
        return view

    def open_model(self, model: str) -> None:
        """Open `model` with the batch's finished results for it (comparisons, benchmarks, diagnosis, engine)."""
        from app.batch import model_project

        if self.view is None or self.view.folder is None:
            return
        if not Path(model).is_file():
            self.w.show_error(TrtlabError(
                f"The batch's model {model} is not there any more.",
                fix="Open the model from where it is now; its results are in the folder's report.html."))
            return
        self.w.project.open_unsaved(model_project(self.view.folder, model))
