"""The README's screenshots, taken the way a person uses trtlab: the demo, a model with dynamic dims, u2netp with
FP32, FP16 and INT8 compared side by side, a diagnosis, a fallback applied, and a minute of pan and zoom.

    Xvfb :99 -screen 0 1920x1200x24 &
    DISPLAY=:99 QT_QPA_PLATFORM=xcb python docs/screenshots.py --size 1280x800 --out /tmp/shots [--soak 60]

Every picture goes to --out; the README's come from the 1280x800 run.
"""

# ruff: noqa: T201  (a script that reports what it did)
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"


def settle(app: QApplication, seconds: float = 0.5) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        app.processEvents()
        time.sleep(0.01)


def wait(app: QApplication, done, limit: float, what: str) -> None:
    end = time.perf_counter() + limit
    while not done():
        if time.perf_counter() > end:
            raise TimeoutError(f"{what} did not finish in {limit:.0f} s")
        app.processEvents()
        time.sleep(0.02)
    settle(app, 0.3)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="1280x800")
    ap.add_argument("--out", type=Path, default=Path("shots"))
    ap.add_argument("--soak", type=float, default=0.0, help="seconds of pan and zoom at the end")
    ap.add_argument("--no-fallback", action="store_true")
    args = ap.parse_args()
    from app.ui.shell.main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    args.out.mkdir(parents=True, exist_ok=True)
    w_, h_ = (int(v) for v in args.size.split("x"))
    tag = args.size
    w = MainWindow(QSettings(str(Path(tempfile.mkdtemp()) / "s.ini"), QSettings.Format.IniFormat))
    w.show()
    w.resize(w_, h_)
    settle(app)

    def shot(name: str) -> None:
        settle(app, 0.4)
        w.grab().save(str(args.out / f"{name}_{tag}.png"))
        print(f"{name}: {w.width()}x{w.height()} · {w.status_label.text()[:100]}")

    def idle() -> bool:
        return not w.run_controller.running and not w.run_controller.bench_queue

    def open_model(path: Path | None) -> None:
        w.open_demo() if path is None else w.open_path(path)
        wait(app, lambda: not w.loader.is_busy() and w.opened is not None, 60, "opening")

    open_model(None)
    shot("01_demo")
    open_model(MODELS / "ppocr_cls_mobile_v2.onnx")
    w.run_panel.compare_button.click()  # dynamic dims not set: refused where the user looks
    shot("02_ppocr_refused")
    w.shapes_panel.edits["x"].setText("1x3x48x192")
    w.shapes_panel.apply()
    wait(app, lambda: not w.loader.is_busy(), 60, "re-inferring shapes")
    shot("03_ppocr_shapes")

    open_model(MODELS / "u2netp.onnx")
    w.plan.set_default("fp16")
    w.colors.set_color_mode("precision")
    shot("04_u2netp_fp16_plan")
    panel = w.run_panel
    panel.set_precisions(["fp32", "fp16", "int8"])
    panel.samples.setValue(2)
    panel.calib_samples.setValue(4)
    panel.iterations.setText("10")
    panel.compare_button.click()
    wait(app, idle, 600, "compare")
    panel.bench_button.click()
    wait(app, idle, 600, "benchmark")
    w.show_results()
    view = w.results_view
    for i in range(view.tabs.count()):
        view.tabs.setCurrentIndex(i)
        shot(f"05_results_tab{i}")
    view.tabs.setCurrentIndex(0)
    view.export_plots(args.out / f"plots_{tag}")

    panel.set_precisions(["fp16"])
    panel.diagnose_button.click()
    wait(app, idle, 600, "diagnose")
    w.colors.set_color_mode("error")
    shot("06_diagnosis")
    if not args.no_fallback:
        w.run_controller.start_fallback()
        wait(app, idle, 900, "fallback")
        doc = w.precision_panel.fallback
        shot("07_fallback_found")
        if w.precision_panel.apply_button.isVisible():
            w.precision_panel.apply_button.click()
        w.colors.set_color_mode("precision")
        shot("08_fallback_applied")
        print("fallback doc:", bool(doc))
    w.view.fit_all()
    shot("09_fit")
    # Build the plan into a TensorRT engine (TensorRT for RTX builds without a GPU): progress, then the Engine dock.
    job = w.run_controller.start_build(force=True)
    if job is not None:
        settle(app, 0.3)
        shot("11_build_progress")
        wait(app, idle, 600, "engine build")
        w.engine_dock.show()
        w.engine_dock.raise_()
        w.colors.set_color_mode("engine")
        shot("12_engine")
    if args.soak:
        from benchmarks.gui_soak import soak

        w.view.set_scale(0.4)
        stats = soak(w.view, seconds=args.soak)
        print("soak:", stats)
        shot("10_after_soak")
    w.project.ask_before_close = False  # the results are pictures here: no Save question to wait on
    w.close()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    import os

    os._exit(code)  # as the app does: no interpreter teardown with Qt, pyqtgraph and job threads loaded (it hung)
