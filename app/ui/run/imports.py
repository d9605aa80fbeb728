"""File ▸ Import TensorRT Results…: a run kit's folder (or its results/, or trtexec's bare files, read with the model on
show) imported off the GUI thread (`app.backends.imported.import_results`: it runs ONNX Runtime to judge the
engine's outputs), then shown as trtlab's own builds are — the Engine dock's layers, slowest first, and the graph
coloured by the precision that ran — with the outputs' verdict in the Results as a comparison's candidate."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QApplication, QFileDialog

from app.core.errors import TrtlabError
from app.core.model import OpenedModel
from app.core.results import ImportResult
from app.ui.common.messages import Messages
from app.ui.common.task_thread import Task, run_task
from app.ui.precision.engine_results import EngineResults
from app.ui.results.engine_panel import EnginePanel
from app.ui.results.imported_engine import as_build, import_summary
from app.ui.results.view import ResultsView

NO_MODEL_FIX = "Open the ONNX model the engine was built from first (File ▸ Open Model…), then import its folder."


class EngineImports(QObject):
    """Imports TensorRT's results into the window (`busy` while one is read). Each import leaves as
    `imported(kind, spec JSON, result JSON, title)`, the shape of the run controller's `resultReady`, for the
    project to keep."""

    imported = Signal(str, dict, dict, str)
    finished = Signal(object)   # the ImportResult shown, or None when the import failed

    def __init__(self, engine_results: EngineResults, engine_panel: EnginePanel, results: ResultsView,
                 messages: Messages, opened: Callable[[], OpenedModel | None]) -> None:
        """`opened`: the model on show (bare trtexec files are read as its engine)."""
        super().__init__(messages.parent)
        self.engine_results = engine_results
        self.engine_panel = engine_panel
        self.results = results
        self.messages = messages
        self.opened = opened
        self.result: ImportResult | None = None
        self._task: Task | None = None

    @property
    def busy(self) -> bool:
        return self._task is not None

    def wait(self, ms: int) -> None:
        """Wait (at most `ms`) for an import being read: the window is closing, and its thread must end first."""
        if self._task is not None:
            self._task.wait(ms)

    def import_dialog(self) -> None:
        """Pick the folder: a run kit's, its results/, or one holding trtexec's files."""
        opened = self.opened()
        start = str(opened.path.parent) if opened is not None else str(Path.home())
        folder = QFileDialog.getExistingDirectory(self.messages.parent, "Import TensorRT results (a run kit's folder, "
                                                  "or trtexec's files)", start)
        if folder:
            self.import_folder(folder)

    def import_folder(self, folder: str | Path) -> bool:
        """Start importing `folder` on a worker thread; False (said why) when it cannot start."""
        opened = self.opened()
        if opened is None:
            self.messages.show_message("Cannot import these results", "No model is open.", NO_MODEL_FIX,
                                       level="warning")
            return False
        if self._task is not None:
            self.messages.say("An import is already being read; wait for it to finish.")
            return False
        path, model = str(folder), str(opened.path)

        def work() -> ImportResult | TrtlabError:
            from app.backends.imported import import_results

            try:
                return import_results(path, model)
            except TrtlabError as exc:  # the user's folder: shown with its fix
                return exc

        self.messages.say(f"Importing TensorRT results from {path}…")
        QApplication.setOverrideCursor(Qt.CursorShape.BusyCursor)
        self._task = run_task(self.messages.parent, work, lambda r: self._done(path, model, r), self._failed)
        return True

    def _end(self) -> None:
        self._task = None
        QApplication.restoreOverrideCursor()

    def _failed(self, message: str) -> None:
        self._end()
        self.messages.show_message("Cannot import these results", message,
                                   "This is a fault of trtlab's; `trtlab import DIR` shows the same with its log.")
        self.finished.emit(None)

    def _done(self, folder: str, model: str, r: ImportResult | TrtlabError) -> None:
        self._end()
        if isinstance(r, TrtlabError):
            self.messages.show_error(r)
            self.messages.say(f"Nothing imported from {folder}.")
            self.finished.emit(None)
            return
        self.result = r
        self.show(r)
        self.imported.emit("import", {"kind": "import", "folder": folder, "model": model}, r.to_json(),
                           f"Imported TensorRT engine from {Path(folder).name}")
        self.finished.emit(r)

    def show(self, r: ImportResult) -> None:
        """The engine in the Engine dock and on the graph, its verdict in the Results, one line of where it ran."""
        build, times = as_build(r)
        self.engine_results.set_engine(build)
        summary = import_summary(r)
        self.engine_panel.show_imported(times, summary)
        opened = self.opened()
        if r.model and opened is not None and Path(r.model).resolve() != opened.path.resolve():
            self.messages.show_message(
                "These results are another model's", f"The kit was made from {r.model}; {opened.path.name} is on show.",
                f"Open {Path(r.model).name} and import again to see its engine on its graph.", level="warning")
        if r.answers is not None and opened is not None:
            self.results.set_model(str(opened.path))
            self.results.set_compare(r.answers)
        self.messages.say(summary)
