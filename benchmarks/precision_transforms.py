"""Precision-work benchmark: the FP16 transform, and the cost of exposing every intermediate tensor.

For each model in the shared models folder (or the paths given):
- `fold_s` / `fp16_s` / `bf16_s`: wall time of Constant folding and of the whole FP16 / BF16 transform
  (folding, shape inference, casts, weight conversion; best of --repeat). Target: FP16 of the largest
  shared model in at most 2 s.
- `expose_s`: building the graph with every float intermediate tensor as an output.
- `run_ms` / `run_exposed_ms`: median ONNX Runtime CPU latency of the model as it is and with every tensor
  exposed (same inputs, --runs runs each after one warm-up), `exposed_mb`: the bytes those tensors hold for
  one sample — what diagnosis costs beyond a plain run.

Usage:
    python benchmarks/precision_transforms.py [MODEL.onnx ...] [--repeat 3] [--runs 10] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.core.measure.inputs import InputSource, make_samples, resolve_input_shapes  # noqa: E402
from app.core.model.tensors import graph_inputs, value_info_to_tensor_info  # noqa: E402
from app.core.precision.diagnose import expose_all  # noqa: E402
from app.core.precision.plan import PrecisionPlan  # noqa: E402
from app.core.precision.transforms.fold import fold_constants  # noqa: E402
from app.core.precision.transforms.half import to_half  # noqa: E402
from benchmarks.shared import SHARED_SHAPES, shared_models, write_json  # noqa: E402

TARGET_FP16_S = 2.0


@dataclass
class Record:
    model: str
    file_mb: float
    nodes: int
    fold_s: float
    fp16_s: float
    bf16_s: float
    expose_s: float
    exposed_tensors: int
    run_ms: float
    run_exposed_ms: float
    exposed_mb: float


def _best(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def _median_ms(session: ort.InferenceSession, feeds: dict, runs: int) -> tuple[float, list]:
    outs = session.run(None, feeds)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)
    return float(np.median(times)), outs


def measure(path: Path, repeat: int, runs: int) -> Record:
    model = onnx.load(str(path))
    fold_s, _ = _best(lambda: fold_constants(model), repeat)
    fp16_s, _ = _best(lambda: to_half(model, PrecisionPlan(default="fp16"), "fp16"), repeat)
    bf16_s, _ = _best(lambda: to_half(model, PrecisionPlan(default="bf16"), "bf16"), repeat)
    expose_s, (exposed, names) = _best(lambda: expose_all(model), repeat)
    infos = [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]
    shapes = resolve_input_shapes(infos, SHARED_SHAPES.get(path.stem, {}))
    feeds = make_samples(model, infos, shapes, InputSource())[0]
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = os.cpu_count() or 1
    plain = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    run_ms, _ = _median_ms(plain, feeds, runs)
    wide = ort.InferenceSession(exposed.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    run_exposed_ms, outs = _median_ms(wide, feeds, runs)
    return Record(path.stem, path.stat().st_size / 1e6, len(model.graph.node), fold_s, fp16_s, bf16_s, expose_s,
                  len(names), run_ms, run_exposed_ms, sum(np.asarray(o).nbytes for o in outs) / 1e6)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "precision_transforms.json")
    args = ap.parse_args(argv)
    models = args.models or shared_models()
    if not models:
        print("No models: pass paths, or place the shared models next to the checkout.", file=sys.stderr)
        return 2
    records = []
    print(f"{'model':<26}{'MB':>6}{'nodes':>7}{'fold s':>8}{'FP16 s':>8}{'BF16 s':>8}{'expose s':>9}"
          f"{'tensors':>8}{'run ms':>9}{'exposed ms':>11}{'×':>6}{'MB out':>8}")
    for p in models:
        r = measure(p, args.repeat, args.runs)
        records.append(r)
        print(f"{r.model:<26}{r.file_mb:>6.1f}{r.nodes:>7}{r.fold_s:>8.3f}{r.fp16_s:>8.3f}{r.bf16_s:>8.3f}"
              f"{r.expose_s:>9.3f}{r.exposed_tensors:>8}{r.run_ms:>9.2f}{r.run_exposed_ms:>11.2f}"
              f"{r.run_exposed_ms / max(r.run_ms, 1e-9):>6.2f}{r.exposed_mb:>8.1f}")
    largest = max(records, key=lambda r: r.file_mb)
    met = largest.fp16_s <= TARGET_FP16_S
    print(f"\nFP16 transform of the largest model ({largest.model}, {largest.file_mb:.1f} MB): {largest.fp16_s:.3f} s "
          f"— target ≤ {TARGET_FP16_S} s: {'met' if met else 'NOT met'}")
    doc = {"benchmark": "precision_transforms", "date": time.strftime("%Y-%m-%d"), "machine": platform.platform(),
           "cpu_count": os.cpu_count(), "onnx": onnx.__version__, "onnxruntime": ort.__version__,
           "target_fp16_s": TARGET_FP16_S, "target_met": met, "records": [asdict(r) for r in records]}
    write_json(doc, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
