"""The guided demo, timed as a person sees it: the real main window (offscreen), Compare precisions ▸ Use the demo
model ▸ Next ▸ Run (u2netp, FP16 + INT8 ticked by default), then the time from Run until each part of the answer is
on show: FP32's photo and mask, each precision's answers, the speed row, the complete scorecard.

    python benchmarks/guided_demo.py [--runs 3] [--warm] [--shots DIR] [--json benchmarks/results/guided_demo.json]
                                     [--iterations 1s --warmup 1 --samples 5]

(`--iterations`, `--warmup`, `--samples`: other budgets than the flow's own, e.g. the earlier 100 / 10 / 5.)

Each run starts a new window with an empty variant cache (TRTLAB_CACHE_DIR in a temporary folder: the first demo
on a computer builds its FP16 and INT8 variants), unless `--warm`. The times come from the flow's `partShown`
signal, sent once each part is on the page. The load average is recorded with each run: other work on the computer
slows it. `--shots DIR` grabs the window at 1280×800 with FP32's answer in and the precisions pending, with the
first precision in, and at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("QT_NO_GUI_THREADPOOL", "1")  # as the application sets it (app.ui.shell.app.qt_environment)
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from PySide6.QtCore import QSettings, Qt  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402
from PySide6.QtWidgets import QApplication, QPushButton  # noqa: E402

SIZE = (1280, 800)
LIMIT_S = 300.0


def _wait(app: QApplication, done, limit_s: float) -> bool:
    end = time.perf_counter() + limit_s
    while not done() and time.perf_counter() < end:
        app.processEvents()
        time.sleep(0.005)
    return bool(done())


def _click(app: QApplication, button: QPushButton) -> None:
    if not (button.isVisible() and button.isEnabled()):
        raise RuntimeError(f"'{button.text()}' cannot be clicked")
    QTest.mouseClick(button, Qt.MouseButton.LeftButton)
    app.processEvents()


def one_run(app: QApplication, warm_cache: str | None, shots: Path | None, index: int,
            budgets: dict[str, object]) -> dict:
    from app.ui.shell.main_window import MainWindow

    cache = warm_cache or tempfile.mkdtemp(prefix="trtlab-demo-cache-")
    os.environ["TRTLAB_CACHE_DIR"] = cache  # the jobs' children inherit it
    window = MainWindow(QSettings(str(Path(tempfile.mkdtemp()) / "s.ini"), QSettings.Format.IniFormat))
    window.resize(*SIZE)
    window.show()
    app.processEvents()
    flow = window.guided
    for name, value in budgets.items():
        if value is not None:
            setattr(flow, name, value)
    _click(app, window.start_page.compare_button)
    _click(app, flow.model_step.demo_button)
    if not _wait(app, lambda: flow.steps.currentWidget() is flow.shapes_step, 60):
        raise RuntimeError("the demo model did not open")
    _click(app, flow.shapes_step.next_button)
    if not _wait(app, lambda: flow.steps.currentWidget() is flow.precisions_step, 60):
        raise RuntimeError("the precisions step did not show")
    targets = [f"ort-cpu:{p}" for p in flow.precisions_step.precisions()]
    times: dict[str, float] = {}
    grabbed: list[str] = []

    def shown(part: str) -> None:
        times[part] = time.perf_counter() - t0
        if shots is None or index:
            return
        name = {"FP32": "1_fp32_in_precisions_pending", targets[0]: "2_first_precision_in",
                "complete": "3_complete"}.get(part)
        if name:
            for _ in range(3):  # laid out and painted as the person sees it a moment later (after the time taken)
                app.processEvents()
            path = shots / f"{name}.png"
            window.grab().save(str(path))
            grabbed.append(str(path))

    flow.partShown.connect(shown)
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    _click(app, flow.precisions_step.run_button)
    finished = _wait(app, lambda: "complete" in times or not flow.running, LIMIT_S)
    error = flow.precisions_step.error.text() if "complete" not in times else ""
    if flow.running:
        flow.cancel()
        _wait(app, lambda: not flow.running, 30)
    window.loader.cancel(silent=True)
    window.jobs.cancel_all(wait=2)
    window.hide()  # not closed: closing asks whether to save the results, in a dialog nobody answers here
    window.deleteLater()
    app.processEvents()
    record = {"run": index + 1, "cache": "warm" if warm_cache else "cold", "targets": targets,
              "fp32_answer_s": times.get("FP32"),
              "answers_s": {t: times.get(t) for t in targets}, "speed_row_s": times.get("speed"),
              "complete_s": times.get("complete"), "finished": finished and not error, "error": error,
              "order": sorted(times, key=times.__getitem__), "load_avg_1min": [round(load_before, 2),
                                                                                round(os.getloadavg()[0], 2)],
              "samples": flow.samples, "iterations": flow.iterations, "warmup": flow.warmup, "shots": grabbed}
    return record


def _fmt(v: float | None) -> str:
    return "—" if v is None else f"{v:6.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--warm", action="store_true", help="reuse one variant cache (the first run fills it)")
    parser.add_argument("--shots", type=Path, help="a folder for screenshots of the first run")
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "guided_demo.json")
    parser.add_argument("--iterations", help="each precision's benchmark budget (default: the flow's)")
    parser.add_argument("--warmup", help="each benchmark's warm-up (default: the flow's)")
    parser.add_argument("--samples", type=int, help="the comparison's samples (default: the flow's)")
    args = parser.parse_args()
    budgets = {"iterations": args.iterations, "warmup": args.warmup, "samples": args.samples}
    app = QApplication.instance() or QApplication([])
    assert isinstance(app, QApplication)
    if args.shots:
        args.shots.mkdir(parents=True, exist_ok=True)
    warm = tempfile.mkdtemp(prefix="trtlab-demo-cache-") if args.warm else None
    records = [one_run(app, warm, args.shots, i, budgets) for i in range(args.runs)]
    targets = records[0]["targets"]
    print(f"Guided demo (u2netp, {' + '.join(t.split(':')[1].upper() for t in targets)}), seconds from Run; "
          f"{os.cpu_count()} cores, {'warm' if args.warm else 'cold'} variant cache; {records[0]['samples']} samples, "
          f"benchmarks of {records[0]['iterations']} after {records[0]['warmup']} warm-up")
    head = ["run", "FP32 answer", *[f"{t.split(':')[1].upper()} answer" for t in targets], "speed row", "complete",
            "load before/after"]
    print(" | ".join(head))
    for r in records:
        cells = [str(r["run"]), _fmt(r["fp32_answer_s"]), *[_fmt(r["answers_s"][t]) for t in targets],
                 _fmt(r["speed_row_s"]), _fmt(r["complete_s"]), "/".join(map(str, r["load_avg_1min"]))]
        print(" | ".join(cells) + (f"   ERROR: {r['error']}" if r["error"] else ""))
    done = [r for r in records if r["finished"]]
    summary: dict = {}
    for key in ("fp32_answer_s", "speed_row_s", "complete_s"):
        values = [r[key] for r in done if r[key] is not None]
        if values:
            summary[key] = {"median": round(statistics.median(values), 2), "min": round(min(values), 2),
                            "max": round(max(values), 2)}
    for t in targets:
        values = [r["answers_s"][t] for r in done if r["answers_s"][t] is not None]
        if values:
            summary[f"{t} answer_s"] = {"median": round(statistics.median(values), 2), "min": round(min(values), 2),
                                        "max": round(max(values), 2)}
    print("median (min–max): " + "; ".join(f"{k} {v['median']} ({v['min']}–{v['max']})" for k, v in summary.items()))
    doc = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": {
        "cpus": os.cpu_count(), "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(), "system": platform.platform()},
        "cache": "warm" if args.warm else "cold", "runs": records, "summary": summary}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=1))
    print(f"wrote {args.json}")
    return 0 if len(done) == len(records) else 1


if __name__ == "__main__":
    raise SystemExit(main())
