"""The options the job commands share and their checks: model, precision or plan, shapes, inputs, calibration."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from app.backends import BackendUnavailable, Target, get_backend
from app.cli.checks import CliInputError, check_outputs
from app.cli.output import result_json, with_model, write_json
from app.core.errors import TrtlabError
from app.core.targets import PLAN, plan_needed

if TYPE_CHECKING:
    from app.backends.tasks.specs import JobInputs
    from app.core.measure import InputSource, OutputKind, Tolerance
    from app.core.model import ModelDoc, TensorInfo
    from app.core.precision import PrecisionPlan
    from app.core.results import JobDoc

SpecT = TypeVar("SpecT", bound="JobInputs")

_IMAGE_EXT = {".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".pgm"}


def add_common(p: argparse.ArgumentParser, *, precision: bool = True, inputs: bool = True) -> None:
    p.add_argument("model", metavar="MODEL")
    if precision:
        g = p.add_mutually_exclusive_group()
        g.add_argument("--precision", default=None, metavar="P", help="fp32 (default), fp16, bf16, int8")
        g.add_argument("--plan", metavar="PLAN.json", help="a precision plan (saved from the GUI or written by hand)")
    else:
        p.add_argument("--plan", metavar="PLAN.json", help="the precision plan that B:plan candidates run")
    p.add_argument("--shapes", metavar="SPEC", help="input shapes, e.g. x:1x3x224x224[,y:...]")
    if inputs:
        p.add_argument("--inputs", metavar="SRC",
                       help=".npz/.npy file, folder of them, folder of images, 'photos' (trtlab's sample photos: the "
                            "default for a model with one image input) or 'random'")
    p.add_argument("--calib", metavar="SRC", help="INT8 calibration data (default: --inputs)")
    p.add_argument("--calib-method", choices=("minmax", "entropy", "percentile"), default="minmax",
                   help="INT8 calibration method (default minmax)")
    p.add_argument("--calib-samples", type=int, default=None, metavar="N",
                   help="calibration samples (default: 16 random, or every file of a folder up to 512)")
    p.add_argument("--seed", type=int, default=0, help="seed of random inputs (default 0)")
    p.add_argument("--json", metavar="PATH|-", help="write the results as JSON to PATH, or stdout with -")
    add_image_options(p, "for a folder of images or the sample photos")
    p.add_argument("--tf32", action="store_true", help="allow TF32 on CUDA backends (default: strict FP32)")


def add_image_options(p: argparse.ArgumentParser, what: str) -> None:
    """The image preprocessing options, each defaulting to the model's preset (read by `image_options`)."""
    img = p.add_argument_group(f"image preprocessing ({what}; each default comes from the model's preset: letterbox "
                               "for Ultralytics exports, PaddleOCR's rules, else ImageNet's; a setting given here "
                               "wins)")
    img.add_argument("--resize", metavar="HxW", help="resize to HxW (default: the input's dims)")
    img.add_argument("--fit", choices=("stretch", "letterbox"), default=None,
                     help="stretch to the size, or letterbox (aspect ratio kept, padded with --pad)")
    img.add_argument("--pad", type=float, default=None, metavar="V", help="letterbox padding, 0-255 before --scale")
    img.add_argument("--layout", choices=("NCHW", "NHWC"), default=None)
    img.add_argument("--color", choices=("RGB", "BGR"), default=None)
    img.add_argument("--scale", type=float, default=None, help="multiply pixel values (e.g. 1/255 = 0.00392157)")
    img.add_argument("--mean", metavar="M,M,M", help="subtract per channel after scaling")
    img.add_argument("--std", metavar="S,S,S", help="divide per channel after the mean")


def _floats(text: str | None, what: str) -> tuple[float, ...] | None:
    if not text:
        return None
    try:
        return tuple(float(v) for v in text.split(","))
    except ValueError as exc:
        raise CliInputError(f"--{what} '{text}' is not a list of numbers.", fix=f"Write e.g. --{what} 0.5,0.5,0.5") \
            from exc


_IMAGE_FLAGS = {"size": "--resize", "resize": "--fit", "pad": "--pad", "layout": "--layout", "color": "--color",
                "scale": "--scale", "mean": "--mean", "std": "--std"}


