"""`trtlab tune` against a bare ONNX Runtime loop with the same settings, in the same run.

For each tune result (JSON from `trtlab tune --json`), the default settings and the chosen ones are timed again by a
plain script that knows nothing of trtlab: the same graph (the file the tune ran, its "variant"; where that file is
not here, the variant `trtlab variant` writes for the target's precision), the same provider and session options,
inputs bound on the device (IOBinding, as trtlab's device-only timing), CUDA graphs replayed from fixed buffers, the
same warm-up and iteration counts and the same number of sessions. The table shows trtlab's median of session
medians beside the script's, and their ratio.

    python benchmarks/tune_peer.py RESULT.json [RESULT.json ...] [--out benchmarks/results/tune_peer.json]

Needs onnxruntime-gpu with the CUDA provider (docs/benchmarks.md says where this ran).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

# The CUDA provider's options for each setting, written out here rather than imported: the peer is independent.
CUDA_OPTIONS = {"cuda_graph": "enable_cuda_graph", "nhwc": "prefer_nhwc", "conv_algo": "cudnn_conv_algo_search",
                "conv_workspace": "cudnn_conv_use_max_workspace"}
DTYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(int64)": np.int64,
          "tensor(int32)": np.int32, "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_}


def session(path: str, settings: dict[str, str]):  # noqa: ANN201 - onnxruntime is untyped
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    level = ort.GraphOptimizationLevel
    levels = {"all": level.ORT_ENABLE_ALL, "extended": level.ORT_ENABLE_EXTENDED, "basic": level.ORT_ENABLE_BASIC,
              "disable": level.ORT_DISABLE_ALL}
    if "opt" in settings:
        so.graph_optimization_level = levels[settings["opt"]]
    opts = {"device_id": "0", "use_tf32": "0"}
    for knob, key in CUDA_OPTIONS.items():
        if knob in settings:
            opts[key] = settings[knob].upper() if knob == "conv_algo" else settings[knob]
    return ort.InferenceSession(path, sess_options=so, providers=[("CUDAExecutionProvider", opts),
                                                                   "CPUExecutionProvider"])


def time_session(path: str, settings: dict[str, str], feeds: dict[str, np.ndarray], warmup: int, iterations: int
                 ) -> float:
    import onnxruntime as ort

    sess = session(path, settings)
    binding = sess.io_binding()
    keep = []
    for name, arr in feeds.items():
        value = ort.OrtValue.ortvalue_from_numpy(arr, "cuda", 0)
        keep.append(value)
        binding.bind_ortvalue_input(name, value)
    if settings.get("cuda_graph") == "1":  # outputs in fixed buffers of their real shapes
        plain = session(path, {k: v for k, v in settings.items() if k != "cuda_graph"})
        shapes = [o.shape for o in plain.run(None, feeds)]
        del plain  # as trtlab's probe: the shapes read, its session (cuDNN handles, memory arena) is let go
        for out, shape in zip(sess.get_outputs(), shapes, strict=True):
            value = ort.OrtValue.ortvalue_from_shape_and_type(list(shape), DTYPES[out.type], "cuda", 0)
            keep.append(value)
            binding.bind_ortvalue_output(out.name, value)
    else:
        for out in sess.get_outputs():
            binding.bind_output(out.name, "cuda", 0)
    for _ in range(warmup + 1):
        sess.run_with_iobinding(binding)
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter_ns()
        sess.run_with_iobinding(binding)
        times.append((time.perf_counter_ns() - t0) / 1e6)
    return float(np.median(times))


def feeds_for(path: str, shapes: dict[str, list[int]]) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    return {i.name: rng.random(shapes[i.name], dtype=np.float32).astype(DTYPES[i.type]) for i in sess.get_inputs()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "tune_peer.json")
    args = ap.parse_args()
    rows = []
    work = Path(tempfile.mkdtemp(prefix="tune-peer-"))
    for path in args.results:
        doc = json.loads(path.read_text())
        target = doc["target"]
        precision = target.split(":")[1].split("@")[0]
        variant = Path(doc.get("variant") or work / f"{Path(doc['model']).stem}.{precision}.onnx")
        if not variant.exists():  # a tune without "variant", or run elsewhere: make it (the same calibration only
            variant = work / f"{Path(doc['model']).stem}.{precision}.onnx"  # when the tune used the sample photos)
            subprocess.run([sys.executable, "-m", "app", "variant", doc["model"], "--precision", precision, "-o",
                            str(variant)], check=True, cwd=ROOT, capture_output=True)
        feeds = feeds_for(str(variant), doc["shapes"])
        trials = {t["target"]: t for t in [doc["default"], *doc["trials"]]}
        for name in dict.fromkeys([doc["default"]["target"], doc["best"]]):
            trial = trials[name]
            peer = [time_session(str(variant), trial["knobs"], feeds, args.warmup, args.iterations)
                    for _ in range(doc["sessions"])]
            peer_ms = statistics.median(peer)
            rows.append({"model": Path(doc["model"]).name, "batch": doc["batch"], "target": name,
                         "trtlab_ms": trial["median_ms"], "trtlab_sessions_ms": trial["sessions_ms"],
                         "peer_ms": round(peer_ms, 4), "peer_sessions_ms": [round(t, 4) for t in peer],
                         "ratio": round(trial["median_ms"] / peer_ms, 4), "speedup": trial.get("speedup")})
    print(f"{'model':<30} {'batch':>5} {'target':<48} {'trtlab ms':>10} {'peer ms':>9} {'ratio':>6} {'speed-up':>8}")
    for r in rows:
        print(f"{r['model'][:30]:<30} {r['batch']:>5} {r['target'][:48]:<48} {r['trtlab_ms']:>10.3f} "
              f"{r['peer_ms']:>9.3f} {r['ratio']:>6.3f} {r['speedup'] or 0:>7.2f}×")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
