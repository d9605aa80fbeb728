"""A minute of pan and zoom on the real window, the way a person explores a graph.

Each 60-frame cycle starts with Fit (F); wheel zooms out to the overview and in to labelled nodes with edge
shapes; drags pan down the graph and back; every frame is painted before the next event. Per model: frames,
frames per second, the slowest frame, the share of sampled frames with a drawing on them, and (Python < 3.12)
how far None's reference count moved — the measure of the PySide6 6.12.0 painter leak that aborted the window.

    python benchmarks/gui_soak.py --seconds 60 [--json out.json]
    DISPLAY=:99 QT_QPA_PLATFORM=xcb python benchmarks/gui_soak.py   # a real X server (Xvfb)

The soak itself is `tests/support/soak.py`; `tests/ui/test_soak.py` drives it for a few hundred frames.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("QT_NO_GUI_THREADPOOL", "1")  # as the application sets it (app.ui.shell.app.qt_environment)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PySide6.QtWidgets import QApplication  # noqa: E402

from tests.support.soak import soak  # noqa: E402


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
    from tests.support.synthetic_graphs import make

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
