"""GUI responsiveness while CPU-heavy jobs run: the worst stall of the Qt event loop.

A 5 ms QTimer heartbeat runs in the GUI process while the JobBridge runs jobs in child processes:
first a busy loop that never yields (both cores loaded when run twice), then a real comparison on u2netp, then
the real window running Run ▸ Benchmark Sweep… on g2p_bert_mlm (274 nodes, a dynamic batch): 8 batch sizes × FP32,
FP16 and INT8 on ort-cpu, timed from Run until the plots are drawn, so reading the result and plotting it on the
GUI thread count too: the Sweep tab draws each point as it comes, then the result over them. The window's case
also reports the click's own turns (the job started, the Results dock brought forward) apart from the rest, the
time each partial result took to draw, and how many stalls over 16 ms the GUI thread's own CPU made (the others
waited for a core). Prints a table; `--json PATH` writes the records.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("QT_NO_GUI_THREADPOOL", "1")  # as the application sets it (app.ui.shell.app.qt_environment)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PySide6.QtCore import QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from app.jobs import JobSpec  # noqa: E402
from app.ui.run.job_bridge import JobBridge  # noqa: E402
from app.ui.run.jobs_panel import JobsPanel  # noqa: E402


def measure(app: QApplication, bridge: JobBridge, specs: list[JobSpec], limit_s: float) -> dict:
    beats: list[float] = []
    heart = QTimer(interval=5)
    heart.timeout.connect(lambda: beats.append(time.perf_counter()))
    heart.start()
    ids = [bridge.start(s) for s in specs]
    t0 = time.perf_counter()
    while any(j not in bridge.results for j in ids) and time.perf_counter() - t0 < limit_s:
        app.processEvents()
        time.sleep(0.001)
    for j in ids:
        if j not in bridge.results:
            bridge.cancel(j)
    while any(j not in bridge.results for j in ids):
        app.processEvents()
        time.sleep(0.001)
    heart.stop()
    gaps = [(b - a) * 1000 for a, b in zip(beats, beats[1:], strict=False)]
    return {"jobs": [s.title for s in specs], "seconds": round(time.perf_counter() - t0, 2),
            "beats": len(beats), "worst_stall_ms": round(max(gaps), 2) if gaps else None,
            "p99_gap_ms": round(sorted(gaps)[int(0.99 * (len(gaps) - 1))], 2) if gaps else None,
            "statuses": [bridge.results[j].status for j in ids]}


SWEEP_MODEL = "g2p_bert_mlm.onnx"
SWEEP_TARGETS = ("ort-cpu:fp32", "ort-cpu:fp16", "ort-cpu:int8")
SWEEP_VALUES = (1, 2, 4, 8, 16, 32, 64, 128)
CLICK_S = 0.25  # the turns answering the click on Run, apart from the rest


def measure_window_sweep(app: QApplication, model: Path, limit_s: float, iterations: str = "20") -> dict:
    """The real main window sweeps `model` (SWEEP_VALUES × SWEEP_TARGETS) through Run ▸ Benchmark Sweep…; the
    heartbeat runs from Run until half a second after the Sweep tab drew the result (`drawn`: every drawing step
    done)."""
    import tempfile

    from PySide6.QtCore import QSettings

    from app.core.results import SweepResult
    from app.ui.shell.main_window import MainWindow

    os.environ.setdefault("TRTLAB_NO_CLOSE_PROMPT", "1")
    w = MainWindow(QSettings(str(Path(tempfile.mkdtemp()) / "s.ini"), QSettings.Format.IniFormat))
    w.resize(1280, 800)
    w.show()
    w.open_path(model)
    # The model loaded (the loader's thread ends with a full collection on the GUI thread: before the first click).
    settled = time.perf_counter() + 15
    while w.loader.is_busy() and time.perf_counter() < settled:
        app.processEvents()
        time.sleep(0.005)
    # The dialog's opening is timed too: the Sweep tab's plots are made while it is open (a step per turn).
    opening: list[tuple[float, float]] = []  # (when, the GUI thread's CPU time) at each beat
    heart = QTimer(interval=5)
    heart.timeout.connect(lambda: opening.append((time.perf_counter(), time.thread_time())))
    heart.start()
    t_open = time.perf_counter()
    w.menus.act_sweep.trigger()
    open_ms = (time.perf_counter() - t_open) * 1000  # the dialog made and shown, before any other event
    dialog = w.run_controller.sweep_dialog
    assert dialog is not None, w.run_controller.last_refusal
    for target, cb in dialog.checks.items():
        cb.setChecked(target in SWEEP_TARGETS)
    dialog.values_edit.setText(",".join(str(v) for v in SWEEP_VALUES))
    dialog.values_edit.textEdited.emit(dialog.values_edit.text())
    dialog.iterations_edit.setText(iterations)
    dialog.warmup_edit.setText("3")
    while time.perf_counter() - t_open < 0.4:  # the dialog laid out and painted before the clock starts
        app.processEvents()
        time.sleep(0.001)
    heart.stop()
    after_open = [((b - a) * 1000, (cb - ca) * 1000) for (a, ca), (b, cb) in zip(opening, opening[1:], strict=False)]
    finished: list[str] = []
    ended: list[float] = []  # when the job's end reached the window
    w.jobs.finished.connect(lambda _job, r: (finished.append(r.status), ended.append(time.perf_counter())))
    view = w.results_view.sweep_view
    updates: list[tuple[float, float, int]] = []  # each partial drawn: when (from Run), its GUI time, its points
    draw = view._update

    def timed_update(doc: SweepResult, plots: tuple[str, ...] = ("latency", "throughput")) -> None:
        start = time.perf_counter()
        draw(doc, plots)
        updates.append((start - t0, (time.perf_counter() - start) * 1000, len(doc.points)))

    view._update = timed_update  # type: ignore[method-assign]
    beats: list[float] = []
    cpu: list[float] = []  # the GUI thread's own CPU time at each beat: its work, told from a machine too busy
    heart = QTimer(interval=5)
    heart.timeout.connect(lambda: (beats.append(time.perf_counter()), cpu.append(time.thread_time())))
    heart.start()
    t0 = time.perf_counter()
    dialog.run_button.click()
    shown_at = None
    while time.perf_counter() - t0 < limit_s:
        app.processEvents()
        time.sleep(0.001)
        if shown_at is None and finished and view.doc is not None and not view.running and view.drawn:
            shown_at = time.perf_counter()
        if finished and (shown_at is not None or finished[0] != "done"):
            if time.perf_counter() - (shown_at or t0) > 0.5:
                break
    if not finished:
        w.run_controller.cancel_all()
        while not finished:
            app.processEvents()
            time.sleep(0.001)
    heart.stop()
    gaps = [(b - a) * 1000 for a, b in zip(beats, beats[1:], strict=False)]
    work = [(b - a) * 1000 for a, b in zip(cpu, cpu[1:], strict=False)]
    worst = max(range(len(gaps)), key=gaps.__getitem__) if gaps else None
    busiest = max(range(len(work)), key=work.__getitem__) if work else None
    doc = view.doc
    # The click's own turns (the job started, the Results dock brought forward and grown) against the rest.
    click = [i for i in range(len(gaps)) if beats[i + 1] - t0 <= CLICK_S]
    rest = [i for i in range(len(gaps)) if beats[i + 1] - t0 > CLICK_S]
    live = [u for u in updates if shown_at is None or u[0] < shown_at - t0]
    # The result's own turns: from the job's end reaching the window until half a second after it was drawn.
    end = [i for i in range(len(gaps)) if ended and beats[i + 1] >= ended[0] - 0.001
           and beats[i] <= (shown_at or ended[0]) + 0.5]
    rec = {"jobs": [f"sweep {model.name}: {len(SWEEP_VALUES)} batches x {', '.join(SWEEP_TARGETS)}"],
           "seconds": round(time.perf_counter() - t0, 2), "beats": len(beats),
           "worst_stall_ms": round(gaps[worst], 2) if worst is not None else None,
           "p99_gap_ms": round(sorted(gaps)[int(0.99 * (len(gaps) - 1))], 2) if gaps else None,
           "statuses": finished,
           # where the worst stall was, from Run: before or after the result was drawn
           "worst_stall_at_s": round(beats[worst] - t0, 3) if worst is not None else None,
           "result_shown_at_s": round(shown_at - t0, 3) if shown_at is not None else None,
           # the GUI thread's CPU time within the worst stall, and the most it spent between two beats (and when):
           # a stall with little of it was the machine's other work, not the window's
           "worst_stall_gui_cpu_ms": round(work[worst], 2) if worst is not None and worst < len(work) else None,
           "worst_gui_cpu_ms": round(work[busiest], 2) if busiest is not None else None,
           "worst_gui_cpu_at_s": round(beats[busiest] - t0, 3) if busiest is not None else None,
           "load_average": [round(x, 2) for x in os.getloadavg()],
           # the dialog's opening: the menu action (the dialog made and shown), then the turns after it
           "open_ms": round(open_ms, 2),
           "open_after_worst_stall_ms": round(max(g for g, _ in after_open), 2) if after_open else None,
           "open_after_worst_gui_cpu_ms": round(max(c for _, c in after_open), 2) if after_open else None,
           # the first CLICK_S after Run (its turns: the job started, the dock raised and grown, the empty plots)
           "click_worst_stall_ms": round(max(gaps[i] for i in click), 2) if click else None,
           "click_worst_gui_cpu_ms": round(max(work[i] for i in click if i < len(work)), 2) if click else None,
           "after_click_worst_stall_ms": round(max(gaps[i] for i in rest), 2) if rest else None,
           "after_click_worst_gui_cpu_ms": round(max(work[i] for i in rest if i < len(work)), 2) if rest else None,
           # each turn of the click over 6 ms: [its stall, the GUI thread's CPU in it] (ms)
           "click_turns_ms": [[round(gaps[i], 1), round(work[i], 1) if i < len(work) else None] for i in click
                              if gaps[i] > 6],
           # the stalls over 16 ms (a frame at 60 Hz), and how many of them the GUI thread itself spent over 16 ms
           # of CPU in: the others waited for a core the machine's other work held
           "stalls_over_16ms": sum(g > 16 for g in gaps),
           "stalls_over_16ms_own_cpu": sum(g > 16 and i < len(work) and work[i] > 16 for i, g in enumerate(gaps)),
           "result_worst_stall_ms": round(max(gaps[i] for i in end), 2) if end else None,
           "result_worst_gui_cpu_ms": round(max(work[i] for i in end if i < len(work)), 2) if end else None,
           # the points drawn as they came, before the result: how many plot updates (one plot in a turn), the most
           # time one took
           "partial_updates": len(live),
           "partial_update_worst_ms": round(max(u[1] for u in live), 2) if live else None,
           "first_point_shown_at_s": round(next((u[0] for u in live if u[2]), 0.0), 3) if live else None,
           "points": [f"{p.target}@{p.value}:{p.status}" for p in doc.points] if doc is not None else []}
    w.close()
    return rec


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", default=str(Path(__file__).resolve().parents[2] / "shared" / "models"))
    ap.add_argument("--json", metavar="PATH")
    ap.add_argument("--only-sweep", action="store_true", help="the window's sweep case alone")
    ap.add_argument("--no-sweep", action="store_true", help="skip the window's sweep case")
    a = ap.parse_args()
    app = QApplication([])
    bridge = JobBridge()
    panel = JobsPanel(bridge)  # the real panel updates on every event, as in the application
    panel.show()
    busy = JobSpec("app.jobs.testing:stubborn_job", {"seconds": 4}, title="busy loop")
    cases: list[tuple[str, list[JobSpec], float]] = [
        ("two busy child processes (both cores)", [busy, JobSpec(busy.func, busy.params, "busy loop 2")], 10)]
    u2 = Path(a.models) / "u2netp.onnx"
    if u2.exists():
        cases.append(("compare u2netp, 4 samples", [JobSpec(
            "app.backends.tasks.compare:compare_task",
            {"model": str(u2), "candidates": ["ort-cpu:fp32"], "samples": 4, "shapes": {}},
            title="compare u2netp")], 300))
    if a.only_sweep:
        cases = []
    records = []
    for name, specs, limit in cases:
        rec = measure(app, bridge, specs, limit)
        rec["case"] = name
        records.append(rec)
    sweep_model = Path(a.models) / SWEEP_MODEL
    if sweep_model.exists() and not a.no_sweep:
        rec = measure_window_sweep(app, sweep_model, 600)
        rec["case"] = f"window sweep {sweep_model.stem}, 8x3 points"
        records.append(rec)
    for r in records:
        if r.get("result_shown_at_s") is not None:
            print(f"{r['case']}: result drawn {r['result_shown_at_s']} s after Run; worst stall at "
                  f"{r['worst_stall_at_s']} s (the GUI thread's CPU in it: {r['worst_stall_gui_cpu_ms']} ms); most GUI "
                  f"CPU between two beats {r['worst_gui_cpu_ms']} ms at {r['worst_gui_cpu_at_s']} s; "
                  f"{len(r['points'])} points ({sum(not p.endswith(':ok') for p in r['points'])} without a time); "
                  f"load average {r['load_average']}")
            print(f"  first {CLICK_S} s after Run (the job started, the Results dock forward): worst stall "
                  f"{r['click_worst_stall_ms']} ms (GUI CPU {r['click_worst_gui_cpu_ms']} ms); after it: worst stall "
                  f"{r['after_click_worst_stall_ms']} ms (GUI CPU {r['after_click_worst_gui_cpu_ms']} ms); "
                  f"{r['partial_updates']} plot updates as the points came (one plot a turn), the first point drawn at "
                  f"{r['first_point_shown_at_s']} s, each in at most {r['partial_update_worst_ms']} ms; "
                  f"the result's turns: worst stall "
                  f"{r['result_worst_stall_ms']} ms (GUI CPU {r['result_worst_gui_cpu_ms']} ms)")
            print(f"  the dialog's opening: {r['open_ms']} ms, then its turns: worst stall "
                  f"{r['open_after_worst_stall_ms']} ms (GUI CPU {r['open_after_worst_gui_cpu_ms']} ms)")
            print(f"  the click's turns over 6 ms [stall, GUI CPU]: {r['click_turns_ms']}; stalls over 16 ms: "
                  f"{r['stalls_over_16ms']} ({r['stalls_over_16ms_own_cpu']} with over 16 ms of the GUI thread's CPU)")
    print(f"{'case':<42}{'s':>7}{'beats':>7}{'worst stall ms':>16}{'p99 gap ms':>12}  statuses")
    for r in records:
        print(f"{r['case']:<42}{r['seconds']:>7}{r['beats']:>7}{r['worst_stall_ms']:>16}{r['p99_gap_ms']:>12}"
              f"  {','.join(r['statuses'])}")
    if a.json:
        Path(a.json).write_text(json.dumps(records, indent=2))
    sys.stdout.flush()
    os._exit(0)  # skip Qt's teardown at interpreter exit (see app/ui/shell/app.py)


if __name__ == "__main__":
    sys.exit(main())
