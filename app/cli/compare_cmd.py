"""`trtlab compare`: compare candidates' outputs against a reference, exit 1 when a tolerance is not met."""

from __future__ import annotations

import argparse

from app.backends import Target
from app.backends.tasks.specs import CompareSpec
from app.cli import formats
from app.cli.args import (
    add_common,
    add_output_kinds,
    check_available,
    check_positive,
    default_samples,
    early_checks,
    emit,
    inputs_arg,
    job_options,
    output_kinds_arg,
    shapes_arg,
    tolerance_arg,
    variant_params,
    with_preprocessing,
)
from app.cli.checks import CliInputError
from app.cli.jobrun import run_job
from app.cli.output import EXIT_NOT_MET, EXIT_OK
from app.core.results import CompareResult
from app.core.targets import plan_needed


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="compare candidates' outputs against a reference")
    add_common(p, precision=False)
    p.add_argument("--reference", default="ort-cpu:fp32", metavar="B[:P]")
    p.add_argument("--candidate", action="append", required=True, metavar="B[:P]")
    p.add_argument("--samples", type=int, default=None, metavar="N",
                   help="samples to compare (default: every sample photo when they are the inputs, else 1)")
    p.add_argument("--tol", action="append", default=[], metavar="METRIC:VALUE",
                   help="element-wise: cos, max_abs, mean_abs, max_rel, snr_db; answers: top1, top5, det_missed, "
                        "det_extra, det_iou, mask_iou, psnr_db, token_agreement, edit_distance")
    add_output_kinds(p)


def cmd_compare(args: argparse.Namespace) -> int:
    ref = Target.parse(args.reference)
    cands = [Target.parse(c) for c in args.candidate]
    tolerances = tuple(tolerance_arg(t, "--tol") for t in args.tol)  # usage errors, found before any work
    if args.samples is not None:
        check_positive(args.samples, "--samples")
    if args.plan and plan_needed(cands) is None:
        raise CliInputError("--plan is given but no candidate runs it.",
                            fix="Add a candidate such as --candidate ort-cpu:plan.")
    early_checks(args, targets=[ref, *cands])
    check_available(ref, *cands)
    spec = CompareSpec(model=args.model, reference=ref, candidates=tuple(cands),
                       shapes=shapes_arg(args), inputs=inputs_arg(args), samples=args.samples or 1,
                       tolerances=tolerances, options=job_options(args), output_kinds=output_kinds_arg(args),
                       **variant_params(args, [ref, *cands]))
    spec = default_samples(spec, args.samples)
    data = run_job(spec, f"Compare against {ref.name}")
    data.pop("plots", None)  # the plots' data is the GUI's: the JSON leaves it out
    result = CompareResult.from_json(data)
    emit(args, result, with_preprocessing(formats.format_compare(result), result.preprocessing), order=data)
    return EXIT_OK if all(c.passed for c in result.candidates) else EXIT_NOT_MET
