"""`trtlab kit`: a folder that builds and runs the variant graph with TensorRT on any GPU machine, and brings back
what `trtlab import` reads (app/core/engine/kit.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.backends import Target
from app.backends.tasks.specs import VariantSpec
from app.cli.args import (
    add_common,
    check_positive,
    default_samples,
    emit,
    inputs_arg,
    model_inputs,
    shapes_arg,
    variant_params,
)
from app.cli.checks import CliInputError
from app.cli.jobrun import run_job
from app.cli.output import EXIT_OK
from app.core.results import KitResult, VariantResult
from app.core.targets import PLAN


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("kit", help="write a run kit: the variant, its samples and a script that runs it with "
                                   "trtexec or TensorRT for RTX on any GPU machine")
    add_common(p)
    p.add_argument("--profile", action="append", default=[], metavar="NAME:MIN:OPT:MAX",
                   help="an optimization profile for a dynamic input, e.g. x:1x3x224x224:8x3x224x224:32x3x224x224")
    p.add_argument("--samples", type=int, default=None, metavar="N",
                   help="samples to carry (default: every sample photo when they are the inputs, else 1)")
    p.add_argument("-o", "--out", required=True, metavar="DIR", help="the kit's folder (new, or empty)")


def _check_out(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise CliInputError(f"-o {out} is a file, not a folder.", fix="Give a new folder for the kit, e.g. -o kit/.")
    if out.is_dir() and any(out.iterdir()):
        raise CliInputError(f"-o {out} is not empty.",
                            fix="Give a new or empty folder: the kit's results are read back from it.")


def cmd_kit(args: argparse.Namespace) -> int:
    from app.core.engine import ProfileError, parse_profile_args

    precision = (args.precision or "").lower()
    if not args.plan and precision not in ("", "fp16", "bf16", "int8", "fp32"):
        raise CliInputError(f"Unknown precision '{args.precision}'.", fix="Use fp32, fp16, bf16 or int8.")
    precision = precision or ("" if args.plan else "fp32")
    if args.samples is not None:
        check_positive(args.samples, "--samples")
    if not Path(args.model).is_file():
        raise CliInputError(f"{args.model}: no such file.", fix="Give the path of an ONNX model.")
    out = Path(args.out)
    _check_out(out)
    inputs = model_inputs(args)
    shapes = shapes_arg(args)  # every dynamic dim given (the samples need them), names checked
    profile = None
    if args.profile:
        try:
            profile = parse_profile_args(args.profile, inputs, {k: list(v) for k, v in shapes.items()})
        except ProfileError as exc:
            raise CliInputError(exc.message, fix=exc.fix) from exc
        shapes = {**{k: tuple(p.opt) for k, p in profile.inputs.items() if k not in shapes}, **shapes}
    target = Target.of("ort-cpu", PLAN if args.plan else precision)
    out.mkdir(parents=True, exist_ok=True)
    variant_name = f"{Path(args.model).stem}.{precision or 'plan'}.onnx"
    spec = VariantSpec(model=args.model, target=target, out=str((out / variant_name).resolve()), shapes=shapes,
                       inputs=inputs_arg(args), seed=args.seed, samples=args.samples or 1,
                       **variant_params(args, [target]))
    data = run_job(spec, "Build variant")
    from app.backends.kit_files import finish_kit

    result = finish_kit(default_samples(spec, args.samples), VariantResult.from_json(data), profile,
                        tf32=bool(args.tf32))
    emit(args, result, format_kit(result))
    return EXIT_OK


def format_kit(r: KitResult) -> str:
    lines = [f"Run kit written to {r.out}",
             f"  {r.variant}: the graph TensorRT builds ({r.plan_summary or r.precision}; precision in the graph)",
             f"  inputs.json: {r.samples} sample(s), {r.inputs}" + (" (random data)" if r.random_data else ""),
             "  run_kit.py, kit.json, README.md",
             "On a machine with TensorRT (Linux or Windows):  python run_kit.py      (TensorRT for RTX: --rtx)",
             f"Then bring the folder back and run:             trtlab import {r.out}"]
    lines += [f"  note: {n}" for n in r.notes if n != "variant from the cache"]
    return "\n".join(lines)
