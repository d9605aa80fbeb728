"""A pan-and-zoom soak on the real window's graph view, the way a person explores a graph: what
`benchmarks/gui_soak.py` runs for a minute per model and `tests/ui/test_soak.py` for a few hundred frames.

Each 60-frame cycle starts with Fit (F); wheel zooms out to the overview and in to labelled nodes with edge
shapes; drags pan down the graph and back; every frame is painted before the next event."""

from __future__ import annotations

import gc
import sys
import time

import numpy as np
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from tests.support.ui import non_background_fraction

NONE_IS_IMMORTAL = sys.version_info >= (3, 12)


def wheel(view, steps: int, at: QPoint) -> None:
    """A real wheel event, as a mouse sends it (120 per notch)."""
    vp = view.viewport()
    event = QWheelEvent(QPointF(at), QPointF(vp.mapToGlobal(at)), QPoint(0, 0), QPoint(0, 120 * steps),
                        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(vp, event)


def drag(view, start: QPoint, delta: QPoint) -> None:
    vp = view.viewport()
    QTest.mousePress(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    for k in range(1, 4):
        QTest.mouseMove(vp, start + QPoint(delta.x() * k // 3, delta.y() * k // 3))
    QTest.mouseRelease(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start + delta)


class NoneLeak(AssertionError):
    """Painting lost references to None: this PySide6 build would abort the interpreter."""


def soak(view, *, frames: int | None = None, seconds: float | None = None, leak_limit: int = 2000) -> dict:
    """Pan and zoom until `frames` frames or `seconds` have passed, painting each frame; returns what it saw.

    Raises NoneLeak (after giving the references back) before a leaking binding can abort the process."""
    vp = view.viewport()
    centre = QPoint(vp.width() // 2, vp.height() // 2)
    scales, painted, frame_ms = [], [], []
    gc.collect()  # earlier garbage, collected mid-soak, would move None's count by itself
    gc.disable()
    none_before = sys.getrefcount(None)
    moved = 0
    t_end = time.perf_counter() + seconds if seconds else None
    f = 0
    try:
        while (frames is None or f < frames) and (t_end is None or time.perf_counter() < t_end):
            t0 = time.perf_counter()
            phase = f % 60
            if phase == 0:
                QTest.keyClick(view, Qt.Key.Key_F)  # fit, as a person does to find their way back
            elif phase < 10 or phase >= 50:
                wheel(view, -1, centre)                                                       # zoom out
            elif phase < 20:
                drag(view, centre, QPoint(((f * 29) % 120) - 60, -90))                      # pan down
            elif phase < 40:
                wheel(view, 1, centre + QPoint((f * 37) % 200 - 100, (f * 53) % 160 - 80))  # zoom in
            else:
                drag(view, centre, QPoint(-((((f - 30) * 29) % 120) - 60), 90))             # and back up
            vp.repaint()  # paint now, synchronously, as the screen would
            QApplication.processEvents()
            frame_ms.append((time.perf_counter() - t0) * 1000)
            scales.append(view.current_scale())
            if f % 25 == 0:
                painted.append(non_background_fraction(vp.grab().toImage()))
            if f % 200 == 199:
                # Collect now and then (a minute of frames makes garbage), leaving the collection out of the count.
                moved += sys.getrefcount(None) - none_before
                gc.collect()
                none_before = sys.getrefcount(None)
            lost = -(moved + sys.getrefcount(None) - none_before)
            if not NONE_IS_IMMORTAL and lost > leak_limit:
                give_back_none(lost)
                raise NoneLeak(f"painting lost {lost} references to None in {f + 1} frames: this PySide6 build "
                               "would abort the window (see the pin in pyproject.toml)")
            f += 1
    finally:
        gc.enable()
    delta = 0 if NONE_IS_IMMORTAL else moved + sys.getrefcount(None) - none_before
    return {"frames": f, "fps": round(f / max(sum(frame_ms) / 1000, 1e-9), 1),
            "worst_frame_ms": round(max(frame_ms), 1), "median_frame_ms": round(float(np.median(frame_ms)), 1),
            "min_scale": min(scales), "max_scale": max(scales),
            # zoomed far into the white space between branches a frame is rightly empty: count, don't demand
            "painted_share": round(sum(p > 0.0005 for p in painted) / len(painted), 3),
            "none_delta": delta}


def give_back_none(dropped: int) -> None:
    """Give back references a faulty binding dropped, so the caller can report instead of aborting."""
    import ctypes

    for _ in range(max(0, dropped)):
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(None))
