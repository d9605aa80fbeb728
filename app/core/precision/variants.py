"""Variant graphs: a model with a precision plan applied, built once and cached.

A variant is keyed by (model bytes, plan, calibration data, calibration method, transform version), so
running the same plan twice — or comparing, benchmarking and diagnosing it — transforms the model once.
INT8 nodes get Q/DQ first (calibrated on the FP32 graph), then FP16/BF16 nodes are converted; the Q/DQ
nodes are fixed for the half-precision pass and keep their FP32 scales.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx

from app.core.errors import InputError
from app.core.fileio import atomic_write_bytes, atomic_write_text, cache_root, file_sha256
from app.core.precision.plan import PlanError, PrecisionPlan

# Bump when a transform changes what it writes: older cached variants are then rebuilt. (9: BatchNormalization's
# parameters follow its data into FP16. 10: FP16 keeps nodes FP32 whose activations leave its safe range. 13: that
# range is AutoCast's 512, sums of ReduceMean count, a MatMul after Transpose(perm=[1, 0, 2]) stays FP32.
# 17: Q/DQ models are raised to opset 19 for FP16, their Q/DQ nodes follow the data into FP16. 22: Bernoulli stays
# FP32 like the other random generators. 23: INT8 keeps the weights and constants that If/Loop/Scan bodies read from
# the enclosing graph, and gives those nodes the float model's bodies.)
TRANSFORM_VERSION = 23
CACHE_MAX_BYTES = int(float(os.environ.get("TRTLAB_CACHE_MAX_GB", "5")) * 1e9)  # oldest variants go beyond this
_MAX_PROTO = 1_800_000_000  # protobuf refuses to serialize ≥ 2 GiB; larger variants keep weights outside

Progress = Callable[[float | None, str], None]


def model_digest(path: str | os.PathLike[str]) -> str:
    """The model file's bytes, plus name, size, times and inode of each external-data file it uses
    (hashing gigabytes of weights on every run would cost more than the transform)."""
    from app.core.model import external_refs

    h = hashlib.sha256(file_sha256(path).encode())
    model = onnx.load(str(path), load_external_data=False)
    folder = Path(path).resolve().parent
    for location in sorted({r.location for r in external_refs(model)}):
        f = folder / location
        try:
            st = f.stat()
            # ctime and inode change with every rewrite, even one that restores the modification time
            h.update(f"|{location}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}|{st.st_ino}".encode())
        except OSError:
            h.update(f"|{location}|missing".encode())
    return h.hexdigest()


def samples_hash(samples: Sequence[dict[str, np.ndarray]]) -> str:
    """A digest of calibration data: names, dtypes, shapes and bytes of every array, in order."""
    h = hashlib.sha256()
    for sample in samples:
        for name in sorted(sample):
            arr = np.ascontiguousarray(sample[name])
            h.update(f"{name}|{arr.dtype.str}|{arr.shape}|".encode())
            h.update(arr.tobytes())
    return h.hexdigest()


def precisions_used(model: onnx.ModelProto, plan: PrecisionPlan) -> set[str]:
    """The precisions the plan asks of this model's changeable nodes."""
    return {row.planned for row in plan.resolve(model.graph) if row.precision != "fixed"}


