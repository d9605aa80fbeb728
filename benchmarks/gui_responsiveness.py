"""GUI responsiveness while CPU-heavy jobs run: the worst stall of the Qt event loop.

A 5 ms QTimer heartbeat runs in the GUI process while the JobBridge runs jobs in child processes:
first a busy loop that never yields (both cores loaded when run twice), then a real comparison on u2netp.
Prints a table; `--json PATH` writes the records.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", default=str(Path(__file__).resolve().parents[2] / "shared" / "models"))
    ap.add_argument("--json", metavar="PATH")
    a = ap.parse_args()
    app = QApplication([])
    bridge = JobBridge()
    panel = JobsPanel(bridge)  # the real panel updates on every event, as in the application
    panel.show()
    busy = JobSpec("app.jobs.testing:stubborn_job", {"seconds": 4}, title="busy loop")
    cases = [("two busy child processes (both cores)", [busy, JobSpec(busy.func, busy.params, "busy loop 2")], 10)]
    u2 = Path(a.models) / "u2netp.onnx"
    if u2.exists():
        cases.append(("compare u2netp, 4 samples", [JobSpec(
            "app.backends.tasks.compare:compare_task",
            {"model": str(u2), "candidates": ["ort-cpu:fp32"], "samples": 4, "shapes": {}},
            title="compare u2netp")], 300))
    records = []
    for name, specs, limit in cases:
        rec = measure(app, bridge, specs, limit)
        rec["case"] = name
        records.append(rec)
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
