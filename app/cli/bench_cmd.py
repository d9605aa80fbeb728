"""`trtlab bench`: measure a backend's latency (end to end or on the device) for a precision or a plan."""

from __future__ import annotations

import argparse

from app.backends import get_backend
from app.backends.tasks.specs import BenchSpec
from app.cli import formats
from app.cli.args import (
    add_common,
    check_available,
    early_checks,
    emit,
    inputs_arg,
    job_options,
    shapes_arg,
    target_arg,
    variant_params,
)
from app.cli.checks import CliInputError
from app.cli.jobrun import run_job
from app.cli.output import EXIT_OK
from app.core.results import BenchResult


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="measure a backend's latency")
    p.add_argument("--backend", required=True, metavar="B")
    add_common(p)
    p.add_argument("--warmup", default="10", metavar="N|Ts")
    p.add_argument("--iterations", default="100", metavar="N|Ts")
    p.add_argument("--mode", choices=("end_to_end", "device_only"), default=None,
                   help="default: device_only on GPU backends, end_to_end on the CPU")


def cmd_bench(args: argparse.Namespace) -> int:
    from app.core.measure import Budget

    target = target_arg(args)
    early_checks(args, targets=[target])
    modes = get_backend(target.backend).timing_modes
    if args.mode and args.mode not in modes:
        raise CliInputError(f"--mode {args.mode}: {target.backend} has no {args.mode} timing (it measures "
                            f"{' and '.join(modes)}).", fix=f"Use --mode {modes[0]}, or a GPU backend (ort-cuda, "
                                                             "ort-trt, trt, trt-rtx) for device-only timing.")
    Budget.parse(args.warmup)  # a budget that is not a number or a time: exit 2 now, not in the job
    if Budget.parse(args.iterations).count == 0:
        raise CliInputError("--iterations 0 measures nothing.", fix="Give a count such as --iterations 100, or a "
                                                                    "time such as --iterations 3s.")
    check_available(target)
    spec = BenchSpec(model=args.model, target=target, shapes=shapes_arg(args), inputs=inputs_arg(args),
                     warmup=args.warmup, iterations=args.iterations, mode=args.mode or "", options=job_options(args),
                     **variant_params(args, [target]))
    data = run_job(spec, f"Benchmark {target.name}")
    data.pop("times_ms", None)  # every iteration's time is the GUI's: the JSON leaves it out
    result = BenchResult.from_json(data)
    emit(args, result, formats.format_bench(result), order=data)
    return EXIT_OK
