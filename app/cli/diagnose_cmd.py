"""`trtlab diagnose`: the per-layer error of a candidate against the FP32 reference."""

from __future__ import annotations

import argparse

from app.backends import Target
from app.backends.tasks.specs import DiagnoseSpec
from app.cli import formats
from app.cli.args import (
    add_common,
    add_output_kinds,
    check_available,
    early_checks,
    emit,
    inputs_arg,
    job_options,
    output_kinds_arg,
    shapes_arg,
    variant_params,
)
from app.cli.jobrun import run_job
from app.cli.output import EXIT_OK
from app.core.results import DiagnoseResult


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("diagnose", help="per-layer error of a candidate against the FP32 reference")
    add_common(p, precision=False)
    add_output_kinds(p)
    p.add_argument("--candidate", required=True, metavar="B:P")


def cmd_diagnose(args: argparse.Namespace) -> int:
    cand = Target.parse(args.candidate)
    early_checks(args, targets=[cand])
    check_available(cand)
    spec = DiagnoseSpec(model=args.model, candidate=cand, shapes=shapes_arg(args), inputs=inputs_arg(args),
                        output_kinds=output_kinds_arg(args),
                        options=job_options(args), **variant_params(args, [cand]))
    data = run_job(spec, f"Diagnose {cand.name}")
    result = DiagnoseResult.from_json(data)
    emit(args, result, formats.format_diagnose(result), order=data)
    return EXIT_OK
