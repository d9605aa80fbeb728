"""File ▸ Import TensorRT Results…: a run kit's folder (or its results/, or trtexec's bare files, read with the model on
show) imported off the GUI thread (`app.backends.imported.import_results`: it runs ONNX Runtime to judge the
engine's outputs), then shown as trtlab's own builds are — the Engine dock's layers, slowest first, and the graph
coloured by the precision that ran — with the outputs' verdict in the Results as a comparison's candidate.

File ▸ Compare With Another TensorRT Import… (or the Engine dock's button) imports a second folder against the one on
show: both compared ONNX node by ONNX node off the GUI thread (`app.core.engine.compare_imports`), the comparison
in the Engine dock and the graph coloured by each node's change of time."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QApplication, QFileDialog

from app.core.errors import TrtlabError
from app.core.model import OpenedModel
from app.core.results import ImportComparison, ImportResult
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
        self.folder = ""                                  # the folder `result` came from
        self.comparison: ImportComparison | None = None   # the last two imports compared
        self._task: Task | None = None
        engine_panel.compareRequested.connect(self.compare_dialog)

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

    def compare_dialog(self) -> None:
        """Pick a second engine's folder to compare with the import on show."""
        if self.result is None:
            self.messages.show_message("Nothing to compare with", "No TensorRT import is on show.",
                                       "Import one engine first (File ▸ Import TensorRT Results…, Ctrl+Alt+I), then "
                                       "compare another with it.", level="warning")
            return
        start = str(Path(self.folder).parent) if self.folder else str(Path.home())
        folder = QFileDialog.getExistingDirectory(self.messages.parent, "Compare with another TensorRT import (a run "
                                                  "kit's folder, or trtexec's files)", start)
        if folder:
            self.import_folder(folder, against=True)

    def import_folder(self, folder: str | Path, *, against: bool = False) -> bool:
        """Start importing `folder` on a worker thread; False (said why) when it cannot start. `against`: the
        folder is engine B, compared with the import on show (A)."""
        opened = self.opened()
        base, base_folder = self.result, self.folder
        if against and base is None:
            self.messages.show_message("Nothing to compare with", "No TensorRT import is on show.",
                                       "Import one engine first (File ▸ Import TensorRT Results…, Ctrl+Alt+I).",
                                       level="warning")
            return False
        if opened is None:
            self.messages.show_message("Cannot import these results", "No model is open.", NO_MODEL_FIX,
                                       level="warning")
            return False
        if self._task is not None:
            self.messages.say("An import is already being read; wait for it to finish.")
            return False
        path, model = str(folder), str(opened.path)

        def work() -> ImportResult | tuple[ImportResult, ImportComparison] | TrtlabError:
            from app.backends.imported import import_results
            from app.core.engine import compare_imports

            try:
                r = import_results(path, model)
            except TrtlabError as exc:  # the user's folder: shown with its fix
                return exc
            return (r, compare_imports(base, r)) if against and base is not None else r

        def done(r: ImportResult | tuple[ImportResult, ImportComparison] | TrtlabError) -> None:
            if isinstance(r, tuple):
                self._compared(base_folder, path, model, *r)
            else:
                self._done(path, model, r)

        self.messages.say(f"Importing TensorRT results from {path}" + (" to compare with the import on show…"
                                                                       if against else "…"))
        QApplication.setOverrideCursor(Qt.CursorShape.BusyCursor)
        self._task = run_task(self.messages.parent, work, done, self._failed)
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
        self.result, self.folder = r, folder
        self.show(r)
        self.imported.emit("import", {"kind": "import", "folder": folder, "model": model}, r.to_json(),
                           f"Imported TensorRT engine from {Path(folder).name}")
        self.finished.emit(r)

    def _compared(self, folder_a: str, folder_b: str, model: str, b: ImportResult, c: ImportComparison) -> None:
        """Engine B imported and compared with A: B's layers, then the comparison over them in the Engine dock and
        on the graph; the project keeps the comparison (`trtlab import A --against B`)."""
        self._end()
        self.result, self.folder = b, folder_b
        self.show_comparison(b, c)
        self.imported.emit("import_compare", {"kind": "import", "folder": folder_a, "model": c.engine_a.model
                                              if c.engine_a is not None and c.engine_a.model else model,
                                              "against": folder_b, "against_model": model}, c.to_json(),
                           f"TensorRT engines compared: {Path(folder_a).name} against {Path(folder_b).name}")
        self.finished.emit(b)

    def show_comparison(self, b: ImportResult, c: ImportComparison) -> None:
        """Two engines compared: B shown as an import, the comparison in the Engine dock, the graph coloured by each
        node's change of time, one line of the totals."""
        self.show(b)
        self.comparison = c
        self.engine_panel.show_comparison(c)
        self.engine_results.colors.show_comparison(c)
        total = (f"B {c.total_delta_ms:+.3f} ms in the layers against A" if c.total_delta_ms is not None
                 else "one engine has no profile")
        self.messages.say(f"Compared {c.label_a} (A) with {c.label_b} (B): {total}, {c.precision_changes} precision "
                          f"and {c.fusion_changes} fusion change(s). Ctrl+Shift+8 colours the graph by the change.")

    def restore(self, doc: ImportResult | ImportComparison, folder: str) -> None:
        """A project's last import (or two imports compared) shown again; `folder`: where its files are now (the
        project's kept copy, PROJECT.imports/…), which a comparison with another import starts from."""
        if isinstance(doc, ImportComparison):
            if doc.engine_b is None:
                return
            self.result, self.folder = doc.engine_b, folder
            self.show_comparison(doc.engine_b, doc)
        else:
            self.result, self.folder = doc, folder
            self.show(doc)

    def show(self, r: ImportResult) -> None:
        """The engine in the Engine dock and on the graph, its verdict in the Results, one line of where it ran."""
        build, times = as_build(r)
        if self.comparison is not None:  # a comparison belongs to its two engines
            self.comparison = None
            self.engine_results.colors.show_comparison(None)
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
