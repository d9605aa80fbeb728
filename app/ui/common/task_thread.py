"""One function off the GUI thread, its result or error back on it as a signal (opening a model to compare, a big
layout, numbers)."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import TypeVar

from PySide6.QtCore import QObject, QThread, Signal

_running = [0]  # threads running Python beside the GUI thread (tasks, workers, the model loader), not yet ended
_collect_due = [False]  # one of them asked for a full collection once the last has ended
T = TypeVar("T")


def hold_collection() -> None:
    """A thread that runs Python beside the GUI thread starts: automatic garbage collection is off until every such
    thread has ended (a collection started on one could free Qt objects' wrappers off the GUI thread). One count for
    all of them, the model loader's included, so that none turns collection back on while another runs."""
    _running[0] += 1
    gc.disable()


def release_collection(collect: bool = True) -> None:
    """One such thread ended (called on the GUI thread). The last one turns collection back on, after a full
    collection when any of them asked for one (`collect`) meanwhile."""
    _running[0] -= 1
    _collect_due[0] = _collect_due[0] or collect
    if _running[0] == 0:
        gc.enable()
        if _collect_due[0]:
            _collect_due[0] = False
            gc.collect()


class Task(QThread):
    """One function off the GUI thread; the result (or the error's text) comes back as a signal."""

    done = Signal(object)
    failed = Signal(str)

    def __init__(self, fn: Callable[[], object], parent: QObject) -> None:
        super().__init__(parent)
        self.fn = fn

    def run(self) -> None:
        try:
            self.done.emit(self.fn())
        except Exception as exc:  # noqa: BLE001 - shown to the user, the window stays
            self.failed.emit(f"{type(exc).__name__}: {exc}")


def run_task(parent: QObject, fn: Callable[[], T], done: Callable[[T], None],
             failed: Callable[[str], None]) -> Task:
    """Start `fn` on a thread; automatic garbage collection waits until it ends (a collection started there could
    free Qt wrappers off the GUI thread)."""
    t = Task(fn, parent)
    t.done.connect(done)
    t.failed.connect(failed)

    def reap() -> None:
        t.deleteLater()
        release_collection()

    t.finished.connect(reap)
    hold_collection()
    t.start()
    return t
