"""One function off the GUI thread, its result or error back on it as a signal (opening a model to compare, a big
layout, numbers)."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import TypeVar

from PySide6.QtCore import QObject, QThread, Signal

_running = [0]  # tasks started and not yet ended
T = TypeVar("T")


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
    _running[0] += 1
    gc.disable()
    t = Task(fn, parent)
    t.done.connect(done)
    t.failed.connect(failed)

    def reap() -> None:
        t.deleteLater()
        _running[0] -= 1
        if _running[0] == 0:  # the last one running: collection may resume, here on the GUI thread
            gc.enable()
            gc.collect()

    t.finished.connect(reap)
    t.start()
    return t
