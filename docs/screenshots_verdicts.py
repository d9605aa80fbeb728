"""Screenshots of the verdicts on models whose answers are hard to read: a detector on photos that hold none of its
objects, a detection head split over several outputs, a sound output. Each model is compared in the window (Run
panel, FP16 and INT8 against FP32), the Results panel's tabs are taken, and the scorecard is drawn from the same
result.

    Xvfb :99 -screen 0 1920x1200x24 &
    DISPLAY=:99 QT_QPA_PLATFORM=xcb python docs/screenshots_verdicts.py --size 1280x800 --out /tmp/shots \
        MODEL[:SHAPES] ...

SHAPES as the CLI takes them (``image:1x3x800x608``); ``absent`` (the default) is the test detector of objects the
sample photos do not hold.
"""

# ruff: noqa: T201  (a script that reports what it did)
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from docs.screenshots import settle, wait  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", help="MODEL[:SHAPES]")
    ap.add_argument("--size", default="1280x800")
    ap.add_argument("--out", type=Path, default=Path("shots"))
    ap.add_argument("--precisions", default="fp16,int8")
    args = ap.parse_args()
    from app.ui.results.scorecard import ScorecardPage
    from app.ui.shell.main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    args.out.mkdir(parents=True, exist_ok=True)
    width, height = (int(v) for v in args.size.split("x"))
    w = MainWindow(QSettings(str(Path(tempfile.mkdtemp()) / "s.ini"), QSettings.Format.IniFormat))
    w.show()
    w.resize(width, height)
    settle(app)
    models = list(args.models) or ["absent"]
    if "absent" in models:
        from tests.detector_models import save, topk_detector_model

        made = save(topk_detector_model(k=300, class_bias=-14.0), Path(tempfile.mkdtemp()), "absent.onnx")
        models[models.index("absent")] = str(made)
    results: list[tuple[str, dict]] = []
    w.run_controller.resultReady.connect(lambda kind, _spec, data, _title: results.append((kind, data)))

    def idle() -> bool:
        return not w.run_controller.running and not w.run_controller.bench_queue

    for item in models:
        path, _, shapes = item.partition(":") if item.count(":") == 1 or ".onnx:" in item else (item, "", "")
        stem = Path(path).stem
        w.open_path(path)
        wait(app, lambda: not w.loader.is_busy() and w.opened is not None, 600, "opening")
        for spec in filter(None, shapes.split(";")):
            name, _, dims = spec.rpartition(":")
            w.shapes_panel.edits[name].setText(dims)
        if shapes:
            w.shapes_panel.apply()
            wait(app, lambda: not w.loader.is_busy(), 600, "shapes")
        panel = w.run_panel
        panel.set_precisions(args.precisions.split(","))
        panel.compare_button.click()
        wait(app, idle, 900, "compare")
        w.show_results()
        view = w.results_view
        for i in range(view.tabs.count()):
            view.tabs.setCurrentIndex(i)
            settle(app, 0.4)
            w.grab().save(str(args.out / f"{stem}_results{i}_{args.size}.png"))
        compare = next((d for k, d in reversed(results) if k == "compare"), None)
        if compare is None:
            print(f"{stem}: the comparison gave no result ({w.status_label.text()})")
            continue
        page = ScorecardPage()
        page.resize(width, height)
        page.show_results(path, compare, {}, "ort-cpu:fp32")
        page.show()
        settle(app, 0.6)
        page.grab().save(str(args.out / f"{stem}_scorecard_{args.size}.png"))
        page.close()
        verdicts = [(c["name"], c["passed"]) for c in compare.get("candidates", [])]
        print(f"{stem}: {verdicts}")
    w.project.ask_before_close = False
    w.close()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    import os

    os._exit(code)
