"""Every precision transform on every real model: is the variant valid, does it run, how far does it drift?

For each model (the shared models, plus the fetched corpus where `$TRTLAB_CORPUS` or
`~/.cache/trtlab/corpus` holds it) and each precision (fp16, bf16, int8, and a mixed plan: INT8 convolutions
and matmuls, FP16 elsewhere), the variant is built through `build_variant` (which validates it: ONNX's full
check, a load in ONNX Runtime, TensorRT for RTX's parser where installed) and then run on ONNX Runtime CPU
against the FP32 model on the same seeded random inputs (INT8 calibrated on 8 other random samples).

Columns: `status` (ok / refused: the transform declined with a reason / INVALID: a variant that fails a gate,
a bug), nodes converted, worst cosine and max |error| over outputs, new NaN/Inf values, seconds.

With `--backend ort-cuda` the variants (and an FP32 candidate) run on that backend instead, still against the
FP32 model on the CPU, and `--time N` adds the median latency of N device-only runs (IOBinding) of the FP32
model and of each variant on that backend, with the speed-up.

Usage:
    python benchmarks/variant_survey.py [MODEL.onnx ...] [--precisions fp16,bf16,int8,mixed] [--backend B]
                                        [--time N] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.core.errors import TrtlabError  # noqa: E402
from app.core.measure.inputs import InputSource, make_samples, resolve_input_shapes  # noqa: E402
from app.core.model.tensors import graph_inputs, value_info_to_tensor_info  # noqa: E402
from app.core.precision.plan import PrecisionPlan  # noqa: E402
from app.core.precision.transforms.emulate import cpu_runnable  # noqa: E402
from app.core.precision.variants import build_variant  # noqa: E402
from benchmarks.shared import corpus_models, model_shapes, shared_models, write_json  # noqa: E402

PRECISIONS = ("fp16", "bf16", "int8", "mixed")


def plan_for(precision: str) -> PrecisionPlan:
    if precision == "mixed":
        return PrecisionPlan(default="fp16", op_rules={"Conv": "int8", "MatMul": "int8", "Gemm": "int8"})
    return PrecisionPlan(default=precision)


def _session(path: str) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    source, _ = cpu_runnable(path)  # a BF16 variant computes in FP32 between rounding Casts on the CPU
    return ort.InferenceSession(source, opts, providers=["CPUExecutionProvider"])


def _errors(ref: list[np.ndarray], got: list[np.ndarray]) -> dict:
    worst_cos, worst_abs, new_nonfinite = 1.0, 0.0, 0
    for r, g in zip(ref, got, strict=True):
        r = np.asarray(r, dtype=np.float64).ravel()
        g = np.asarray(g, dtype=np.float64).ravel()
        if r.size == 0:
            continue
        new_nonfinite += int((~np.isfinite(g) & np.isfinite(r)).sum())
        ok = np.isfinite(r) & np.isfinite(g)
        r, g = r[ok], g[ok]
        if r.size == 0:
            continue
        worst_abs = max(worst_abs, float(np.abs(r - g).max()))
        nr, ng = np.linalg.norm(r), np.linalg.norm(g)
        cos = 1.0 if nr == 0 and ng == 0 else float(r @ g / (nr * ng)) if nr and ng else 0.0
        worst_cos = min(worst_cos, cos)
    return {"cosine": worst_cos, "max_abs": worst_abs, "new_nonfinite": new_nonfinite}


def _latency_ms(backend: str, path: str, feeds: dict, runs: int) -> float:
    """Median device-only latency (end to end on the CPU) of `runs` runs after 20 warm-up runs."""
    from app.backends import get_backend

    b = get_backend(backend)
    sess = b.prepare(path, {"tf32": False})
    mode = "device_only" if "device_only" in b.timing_modes else "end_to_end"
    once = sess.timed_runner(feeds, mode)
    times = []
    for i in range(20 + runs):
        t0 = time.perf_counter()
        took = once()
        if i >= 20:
            times.append(took if took is not None else (time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def _candidate(backend: str, path: str, feeds: dict) -> list[np.ndarray]:
    if backend == "ort-cpu":
        return _session(path).run(None, feeds)
    from app.backends import get_backend

    sess = get_backend(backend).prepare(path, {"tf32": False})
    out = sess.run(feeds)
    return [out[n] for n in sess.output_names]


def survey(path: Path, shapes: dict, precisions: list[str], cache: str, backend: str = "ort-cpu",
           runs: int = 0) -> list[dict]:
    model = onnx.load(str(path), load_external_data=False)
    infos = [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]
    resolved = resolve_input_shapes(infos, {k: tuple(v) for k, v in shapes.items()})
    full = onnx.load(str(path))
    sample = make_samples(full, infos, resolved, InputSource(seed=0), 1)[0]
    calib = make_samples(full, infos, resolved, InputSource(seed=1), 8)
    ref = _session(str(path)).run(None, sample)
    rows = []
    base_ms = None
    if backend != "ort-cpu" or runs:
        row = {"model": path.stem, "precision": "fp32", "status": "ok", "converted": 0, "backend": backend}
        row.update(_errors(ref, _candidate(backend, str(path), sample)))
        if runs:
            base_ms = row["ms"] = round(_latency_ms(backend, str(path), sample, runs), 4)
        row["seconds"] = 0.0
        rows.append(row)
        print(_line(row), flush=True)
    for precision in precisions:
        row: dict = {"model": path.stem, "precision": precision, "backend": backend}
        t0 = time.perf_counter()
        try:
            v = build_variant(str(path), plan_for(precision), calib=lambda c=calib: (c, True), cache_dir=cache)
            half = v.report.get("half") or {}
            int8 = v.report.get("int8") or {}
            row["converted"] = len(half.get("half_nodes", [])) + len(int8.get("quantized_nodes", []))
            row["notes"] = v.notes
            if v.identity or row["converted"] == 0:
                row["status"] = "unchanged"
            else:
                got = _candidate(backend, v.path, sample)
                row.update(_errors(ref, got))
                row["status"] = "ok"
                if runs:
                    row["ms"] = round(_latency_ms(backend, v.path, sample, runs), 4)
                    row["speedup"] = round(base_ms / row["ms"], 3) if base_ms else None
        except TrtlabError as exc:
            invalid = type(exc).__name__ == "InvalidVariant"
            row["status"] = "INVALID" if invalid else "refused"
            row["reason"] = exc.message
        except Exception as exc:  # noqa: BLE001 - a crash is a finding, reported in the table
            row["status"] = "CRASH"
            row["reason"] = f"{type(exc).__name__}: {exc}"[:300]
        row["seconds"] = round(time.perf_counter() - t0, 2)
        rows.append(row)
        print(_line(row), flush=True)
    return rows


def _line(r: dict) -> str:
    cos = f"{r['cosine']:.6f}" if "cosine" in r else "-"
    err = f"{r['max_abs']:.3g}" if "max_abs" in r else "-"
    bad = str(r.get("new_nonfinite", "-"))
    why = r.get("reason", "")
    ms = f"{r['ms']:.3f}" if "ms" in r else "-"
    sp = f"{r['speedup']:.2f}x" if r.get("speedup") else "-"
    return (f"{r['model']:<28} {r['precision']:<6} {r['status']:<9} {str(r.get('converted', '-')):>6} {cos:>10} "
            f"{err:>10} {bad:>6} {r['seconds']:>6.1f} {ms:>8} {sp:>7}  {why[:160]}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", type=Path)
    ap.add_argument("--precisions", default=",".join(PRECISIONS))
    ap.add_argument("--no-corpus", action="store_true", help="only the shared models")
    ap.add_argument("--backend", default="ort-cpu", help="where the variants run (default ort-cpu)")
    ap.add_argument("--time", type=int, default=0, metavar="N", help="median latency of N runs per variant")
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "variant_survey.json")
    args = ap.parse_args(argv)
    models = args.models or [*shared_models(), *([] if args.no_corpus else corpus_models())]
    precisions = [p for p in args.precisions.split(",") if p]
    print(f"{'model':<28} {'prec':<6} {'status':<9} {'nodes':>6} {'cosine':>10} {'max_abs':>10} {'nonfin':>6} "
          f"{'s':>6} {'ms':>8} {'speed':>7}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="trtlab-survey-") as cache:
        for path in models:
            try:
                rows += survey(path, model_shapes(path), precisions, cache, args.backend, args.time)
            except Exception as exc:  # noqa: BLE001 - the FP32 model itself did not run: say so, go on
                rows.append({"model": path.stem, "precision": "fp32", "status": "CRASH", "seconds": 0.0,
                             "reason": f"{type(exc).__name__}: {exc}"[:300]})
                print(_line(rows[-1]), flush=True)
    bad = [r for r in rows if r["status"] in ("INVALID", "CRASH")]
    print(f"\n{len(rows)} variants: {sum(r['status'] == 'ok' for r in rows)} ok, "
          f"{sum(r['status'] == 'refused' for r in rows)} refused, "
          f"{sum(r['status'] == 'unchanged' for r in rows)} unchanged, {len(bad)} invalid or crashed")
    gpu = os.popen("nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null").read().strip()
    write_json({"machine": platform.platform(), "gpu": gpu, "backend": args.backend, "time_runs": args.time,
                "onnxruntime": ort.__version__, "onnx": onnx.__version__,
                "date": time.strftime("%Y-%m-%d"), "rows": rows}, args.json)
    return 1 if bad else 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    raise SystemExit(main())