def image_options(args: argparse.Namespace) -> dict[str, object]:
    """The image preprocessing settings given on the command line (ImagePreprocess keys); the rest come from the
    model's preset."""
    given: dict[str, object] = {}
    if getattr(args, "resize", None):
        try:
            h, w = (int(v) for v in args.resize.lower().split("x"))
        except ValueError as exc:
            raise CliInputError(f"--resize '{args.resize}' is not HxW.", fix="Write e.g. --resize 224x224") from exc
        given["size"] = [h, w]
    for key, attr in (("resize", "fit"), ("pad", "pad"), ("layout", "layout"), ("color", "color"),
                      ("scale", "scale")):
        if getattr(args, attr, None) is not None:
            given[key] = getattr(args, attr)
    if (mean := _floats(getattr(args, "mean", None), "mean")) is not None:
        given["mean"] = list(mean)
    if (std := _floats(getattr(args, "std", None), "std")) is not None:
        given["std"] = list(std)
    return given


def _preprocess(args: argparse.Namespace) -> dict[str, object]:
    """The images' preprocessing as ImagePreprocess JSON: the model's preset with the settings given here in place
    of its own (app.core.evaluate.model_preprocess, the one rule the window and the jobs use too)."""
    from app.core.evaluate import model_preprocess
    from app.core.measure import ImagePreprocess

    given = image_options(args)
    inputs = model_inputs(args)
    try:
        if len(inputs) != 1:  # refused when the images are read: one image input only
            return ImagePreprocess.from_json(given).to_json()
        return model_preprocess(model_doc(args).model, inputs[0], given).to_json()
    except TrtlabError as exc:
        raise CliInputError(exc.message, fix=exc.fix) from exc


def input_source(args: argparse.Namespace, flag: str = "inputs") -> dict | None:
    """The `--inputs SRC` (or `--calib SRC`) argument as an InputSource JSON dict; None when not given (the job then
    takes trtlab's sample photos for a model with one image input, else random data). Image preprocessing options
    without `--inputs` mean the sample photos, preprocessed so."""
    given = getattr(args, flag, None)
    if not given:
        if flag == "inputs" and image_options(args):
            return _photos(args, flag, said=False)
        return None
    if given == "random":
        return {"kind": "random", "seed": args.seed}
    if given == "photos":
        return _photos(args, flag)
    p = Path(given)
    if not p.exists():
        raise CliInputError(f"--{flag} '{p}' does not exist.", fix="Give a .npz/.npy file or a folder.")
    if p.is_file():
        return {"kind": "npz", "path": str(p), "seed": args.seed}
    files = [f for f in p.iterdir() if f.is_file()]
    if any(f.suffix.lower() in (".npz", ".npy") for f in files):
        return {"kind": "folder", "path": str(p), "seed": args.seed}
    if not any(f.suffix.lower() in _IMAGE_EXT for f in files):
        raise CliInputError(f"--{flag} folder '{p}' has no .npz/.npy files and no images.",
                            fix="Put input samples (.npz per sample) or images (.png, .bmp) in it.")
    return {"kind": "images", "path": str(p), "seed": args.seed, "preprocess": _preprocess(args)}


def inputs_arg(args: argparse.Namespace, flag: str = "inputs") -> InputSource | None:
    """`input_source` as the InputSource a job's spec takes; None when not given."""
    from app.core.measure import InputSource

    source = input_source(args, flag)
    return InputSource.from_json(source) if source is not None else None


def model_doc(args: argparse.Namespace) -> ModelDoc:
    """The command's model, read once: the checks before a job (--shapes, --output-kind, --plan, the output paths)
    each used to read and parse it again."""
    from app.core.model import load_model

    cached = getattr(args, "_model_doc", None)
    if cached is None or cached[0] != args.model:
        cached = (args.model, load_model(args.model))
        args._model_doc = cached
    return cached[1]


def model_inputs(args: argparse.Namespace) -> list[TensorInfo]:
    """The model's inputs (names, dtypes, declared shapes), from the model read once."""
    from app.core.model import summarize

    cached = getattr(args, "_model_inputs", None)
    if cached is None or cached[0] != args.model:
        cached = (args.model, summarize(model_doc(args)).inputs)
        args._model_inputs = cached
    return cached[1]


