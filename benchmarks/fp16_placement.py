"""Where trtlab's FP16 variants run, and why they are slower when they are: `trtlab profile MODEL --backend
B:fp16 --against B` on every model given (default: the shared models), through the real command line.

Per model: FP32 and FP16 time per run (ONNX Runtime's own profiler, median of --iterations runs after 3 warm-up
runs), FP16/FP32, the compute nodes the FP16 session ran on the CPU (fallbacks: must be 0 on a GPU backend), the
Casts FP16 added and their time, and the reasons `trtlab profile` gives when FP16 is slower. Prints a table, writes
JSON (each model's whole profile document under "profiles").

Usage (on the GPU machine, onnxruntime-gpu on PYTHONPATH as ../shared/docs/GPU.md says):
    python benchmarks/fp16_placement.py [MODEL.onnx ...] [--backend ort-cuda] [--iterations 50] [--json PATH]
"""

# ruff: noqa: T201  (a script that reports what it did)
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.shared import corpus_shapes, model_shapes, shared_models, write_json  # noqa: E402


def profile(model: Path, shapes: dict, backend: str, iterations: int) -> dict:
    args = [sys.executable, "-m", "app", "profile", str(model), "--backend", f"{backend}:fp16", "--against", backend,
            "--iterations", str(iterations), "--json", "-"]
    if shapes:
        args += ["--shapes", ",".join(f"{k}:{'x'.join(map(str, v))}" for k, v in shapes.items())]
    r = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        return {"error": (r.stderr.strip().splitlines() or ["?"])[-1], "exit": r.returncode}
    return json.loads(r.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", type=Path)
    ap.add_argument("--backend", default="ort-cuda")
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "fp16_placement.json")
    args = ap.parse_args()
    by_stem = {p.stem: s for p, s in corpus_shapes().items()}
    models = args.models or shared_models()
    rows = []
    print(f"{'model':<28} {'FP32 ms':>9} {'FP16 ms':>9} {'16/32':>6} {'CPU nodes':>9} {'casts':>6} {'cast ms':>8}  why")
    for m in models:
        t0 = time.perf_counter()
        doc = profile(m, model_shapes(m) or by_stem.get(m.stem, {}), args.backend, args.iterations)
        row = {"model": m.stem, "seconds": round(time.perf_counter() - t0, 1)}
        if "error" in doc:
            row.update(doc)
            print(f"{m.stem:<28} ERROR (exit {doc['exit']}): {doc['error'][:90]}")
        else:
            ref = doc["against"]
            row.update({"fp32_ms": ref["total_ms"], "fp16_ms": doc["total_ms"],
                        "ratio": round(doc["total_ms"] / ref["total_ms"], 3) if ref["total_ms"] else None,
                        "fallback_nodes": doc["fallback_nodes"], "fp32_fallback_nodes": ref["fallback_nodes"],
                        "casts": doc["casts"] - ref["casts"], "cast_ms": doc["cast_ms"],
                        "placement": doc["placement"], "slower_because": doc["slower_because"], "profile": doc})
            print(f"{m.stem:<28} {ref['total_ms']:>9.3f} {doc['total_ms']:>9.3f} {row['ratio']:>6.2f} "
                  f"{len(doc['fallback_nodes']):>9} {row['casts']:>6} {doc['cast_ms'] or 0:>8.3f}  "
                  + " | ".join(doc["slower_because"])[:160])
        rows.append(row)
    import onnxruntime as ort

    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.strip() if args.backend != "ort-cpu" else ""
    write_json({"backend": args.backend, "iterations": args.iterations, "gpu": gpu, "onnxruntime": ort.__version__,
                "date": time.strftime("%Y-%m-%d"), "rows": rows}, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
