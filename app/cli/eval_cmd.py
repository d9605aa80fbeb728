"""`trtlab eval`: the reference and each candidate over a labelled dataset, scored by the task's metric; exit 1 when
a tolerance on the drop is not met."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.backends import Target
from app.backends.tasks.specs import EvalSpec
from app.cli.args import (
    add_image_options,
    add_output_kinds,
    check_available,
    check_positive,
    early_checks,
    emit,
    image_options,
    job_options,
    model_inputs,
    output_kinds_arg,
    variant_params,
)
from app.cli.checks import CliInputError
from app.cli.jobrun import run_job
from app.cli.output import EXIT_NOT_MET, EXIT_OK, EXIT_UNAVAILABLE
from app.core.dataset import FORMAT_NAMES
from app.core.results import EvalCandidate, EvaluationResult
from app.core.targets import plan_needed

# The metrics the text shows per task, first the one tolerances are most often set on.
SHOWN = {"detection": ("map50", "map", "mean_iou"), "classification": ("top1", "top5"),
         "segmentation": ("miou", "dice"), "recognition": ("cer", "wer", "exact")}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="accuracy of each precision on a labelled dataset, against FP32")
    p.add_argument("model", metavar="MODEL")
    p.add_argument("--dataset", required=True, metavar="DIR", help="the labelled dataset's folder")
    p.add_argument("--labels", metavar="FILE", help="its labels file (COCO JSON, data.yaml, CSV, text lines); "
                                                    "default: found in the folder")
    p.add_argument("--format", choices=tuple(FORMAT_NAMES), default=None, help="the dataset's format (default: "
                                                                               "detected)")
    p.add_argument("--class-names", metavar="FILE", help="the model's class names, one a line in its index order "
                                                         "(default: its metadata's; matched to the dataset's by name)")
    p.add_argument("--reference", default="ort-cpu:fp32", metavar="B[:P]")
    p.add_argument("--candidate", action="append", required=True, metavar="B[:P]")
    p.add_argument("--tol", action="append", default=[], metavar="METRIC:POINTS",
                   help="the drop accepted against the reference, in points: map50:-0.5, map:-1, top1:-0.3, "
                        "miou:-1, cer:+0.2")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="the first N images (after --shuffle)")
    p.add_argument("--shuffle", action="store_true", help="take the images in an order drawn from --seed")
    p.add_argument("--seed", type=int, default=0, help="seed of --shuffle and of the bootstrap (default 0)")
    p.add_argument("--shapes", metavar="SPEC", help="the input's shape where it is dynamic, e.g. x:1x3x224x224")
    p.add_argument("--plan", metavar="PLAN.json", help="the precision plan that B:plan candidates run")
    p.add_argument("--calib", metavar="SRC", help="INT8 calibration data: a .npz file or a folder of them "
                                                  "(default: the dataset's first images, preprocessed)")
    p.add_argument("--calib-method", choices=("minmax", "entropy", "percentile"), default="minmax",
                   help="INT8 calibration method (default minmax)")
    p.add_argument("--calib-samples", type=int, default=None, metavar="N",
                   help="calibration images taken from the dataset (default 32)")
    p.add_argument("--tf32", action="store_true", help="allow TF32 on CUDA backends (default: strict FP32)")
    p.add_argument("--no-cache", action="store_true",
                   help="compute every answer again and keep none (default: each image's answer per target is "
                        "kept in trtlab's cache, so a second run computes only what changed)")
    p.add_argument("--per-image", metavar="PATH", help="write each image's value of every target there, as JSON lines")
    p.add_argument("--json", metavar="PATH|-", help="write the results as JSON to PATH, or stdout with -")
    add_output_kinds(p)
    add_image_options(p, "of the dataset's images")
    p.set_defaults(inputs=None)  # --calib takes prepared samples only here


EVAL_EXTRA = ("pycocotools", "rapidfuzz")  # mAP by COCO's own evaluator; edit distances for CER and WER


def cmd_eval(args: argparse.Namespace) -> int:
    import importlib.util
    import sys

    missing = [m for m in EVAL_EXTRA if importlib.util.find_spec(m) is None]
    if missing:
        sys.stderr.write(f"trtlab eval: scoring a dataset needs {' and '.join(missing)}, which are not installed "
                         "here.\n  Fix: pip install \"trtlab[eval]\"\n")
        return EXIT_UNAVAILABLE
    from app.core.evaluate import DropTolerance, DropToleranceError

    ref = Target.parse(args.reference)
    cands = [Target.parse(c) for c in args.candidate]
    try:
        tolerances = tuple(str(DropTolerance.parse(t)) for t in args.tol)
    except DropToleranceError as exc:
        raise CliInputError(f"--tol {exc.message}", fix=exc.fix) from exc
    if args.limit is not None:
        check_positive(args.limit, "--limit")
    dataset = dataset_arg(args)
    if args.class_names and not Path(args.class_names).is_file():
        raise CliInputError(f"--class-names '{args.class_names}' does not exist.",
                            fix="Give a text file with the model's class names, one a line in its index order.")
    if args.plan and plan_needed(cands) is None:
        raise CliInputError("--plan is given but no candidate runs it.",
                            fix="Add a candidate such as --candidate ort-cpu:plan.")
    calib = Path(args.calib) if args.calib else None
    if calib is not None and calib.is_dir() and not any(f.suffix.lower() in (".npz", ".npy") for f in calib.iterdir()):
        raise CliInputError(f"--calib '{calib}' holds no .npz samples; the dataset's own images calibrate by default.",
                            fix="Leave --calib out, or give .npz samples preprocessed as the model expects.")
    per_image = Path(args.per_image).resolve() if args.per_image else None  # the job may run elsewhere
    if per_image is not None and not per_image.parent.is_dir():
        raise CliInputError(f"--per-image: the folder {per_image.parent} does not exist.",
                            fix="Give a file in a folder that exists.")
    early_checks(args, targets=[ref, *cands])
    check_available(ref, *cands)
    preset = given_preset(args)
    spec = EvalSpec(model=args.model, dataset=str(dataset), labels=args.labels, format=args.format, preset=preset,
                    class_names=args.class_names,
                    reference=ref, candidates=tuple(cands), tolerances=tolerances, limit=args.limit,
                    shuffle=bool(args.shuffle), seed=args.seed, shapes=given_shapes(args), options=job_options(args),
                    output_kinds=output_kinds_arg(args), cache=not args.no_cache,
                    per_image=str(per_image) if per_image is not None else None,
                    **variant_params(args, [ref, *cands]))
    data = run_job(spec, f"Evaluate on {dataset.name}")
    result = EvaluationResult.from_json(data)
    emit(args, result, format_eval(result), order=data)
    return EXIT_OK if result.passed else EXIT_NOT_MET


_PRESET_KEYS = {"size": "size", "resize": "resize", "pad": "pad", "layout": "layout", "color": "color",
                "scale": "scale", "mean": "mean", "std": "std"}  # image option → Preset field


def dataset_arg(args: argparse.Namespace) -> Path:
    """--dataset as a folder that is there, and --labels as a file that is there (eval's and fallback's)."""
    dataset = Path(args.dataset)
    if not dataset.is_dir():
        raise CliInputError(f"--dataset '{dataset}' is not a folder." if dataset.exists()
                            else f"--dataset '{dataset}' does not exist.",
                            fix="Give the folder that holds the labelled images.")
    if args.labels and not Path(args.labels).is_file():
        raise CliInputError(f"--labels '{args.labels}' does not exist.", fix="Give the dataset's labels file.")
    return dataset


def given_preset(args: argparse.Namespace) -> dict | None:
    """The model's preset with the image options given over it (Preset JSON, its reason naming them); None when none
    is given: the job then chooses the preset itself."""
    import onnx

    from app.backends.tasks.eval import EvalInputError, image_input
    from app.core.evaluate import Preset, PresetError, choose_preset

    given = image_options(args)
    if not given:
        return None
    model = onnx.load(args.model, load_external_data=False)
    try:
        info = image_input(model)
    except EvalInputError as exc:
        raise CliInputError(exc.message, fix=exc.fix) from exc
    preset = choose_preset(model, info)
    flags = ", ".join(f"--{'fit' if k == 'resize' else 'resize' if k == 'size' else k}" for k in given)
    doc = {**preset.to_json(), **{_PRESET_KEYS[k]: v for k, v in given.items()},
           "reason": f"{preset.reason}; {flags} given".lstrip("; ")}
    try:
        return Preset.from_json(doc).to_json()
    except PresetError as exc:
        raise CliInputError(exc.message, fix=exc.fix) from exc


def given_shapes(args: argparse.Namespace) -> dict[str, tuple[int, ...]]:
    """--shapes as given (names and ranks checked); the job fills a dynamic batch with 1 and the rest from what the
    model says, refusing a dim nothing gives."""
    from app.core.model import parse_shape_spec

    given = parse_shape_spec(args.shapes, model_inputs(args)) if args.shapes else {}
    return {k: tuple(v) for k, v in given.items()}


def _points(v: float) -> str:
    return f"{v * 100:+.1f}".replace("-", "−")


def metric_line(metric: str, ref: float | None, cand: EvalCandidate) -> str:
    """``top1 0.912 → 0.905 (−0.7 pts, 95 % CI −1.2 … −0.2)``."""
    value, delta = cand.metrics.get(metric), cand.delta.get(metric)
    text = f"{metric} {'—' if ref is None else f'{ref:.3f}'} → {'—' if value is None else f'{value:.3f}'}"
    if delta is None:
        return text
    interval = cand.interval(metric)
    ci = f", 95 % CI {_points(interval[0])} … {_points(interval[1])}" if interval is not None else ""
    return f"{text} ({_points(delta)} pts{ci})"


def format_eval(doc: EvaluationResult) -> str:
    ds = doc.dataset
    lines = [f"Dataset {ds.path}: {ds.summary} ({ds.task}; {ds.images} evaluated)",
             f"Preprocessing: {doc.preset.describe}" + (f" ({doc.preset.reason})" if doc.preset.reason else "")]
    if ds.class_map is not None:
        lines.append(f"Classes mapped {ds.class_map.how}" + (f"; no model class for {', '.join(ds.class_map.unmatched)}"
                                                              if ds.class_map.unmatched else ""))
    lines += [f"  note: {n}" for n in ds.notes]
    shown = [m for m in SHOWN.get(ds.task, ()) if m in doc.reference.metrics] or list(doc.reference.metrics)
    ref = doc.reference
    lines.append(f"Reference {ref.name}: " + ", ".join(
        f"{m} {'—' if ref.metrics.get(m) is None else format(ref.metrics[m], '.3f')}" for m in shown))
    lines += [f"  note: {n}" for n in doc.notes.get(ref.name, ())]
    for c in doc.candidates:
        lines.append(f"{c.name}: {'PASS' if c.passed else 'FAIL'}")
        lines += [f"  {metric_line(m, ref.metrics.get(m), c)}" for m in shown]
        lines += [f"  ✗ {f}" for f in c.failures]
        lines += [f"  note: {n}" for n in doc.notes.get(c.name, ())]
        if c.worst:
            lines.append(f"  loses most on: {', '.join(Path(w.image).name for w in c.worst[:3])}"
                         + (f" (+{len(c.worst) - 3} more drawn)" if len(c.worst) > 3 else ""))
    lines += [f"{name}: {n} of {ds.images} images from the cache" for name, n in doc.cached.items() if n]
    if doc.per_image:
        lines.append(f"Per image: {doc.per_image}")
    return "\n".join(lines)
