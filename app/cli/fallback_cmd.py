"""`trtlab fallback`: find a few nodes to keep in high precision so a candidate meets a target, and save the plan."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.backends import Target
from app.backends.tasks.specs import FallbackSpec
from app.cli import formats
from app.cli.args import (
    add_common,
    add_output_kinds,
    check_available,
    check_positive,
    early_checks,
    emit,
    inputs_arg,
    job_options,
    output_kinds_arg,
    shapes_arg,
    tolerance_arg,
    variant_params,
)
from app.cli.checks import CliInputError
from app.cli.jobrun import interrupted_exit, run_job
from app.cli.output import EXIT_NOT_MET, EXIT_OK
from app.core.results import FallbackResult


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fallback", help="find a few nodes to keep in high precision so a candidate meets a target")
    add_common(p, precision=False)
    add_output_kinds(p)
    p.add_argument("--candidate", required=True, metavar="B:P")
    p.add_argument("--reference", default="ort-cpu:fp32", metavar="B[:P]")
    p.add_argument("--target", required=True, metavar="METRIC:VALUE", help="e.g. cos:0.999 or max_abs:0.01")
    p.add_argument("--samples", type=int, default=1, metavar="N", help="samples every evaluation runs (default 1)")
    p.add_argument("--budget", default=None, metavar="Ts", help="stop searching after this long, e.g. 120s")
    p.add_argument("-o", "--out", metavar="PLAN.json", help="save the resulting precision plan here")


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
    target = tolerance_arg(args.target, "--target")
    check_positive(args.samples, "--samples")
    if args.out and not args.out.lower().endswith(".json"):
        raise CliInputError(f"-o '{args.out}' does not end in .json.", fix="Give a path such as model.plan.json.")
    early_checks(args, "-o", [ref, cand])
    check_available(ref, cand)
    spec = FallbackSpec(model=args.model, reference=ref, candidate=cand, target=target,
                        budget_s=_seconds(args.budget, "--budget"), shapes=shapes_arg(args), inputs=inputs_arg(args),
                        output_kinds=output_kinds_arg(args),
                        samples=args.samples, options=job_options(args), **variant_params(args, [ref, cand]))
    data = run_job(spec, f"Fallback search for {cand.name}")
    result = FallbackResult.from_json(data)
    if args.out:
        from app.core.precision import PrecisionPlan

        plan = PrecisionPlan.from_json(dict(result.plan)).with_model_name(Path(args.model).name)
        try:
            plan.save(args.out)
        except OSError as exc:
            raise CliInputError(f"Cannot write the plan '{args.out}': {exc.strerror or exc}.",
                                fix="Give -o a path in a folder you can write to.") from exc
        result = result.replace(plan_file=str(Path(args.out).resolve()))
    emit(args, result, formats.format_fallback(result), order=data)
    if result.interrupted_by:  # stopped by Ctrl+C or SIGTERM: the best set so far is out, the run was cut short
        import signal

        return interrupted_exit(signal.Signals[result.interrupted_by])
    return EXIT_OK if result.met else EXIT_NOT_MET
