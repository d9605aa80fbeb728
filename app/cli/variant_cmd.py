"""`trtlab variant`: write the variant ONNX graph for a precision or a plan (optionally at a raised opset)."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.backends import Target
from app.backends.tasks.specs import VariantSpec
from app.cli import formats
from app.cli.args import add_common, early_checks, emit, inputs_arg, shapes_arg, variant_params
from app.cli.checks import CliInputError
from app.cli.jobrun import run_job
from app.cli.output import EXIT_OK
from app.core.measure import InputSource
from app.core.results import VariantResult
from app.core.targets import PLAN


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("variant", help="write the variant ONNX graph for a precision or a plan")
    add_common(p, inputs=False)
    p.add_argument("-o", "--out", required=True, metavar="OUT.onnx", help="where to save the variant")
    p.add_argument("--opset", type=int, default=None, metavar="N",
                   help="raise the model's opset to N first (ONNX's version converter, FP32 outputs checked "
                        "unchanged): BF16 has kernels for Conv, Relu, pools… from opset 22")


def onnx_opset_max() -> int:
    import onnx

    return int(onnx.defs.onnx_opset_version())


def cmd_variant(args: argparse.Namespace) -> int:
    if not args.plan and not args.precision:
        raise CliInputError("variant needs --precision P or --plan PLAN.json.", fix="Add e.g. --precision fp16.")
    precision = (args.precision or "").lower()
    if not args.plan and precision not in ("fp16", "bf16", "int8", "fp32"):
        raise CliInputError(f"Unknown precision '{args.precision}'.", fix="Use fp32, fp16, bf16 or int8.")
    target = Target.of("ort-cpu", PLAN if args.plan else precision)
    out = Path(args.out)
    if out.suffix.lower() != ".onnx":
        raise CliInputError(f"-o '{out}' does not end in .onnx.", fix="Give a path such as model.fp16.onnx.")
    early_checks(args, "-o")
    extra = variant_params(args, [target])
    from app.core.precision import PrecisionPlan

    plan: PrecisionPlan = extra.get("plan") or PrecisionPlan(default=precision)
    used = plan.precisions()  # the precisions the variant runs
    int8 = "int8" in used
    if args.opset is not None and not 7 <= args.opset <= onnx_opset_max():
        raise CliInputError(f"--opset {args.opset} is not an ONNX opset this onnx knows (7 to {onnx_opset_max()}).",
                            fix="Use e.g. --opset 22 for BF16 convolutions.")
    # shapes matter only for calibration data (INT8 scales, FP16's activation ranges) and the opset check's sample;
    # the variant keeps the model's dynamic dims. Without them an FP16 variant says its ranges were not measured.
    fp16 = "fp16" in used
    spec = VariantSpec(model=args.model, target=target, out=str(out.resolve()),
                       shapes=shapes_arg(args) if int8 or args.shapes or (args.opset and args.shapes) else {},
                       inputs=inputs_arg(args) if (int8 or fp16) else InputSource(kind="random", seed=args.seed),
                       opset=args.opset, **extra)
    data = run_job(spec, "Build variant")
    result = VariantResult.from_json(data)
    emit(args, result, formats.format_variant(result), order=data)
    return EXIT_OK
