"""File ▸ Open Batch Results…: a `trtlab batch` results folder shown as its matrix in a dock
(app.ui.results.batch_view); a double-clicked cell opens that model with the batch's results for it, as a project
would (app.ui.project.window_project)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QFileDialog

from app.core.errors import TrtlabError
from app.ui.results.batch_view import BatchView


def open_batch_dialog(window: object) -> None:
    start = window.settings.value("paths/batch_dir", str(Path.home()))  # type: ignore[attr-defined]
    folder = QFileDialog.getExistingDirectory(window, "Open batch results", str(start))  # type: ignore[arg-type]
    if folder:
        open_batch(window, folder)


def open_batch(window: object, folder: str | Path) -> BatchView | None:
    """Show a results folder's matrix (the dock is made the first time); a folder that is not one is said in the
    banner, and the window keeps what it shows."""
    w = window
    view: BatchView | None = getattr(w, "batch_view", None)
    if view is None:
        view = BatchView()
        view.modelRequested.connect(lambda model, cells: open_batch_model(w, model))
        dock = QDockWidget("Batch", w)  # type: ignore[arg-type]
        dock.setObjectName("batch")
        dock.setWidget(view)
        dock.setMinimumWidth(300)
        w.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)  # type: ignore[attr-defined]
        w.tabifyDockWidget(w.results_dock, dock)  # type: ignore[attr-defined]
        w.batch_view, w.batch_dock = view, dock  # type: ignore[attr-defined]
    try:
        view.load(folder)
    except TrtlabError as exc:
        w.show_error(exc)  # type: ignore[attr-defined]
        return None
    w.settings.setValue("paths/batch_dir", str(Path(folder).parent))  # type: ignore[attr-defined]
    w.batch_dock.show()  # type: ignore[attr-defined]
    w.batch_dock.raise_()  # type: ignore[attr-defined]
    n = len({c["model"] for c in view.summary.get("cells", [])})
    w.status_label.setText(  # type: ignore[attr-defined]
        f"Batch results of {n} model(s) from {Path(folder).name}: double-click a cell to open its model with them.")
    return view


def open_batch_model(window: object, model: str) -> None:
    """Open `model` with the batch's finished results for it (comparisons, benchmarks, diagnosis, engine)."""
    from app.batch import model_project

    view: BatchView = window.batch_view  # type: ignore[attr-defined]
    if view.folder is None:
        return
    if not Path(model).is_file():
        window.show_error(TrtlabError(  # type: ignore[attr-defined]
            f"The batch's model {model} is not there any more.",
            fix="Open the model from where it is now; its results are in the folder's report.html."))
        return
    project = model_project(view.folder, model)
    window._pending_project_path = None  # type: ignore[attr-defined]
    window._start_project(project)  # type: ignore[attr-defined]
