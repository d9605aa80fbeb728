"""The run / compare / bench pipeline as job functions: `fn(params, ctx) -> dict`.

They run in a child process (app.jobs) for the GUI and the CLI alike; params and results are JSON-safe,
arrays go to `.npz` files in the job's folder.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import onnx

from app.backends import Target, get_backend
from app.core.errors import TrtlabError
from app.core.tensors import graph_inputs, value_info_to_tensor_info

log = logging.getLogger(__name__)


class PrecisionNotAvailable(TrtlabError):
    title = "Precision not available"


@dataclass
class _Prepared:
    model_path: str
    samples: list[dict[str, np.ndarray]]
    source_text: str
    random_data: bool
    shapes: dict[str, tuple[int, ...]]


def variant_path(model_path: str, target: Target, ctx: object | None = None) -> tuple[str, list[str]]:
    """The graph a target runs, and notes about it: the model itself for FP32, a half-precision variant
    (written into the job's folder) for FP16/BF16. INT8 comes with calibration."""
    if target.precision == "fp32":
        return model_path, []
    if target.precision == "int8":
        raise PrecisionNotAvailable(
            f"{target.name}: INT8 variants (Q/DQ with calibration) are not in this version of trtlab yet.",
            fix=f"Use {target.backend}:fp32 or {target.backend}:fp16 for now.")
    from pathlib import Path

    from app.core.fileio import atomic_write_bytes
    from app.core.precision import PrecisionPlan
    from app.core.transforms.half import to_half

    folder = Path(getattr(ctx, "workdir", None) or Path(model_path).parent)
    out = folder / f"{Path(model_path).stem}.{target.precision}.onnx"
    model = onnx.load(model_path)
    variant, report = to_half(model, PrecisionPlan(default=target.precision), target.precision)
    atomic_write_bytes(out, variant.SerializeToString())
    notes = [f"{target.precision} variant: {len(report.half_nodes)} nodes in {target.precision}, "
             f"{len(report.kept_fp32)} kept FP32, {report.casts_added} casts"]
    if report.overflow:
        notes.append(f"{sum(report.overflow.values())} weight values overflow {target.precision} (clamped)")
    if report.flushed:
        notes.append(f"{sum(report.flushed.values())} small weight values flush to zero in {target.precision}")
    if target.backend == "ort-cpu":
        notes.append("ONNX Runtime's CPU provider computes FP32 between Casts: this measures rounding of weights "
                     "and activations, not half-precision arithmetic or speed")
    return str(out), notes


def prepare_samples(params: dict, ctx: object | None = None) -> _Prepared:
    """Load the model's input declarations and make the input samples the params ask for."""
    from app.core.inputs import InputSource, make_samples, resolve_input_shapes

    model_path = str(params["model"])
    model = onnx.load(model_path, load_external_data=False)
    infos = [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]
    user = {k: tuple(int(d) for d in v) for k, v in (params.get("shapes") or {}).items()}
    shapes = resolve_input_shapes(infos, user)
    source = InputSource.from_json(params.get("inputs") or {"kind": "random", "seed": int(params.get("seed", 0))})
    samples = make_samples(model, infos, shapes, source, samples=int(params.get("samples", 1)))
    return _Prepared(model_path, samples, source.describe(), source.is_random, shapes)


def _progress(ctx: object | None, fraction: float | None, message: str) -> None:
    if ctx is not None:
        ctx.progress(fraction, message)
        ctx.check_cancelled()


def run_outputs(target: Target, prep: _Prepared, options: dict, ctx: object | None,
                span: tuple[float, float] = (0.0, 1.0)) -> tuple[list[dict[str, np.ndarray]], list[str]]:
    """Run every sample on one target; returns the outputs per sample and the session's notes."""
    lo, hi = span
    _progress(ctx, lo, f"Preparing {target.name}…")
    path, variant_notes = variant_path(prep.model_path, target, ctx)
    session = get_backend(target.backend).prepare(path, options)
    try:
        outs = []
        for i, feeds in enumerate(prep.samples):
            outs.append(session.run(feeds))
            _progress(ctx, lo + (hi - lo) * (i + 1) / len(prep.samples),
                      f"{target.name}: sample {i + 1} of {len(prep.samples)}")
        return outs, variant_notes + list(session.notes)
    finally:
        session.close()


def run_task(params: dict, ctx: object) -> dict:
    """`trtlab run`: one target on the input samples; outputs saved to outputs.npz."""
    target = Target.parse(params["target"])
    prep = prepare_samples(params, ctx)
    outs, notes = run_outputs(target, prep, params.get("options") or {}, ctx)
    arrays = {f"{name}" if len(outs) == 1 else f"{name}__{i}": arr
              for i, sample in enumerate(outs) for name, arr in sample.items()}
    npz = ctx.save_arrays("outputs", arrays)
    return {
        "backend": target.name, "samples": len(outs), "inputs": prep.source_text, "random_data": prep.random_data,
        "notes": notes, "npz": npz,
        "outputs": [{"name": k, "shape": list(v.shape), "dtype": str(v.dtype)} for k, v in outs[0].items()],
    }


def compare_task(params: dict, ctx: object) -> dict:
    """`trtlab compare`: the reference and each candidate on the same samples, then every metric."""
    from app.core.compare import Tolerance, compare_report_json, compare_samples

    reference = Target.parse(params.get("reference") or "ort-cpu:fp32")
    candidates = [Target.parse(c) for c in params["candidates"]]
    tolerances = [Tolerance.parse(t) for t in params.get("tolerances") or []]
    options = params.get("options") or {}
    prep = prepare_samples(params, ctx)
    steps = 1 + len(candidates)
    ref_out, ref_notes = run_outputs(reference, prep, options, ctx, (0.0, 1.0 / steps))
    reports, notes = [], {reference.name: ref_notes}
    for k, cand in enumerate(candidates):
        out, cand_notes = run_outputs(cand, prep, options, ctx, ((k + 1) / steps, (k + 2) / steps))
        notes[cand.name] = cand_notes
        _progress(ctx, None, f"Comparing {cand.name} with {reference.name}…")
        reports.append(compare_samples(ref_out, out, cand.name, tolerances))
    doc = compare_report_json(reference.name, len(prep.samples), reports)
    doc.update({"inputs": prep.source_text, "random_data": prep.random_data, "notes": notes,
                "shapes": {k: list(v) for k, v in prep.shapes.items()},
                "tolerances": sorted({str(t) for c in doc.get("candidates", []) for t in c.get("tolerances", [])})
                or [f"{t.metric}:{t.value}" for t in tolerances]})
    doc["plots"] = {r.name: plot_data(r) for r in reports}
    return doc


SCATTER_POINTS = 2000  # per output: enough to see a cloud, small enough to keep results light for the GUI


def _lists(pair: object, limit: int | None = None) -> list[list[float]]:
    arrays = [np.asarray(a, dtype=np.float64).ravel() for a in pair]  # type: ignore[union-attr]
    if limit is not None and arrays and len(arrays[0]) > limit:
        keep = np.linspace(0, len(arrays[0]) - 1, limit).astype(np.int64)
        arrays = [a[keep] for a in arrays]
    # 7 significant digits keep the JSON short without changing what a plot shows
    return [[float(f"{v:.7g}") for v in a] for a in arrays]


def plot_data(report: object) -> dict:
    """A candidate's histograms and scatter samples as JSON lists, per output."""
    out: dict[str, dict] = {}
    for name, pair in getattr(report, "histograms", {}).items():
        out.setdefault(name, {})["abs_diff"] = _lists(pair)
    for name, sides in getattr(report, "value_hist", {}).items():
        out.setdefault(name, {})["values"] = {side: _lists(pair) for side, pair in sides.items()}
    for name, pair in getattr(report, "scatter", {}).items():
        out.setdefault(name, {})["scatter"] = _lists(pair, SCATTER_POINTS)
    return out


def bench_task(params: dict, ctx: object) -> dict:
    """`trtlab bench`: latency statistics of one target."""
    from app.core.latency import Budget, measure

    target = Target.parse(params["target"])
    mode = params.get("mode") or "end_to_end"
    prep = prepare_samples({**params, "samples": 1}, ctx)
    _progress(ctx, 0.0, f"Preparing {target.name}…")
    path, variant_notes = variant_path(prep.model_path, target, ctx)
    session = get_backend(target.backend).prepare(path, params.get("options") or {})
    try:
        fn = session.timed_runner(prep.samples[0], mode)
        batch = next(iter(prep.shapes.values()), (1,))[0] if prep.shapes else 1
        stats = measure(fn, Budget.parse(str(params.get("warmup", "10"))),
                        Budget.parse(str(params.get("iterations", "100"))), mode=mode, batch=int(batch or 1),
                        cancel=ctx.cancelled if ctx is not None else None,
                        progress=(lambda f, m: ctx.progress(f, m)) if ctx is not None else None)
    finally:
        session.close()
    doc = {"backend": target.name, **stats.to_json()}
    doc.update({"notes": variant_notes + list(session.notes), "inputs": prep.source_text,
                "times_ms": [round(float(t), 6) for t in stats.times_ms]})
    return doc


def diagnose_task(params: dict, ctx: object) -> dict:
    """`trtlab diagnose`: every float intermediate tensor of the reference and the candidate, compared."""
    from pathlib import Path

    from app.core.diagnose import diagnose_outputs, expose_all
    from app.core.fileio import atomic_write_bytes

    reference = Target.parse(params.get("reference") or "ort-cpu:fp32")
    candidate = Target.parse(params["candidate"])
    prep = prepare_samples({**params, "samples": 1}, ctx)
    feeds = prep.samples[0]
    folder = Path(getattr(ctx, "workdir", None) or Path(prep.model_path).parent)
    _progress(ctx, 0.1, "Exposing intermediate tensors…")
    ref_model = onnx.load(prep.model_path)
    cand_path, notes = variant_path(prep.model_path, candidate, ctx)
    cand_model = onnx.load(cand_path)
    ref_exposed, names = expose_all(ref_model)
    cand_exposed, cand_names = expose_all(cand_model, names)
    paths = []
    for tag, m in (("reference", ref_exposed), ("candidate", cand_exposed)):
        path = folder / f"diagnose_{tag}.onnx"
        atomic_write_bytes(path, m.SerializeToString())
        paths.append(str(path))
    outs = []
    for k, (target, path) in enumerate(((reference, paths[0]), (candidate, paths[1]))):
        _progress(ctx, 0.2 + 0.35 * k, f"Running {target.name} with {len(names):,} tensors exposed…")
        session = get_backend(target.backend).prepare(path, params.get("options") or {})
        try:
            outs.append(session.run(feeds))
        finally:
            session.close()
    _progress(ctx, 0.9, "Measuring each tensor…")
    rows, first = diagnose_outputs(ref_model, outs[0], outs[1])
    finite = [r for r in rows if r.cosine is not None]
    worst = min(finite, key=lambda r: r.cosine) if finite else None
    return {"candidate": candidate.name, "reference": reference.name, "first_nonfinite": first,
            "worst": worst.node if worst else None, "layers": [r.to_json() for r in rows],
            "tensors_compared": len(rows), "tensors_missing_in_candidate": len(names) - len(cand_names),
            "inputs": prep.source_text, "random_data": prep.random_data, "notes": notes}
