"""`trtlab run`: run a model on one backend (a precision or a plan) and save its outputs."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.backends.tasks.specs import RunSpec
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
from app.core.results import RunResult


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a model on one backend and save its outputs")
    p.add_argument("--backend", required=True, metavar="B")
    add_common(p)
    p.add_argument("--out", metavar="OUTPUTS.npz", help="save the outputs here")


def cmd_run(args: argparse.Namespace) -> int:
    target = target_arg(args)
    early_checks(args, "--out", [target])
    check_available(target)
    spec = RunSpec(model=args.model, target=target, shapes=shapes_arg(args), inputs=inputs_arg(args),
                   options=job_options(args), **variant_params(args, [target]))
    data = run_job(spec, f"Run {target.name}", keep_workdir=True)
    result = RunResult.from_json(data)
    if args.out:
        import shutil

        try:
            shutil.copyfile(result.npz, args.out)
            shutil.rmtree(Path(result.npz).parent, ignore_errors=True)  # the job's folder: now copied out
        except OSError as exc:
            raise CliInputError(f"Cannot write --out '{args.out}': {exc.strerror or exc}. The outputs are in "
                                f"{result.npz}.", fix="Give --out a path in a folder you can write to.") from exc
        result = result.replace(npz=str(Path(args.out).resolve()))
    emit(args, result, formats.format_run(result), order=data)
    return EXIT_OK
