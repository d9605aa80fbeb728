"""Opening a model off the GUI thread, with progress and cancel; a newer request supersedes an older one.

Two steps: the graph is read and laid out first and sent as `drawn` (a :class:`ModelDrawing`, edge labels blank) so
the window can draw it at once; shape inference, the summary and the edge labels follow on the same thread, and
`loaded` sends the complete :class:`OpenedModel`. The loader is busy until then."""

from __future__ import annotations

import logging
import threading
import time
import traceback
from pathlib import Path

from PySide6.QtCore import QObject, QThread, Signal

from app.core import errors
from app.core.model import ModelDrawing, OpenedModel, draw_model, finish_open
from app.ui.common import task_thread

ISOLATE_NODES = 5000  # from this many nodes ONNX's shape inference takes long enough to freeze the window

log = logging.getLogger(__name__)


class _LoadThread(QThread):
    progressed = Signal(float, str)   # fraction (-1: unknown), message
    drawn = Signal(object)            # ModelDrawing: the graph laid out, before shape inference
    succeeded = Signal(object)        # OpenedModel
    failed = Signal(object)           # TrtlabError

    def __init__(self, path: Path, shapes: dict[str, tuple[int, ...]] | None, parent: QObject) -> None:
        super().__init__(parent)
        self.path = path
        self.shapes = shapes
        self.cancel_event = threading.Event()
        self._last = 0.0

    def _progress(self, fraction: float | None, message: str) -> None:
        now = time.monotonic()
        if now - self._last > 0.05 or fraction == 1.0:
            self._last = now
            self.progressed.emit(-1.0 if fraction is None else float(fraction), message)

    def run(self) -> None:
        try:
            drawing = draw_model(self.path, progress=self._progress, cancel=self.cancel_event.is_set)
            self.drawn.emit(drawing)
            # ONNX's inference holds Python's lock while it runs: on a big graph (seconds) in a child process so the
            # GUI thread is not held up; on a small one (milliseconds) here, cheaper than starting a process.
            big = len(drawing.doc.model.graph.node) >= ISOLATE_NODES
            result = finish_open(drawing, self.shapes, progress=self._progress, cancel=self.cancel_event.is_set,
                                 isolated=big)
        except errors.TrtlabError as exc:
            self.failed.emit(exc)
        except MemoryError:
            self.failed.emit(errors.ModelLoadError(
                f"Not enough memory to open '{self.path.name}'.",
                fix="Close other programs, or open the model on a machine with more memory."))
        except Exception as exc:  # a bug or an exotic file: report it, keep the window alive
            log.error("unexpected error opening %s:\n%s", self.path, traceback.format_exc())
            self.failed.emit(errors.ModelLoadError(
                f"Unexpected error while opening '{self.path.name}': {type(exc).__name__}: {exc}",
                fix="The file may use an ONNX feature trtlab does not handle yet; please report it."))
        else:
            self.succeeded.emit(result)


class ModelLoader(QObject):
    """Starts loads; only the newest load's outcome is reported."""

    progress = Signal(float, str)
    drawn = Signal(object)      # ModelDrawing: the graph to show while its shapes are inferred (labels blank)
    shapesPending = Signal(bool)  # True from `drawn` until `loaded` (or a failure, a cancel): edge labels to come
    loaded = Signal(object)     # OpenedModel: shapes, summary and labelled drawing
    failed = Signal(object)     # TrtlabError
    cancelled = Signal()
    busyChanged = Signal(bool)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._thread: _LoadThread | None = None
        self._old: list[_LoadThread] = []
        self._pending = False

    def is_busy(self) -> bool:
        return self._thread is not None

    def shapes_pending(self) -> bool:
        """Whether a drawing has been sent (`drawn`) whose shapes are still being inferred."""
        return self._pending

    def _set_pending(self, on: bool) -> None:
        if on != self._pending:
            self._pending = on
            self.shapesPending.emit(on)

    def load(self, path: str | Path, shapes: dict[str, tuple[int, ...]] | None = None) -> None:
        self.cancel(silent=True)
        t = _LoadThread(Path(path), shapes, self)
        t.progressed.connect(lambda f, m, t=t: self._relay_progress(t, f, m))
        t.drawn.connect(lambda d, t=t: self._drawn(t, d))
        t.succeeded.connect(lambda r, t=t: self._done(t, r, None))
        t.failed.connect(lambda e, t=t: self._done(t, None, e))
        t.finished.connect(lambda t=t: self._reap(t))
        self._thread = t
        self.busyChanged.emit(True)
        # No automatic garbage collection while a loader thread runs: a collection started by the thread's
        # allocations could free Qt objects' wrappers off the GUI thread, which crashes Qt. The GUI thread collects
        # once it and every other worker have ended (_reap).
        task_thread.hold_collection()
        t.start()

    def cancel(self, silent: bool = False) -> None:
        t = self._thread
        if t is None:
            return
        t.cancel_event.set()
        self._old.append(t)
        self._thread = None
        self._set_pending(False)
        self.busyChanged.emit(False)
        if not silent:
            self.cancelled.emit()

    def wait(self, ms: int = 10_000) -> None:
        for t in [*self._old, *([self._thread] if self._thread else [])]:
            t.wait(ms)

    def _relay_progress(self, t: _LoadThread, fraction: float, message: str) -> None:
        if t is self._thread:
            self.progress.emit(fraction, message)

    def _drawn(self, t: _LoadThread, drawing: ModelDrawing) -> None:
        if t is self._thread:
            self._set_pending(True)
            self.drawn.emit(drawing)

    def _done(self, t: _LoadThread, result: OpenedModel | None, error: errors.TrtlabError | None) -> None:
        if t is not self._thread:
            return  # superseded or cancelled
        self._thread = None
        self.busyChanged.emit(False)
        if result is not None:
            self.loaded.emit(result)
        self._set_pending(False)  # after `loaded`: a drawing still pending now never got its shapes
        if isinstance(error, errors.LoadCancelled):
            self.cancelled.emit()
        elif error is not None:
            self.failed.emit(error)

    def _reap(self, t: _LoadThread) -> None:
        if t in self._old:
            self._old.remove(t)
        t.deleteLater()
        task_thread.release_collection()
