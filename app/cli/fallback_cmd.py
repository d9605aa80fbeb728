"""`trtlab fallback`: find a few nodes to keep in high precision so a candidate meets a target, and save the plan.
With --dataset the target is a drop on the dataset's metric against its truth, searched on a subset and confirmed on
the whole set."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

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
    given_shapes,
    inputs_arg,
    job_options,
    output_kinds_arg,
    shapes_arg,
    tolerance_arg,
    variant_params,
)
from app.cli.checks import CliInputError
from app.cli.jobrun import interrupted_exit, run_job
from app.cli.output import EXIT_NOT_MET, EXIT_OK, EXIT_UNAVAILABLE
from app.core.dataset import FORMAT_NAMES
from app.core.results import FallbackResult

if TYPE_CHECKING:
    from app.core.evaluate import DropTolerance
    from app.core.measure import Tolerance


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fallback", help="find a few nodes to keep in high precision so a candidate meets a target")
    add_common(p, precision=False)
    add_output_kinds(p)
    p.add_argument("--candidate", required=True, metavar="B:P")
    p.add_argument("--reference", default="ort-cpu:fp32", metavar="B[:P]")
    p.add_argument("--target", required=True, metavar="METRIC:VALUE",
                   help="e.g. cos:0.999 or max_abs:0.01; with --dataset the drop accepted, e.g. map50:-0.5 or top1:-1")
    p.add_argument("--samples", type=int, default=1, metavar="N", help="samples every evaluation runs (default 1)")
    p.add_argument("--budget", default=None, metavar="Ts", help="stop searching after this long, e.g. 120s")
    p.add_argument("-o", "--out", metavar="PLAN.json", help="save the resulting precision plan here")
    d = p.add_argument_group("against a labelled dataset's truth (the target is then a drop on its metric)")
    d.add_argument("--dataset", metavar="DIR", help="the labelled dataset's folder, as for trtlab eval")
    d.add_argument("--labels", metavar="FILE", help="its labels file (default: found in the folder)")
    d.add_argument("--format", choices=tuple(FORMAT_NAMES), default=None, help="its format (default: detected)")
    d.add_argument("--subset", type=int, default=200, metavar="N",
                   help="images each search step evaluates: the first N after a shuffle from --seed (default 200); "
                        "the plan found is then confirmed on every image")


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
    target = _target(args)
    check_positive(args.samples, "--samples")
    if args.out and not args.out.lower().endswith(".json"):
        raise CliInputError(f"-o '{args.out}' does not end in .json.", fix="Give a path such as model.plan.json.")
    early_checks(args, "-o", [ref, cand])
    check_available(ref, cand)
    if args.dataset is not None:
        missing = _dataset_checks(args)
        if missing:
            return missing
    spec = FallbackSpec(model=args.model, reference=ref, candidate=cand, target=target, dataset=args.dataset,
                        labels=args.labels, format=args.format, subset=args.subset, seed=args.seed,
                        budget_s=_seconds(args.budget, "--budget"), inputs=inputs_arg(args),
                        shapes=given_shapes(args) if args.dataset else shapes_arg(args),  # the job fills a batch of 1
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
    emit(args, result, format_on_dataset(result) if result.dataset else formats.format_fallback(result), order=data)
    if result.interrupted_by:  # stopped by Ctrl+C or SIGTERM: the best set so far is out, the run was cut short
        import signal

        return interrupted_exit(signal.Signals[result.interrupted_by])
    return EXIT_OK if result.met else EXIT_NOT_MET


def _target(args: argparse.Namespace) -> Tolerance | DropTolerance:
    """--target: a drop on the dataset's metric with --dataset, else agreement with the reference; the other kind is
    refused, naming the fix."""
    from app.core.evaluate import DropTolerance, DropToleranceError
    from app.core.measure import Tolerance, ToleranceError

    def parses(parse: Callable[[str], object]) -> bool:
        try:
            parse(args.target)
        except (DropToleranceError, ToleranceError):
            return False
        return True

    if args.dataset is None:
        if not parses(Tolerance.parse) and parses(DropTolerance.parse):
            raise CliInputError(f"--target {args.target} is a drop on a dataset's metric, which needs the dataset's "
                                "truth.", fix="Add --dataset DIR (a labelled dataset), or give a target on agreement "
                                              "with the reference such as --target cos:0.999.")
        return tolerance_arg(args.target, "--target")
    try:
        return DropTolerance.parse(args.target)
    except DropToleranceError as exc:
        if parses(Tolerance.parse):
            raise CliInputError(f"--target {args.target} is an agreement with the reference; with --dataset the "
                                "target is the drop accepted on the dataset's metric.",
                                fix="Write e.g. --target map50:-0.5 or --target top1:-1, or leave --dataset out to "
                                    "search against the reference's outputs.") from exc
        raise CliInputError(f"--target {exc.message}", fix=exc.fix) from exc


def _dataset_checks(args: argparse.Namespace) -> int:
    """--dataset, --labels and --subset checked before the job starts; EXIT_UNAVAILABLE without eval's extra."""
    import importlib.util
    import sys

    from app.cli.eval_cmd import EVAL_EXTRA, dataset_arg

    check_positive(args.subset, "--subset")
    dataset_arg(args)
    missing = [m for m in EVAL_EXTRA if importlib.util.find_spec(m) is None]
    if missing:
        sys.stderr.write(f"trtlab fallback: scoring a dataset needs {' and '.join(missing)}, which are not installed "
                         "here.\n  Fix: pip install \"trtlab[eval]\"\n")
        return EXIT_UNAVAILABLE
    return EXIT_OK


