"""Output-comparison benchmark: every metric plus the plot data for one float32 output of N elements.

For each size (default 1e6, 1e7, 1e8 elements) it builds a reference ~ N(0, 1) and a candidate with
small noise (about FP16 round-off) and a few NaN/Inf, then times ``compare_samples`` (max/mean/median/
p99 abs, relative error, cosine, SNR, NaN/Inf counts, |diff| and value histograms, scatter sample).
Reported: the fastest of --repeat runs (``seconds``), throughput, and the tracemalloc peak of one
extra run (numpy allocations made by the comparison, beyond the input arrays). The target is 1e8
elements in at most 1.5 s.

Usage:
    python benchmarks/compare_speed.py [--sizes 1e6,1e7,1e8] [--repeat 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time
import tracemalloc
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.core.measure.compare import compare_samples  # noqa: E402

TARGET_S = 1.5  # for 1e8 elements


@dataclass
class Record:
    elements: int
    seconds: float
    melem_per_s: float
    peak_mb: float
    cosine: float
    median_abs: float
    quantiles: str


def _pair(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    ref = rng.standard_normal(n, dtype=np.float32)
    cand = ref + rng.standard_normal(n, dtype=np.float32) * np.float32(1e-3)
    cand[rng.integers(0, n, 8)] = np.nan  # the slow NaN path is part of the cost
    cand[rng.integers(0, n, 8)] = np.inf
    return ref, cand


def run_one(n: int, repeat: int) -> Record:
    ref, cand = _pair(n)
    best = float("inf")
    report = None
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        report = compare_samples([{"y": ref}], [{"y": cand}], "bench")
        best = min(best, time.perf_counter() - t0)
    tracemalloc.start()
    compare_samples([{"y": ref}], [{"y": cand}], "bench")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    m = report.outputs[0]  # type: ignore[union-attr]
    return Record(n, best, n / best / 1e6, peak / 2**20, float(m.cosine or 0), float(m.median_abs or 0),
                  m.quantiles)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1e6,1e7,1e8", help="comma-separated element counts")
    p.add_argument("--repeat", type=int, default=3, help="timed runs per size; the fastest counts")
    p.add_argument("--json", help="write the records to this JSON file")
    args = p.parse_args(argv)
    sizes = [int(float(s)) for s in args.sizes.split(",") if s.strip()]
    records = []
    print(f"{'elements':>12} {'seconds':>9} {'Melem/s':>9} {'peak MB':>9} {'cosine':>12} {'median_abs':>11}  quantiles")
    for n in sizes:
        r = run_one(n, args.repeat)
        records.append(r)
        print(f"{r.elements:>12,} {r.seconds:>9.3f} {r.melem_per_s:>9.1f} {r.peak_mb:>9.1f} {r.cosine:>12.9f} "
              f"{r.median_abs:>11.4g}  {r.quantiles}")
    big = [r for r in records if r.elements >= 10**8]
    if big:
        verdict = "met" if all(r.seconds <= TARGET_S for r in big) else "NOT met"
        print(f"target (1e8 elements in <= {TARGET_S} s): {verdict}")
    if args.json:
        doc = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__},
               "target_s_for_1e8": TARGET_S, "records": [asdict(r) for r in records]}
        Path(args.json).write_text(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
