"""Fallback-search benchmark and evidence: for each model and candidate precision, the nodes the search keeps
in high precision, the metric before → after, the number of evaluations and the wall time.

It runs trtlab's own fallback job (`app.backends.tasks.fallback:fallback_task`, the one `trtlab fallback` runs) on
every shared model, with seeded random inputs (labelled as such) unless --inputs is given. INT8 candidates
are calibrated on the same random source. Also prints the error table of each candidate before any fallback
(from the job's first evaluation).

Usage:
    python benchmarks/fallback_search.py [--candidates ort-cpu:fp16,ort-cpu:int8] [--target cos:0.999]
                                         [--samples 4] [--budget 300] [--models a.onnx ...] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.jobs import JobSpec, run_inline  # noqa: E402
from benchmarks.shared import SHARED_SHAPES, shared_models, write_json  # noqa: E402


def run_one(model: Path, candidate: str, target: str, samples: int, budget: float | None) -> dict:
    params = {"model": str(model), "candidate": candidate, "target": target, "samples": samples,
              "shapes": SHARED_SHAPES.get(model.stem, {}), "inputs": {"kind": "random", "seed": 0},
              "budget_s": budget, "calib_samples": 16}
    t = time.perf_counter()
    result = run_inline(JobSpec(func="app.backends.tasks.fallback:fallback_task", params=params, title="fallback"))
    wall = time.perf_counter() - t
    if result.status != "done":
        return {"model": model.stem, "candidate": candidate, "error": result.error, "wall_s": wall}
    d = result.data
    return {"model": model.stem, "candidate": candidate, "target": d["target"], "met": d["met"],
            "keep": d["keep_high_precision"], "before": d["before"], "after": d["after"],
            "evaluations": d["evaluations"], "search_s": d["seconds"], "wall_s": wall, "stopped": d["stopped"],
            "first_nonfinite": d.get("first_nonfinite"), "notes": d.get("notes", {})}


def _f(v: object, spec: str) -> str:
    return "—" if v is None else format(v, spec)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="*", type=Path)
    ap.add_argument("--candidates", default="ort-cpu:fp16,ort-cpu:int8")
    ap.add_argument("--target", default="cos:0.999")
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--budget", type=float, default=600.0, help="seconds per search")
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "fallback_search.json")
    args = ap.parse_args(argv)
    models = args.models or shared_models()
    os.environ.setdefault("TRTLAB_CACHE_DIR", tempfile.mkdtemp(prefix="trtlab-bench-cache-"))
    rows = []
    print(f"{'model':<24}{'candidate':<16}{'before':>10}{'after':>10}{'met':>5}{'kept':>6}{'evals':>7}{'search s':>10}"
          "  nodes kept")
    for m in models:
        for cand in args.candidates.split(","):
            r = run_one(m, cand.strip(), args.target, args.samples, args.budget)
            rows.append(r)
            if "error" in r:
                print(f"{r['model']:<24}{r['candidate']:<16}  failed: {r['error']}")
                continue
            metric = r["target"].split(":")[0]
            print(f"{r['model']:<24}{r['candidate']:<16}{_f(r['before'].get(metric), '>10.6f')}"
                  f"{_f(r['after'].get(metric), '>10.6f')}{'yes' if r['met'] else 'NO':>5}{len(r['keep']):>6}"
                  f"{r['evaluations']:>7}{r['search_s']:>10.1f}  {', '.join(r['keep'][:4])}"
                  f"{' …' if len(r['keep']) > 4 else ''}{' (' + r['stopped'] + ')' if r['stopped'] else ''}")
    doc = {"benchmark": "fallback_search", "date": time.strftime("%Y-%m-%d"), "machine": platform.platform(),
           "cpu_count": os.cpu_count(), "target": args.target, "samples": args.samples,
           "inputs": "random data (seed 0)", "rows": rows}
    write_json(doc, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
