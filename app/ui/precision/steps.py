"""A big model's panels filled over several event-loop turns, not in one: the window's steps after its shapes
arrive (the plan's rows, the Precision table, the Run panel, the readiness check), each a short turn or work on a
worker thread, so the drawing keeps panning and zooming meanwhile."""

from __future__ import annotations

import gc
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import shiboken6
from PySide6.QtCore import QObject, QTimer

from app.ui.common import task_thread

FILL_LATER_NODES = 5000  # from this many nodes the panels are filled over several turns, partly on worker threads
GC_WAIT_S = 1.0  # at most this long for the model loader's thread to end before work starts on another thread

log = logging.getLogger(__name__)
_alive: set[FillSteps] = set()  # steps still to run (the Python side of each must outlive its caller's frame)
_workers: set[task_thread.Task] = set()  # worker threads started and not yet ended


class FillSteps(QObject):
    """Steps run in order, one per event-loop turn: `then` (a call), `when` (a call once a condition holds,
    checked every 20 ms) and `work` (a function on a worker thread, its result handed to a call on the GUI
    thread). All are dropped once `current()` is false (another model shown, or none)."""

    def __init__(self, parent: QObject, current: Callable[[], bool]) -> None:
        super().__init__(parent)
        self.current = current
        self._queue: deque[tuple[str, Callable[..., Any], Callable[..., Any] | None]] = deque()
        self._waiting = False  # work running on the worker thread
        self._gc_since: float | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._next)
        _alive.add(self)

    def then(self, fn: Callable[[], object]) -> None:
        self._add(("call", fn, None))

    def when(self, ready: Callable[[], bool], fn: Callable[[], object]) -> None:
        self._add(("when", ready, fn))

    def work(self, fn: Callable[[], Any], done: Callable[[Any], object]) -> None:
        self._add(("work", fn, done))

    def _add(self, step: tuple[str, Callable[..., Any], Callable[..., Any] | None]) -> None:
        self._queue.append(step)
        if not self._waiting and not self._timer.isActive():
            self._timer.start(0)

    def _finish(self) -> None:
        self._queue.clear()
        self._timer.stop()
        _alive.discard(self)
        self.deleteLater()

    def _next(self) -> None:
        if not self.current():
            self._finish()
            return
        if not self._queue:
            self._finish()
            return
        kind, fn, then = self._queue[0]
        if kind == "when" and not fn():
            self._timer.start(20)
            return
        if kind == "work" and not gc.isenabled():
            # Automatic collection is off while the model loader's thread (or another worker) runs. Work waits for
            # them a moment, so that a model opened meanwhile is shown before this one's panels go on (they are then
            # dropped); past the wait it starts anyway, safely: collection stays off until every thread has ended
            # (task_thread.hold_collection).
            self._gc_since = self._gc_since or time.monotonic()
            if time.monotonic() - self._gc_since < GC_WAIT_S:
                self._timer.start(10)
                return
        self._queue.popleft()
        self._gc_since = None
        if kind == "work":
            assert then is not None
            self._start_work(fn, then)
            return
        call = fn if kind == "call" else then
        if call is not None:
            call()
        if self._queue:
            self._timer.start(0)
        else:
            self._finish()

    def _start_work(self, fn: Callable[[], Any], done: Callable[[Any], object]) -> None:
        self._waiting = True

        def finished(result: Any) -> None:
            self._waiting = False
            if not self.current():
                self._finish()
                return
            done(result)
            self._timer.start(0)

        def failed(message: str) -> None:  # done here instead, on the GUI thread, as it was before
            log.warning("work off the GUI thread failed (%s); doing it here", message)
            finished(fn())

        start_worker(self, fn, finished, failed)


def start_worker(parent: QObject, fn: Callable[[], Any], done: Callable[[Any], object],
                 failed: Callable[[str], object]) -> task_thread.Task:
    """`fn` on a worker thread, its result (or error's text) back on the GUI thread: `run_task`, counted with its
    tasks and the model loader (automatic collection is off while any runs, `task_thread.hold_collection`), less
    the full collection `run_task` asks for when it ends: on a big model that is a turn of 150 ms, and Python's own
    collections follow anyway.

    The thread has no Qt parent (held here until it ends: a parent deleted meanwhile would take a running thread
    with it); `done` and `failed` are dropped once `parent` is gone. `wait_workers` waits for them all."""
    t = task_thread.Task(fn, None)  # type: ignore[arg-type]  # parentless on purpose, see above
    t.done.connect(lambda result: done(result) if shiboken6.isValid(parent) else None)
    t.failed.connect(lambda message: failed(message) if shiboken6.isValid(parent) else None)

    def reap() -> None:
        _workers.discard(t)
        t.deleteLater()
        task_thread.release_collection(collect=False)

    t.finished.connect(reap)
    _workers.add(t)
    task_thread.hold_collection()
    t.start()
    return t


def wait_workers(ms: int) -> None:
    """Wait for the worker threads still running (a window closing: none may outlive it running)."""
    for t in list(_workers):
        t.wait(ms)


def filling() -> bool:
    """Whether a big model's panels are still being filled, or a check runs on a worker thread."""
    return bool(_alive or _workers)
