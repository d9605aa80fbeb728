"""A minute of pan and zoom on the real window, the way a person explores a graph.

Each 60-frame cycle starts with Fit (F); wheel zooms out to the overview and in to labelled nodes with edge
shapes; drags pan down the graph and back; every frame is painted before the next event. Per model: frames,
frames per second, the slowest frame, the share of sampled frames with a drawing on them, and (Python < 3.12)
how far None's reference count moved — the measure of the PySide6 6.12.0 painter leak that aborted the window.

    python benchmarks/gui_soak.py --seconds 60 [--json out.json]
    DISPLAY=:99 QT_QPA_PLATFORM=xcb python benchmarks/gui_soak.py   # a real X server (Xvfb)

`tests/ui/test_soak.py` drives the same soak for a few hundred frames.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PySide6.QtCore import QPoint, QPointF, Qt  # noqa: E402
from PySide6.QtGui import QImage, QWheelEvent  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

NONE_IS_IMMORTAL = sys.version_info >= (3, 12)


def non_background_fraction(img: QImage) -> float:
    """Share of pixels clearly different from the canvas background (#f7f7f5)."""
    img = img.convertToFormat(QImage.Format.Format_RGB32)
    arr = np.frombuffer(img.constBits(), dtype=np.uint8).reshape(img.height(), img.bytesPerLine())
    arr = arr[:, : img.width() * 4].reshape(img.height(), img.width(), 4)[..., :3].astype(int)
    bg = np.array([0xF5, 0xF7, 0xF7])
    return float((np.abs(arr - bg).sum(axis=2) > 30).mean())


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="pan and zoom this long per model")
    ap.add_argument("--size", default="1280x800", help="window size, WxH")
    ap.add_argument("--json", type=Path, help="write the records here")
    args = ap.parse_args()
    import onnx
    import PySide6
    from PySide6.QtCore import QSettings

    from app.ui.shell.main_window import MainWindow
    from benchmarks.shared import ROOT, write_json
    from benchmarks.synthetic_graphs import make

    app = QApplication.instance() or QApplication([])
    tmp = Path(tempfile.mkdtemp(prefix="trtlab-soak-"))
    synthetic = tmp / "transformer10k.onnx"
    onnx.save(make("transformer", 10_000), synthetic)
    models = [ROOT.parent / "shared" / "models" / "u2netp.onnx", synthetic]
    w, h = (int(v) for v in args.size.split("x"))
    rows = []
    for path in models:
        if not path.exists():
            print(f"skipped (missing): {path}")
            continue
        win = MainWindow(QSettings(str(tmp / "settings.ini"), QSettings.Format.IniFormat))
        win.resize(w, h)
        win.show()
        win.open_path(path)
        while win.loader.is_busy() or win.opened is None:
            app.processEvents()
            time.sleep(0.01)
        win.view.set_scale(0.4)
        stats = soak(win.view, seconds=args.seconds)
        stats.update(model=path.name, nodes=win.view.graph.node_count, alive=win.isVisible())
        rows.append(stats)
        win.close()
        win.deleteLater()
        app.processEvents()
    print(f"PySide6 {PySide6.__version__}, Python {sys.version.split()[0]}, "
          f"platform {app.platformName()}, window {args.size}, {args.seconds:g} s per model")
    print(f"{'model':<22}{'nodes':>7}{'frames':>8}{'fps':>7}{'median ms':>11}{'worst ms':>10}"
          f"{'scales':>14}{'drawn':>7}{'None Δ':>8}  alive")
    for r in rows:
        print(f"{r['model']:<22}{r['nodes']:>7}{r['frames']:>8}{r['fps']:>7}{r['median_frame_ms']:>11}"
              f"{r['worst_frame_ms']:>10}{r['min_scale']:>7.3f}–{r['max_scale']:<6.2f}{r['painted_share']:>7.0%}"
              f"{r['none_delta']:>8}  "
              f"{r['alive']}")
    if args.json:
        write_json({"pyside6": PySide6.__version__, "python": sys.version.split()[0],
                    "platform": app.platformName(), "size": args.size, "seconds": args.seconds, "rows": rows},
                   args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