def variant_key(model_digest: str, plan: PrecisionPlan, calib_digest: str = "", method: str = "") -> str:
    text = json.dumps({"model": model_digest, "plan": plan.key, "calib": calib_digest, "method": method,
                       "transform": TRANSFORM_VERSION}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


@dataclass
class Variant:
    path: str
    key: str
    notes: list[str] = field(default_factory=list)
    report: dict = field(default_factory=dict)
    cached: bool = False
    identity: bool = False   # the plan changes nothing: `path` is the model itself


def build_variant(model_path: str | os.PathLike[str], plan: PrecisionPlan, *,
                  calib: Callable[[], tuple[list[dict[str, np.ndarray]], bool]] | None = None,
                  calib_method: str = "minmax", progress: Progress | None = None,
                  cancelled: Callable[[], bool] | None = None, cache_dir: str | os.PathLike[str] | None = None,
                  workdir: str | os.PathLike[str] | None = None, allow_no_int8: bool = False) -> Variant:
    """The variant graph for `plan`, from the cache when it was built before.

    `calib` returns (calibration samples, whether they are random data); it is called only when the plan
    has INT8 nodes. `cancelled` is polled during calibration. With `allow_no_int8`, a plan whose INT8 nodes
    can carry no Q/DQ (a fallback that keeps them all in float) gives the variant without INT8 instead of
    an error.
    """
    model_path = str(model_path)
    say = progress or (lambda f, m: None)
    say(None, "Reading the model…")
    model = onnx.load(model_path)
    notes: list[str] = []
    from app.core.precision.transforms.fold import topo_sort

    if topo_sort(model.graph):
        notes.append("the nodes were put in dependency order (the model's own order is not one: ONNX requires it, "
                     "ONNX Runtime sorts for itself)")
    used = precisions_used(model, plan)
    half = sorted(used & {"fp16", "bf16"})
    if len(half) > 1:
        raise PlanError("The plan mixes FP16 and BF16 nodes; a variant computes in one half type.",
                        fix="Set the BF16 nodes to FP16 (or the reverse); keep FP32 where neither is safe.")
    if not used - {"fp32"}:
        return Variant(model_path, "", ["every node is planned FP32: the model runs as it is"], {}, identity=True)

    samples: list[dict[str, np.ndarray]] = []
    random_calib = False
    calib_digest = ""
    if "int8" in used:
        if calib is None:
            raise PlanError("The plan has INT8 nodes but no calibration data was given.",
                            fix="Give calibration samples (--calib SRC), or plan those nodes FP16/FP32.")
        say(None, "Preparing calibration data…")
        samples, random_calib = calib()
        calib_digest = samples_hash(samples)
    ranged = half == ["fp16"] and calib is not None
    if ranged and not samples and calib is not None:
        say(None, "Preparing calibration data…")
        try:
            samples, random_calib = calib()
            calib_digest = samples_hash(samples)
        except InputError as exc:  # no samples can be made (input shapes left open): FP16 without the range rule
            ranged = False
            notes.append(f"fp16: activation ranges not measured ({exc.message}); nodes are kept FP32 by their ops and "
                         "weights only")
    method = "+".join(m for m, on in ((calib_method, "int8" in used), ("ranges", ranged)) if on)
    key = variant_key(model_digest(model_path), plan, calib_digest, method)
    folder = Path(cache_dir) if cache_dir is not None else cache_root() / "variants"
    if not _writable(folder):
        if workdir is None:
            from app.core.errors import TrtlabError

            raise TrtlabError(f"The variant cache folder '{folder}' cannot be written.",
                              fix="Set TRTLAB_CACHE_DIR to a folder you can write to.")
        notes.append(f"the variant cache '{folder}' is not writable: the variant is built in the job's folder")
        folder = Path(workdir) / "variants"
    out = folder / f"{Path(model_path).stem}.{key}.onnx"
    meta = out.with_suffix(".json")
    if out.exists() and meta.exists():
        try:
            doc = json.loads(meta.read_text(encoding="utf-8"))
            damage = cache_damage(out, doc)
            if not damage:
                os.utime(out)  # recently used: the cache's pruning keeps it
                return Variant(str(out), key, notes + list(doc.get("notes", [])) + ["variant from the cache"],
                               dict(doc.get("report", {})), cached=True)
            notes.append(f"the cached variant was damaged ({damage}): built again")
        except (OSError, ValueError):
            notes.append("the cached variant's record could not be read: built again")

    report: dict = {}
    int8_report = None
    if "int8" in used:
        from app.core.precision.transforms.int8 import NothingToQuantize, to_int8

        try:
            model, int8_report = to_int8(model, plan, samples, calib_method, random_calibration=random_calib,
                                         progress=progress, cancelled=cancelled, workdir=workdir)
        except NothingToQuantize as exc:
            if not allow_no_int8:
                raise
            notes.append(f"int8: nothing quantized ({exc.message})")
    if int8_report is not None:
        report["int8"] = int8_report.to_json()
        notes.append(f"int8: {len(int8_report.quantized_nodes)} nodes quantized (Q/DQ on their inputs, {calib_method} "
                     f"calibration on {len(samples)} samples)")
        if int8_report.skipped:
            notes.append(f"int8: {len(int8_report.skipped)} other planned nodes get no Q/DQ of their own (activations, "
                         "normalisations, reshapes: they run between the quantized layers in float)")
        notes += [f"int8: {n}" for n in int8_report.notes]
        if random_calib:
            notes.append("INT8 CALIBRATED ON RANDOM DATA: the scales do not reflect real inputs, so errors and "
                         "accuracy measured on this variant say little about real use")
    if half:
        from app.core.precision.transforms.half import to_half

        precision = half[0]
        if precision == "fp16":
            model = _raise_for_fp16(model, samples, notes, qdq="int8" not in used)
        by_range: dict[str, str] = {}
        if ranged:
            by_range = _range_rule(model, plan, samples, random_calib, model_path, calib_digest, say, cancelled, notes)
            plan = with_overrides(plan, by_range)
        elif precision == "fp16" and calib is None:
            notes.append("fp16: no calibration data, so activation ranges are unknown: nodes are kept FP32 by their "
                         "ops and weights only")
        say(None, f"Converting to {precision.upper()}…")
        model, half_report = to_half(model, plan, precision, qdq_half="int8" not in used)
        half_report.kept_fp32.update(by_range)
        report["half"] = half_report.to_json()
        if not half_report.half_nodes and not (int8_report and int8_report.quantized_nodes) and not allow_no_int8:
            raise nothing_converted(precision, half_report)
        notes.append(f"{precision}: {len(half_report.half_nodes)} nodes in {precision}, "
                     f"{len(half_report.kept_fp32)} kept FP32, {half_report.casts_added} casts"
                     + (f", {half_report.fixed} integer/shape nodes unchanged" if half_report.fixed else "")
                     + (f"; {half_report.qdq_half} Q/DQ nodes take {precision} data and scales" if half_report.qdq_half
                        else "")
                     + (f"; {half_report.casts_retargeted} of the model's own Casts to FP32 cast to {precision} "
                        "instead" if half_report.casts_retargeted else ""))
        if half_report.control_flow:
            notes.append(f"{precision}: NOT CONVERTED: {half_report.subgraph_nodes_untouched} nodes inside "
                         f"{len(half_report.control_flow)} If/Loop/Scan bodies "
                         f"({', '.join(list(half_report.control_flow)[:3])}) stay FP32; only the top-level graph "
                         f"computes in {precision.upper()}")
        if half_report.overflow:
            notes.append(f"{sum(half_report.overflow.values())} weight values overflow {precision} (clamped)")
        if half_report.flushed:
            notes.append(f"{sum(half_report.flushed.values())} small weight values flush to zero in {precision}")
    from app.core.precision.transforms.fold import topo_sort

    topo_sort(model.graph)  # the transforms keep the order they are given; this is a guarantee, not a step
    from app.core.precision.transforms.validate import require_valid

    # Built and checked in a folder of its own, then moved into the cache (side file first, graph second) and
    # recorded with each file's size and SHA-256 last: another process filling the same entry never serves a
    # half-written file, and a reader trusts only an entry whose files match their record.
    folder.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".build-", dir=folder))
    try:
        staged = staging / out.name
        say(None, "Saving the variant…")
        save_model(model, staged)
        say(None, "Checking the variant (ONNX checker, ONNX Runtime, TensorRT parser)…")
        gates = require_valid(staged, "+".join(sorted(used - {"fp32"})), source=model_path)
        files = fingerprint(staged)
        for f in reversed(entry_files(staged)):
            os.replace(f, folder / f.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    notes += [f"{g.name}: {g.detail}" for g in gates if g.passed and g.detail]
    atomic_write_text(meta, json.dumps({"notes": notes, "report": report, "plan": plan.to_json(),
                                        "model": model_path, "files": files}, indent=1))
    prune_cache(folder, keep={out, meta})
    return Variant(str(out), key, notes, report)


def entry_files(graph: Path) -> list[Path]:
    """A cached variant's files: the graph, and its weights' side file when it has one."""
    data = graph.with_name(graph.name + ".data")
    return [graph, data] if data.exists() else [graph]


def fingerprint(graph: Path) -> dict[str, dict[str, object]]:
    """Each file of a variant by name: its size and SHA-256 (what a cache entry records and is checked against)."""
    return {f.name: {"size": f.stat().st_size, "sha256": file_sha256(f)} for f in entry_files(graph)}


def cache_damage(graph: Path, record: dict) -> str:
    """Why a cached variant cannot be trusted ("" when every file matches the size and SHA-256 its record holds):
    a file truncated or changed on disk, a side file missing, or a record from before files were recorded."""
    files = record.get("files")
    if not isinstance(files, dict) or graph.name not in files:
        return "its record holds no size or hash of its files"
    for name, want in files.items():
        f = graph.with_name(str(name))
        if not f.exists():
            return f"{name} is missing"
        size = f.stat().st_size
        if not isinstance(want, dict) or size != want.get("size"):
            return f"{name} is {size:,} bytes, not the {want.get('size') if isinstance(want, dict) else '?'} recorded"
        if file_sha256(f) != want.get("sha256"):
            return f"{name} does not hash to the SHA-256 recorded"
    return ""


# ONNX Runtime's CUDA provider registers FP16 kernels for some ops only from a later opset than the model's (Clip
# from 12: at opset 11 PaddleOCR's classifier ran 56 nodes of its FP16 variant on the CPU of an H200, Clip and the
# nodes around it, and was 1.5× slower than FP32). ModelOpt's AutoCast raises FP16 models to 13 as well.
FP16_OPSET = 13
# QuantizeLinear/DequantizeLinear take FP16 data and scales only from opset 19: below it an FP16 variant of a Q/DQ
# model computes in FP16 between FP32 Q/DQ pairs, with a Cast on each side (smart-turn: 192 Casts, 3.68 ms on an
# H200 against 2.96 ms for AutoCast's variant, which raises such models to 19).
QDQ_FP16_OPSET = 19


def _raise_for_fp16(model: onnx.ModelProto, samples: list, notes: list[str], *, qdq: bool = True) -> onnx.ModelProto:
    """The model at FP16_OPSET (QDQ_FP16_OPSET when it has Q/DQ nodes) when ONNX's version converter takes it there
    unchanged (same nodes, same FP32 outputs on two calibration samples); else the model as it is, with a note."""
    from app.core.precision.transforms.opset import OpsetRaiseError, default_opset, raise_opset

    current = default_opset(model)
    qdq = qdq and any(n.op_type in ("QuantizeLinear", "DequantizeLinear") and n.domain in ("", "ai.onnx")
                      for n in model.graph.node)
    target = QDQ_FP16_OPSET if qdq else FP16_OPSET
    if current >= target:
        return model
    try:
        raised, note = raise_opset(model, target, list(samples)[:2] or None)
    except OpsetRaiseError as exc:
        notes.append(f"fp16: the opset stays {current} ({exc.message}); some ops may have no FP16 kernel on "
                     "ONNX Runtime's CUDA provider there and run on the CPU (trtlab profile shows where)"
                     + ("; its Q/DQ nodes stay FP32 with Casts around them" if qdq else ""))
        return model
    notes.append(f"fp16: {note}: " + ("QuantizeLinear/DequantizeLinear take FP16 only from opset 19" if qdq else
                                      "ONNX Runtime's CUDA provider has FP16 kernels for some ops (Clip) only from "
                                      "opset 12"))
    return raised


def with_overrides(plan: PrecisionPlan, keep: dict[str, str]) -> PrecisionPlan:
    """The plan with the given nodes kept FP32."""
    if not keep:
        return plan
    return plan.with_overrides(keep, "fp32")


def _range_rule(model: onnx.ModelProto, plan: PrecisionPlan, samples: list, random_calib: bool, model_path: str,
                calib_digest: str, say: Progress, cancelled: Callable[[], bool] | None, notes: list[str]
                ) -> dict[str, str]:
    """The FP16 nodes whose activations on the calibration data leave FP16's safe range (app.core.precision.ranges)."""
    from app.core.precision.ranges import (
        FP16_ACTIVATION_LIMIT,
        FP16_SUM_LIMIT,
        RANGE_SAMPLES,
        activation_peaks,
        keep_fp32_for_range,
    )

    say(None, "Measuring activation ranges for FP16…")
    peaks = activation_peaks(model, samples, cache_key=(model_digest(model_path), calib_digest), cancelled=cancelled)
    keep = keep_fp32_for_range(model, plan, peaks)
    data = "random data" if random_calib else "the calibration data"
    used = min(len(samples), RANGE_SAMPLES)
    sums = sum(1 for why in keep.values() if why.startswith("the sum inside"))
    rule = f"activations beyond {FP16_ACTIVATION_LIMIT:g}" + (f" or sums beyond {FP16_SUM_LIMIT:g}" if sums else "")
    samples_text = f"{used} sample{'s' if used != 1 else ''}"
    notes.append(f"fp16: {len(keep)} node(s) kept FP32 for their ranges ({rule}) on {data} ({samples_text})" if keep
                 else f"fp16: activations stay within {FP16_ACTIVATION_LIMIT:g} on {data} ({samples_text}): no node "
                      "kept FP32 for its range")
    return keep


def nothing_converted(precision: str, report: object) -> PlanError:
    """The refusal for a half-precision variant in which no node changed: it would only measure FP32 again."""
    from collections import Counter

    word = precision.upper()
    top = str(getattr(report, "unchanged", "") or "").removeprefix(f"nothing is converted to {word}: ")
    if not top:
        reasons = Counter(str(why) for why in getattr(report, "kept_fp32", {}).values())
        top = "; ".join(f"{why} ({n} node{'s' if n != 1 else ''})" for why, n in reasons.most_common(3))
    fix = ("Raise the model's opset first (trtlab variant MODEL --precision bf16 --opset 22 -o OUT.onnx "
           "converts it with ONNX's version converter and checks its FP32 outputs), export it at opset 22, or "
           "plan FP16 instead." if precision == "bf16" else
           f"Plan other nodes {word}, or run the model in FP32.")
    return PlanError(f"The {word} variant would convert no node of this model, so it would run FP32 under a {word} "
                     f"label" + (f": {top}." if top else "."), fix=fix)


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK | os.X_OK)


