"""`trtlab profile`: per-node times and placement of one backend and precision (ONNX Runtime's profiler; engine
layer times on TensorRT)."""

from __future__ import annotations

import argparse

from app.backends import Target
from app.backends.tasks.specs import ProfileSpec
from app.cli import formats
from app.cli.args import (
    add_common,
    check_available,
    check_positive,
    early_checks,
    emit,
    inputs_arg,
    job_options,
    shapes_arg,
    target_arg,
    variant_params,
)
from app.cli.jobrun import run_job
from app.cli.output import EXIT_OK
from app.core.results import ProfileResult


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("profile", help="per-node times and where each node runs")
    p.add_argument("--backend", required=True, metavar="B[:P]")
    p.add_argument("--against", metavar="B[:P]", help="profile this target too and set the two side by side (e.g. "
                                                       "--backend ort-cuda:fp16 --against ort-cuda)")
    add_common(p)
    p.add_argument("--iterations", type=int, default=20, metavar="N", help="profiled runs (default 20, after 3 "
                                                                          "warm-up runs)")
    p.add_argument("--top", type=int, default=15, metavar="N", help="nodes listed in the table (default 15)")


def cmd_profile(args: argparse.Namespace) -> int:
    target = target_arg(args)
    check_positive(args.iterations, "--iterations")
    check_positive(args.top, "--top")
    against = Target.parse(args.against) if args.against else None
    early_checks(args, targets=[target, against])
    check_available(target, *([against] if against is not None else []))
    spec = ProfileSpec(model=args.model, target=target, against=against,
                       shapes=shapes_arg(args), inputs=inputs_arg(args), iterations=args.iterations,
                       options=job_options(args), **variant_params(args, [t for t in (against, target) if t]))
    data = run_job(spec, f"Profile {target.name}" + (f" against {against.name}" if against else ""))
    result = ProfileResult.from_json(data)
    emit(args, result, formats.format_profile(result, args.top), order=data)
    return EXIT_OK
