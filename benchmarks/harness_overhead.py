"""Benchmark-harness overhead: trtlab's `measure` over the ort-cpu backend against a bare `session.run` loop.

Same process, same tiny model (the generated demo at batch 1 and a 2-node model), alternating rounds so that
drift of the machine hits both alike. Prints a table; `--json PATH` writes the records. Target: within 5 %.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.backends import get_backend  # noqa: E402
from app.core.measure.latency import Budget, measure  # noqa: E402
from app.core.model.demo import build_demo_model  # noqa: E402


def tiny_model() -> onnx.ModelProto:
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Sigmoid", ["r"], ["y"])], "tiny",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 10
    return m


def bare_median(sess: object, feeds: dict, iters: int) -> float:
    names = [o.name for o in sess.get_outputs()]
    times = []
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        sess.run(names, feeds)
        times.append((time.perf_counter_ns() - t0) / 1e6)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", metavar="PATH")
    a = ap.parse_args()
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, feeds in (
                ("relu-sigmoid 1x64", tiny_model(), {"x": np.ones((1, 64), np.float32)}),
                ("demo resnet 1x3x64x64", build_demo_model(), {"image": np.ones((1, 3, 64, 64), np.float32)})):
            path = Path(tmp) / f"{len(records)}.onnx"
            onnx.save(model, path)
            session = get_backend("ort-cpu").prepare(str(path), {"threads": 1})
            runner = session.timed_runner(feeds, "end_to_end")
            ours, bare = [], []
            for k in range(a.rounds):  # alternate which goes first, so machine drift affects both alike
                order = ("ours", "bare") if k % 2 == 0 else ("bare", "ours")
                for who in order:
                    if who == "ours":
                        ours.append(measure(runner, Budget(count=50), Budget(count=a.iterations),
                                            mode="end_to_end").median)
                    else:
                        bare.append(bare_median(session.sess, feeds, a.iterations))
            o, b = min(ours), min(bare)  # the least disturbed round of each
            records.append({"model": name, "trtlab_median_ms": o, "bare_median_ms": b,
                            "overhead_pct": 100 * (o / b - 1), "iterations": a.iterations, "rounds": a.rounds})
    print(f"{'model':<26}{'trtlab ms':>11}{'bare ms':>10}{'overhead %':>12}")
    for r in records:
        print(f"{r['model']:<26}{r['trtlab_median_ms']:>11.4f}{r['bare_median_ms']:>10.4f}{r['overhead_pct']:>12.2f}")
    if a.json:
        Path(a.json).write_text(json.dumps(records, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