def prune_cache(folder: Path, max_bytes: int | None = None, keep: set[Path] | None = None) -> int:
    """Delete the least recently used cached variants beyond `max_bytes`; returns how many went."""
    limit = CACHE_MAX_BYTES if max_bytes is None else max_bytes
    entries = []
    for f in folder.glob("*.onnx"):
        try:
            st = f.stat()
        except OSError:
            continue
        extra = [f.with_suffix(".json"), f.with_name(f.name + ".data")]
        size = st.st_size + sum(e.stat().st_size for e in extra if e.exists())
        entries.append((max(st.st_atime, st.st_mtime), f, extra, size))
    total = sum(e[3] for e in entries)
    removed = 0
    for _, f, extra, size in sorted(entries, key=lambda e: e[0]):
        if total <= limit:
            break
        if keep and f in keep:
            continue
        for g in (f, *extra):
            g.unlink(missing_ok=True)
        total -= size
        removed += 1
    return removed


def save_model(model: onnx.ModelProto, path: str | os.PathLike[str]) -> None:
    """Write a model atomically; one too large for a single protobuf keeps its weights in a side file."""
    path = Path(path)
    if model.ByteSize() < _MAX_PROTO:
        atomic_write_bytes(path, model.SerializeToString())
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=f"{path.name}.data")
