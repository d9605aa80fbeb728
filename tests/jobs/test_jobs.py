"""The job machinery: order of events, results on disk, crashes, cancel."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from app.jobs import JobRunner, JobSpec, load_arrays, load_result, run_inline, save_result

T = "app.jobs.testing:"


def test_events_arrive_in_order_and_result_last():
    seen = []
    r = JobRunner().run(JobSpec(T + "events_job", {"n": 40}, title="events"), on_event=seen.append)
    assert r.status == "done" and r.data == {"n": 40}
    kinds = [e.kind for e in seen]
    assert kinds[0] == "started" and kinds[-1] == "result"
    assert [e.message for e in seen if e.kind == "log"] == [f"event {i}" for i in range(40)]
    assert r.exit_reason == "exit code 0"


def test_progress_and_no_qt_in_child():
    seen = []
    r = JobRunner().run(JobSpec(T + "sleep_job", {"steps": 4, "step_s": 0.01}), on_event=seen.append)
    fr = [e.fraction for e in seen if e.kind == "progress"]
    assert fr == [0.25, 0.5, 0.75, 1.0]
    assert r.data["qt_loaded"] is False


def test_results_round_trip_json_and_npz(tmp_path):
    r = JobRunner().run(JobSpec(T + "arrays_job", {"seed": 3}))
    arrays = load_arrays(r.data["npz"])
    expected = np.random.default_rng(3).random((3, 4), dtype=np.float32)
    np.testing.assert_array_equal(arrays["a"], expected)
    np.testing.assert_array_equal(arrays["b"], np.arange(5))
    save_result(tmp_path / "r.json", r)
    back = load_result(tmp_path / "r.json")
    assert back == r
    json.loads((tmp_path / "r.json").read_text())


def test_exception_becomes_failed_with_traceback():
    r = JobRunner().run(JobSpec(T + "failing_job"))
    assert r.status == "failed" and r.error == "ValueError: something broke"
    assert not r.user_error and r.error_type == "ValueError"
    assert any("Traceback" in line for line in r.log_tail)
    assert "warning: about to fail" in r.log_tail
    u = JobRunner().run(JobSpec(T + "failing_job", {"user": True}))
    assert u.status == "failed" and u.user_error and u.error == "The input is wrong." and u.fix == "Give a better input."


@pytest.mark.parametrize(("job", "words"), [("abort_job", "SIGABRT"), ("segfault_job", "SIGSEGV")])
def test_crashing_child_is_a_failed_job(job, words):
    r = JobRunner().run(JobSpec(T + job))
    assert r.status == "failed"
    assert words in r.exit_reason and words in r.error
    assert any("Fatal Python error" in line or "aborting" in line or "address 0" in line for line in r.log_tail)


def test_os_exit_code_reported():
    r = JobRunner().run(JobSpec(T + "exit_job", {"code": 3}))
    assert r.status == "failed" and r.exit_reason == "exit code 3"


@pytest.mark.parametrize("job", ["sleep_job", "stubborn_job"])
def test_cancel_stops_within_about_a_second(job):
    h = JobRunner().start(JobSpec(T + job, {"steps": 1000, "step_s": 0.05, "seconds": 60}))
    deadline = time.monotonic() + 20
    while not any(e.kind == "progress" for e in h.events) and time.monotonic() < deadline:
        h.poll()
        time.sleep(0.01)
    t0 = time.monotonic()
    h.cancel()
    r = h.wait(timeout=10)
    assert time.monotonic() - t0 < 1.5
    assert r.status == "cancelled"
    if job == "stubborn_job":
        assert r.exit_reason == "terminated after cancel"


def test_run_inline_matches_child():
    spec = JobSpec(T + "events_job", {"n": 5})
    a, b = JobRunner().run(spec), run_inline(spec)
    assert a.status == b.status == "done" and a.data == b.data