def _photos(args: argparse.Namespace, flag: str, said: bool = True) -> dict:
    """`--inputs photos` (`said`), or image preprocessing options without `--inputs`: the sample photos fitted to
    the model's image input, by its preset with the options given in place of the preset's (refused for other
    models)."""
    from app.core.evaluate import photo_source
    from app.core.measure import resolve_input_shapes

    inputs = model_inputs(args)
    try:
        source = photo_source(model_doc(args).model, inputs, resolve_input_shapes(inputs, given_shapes(args)),
                              given=image_options(args))
    except TrtlabError as exc:
        raise CliInputError(exc.message, fix=exc.fix) from exc
    if source is None:
        why = f"--{flag} photos" if said else ", ".join(sorted({_IMAGE_FLAGS[k] for k in image_options(args)}))
        raise CliInputError(f"{why}: this model has no single image input (N×3×H×W or N×H×W×3) to feed photos to.",
                            fix=f"Give --{flag} a .npz file, a folder of samples, or 'random'"
                                + ("" if said else ", and leave the image preprocessing options out") + ".")
    return source.to_json()


def given_shapes(args: argparse.Namespace) -> dict[str, tuple[int, ...]]:
    """--shapes, with each dynamic image input it leaves out given the size the model's metadata says (Ultralytics'
    ``imgsz``, PaddleOCR's line height: app.core.evaluate.default_input_shape), as `trtlab eval` does."""
    from app.core.evaluate import default_input_shape
    from app.core.measure import source_shapes
    from app.core.model import dynamic_dims, parse_shape_spec

    inputs = model_inputs(args)
    given = parse_shape_spec(args.shapes, inputs) if args.shapes else {}
    source = inputs_arg(args) if getattr(args, "inputs", None) not in (None, "", "random", "photos") else None
    if source is not None:
        # A sample file fixes the dims of its arrays: no --shapes needed for what it gives (--shapes still wins).
        for name, dims in source_shapes(source, inputs).items():
            given.setdefault(name, dims)
    for info in inputs:
        if info.name not in given and info.shape is not None and dynamic_dims(info):
            shape = default_input_shape(model_doc(args).model, info)
            if shape is not None:
                given[info.name] = shape
    return given


def add_output_kinds(p: argparse.ArgumentParser) -> None:
    p.add_argument("--output-kind", action="append", default=[], metavar="NAME=KIND",
                   help="what an output means: image, classes, detections, yolo, sequence, embedding or tensor, with "
                        "options such as yolo:v5, detections:cxcywh, sequence:tnv (default: inferred)")


def output_kinds_arg(args: argparse.Namespace) -> dict[str, OutputKind]:
    """--output-kind NAME=KIND items, parsed here (the one place the CLI reads them) and checked against the model's
    outputs before any job starts."""
    from app.core.measure import infer_output_kinds, parse_output_kinds

    kinds = parse_output_kinds(getattr(args, "output_kind", []) or [])
    if kinds:
        infer_output_kinds(model_doc(args).model, user=kinds)  # refuses names the model has no output for
    return kinds


def default_samples(spec: SpecT, given: int | None) -> SpecT:
    """The spec with its sample count: as given, else every sample photo when the job will take them, else 1."""
    if given is not None:
        return spec
    from app.backends.tasks.common import default_source
    from app.core.measure import SAMPLES_DIR, sample_photos

    source = default_source(spec)
    if source.kind == "images" and Path(source.path or "").resolve() == SAMPLES_DIR.resolve():
        return spec.with_(samples=max(1, len(sample_photos())))
    return spec


def shapes_arg(args: argparse.Namespace) -> dict[str, tuple[int, ...]]:
    """Parse and check --shapes here, before any job starts: names, ranks and every dynamic dim (a dynamic image
    input whose size the model's metadata gives takes it: `given_shapes`)."""
    from app.core.measure import resolve_input_shapes

    given = given_shapes(args)
    resolve_input_shapes(model_inputs(args), given)
    return {k: tuple(v) for k, v in given.items()}


def target_arg(args: argparse.Namespace) -> Target:
    """The target of `--backend B[:P]` with `--precision P` or `--plan`, refused when they disagree."""
    said = ":" in args.backend  # a precision written with the backend
    target = Target.parse(args.backend)
    precision = (args.precision or "fp32").lower()
    if getattr(args, "plan", None):
        if said and not target.needs_plan:
            raise CliInputError(f"--backend {args.backend} names a precision and --plan gives another.",
                                fix=f"Use --backend {target.backend} --plan PLAN.json, or drop --plan.")
        return target.with_precision(PLAN)
    if said and args.precision and target.precision != precision:
        raise CliInputError(f"--backend {args.backend} and --precision {args.precision} disagree.",
                            fix=f"Use --backend {target.backend} --precision P, or --backend {target.backend}:P alone.")
    return target if said else Target.of(target.backend, precision)


