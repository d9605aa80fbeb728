"""TensorRT readiness check: its time on each shared model and on generated 1k/10k-node graphs.

For each model: `check_s`, the fastest of --repeat runs of `check_model(model)` (what runs when a model opens),
`plan_s` with a whole-model FP16 plan and a fresh scan cache (shape inference and every weight scanned), and
`replan_s` with the same plan again on a warm scan cache and the shape inference result passed in (what a plan
edit costs in the GUI, which keeps both for the open model). `ms_per_1k` is plan_s
per 1,000 nodes. The target is under 0.5 s per 1,000 nodes: `budget_s` is 0.5 s × max(nodes, 1000) / 1000 (a
model under 1,000 nodes gets the 1,000-node budget) and `met` says whether plan_s stayed within it. The generated
graphs come from tests/support/synthetic_graphs.py. Loading the file is not timed.

Usage:
    python benchmarks/readiness_check.py [MODEL.onnx ...] [--sizes 1k,10k] [--families resnet,transformer,unet]
                                         [--repeat 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.core.model.shapes import infer_shapes  # noqa: E402
from app.core.precision.plan import PrecisionPlan  # noqa: E402
from app.core.readiness import ScanCache, check_model, load_support_table  # noqa: E402
from benchmarks.shared import SHARED_SHAPES, shared_models, write_json  # noqa: E402
from tests.support.synthetic_graphs import FAMILIES, make  # noqa: E402

TARGET_S_PER_1K = 0.5


@dataclass
class Record:
    model: str
    nodes: int
    check_s: float
    plan_s: float
    replan_s: float
    ms_per_1k: float
    budget_s: float
    met: bool
    errors: int
    warnings: int
    infos: int


def _best(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def measure(name: str, model: onnx.ModelProto, repeat: int, shapes: dict | None = None) -> Record:
    plan = PrecisionPlan(default="fp16")
    check_s, report = _best(lambda: check_model(model, shapes=shapes), repeat)
    plan_s, _ = _best(lambda: check_model(model, shapes=shapes, plan=plan, cache=ScanCache()), repeat)
    cache = ScanCache()
    inferred = infer_shapes(model, shapes)
    check_model(model, shapes=shapes, plan=plan, cache=cache, shape_result=inferred)
    replan_s, _ = _best(lambda: check_model(model, shapes=shapes, plan=plan, cache=cache, shape_result=inferred),
                        repeat)
    n = len(model.graph.node)
    budget = TARGET_S_PER_1K * max(n, 1000) / 1000
    return Record(name, n, check_s, plan_s, replan_s, plan_s * 1e6 / max(n, 1), budget, plan_s <= budget,
                  report.errors, report.warnings, report.infos)


def _size(text: str) -> int:
    text = text.strip().lower()
    return int(float(text[:-1]) * 1000) if text.endswith("k") else int(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", type=Path)
    ap.add_argument("--sizes", default="1k,10k")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "readiness_check.json")
    args = ap.parse_args(argv)
    models = args.models or shared_models()
    load_support_table()  # parsed once per process; not part of a check
    records: list[Record] = []
    print(f"{'model':<24}{'nodes':>7}{'check s':>9}{'plan s':>9}{'replan s':>10}{'ms/1k nodes':>13}"
          f"{'budget s':>10}{'met':>5}{'err':>5}{'warn':>6}{'info':>6}")

    def show(r: Record) -> None:
        records.append(r)
        print(f"{r.model:<24}{r.nodes:>7}{r.check_s:>9.3f}{r.plan_s:>9.3f}{r.replan_s:>10.3f}{r.ms_per_1k:>13.1f}"
              f"{r.budget_s:>10.2f}{'yes' if r.met else 'NO':>5}{r.errors:>5}{r.warnings:>6}{r.infos:>6}")

    for p in models:
        show(measure(p.stem, onnx.load(str(p)), args.repeat, SHARED_SHAPES.get(p.stem)))
    for size in (_size(s) for s in args.sizes.split(",") if s.strip()):
        for family in (f.strip() for f in args.families.split(",") if f.strip()):
            show(measure(f"{family}-{size // 1000}k" if size >= 1000 else f"{family}-{size}", make(family, size),
                         args.repeat))
    met = all(r.met for r in records)
    big = [r for r in records if r.nodes >= 1000] or records
    worst = max(big, key=lambda r: r.ms_per_1k)
    print(f"\nSlowest per 1,000 nodes (graphs of 1,000+ nodes, whole-model FP16 plan): {worst.model} at "
          f"{worst.ms_per_1k:.0f} ms. Target < {TARGET_S_PER_1K * 1000:.0f} ms per 1,000 nodes: "
          f"{'met on every model' if met else 'NOT met on ' + ', '.join(r.model for r in records if not r.met)}")
    doc = {"benchmark": "readiness_check", "date": time.strftime("%Y-%m-%d"), "machine": platform.platform(),
           "processor": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
           "python": platform.python_version(), "onnx": onnx.__version__,
           "command": " ".join(["python benchmarks/readiness_check.py", *(argv if argv is not None else sys.argv[1:])]),
           "target_s_per_1k_nodes": TARGET_S_PER_1K, "target_met": met, "records": [asdict(r) for r in records]}
    write_json(doc, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