def _points(fraction: float | None) -> str:
    return "—" if fraction is None else f"{fraction * 100:+.1f}".replace("-", "−")


def _interval(ci: tuple[float | None, ...]) -> str:
    if len(ci) != 2 or ci[0] is None or ci[1] is None:
        return ""
    return f" (95 % CI {_points(ci[0])} … {_points(ci[1])})"


def format_on_dataset(doc: FallbackResult) -> str:
    """``Keeping 3 nodes in FP32: map50 −0.3 pts on 200 images (target −0.5); confirmed on all 1,000: −0.4 pts
    (95 % CI −0.9 … +0.1)``, then the nodes, and what to do where the confirmation missed."""
    metric, goal = doc.metric, doc.target.partition(":")[2].replace("-", "−")
    kept = len(doc.keep_high_precision)
    nodes = f"{kept} node{'' if kept == 1 else 's'}"
    subset = f"{doc.subset:,} image{'' if doc.subset == 1 else 's'}"
    head = f"{doc.candidate} against {doc.reference} on {doc.dataset} ({doc.dataset_images:,} images)"
    line = (f"Keeping {nodes} in FP32: {metric} {_points(doc.subset_delta)} pts on {subset} (target {goal})"
            if doc.subset_delta is not None else f"Keeping {nodes} in FP32: nothing evaluated")
    lines = [head]
    if doc.confirmed is not None:
        whole = (f"confirmed on all {doc.dataset_images:,}" if doc.confirmed
                 else f"NOT CONFIRMED on all {doc.dataset_images:,}")
        lines.append(f"{line}; {whole}: {_points(doc.confirmed_delta)} pts{_interval(doc.confirmed_ci)}")
        if not doc.confirmed:
            lines.append(f"  The whole set misses the target {doc.target}: the subset of {subset} was not "
                         "representative. Search on a larger --subset (or the whole set).")
    elif doc.subset_delta is not None and not doc.met:
        lines.append(f"{line}{_interval(doc.subset_ci)}: NOT MET on the subset, so not confirmed on the whole set"
                     + (f" (stopped: {doc.stopped})" if doc.stopped else ""))
    else:
        lines.append(line + (f" (stopped: {doc.stopped}; not confirmed)" if doc.stopped else ""))
    lines.append(f"  {doc.evaluations} evaluations in {doc.seconds:.1f} s")
    lines += [f"    {k}" for k in doc.keep_high_precision]
    if doc.plan_file:
        lines.append(f"Plan saved to {doc.plan_file} (use it with --plan)")
    return "\n".join(lines)
