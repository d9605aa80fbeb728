"""Jobs through the Qt bridge and the panel: progress, cancel, a crash, a responsive event loop."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QTimer

from app.jobs import JobSpec
from app.ui.run.job_bridge import JobBridge
from app.ui.run.jobs_panel import BAR_MAX, JobsPanel

T = "app.jobs.testing:"


@pytest.fixture
def panel(qtbot):
    bridge = JobBridge()
    p = JobsPanel(bridge)
    qtbot.addWidget(p)
    p.resize(900, 500)
    p.show()
    yield p
    bridge.cancel_all(wait=5)


@pytest.fixture
def heartbeat():
    """A 10 ms timer that records when it fires: gaps show whether the event loop kept running."""
    beats: list[float] = []
    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(lambda: beats.append(time.monotonic()))
    timer.start()
    yield beats
    timer.stop()


def test_progress_bar_moves_and_row_finishes_done(qtbot, panel):
    bridge = panel.bridge
    values: list[int] = []
    job = bridge.start(JobSpec(T + "sleep_job", {"steps": 8, "step_s": 0.04}, title="Sleep a little"))
    assert panel.row_of(job) == 0 and panel.table.item(0, 0).text() == "Sleep a little"
    bridge.progress.connect(lambda j, f, m: values.append(panel.bar(job).value()))
    with qtbot.waitSignal(bridge.finished, timeout=20_000) as sig:
        pass
    result = sig.args[1]
    assert sig.args[0] == job and result.status == "done"
    assert len(values) >= 2 and values == sorted(values) and 0 < values[0] < BAR_MAX
    assert panel.bar(job).value() == BAR_MAX and panel.status_text(job) == "done"
    assert not panel.cancel_button(job).isEnabled()
    assert panel.elapsed_text(job) == f"{result.seconds:.1f} s"
    assert panel.summary.text() == "1 finished"
    panel.clear_finished()
    assert panel.table.rowCount() == 0 and bridge.jobs() == []


def test_a_job_that_reports_fractions_says_about_how_long_it_has_left(qtbot, panel):
    """Ten steps of 0.5 s: after 3 s at its pace the row says the time left; it never says so before."""
    job = panel.bridge.start(JobSpec(T + "sleep_job", {"steps": 10, "step_s": 0.5}, title="Ten steps"))
    qtbot.waitUntil(lambda: panel.bar(job).value() > 0, timeout=20_000)
    assert "left" not in panel.elapsed_text(job)
    qtbot.waitUntil(lambda: "left" in panel.elapsed_text(job), timeout=15_000)
    left = panel.elapsed_text(job).split("about ")[1]
    assert left.endswith(" s left") and 1 <= int(left.split()[0]) <= 5
    with qtbot.waitSignal(panel.bridge.finished, timeout=20_000):
        pass
    assert "left" not in panel.elapsed_text(job)


def test_the_time_left_is_the_pace_so_far_carried_to_the_end():
    from app.jobs import time_left

    assert time_left(None, 0.5, 10.0) == ""
    assert time_left((0.0, 0.1), 0.11, 10.0) == ""   # moved less than 2 %: no pace yet
    assert time_left((0.0, 0.0), 0.5, 2.0) == ""     # not 3 s yet
    assert time_left((0.0, 0.0), 0.25, 10.0) == "30 s"
    assert time_left((100.0, 0.2), 0.4, 160.0) == "3 min"  # 20 % a minute, 60 % to go: 180 s
    assert time_left((0.0, 0.0), -1.0, 10.0) == ""


def test_indeterminate_progress_is_a_busy_bar_and_elapsed_time_runs(qtbot, panel):
    job = panel.bridge.start(JobSpec(T + "stubborn_job", {"seconds": 60}, title="Busy"))
    qtbot.waitUntil(lambda: panel.status_text(job) == "busy", timeout=20_000)
    assert panel.bar(job).maximum() == 0  # Qt's busy indicator
    first = float(panel.elapsed_text(job).split()[0])
    qtbot.waitUntil(lambda: float(panel.elapsed_text(job).split()[0]) >= first + 0.4, timeout=3_000)
    assert panel.summary.text() == "1 running"


def test_cancel_button_terminates_a_job_that_ignores_it_and_loop_keeps_running(qtbot, panel, heartbeat):
    """The job never looks at the cancel flag and would run a minute: it ends cancelled because it was terminated
    (the deadline only stops a test that would hang)."""
    bridge = panel.bridge
    job = bridge.start(JobSpec(T + "stubborn_job", {"seconds": 60}, title="Busy"))
    qtbot.waitUntil(lambda: panel.status_text(job) == "busy", timeout=20_000)
    with qtbot.waitSignal(bridge.finished, timeout=30_000) as sig:
        qtbot.mouseClick(panel.cancel_button(job), Qt.MouseButton.LeftButton)
        assert panel.status_text(job) == "cancelling…" and not panel.cancel_button(job).isEnabled()
        clicked = len(heartbeat)
    assert sig.args[1].status == "cancelled" and panel.status_text(job) == "cancelled"
    assert sig.args[1].exit_reason == "terminated after cancel"
    # The event loop ran while the job was given its grace and terminated: the window never waits on the child.
    assert len(heartbeat) > clicked


def test_segfault_shows_failed_with_reason_while_loop_runs(qtbot, panel, heartbeat):
    bridge = panel.bridge
    with qtbot.waitSignal(bridge.finished, timeout=20_000) as sig:
        job = bridge.start(JobSpec(T + "segfault_job", title="Crash"))
    assert sig.args[1].status == "failed"
    text = panel.status_text(job)
    assert text.startswith("failed") and "SIGSEGV" in text
    assert panel.table.item(panel.row_of(job), 3).foreground().color().name() == "#b3261e"
    panel.select(job)
    assert panel.error_label.isVisible() and "Exit: killed by signal 11 (SIGSEGV)" in panel.error_label.text()
    log_text = panel.log.toPlainText()
    assert "reading address 0" in log_text and "Fatal Python error" in log_text
    after_crash = len(heartbeat)
    qtbot.waitUntil(lambda: len(heartbeat) >= after_crash + 10, timeout=5_000)  # it keeps ticking after the crash
    assert panel.summary.text() == "1 finished (1 failed)"


def test_log_lines_follow_the_selected_job(qtbot, panel):
    bridge = panel.bridge
    with qtbot.waitSignals([bridge.finished, bridge.finished], timeout=20_000):
        a = bridge.start(JobSpec(T + "events_job", {"n": 3}, title="A"))
        b = bridge.start(JobSpec(T + "failing_job", title="B"))
    panel.select(a)
    assert panel.log.toPlainText().splitlines()[:3] == ["event 0", "event 1", "event 2"]
    assert not panel.error_label.isVisible()
    panel.select(b)
    assert "warning: about to fail" in panel.log.toPlainText()
    assert "ValueError: something broke" in panel.error_label.text()


def test_the_bridge_starts_the_process_every_job_is_handed_before_the_first_job():
    """multiprocessing's resource tracker is a Python process of its own, started with the first job unless someone
    starts it first: the bridge does, a second after the window is made, so a click on Run starts one process, not
    two side by side (on 2 cores the window then waited for a core). A fresh interpreter: this one's tracker may
    already run."""
    import subprocess
    import sys

    script = """
import os, sys, time
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from multiprocessing import resource_tracker
from PySide6.QtWidgets import QApplication
from app.ui.run.job_bridge import WARM_MS, JobBridge
app = QApplication([])
bridge = JobBridge()
assert resource_tracker._resource_tracker._pid is None, "started before the window's first second"
end = time.monotonic() + WARM_MS / 1000 + 2
while resource_tracker._resource_tracker._pid is None and time.monotonic() < end:
    app.processEvents()
    time.sleep(0.01)
pid = resource_tracker._resource_tracker._pid
print("tracker", pid, "jobs", len(bridge.jobs()))
os.kill(pid, 0)  # it runs
"""
    root = Path(__file__).resolve().parents[2]
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=root)
    assert r.returncode == 0, r.stderr
    words = r.stdout.split()
    assert words[0] == "tracker" and int(words[1]) > 0 and words[3] == "0"   # running, and no job was started
