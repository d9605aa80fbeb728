"""`trtlab run`, `compare`, `bench`, `diagnose`, `fallback` and `variant`: the same job functions the GUI runs, in
a child process (`build` is in `build_cmd`)."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from app.backends import BackendUnavailable, Target, get_backend
from app.cli import formats
from app.cli.checks import CliInputError, check_out_path, check_outputs  # noqa: F401 - re-exported
from app.cli.jobrun import JobFailed, _without_traceback, exit_code_for, interrupted_exit, report_job_failure  # noqa: F401 - re-exported
from app.cli.jobrun import run_job as _run_job
from app.cli.output import EXIT_NOT_MET, EXIT_OK, write_json

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
        p.add_argument("--inputs", metavar="SRC", help=".npz/.npy file, folder of them, or folder of images")
    p.add_argument("--calib", metavar="SRC", help="INT8 calibration data (default: --inputs)")
    p.add_argument("--calib-method", choices=("minmax", "entropy", "percentile"), default="minmax",
                   help="INT8 calibration method (default minmax)")
    p.add_argument("--calib-samples", type=int, default=None, metavar="N",
                   help="calibration samples (default: 16 random, or every file of a folder up to 512)")
    p.add_argument("--seed", type=int, default=0, help="seed of random inputs (default 0)")
    p.add_argument("--json", metavar="PATH|-", help="write the results as JSON to PATH, or stdout with -")
    img = p.add_argument_group("image preprocessing (for a folder of images)")
    img.add_argument("--resize", metavar="HxW", help="resize to HxW (default: the input's dims)")
    img.add_argument("--layout", choices=("NCHW", "NHWC"), default="NCHW")
    img.add_argument("--color", choices=("RGB", "BGR"), default="RGB")
    img.add_argument("--scale", type=float, default=1 / 255, help="multiply pixel values (default 1/255)")
    img.add_argument("--mean", metavar="M,M,M", help="subtract per channel after scaling")
    img.add_argument("--std", metavar="S,S,S", help="divide per channel after the mean")
    p.add_argument("--tf32", action="store_true", help="allow TF32 on CUDA backends (default: strict FP32)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a model on one backend and save its outputs")
    p.add_argument("--backend", required=True, metavar="B")
    add_common(p)
    p.add_argument("--out", metavar="OUTPUTS.npz", help="save the outputs here")
    p = sub.add_parser("compare", help="compare candidates' outputs against a reference")
    add_common(p, precision=False)
    p.add_argument("--reference", default="ort-cpu:fp32", metavar="B[:P]")
    p.add_argument("--candidate", action="append", required=True, metavar="B[:P]")
    p.add_argument("--samples", type=int, default=1, metavar="N")
    p.add_argument("--tol", action="append", default=[], metavar="METRIC:VALUE",
                   help="cos, max_abs, mean_abs, max_rel, snr_db, top1")
    p = sub.add_parser("diagnose", help="per-layer error of a candidate against the FP32 reference")
    add_common(p, precision=False)
    p.add_argument("--candidate", required=True, metavar="B:P")
    p = sub.add_parser("fallback", help="find a few nodes to keep in high precision so a candidate meets a target")
    add_common(p, precision=False)
    p.add_argument("--candidate", required=True, metavar="B:P")
    p.add_argument("--reference", default="ort-cpu:fp32", metavar="B[:P]")
    p.add_argument("--target", required=True, metavar="METRIC:VALUE", help="e.g. cos:0.999 or max_abs:0.01")
    p.add_argument("--samples", type=int, default=1, metavar="N", help="samples every evaluation runs (default 1)")
    p.add_argument("--budget", default=None, metavar="Ts", help="stop searching after this long, e.g. 120s")
    p.add_argument("-o", "--out", metavar="PLAN.json", help="save the resulting precision plan here")
    p = sub.add_parser("variant", help="write the variant ONNX graph for a precision or a plan")
    add_common(p, inputs=False)
    p.add_argument("-o", "--out", required=True, metavar="OUT.onnx", help="where to save the variant")
    p.add_argument("--opset", type=int, default=None, metavar="N",
                   help="raise the model's opset to N first (ONNX's version converter, FP32 outputs checked "
                        "unchanged): BF16 has kernels for Conv, Relu, pools… from opset 22")
    p = sub.add_parser("bench", help="measure a backend's latency")
    p.add_argument("--backend", required=True, metavar="B")
    add_common(p)
    p.add_argument("--warmup", default="10", metavar="N|Ts")
    p.add_argument("--iterations", default="100", metavar="N|Ts")
    p.add_argument("--mode", choices=("end_to_end", "device_only"), default=None,
                   help="default: device_only on GPU backends, end_to_end on the CPU")


def _floats(text: str | None, what: str) -> tuple[float, ...] | None:
    if not text:
        return None
    try:
        return tuple(float(v) for v in text.split(","))
    except ValueError as exc:
        raise CliInputError(f"--{what} '{text}' is not a list of numbers.", fix=f"Write e.g. --{what} 0.5,0.5,0.5") \
            from exc


def input_source(args: argparse.Namespace, flag: str = "inputs") -> dict:
    """The `--inputs SRC` (or `--calib SRC`) argument as an InputSource JSON dict."""
    given = getattr(args, flag, None)
    if not given:
        return {"kind": "random", "seed": args.seed}
    p = Path(given)
    if not p.exists():
        raise CliInputError(f"--{flag} '{p}' does not exist.", fix="Give a .npz/.npy file or a folder.")
    if p.is_file():
        return {"kind": "npz", "path": str(p), "seed": args.seed}
    files = [f for f in p.iterdir() if f.is_file()]
    if any(f.suffix.lower() in (".npz", ".npy") for f in files):
        return {"kind": "folder", "path": str(p), "seed": args.seed}
    pre: dict[str, object] = {"layout": args.layout, "color": args.color, "scale": args.scale}
    if args.resize:
        try:
            h, w = (int(v) for v in args.resize.lower().split("x"))
        except ValueError as exc:
            raise CliInputError(f"--resize '{args.resize}' is not HxW.", fix="Write e.g. --resize 224x224") from exc
        pre["size"] = [h, w]
    if (mean := _floats(args.mean, "mean")) is not None:
        pre["mean"] = list(mean)
    if (std := _floats(args.std, "std")) is not None:
        pre["std"] = list(std)
    if not any(f.suffix.lower() in _IMAGE_EXT for f in files):
        raise CliInputError(f"--{flag} folder '{p}' has no .npz/.npy files and no images.",
                            fix="Put input samples (.npz per sample) or images (.png, .bmp) in it.")
    return {"kind": "images", "path": str(p), "seed": args.seed, "preprocess": pre}


def _shapes(args: argparse.Namespace) -> dict[str, list[int]]:
    """Parse and check --shapes here, before any job starts: names, ranks and every dynamic dim."""
    from app.core.measure.inputs import resolve_input_shapes
    from app.core.model.loader import load_model
    from app.core.model.shapes import parse_shape_spec
    from app.core.model.summary import summarize

    inputs = summarize(load_model(args.model)).inputs
    given = parse_shape_spec(args.shapes, inputs) if args.shapes else {}
    if getattr(args, "inputs", None):
        from app.core.measure.inputs import InputSource, source_shapes

        # A sample file fixes the dims of its arrays: no --shapes needed for what it gives (--shapes still wins).
        for name, dims in source_shapes(InputSource.from_json(input_source(args)), inputs).items():
            given.setdefault(name, dims)
    resolve_input_shapes(inputs, given)
    return {k: list(v) for k, v in given.items()}


def _target(args: argparse.Namespace) -> Target:
    backend, _, given = args.backend.partition(":")
    precision = (args.precision or "fp32").lower()
    if getattr(args, "plan", None):
        if given and given.lower() != "plan":
            raise CliInputError(f"--backend {args.backend} names a precision and --plan gives another.",
                                fix=f"Use --backend {backend} --plan PLAN.json, or drop --plan.")
        return Target.parse(f"{backend}:plan")
    if given and args.precision and given.lower() != precision:
        raise CliInputError(f"--backend {args.backend} and --precision {args.precision} disagree.",
                            fix=f"Use --backend {backend} --precision P, or --backend {backend}:P alone.")
    return Target.parse(f"{backend}:{given or precision}")


def _plan(args: argparse.Namespace, targets: list[Target]) -> dict | None:
    """The --plan file as JSON, checked against the model; None without --plan."""
    if not getattr(args, "plan", None):
        if any(t.precision == "plan" for t in targets):
            raise CliInputError("A 'B:plan' candidate needs --plan PLAN.json.", fix="Add --plan PLAN.json.")
        return None
    from app.core.model.loader import load_model
    from app.core.precision.plan import PrecisionPlan

    plan = PrecisionPlan.load(args.plan)
    unknown = plan.unknown_keys(load_model(args.model).model.graph)
    if unknown:
        sys.stderr.write(f"warning: the plan names {len(unknown)} node(s) this model does not have "
                         f"(e.g. '{unknown[0]}'); they are ignored\n")
    return plan.to_json()


def _variant_params(args: argparse.Namespace, targets: list[Target]) -> dict:
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


def _check_available(*targets: Target) -> None:
    for t in targets:
        a = get_backend(t.backend).availability()
        if not a.available:
            raise BackendUnavailable(f"{t.backend}: {a.reason}", fix=a.install_hint)


def _options(args: argparse.Namespace) -> dict:
    return {"tf32": bool(args.tf32)}


def _early_checks(args: argparse.Namespace, out_flag: str = "") -> None:
    """What can be refused before any job starts: the model, the output paths (never onto an input file)."""
    from app.core.model.loader import load_model

    check_outputs(args, load_model(args.model), out_flag or "-o")


def cmd_run(args: argparse.Namespace) -> int:
    _early_checks(args, "--out")
    target = _target(args)
    _check_available(target)
    params = {"model": args.model, "target": target.name, "shapes": _shapes(args), "inputs": input_source(args),
              "options": _options(args), **_variant_params(args, [target])}
    doc = _run_job("app.backends.tasks.run:run_task", params, f"Run {target.name}", keep_workdir=True)
    if args.out:
        import shutil

        try:
            shutil.copyfile(doc["npz"], args.out)
            shutil.rmtree(Path(doc["npz"]).parent, ignore_errors=True)  # the job's folder: now copied out
        except OSError as exc:
            raise CliInputError(f"Cannot write --out '{args.out}': {exc.strerror or exc}. The outputs are in "
                                f"{doc['npz']}.", fix="Give --out a path in a folder you can write to.") from exc
        doc["npz"] = str(Path(args.out).resolve())
    _emit(args, doc, formats.format_run(doc))
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    ref = Target.parse(args.reference)
    cands = [Target.parse(c) for c in args.candidate]
    _check_available(ref, *cands)
    for t in args.tol:
        _tolerance(t, "--tol")  # bad tolerances are usage errors, found before any work
    _positive(args.samples, "--samples")
    if args.plan and not any(c.precision == "plan" for c in cands):
        raise CliInputError("--plan is given but no candidate runs it.",
                            fix="Add a candidate such as --candidate ort-cpu:plan.")
    _early_checks(args)
    params = {"model": args.model, "reference": ref.name, "candidates": [c.name for c in cands],
              "shapes": _shapes(args), "inputs": input_source(args), "samples": args.samples,
              "tolerances": args.tol, "options": _options(args), **_variant_params(args, [ref, *cands])}
    doc = _run_job("app.backends.tasks.compare:compare_task", params, f"Compare against {ref.name}")
    doc.pop("plots", None)
    _emit(args, doc, formats.format_compare(doc))
    return EXIT_OK if all(c["passed"] for c in doc["candidates"]) else EXIT_NOT_MET


def cmd_bench(args: argparse.Namespace) -> int:
    from app.core.measure.latency import Budget

    _early_checks(args)
    target = _target(args)
    modes = get_backend(target.backend).timing_modes
    if args.mode and args.mode not in modes:
        raise CliInputError(f"--mode {args.mode}: {target.backend} has no {args.mode} timing (it measures "
                            f"{' and '.join(modes)}).", fix=f"Use --mode {modes[0]}, or a GPU backend (ort-cuda, "
                                                             "ort-trt, trt, trt-rtx) for device-only timing.")
    Budget.parse(args.warmup)  # a budget that is not a number or a time: exit 2 now, not in the job
    if Budget.parse(args.iterations).count == 0:
        raise CliInputError("--iterations 0 measures nothing.", fix="Give a count such as --iterations 100, or a "
                                                                    "time such as --iterations 3s.")
    _check_available(target)
    mode = args.mode or ("end_to_end" if target.backend == "ort-cpu" else "device_only")
    params = {"model": args.model, "target": target.name, "shapes": _shapes(args), "inputs": input_source(args),
              "warmup": args.warmup, "iterations": args.iterations, "mode": mode, "options": _options(args),
              **_variant_params(args, [target])}
    doc = _run_job("app.backends.tasks.bench:bench_task", params, f"Benchmark {target.name}")
    times = doc.pop("times_ms", None)
    _emit(args, doc, formats.format_bench(doc))
    doc["times_ms"] = times
    return EXIT_OK


def cmd_diagnose(args: argparse.Namespace) -> int:
    _early_checks(args)
    cand = Target.parse(args.candidate)
    _check_available(cand)
    params = {"model": args.model, "candidate": cand.name, "shapes": _shapes(args), "inputs": input_source(args),
              "options": _options(args), **_variant_params(args, [cand])}
    doc = _run_job("app.backends.tasks.diagnose:diagnose_task", params, f"Diagnose {cand.name}")
    _emit(args, doc, formats.format_diagnose(doc))
    return EXIT_OK


# The values a metric can take: a tolerance outside them can never be met (or always is), so it is a typo.
_METRIC_RANGE = {"cos": (-1.0, 1.0), "top1": (0.0, 1.0), "max_abs": (0.0, math.inf), "mean_abs": (0.0, math.inf),
                 "max_rel": (0.0, math.inf)}


def _tolerance(text: str, flag: str) -> object:
    """A METRIC:VALUE tolerance, refused when the value is outside what the metric can be."""
    from app.core.measure.compare import Tolerance

    tol = Tolerance.parse(text)
    lo, hi = _METRIC_RANGE.get(tol.metric, (-math.inf, math.inf))
    if not lo <= tol.value <= hi:
        span = f"between {lo:g} and {hi:g}" if math.isfinite(hi) else f"at least {lo:g}"
        example = {"cos": "cos:0.999", "top1": "top1:0.99"}.get(tol.metric, f"{tol.metric}:0.01")
        raise CliInputError(f"{flag} {text}: {tol.metric} is always {span}, so {tol.value:g} is out of range.",
                            fix=f"Write e.g. {flag} {example}.")
    return tol


def _positive(value: int, flag: str) -> None:
    if value < 1:
        raise CliInputError(f"{flag} {value}: give a positive count.", fix=f"Write e.g. {flag} 4.")


def _seconds(text: str | None, flag: str) -> float | None:
    if not text:
        return None
    try:
        value = float(text.lower().removesuffix("s"))
    except ValueError as exc:
        raise CliInputError(f"{flag} '{text}' is not a time.", fix=f"Write e.g. {flag} 120s") from exc
    if value <= 0:
        raise CliInputError(f"{flag} must be positive.", fix=f"Write e.g. {flag} 120s")
    return value


def cmd_fallback(args: argparse.Namespace) -> int:
    ref, cand = Target.parse(args.reference), Target.parse(args.candidate)
    _check_available(ref, cand)
    _tolerance(args.target, "--target")
    _positive(args.samples, "--samples")
    if args.out and not args.out.lower().endswith(".json"):
        raise CliInputError(f"-o '{args.out}' does not end in .json.", fix="Give a path such as model.plan.json.")
    _early_checks(args, "-o")
    params = {"model": args.model, "reference": ref.name, "candidate": cand.name, "target": args.target,
              "budget_s": _seconds(args.budget, "--budget"), "shapes": _shapes(args), "inputs": input_source(args),
              "samples": args.samples, "options": _options(args), **_variant_params(args, [ref, cand])}
    doc = _run_job("app.backends.tasks.fallback:fallback_task", params, f"Fallback search for {cand.name}")
    if args.out:
        from app.core.precision.plan import PrecisionPlan

        plan = PrecisionPlan.from_json(doc["plan"])
        plan.model_name = Path(args.model).name
        try:
            plan.save(args.out)
        except OSError as exc:
            raise CliInputError(f"Cannot write the plan '{args.out}': {exc.strerror or exc}.",
                                fix="Give -o a path in a folder you can write to.") from exc
        doc["plan_file"] = str(Path(args.out).resolve())
    _emit(args, doc, formats.format_fallback(doc))
    if doc.get("interrupted_by"):  # stopped by Ctrl+C or SIGTERM: the best set so far is out, the run was cut short
        import signal

        return interrupted_exit(signal.Signals[doc["interrupted_by"]])
    return EXIT_OK if doc["met"] else EXIT_NOT_MET


def cmd_variant(args: argparse.Namespace) -> int:
    if not args.plan and not args.precision:
        raise CliInputError("variant needs --precision P or --plan PLAN.json.", fix="Add e.g. --precision fp16.")
    precision = (args.precision or "").lower()
    if not args.plan and precision not in ("fp16", "bf16", "int8", "fp32"):
        raise CliInputError(f"Unknown precision '{args.precision}'.", fix="Use fp32, fp16, bf16 or int8.")
    target = Target.parse("ort-cpu:plan" if args.plan else f"ort-cpu:{precision}")
    out = Path(args.out)
    if out.suffix.lower() != ".onnx":
        raise CliInputError(f"-o '{out}' does not end in .onnx.", fix="Give a path such as model.fp16.onnx.")
    _early_checks(args, "-o")
    extra = _variant_params(args, [target])
    plan = extra.get("plan") or {"default": precision}
    int8 = "int8" in (plan["default"], *(plan.get("op_rules") or {}).values(), *(plan.get("overrides") or {}).values())
    if args.opset is not None and not 7 <= args.opset <= onnx_opset_max():
        raise CliInputError(f"--opset {args.opset} is not an ONNX opset this onnx knows (7 to {onnx_opset_max()}).",
                            fix="Use e.g. --opset 22 for BF16 convolutions.")
    params = {"model": args.model, "target": target.name, "out": str(out.resolve()),
              # shapes matter only for calibration data (and the opset check's sample); a half-precision variant
              # keeps the model's dynamic dims
              "shapes": _shapes(args) if int8 or (args.opset and args.shapes) else {},
              "inputs": {"kind": "random", "seed": args.seed}, "opset": args.opset, **extra}
    doc = _run_job("app.backends.tasks.variant:variant_task", params, "Build variant")
    _emit(args, doc, formats.format_variant(doc))
    return EXIT_OK


def onnx_opset_max() -> int:
    import onnx

    return int(onnx.defs.onnx_opset_version())


def _emit(args: argparse.Namespace, doc: dict, text: str) -> None:
    if args.json:
        write_json(doc, args.json)
    (sys.stderr if args.json == "-" else sys.stdout).write(text + "\n")