def _plan(args: argparse.Namespace, targets: list[Target]) -> PrecisionPlan | None:
    """The --plan file, read and checked against the model; None without --plan."""
    if not getattr(args, "plan", None):
        if (needs := plan_needed(targets)) is not None:
            raise CliInputError(f"{needs.name} runs a precision plan: it needs --plan PLAN.json.",
                                fix="Add --plan PLAN.json.")
        return None
    from app.core.precision import PrecisionPlan

    plan = PrecisionPlan.load(args.plan)
    unknown = plan.unknown_keys(model_doc(args).model.graph)
    if unknown:
        sys.stderr.write(f"warning: the plan names {len(unknown)} node(s) this model does not have "
                         f"(e.g. '{unknown[0]}'); they are ignored\n")
    return plan


def variant_params(args: argparse.Namespace, targets: list[Target]) -> dict[str, Any]:
    """Plan and calibration settings for the job (INT8 calibrates on --calib, else on --inputs)."""
    out: dict = {"calib_method": args.calib_method}
    if args.calib_samples is not None and args.calib_samples <= 0:
        raise CliInputError(f"--calib-samples {args.calib_samples}: give a positive count.",
                            fix="Write e.g. --calib-samples 64.")
    if (plan := _plan(args, targets)) is not None:
        out["plan"] = plan
    if args.calib:
        out["calib"] = input_source(args, "calib")
    if args.calib_samples:
        out["calib_samples"] = args.calib_samples
    return out


def check_available(*targets: Target) -> None:
    for t in targets:
        a = get_backend(t.backend).availability()
        if not a.available:
            raise BackendUnavailable(f"{t.backend}: {a.reason}", fix=a.install_hint)


def job_options(args: argparse.Namespace) -> dict:
    return {"tf32": bool(args.tf32)}


def early_checks(args: argparse.Namespace, out_flag: str = "", targets: Sequence[Target | None] = ()) -> None:
    """What can be refused before any job starts: the model, the output paths (never onto an input file), and for
    TensorRT targets the shapes of dims that share a dim_param (one size to TensorRT; the window checks the same)."""
    doc = model_doc(args)
    check_outputs(args, doc, out_flag or "-o")
    if any(t is not None and t.builds_engine for t in targets):
        from app.core.engine import ProfileError, check_engine_shapes

        try:
            check_engine_shapes(doc.model.graph, shapes_arg(args))
        except ProfileError as exc:
            raise CliInputError(f"--shapes: {exc.message}", fix=exc.fix) from exc


def tolerance_arg(text: str, flag: str) -> Tolerance:
    """A METRIC:VALUE tolerance; one whose value the metric can never take is refused (by Tolerance.parse)."""
    from app.core.measure import Tolerance, ToleranceError

    try:
        return Tolerance.parse(text)
    except ToleranceError as exc:
        raise CliInputError(f"{flag} {exc.message}", fix=exc.fix.replace("Write e.g. ", f"Write e.g. {flag} ")) from exc


def check_positive(value: int, flag: str) -> None:
    if value < 1:
        raise CliInputError(f"{flag} {value}: give a positive count.", fix=f"Write e.g. {flag} 4.")


def with_preprocessing(text: str, preprocessing: str) -> str:
    """A result's text with the preprocessing its photos went through as its second line ("" leaves it as is)."""
    if not preprocessing:
        return text
    first, _, rest = text.partition("\n")
    return f"{first}\nPreprocessing: {preprocessing}" + (f"\n{rest}" if rest else "")


def emit(args: argparse.Namespace, result: JobDoc, text: str, order: Iterable[str] = ()) -> None:
    """The text on stdout, and the result's JSON where --json says (stdout with -: the text then goes to stderr),
    its keys in `order` (the job's). The document says which command wrote it ("kind"): `trtlab report` reads it
    back."""
    if args.json:
        result = with_model(result.replace(kind=result.kind or args.command), getattr(args, "model", None))
        write_json(result_json(result, order), args.json)
    (sys.stderr if args.json == "-" else sys.stdout).write(text + "\n")
