"""Jobs through the Qt bridge and the panel: progress, cancel, a crash, a responsive event loop."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer

from app.jobs import JobSpec
from app.ui.job_bridge import JobBridge
from app.ui.jobs_panel import JobsPanel

T = "app.jobs.testing:"


def _panel(qtbot):
    bridge = JobBridge()
    panel = JobsPanel(bridge)
    qtbot.addWidget(panel)
    panel.show()
    return bridge, panel


def test_progress_moves_and_job_finishes(qtbot):
    bridge, panel = _panel(qtbot)
    values = []
    bridge.progress.connect(lambda j, f, m: values.append(f))
    with qtbot.waitSignal(bridge.finished, timeout=20_000) as sig:
        job = bridge.start(JobSpec(T + "sleep_job", {"steps": 5, "step_s": 0.05}, title="Sleep"))
    assert sig.args[1].status == "done"
    assert values == sorted(values) and values[-1] == 1.0
    assert panel.bars[job].value() == 1000 and panel.status_text(job) == "done"
    assert not panel.cancel_buttons[job].isEnabled()


def test_cancel_button_and_heartbeat(qtbot):
    bridge, panel = _panel(qtbot)
    beats = []
    heart = QTimer(interval=10)
    heart.timeout.connect(lambda: beats.append(time.monotonic()))
    heart.start()
    job = bridge.start(JobSpec(T + "stubborn_job", {"seconds": 60}, title="Busy"))
    qtbot.waitUntil(lambda: panel.status_text(job) == "busy", timeout=20_000)
    with qtbot.waitSignal(bridge.finished, timeout=5_000) as sig:
        t0 = time.monotonic()
        qtbot.mouseClick(panel.cancel_buttons[job], Qt.MouseButton.LeftButton)
    assert time.monotonic() - t0 < 1.5
    assert sig.args[1].status == "cancelled" and panel.status_text(job) == "cancelled"
    heart.stop()
    gaps = [b - a for a, b in zip(beats, beats[1:], strict=False)]
    assert len(beats) > 20 and max(gaps) < 0.5  # the event loop kept running throughout


def test_crash_shows_failed_with_reason(qtbot):
    bridge, panel = _panel(qtbot)
    with qtbot.waitSignal(bridge.finished, timeout=20_000) as sig:
        job = bridge.start(JobSpec(T + "segfault_job", title="Crash"))
    assert sig.args[1].status == "failed"
    text = panel.status_text(job)
    assert text.startswith("failed") and "SIGSEGV" in text
    panel.table.selectRow(panel.rows[job])
    assert "SIGSEGV" in panel.log.toPlainText()
