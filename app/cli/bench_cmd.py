"""`trtlab bench`: measure a backend's latency (end to end or on the device) for a precision or a plan."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from app.backends import get_backend
from app.backends.tasks.specs import BenchSpec
from app.backends.tasks.speed_specs import SweepSpec
from app.cli import formats
from app.cli.args import (
    add_common,
    check_available,
    early_checks,
    emit,
    given_shapes,
    inputs_arg,
    job_options,
    model_doc,
    model_inputs,
    shapes_arg,
    target_arg,
    variant_params,
)
from app.cli.checks import CliInputError
from app.cli.jobrun import run_job
from app.cli.output import EXIT_JOB_FAILED, EXIT_OK
from app.core.results import BenchResult, SweepResult
from app.core.targets import Target

if TYPE_CHECKING:
    from app.core.measure import SweepAxis


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="measure a backend's latency")
    p.add_argument("--backend", required=True, action="append", metavar="B",
                   help="the target, B[:P][@SETTINGS]; with --sweep, repeat it for several targets")
    add_common(p)
    p.add_argument("--warmup", default="10", metavar="N|Ts")
    p.add_argument("--iterations", default="100", metavar="N|Ts")
    p.add_argument("--mode", choices=("end_to_end", "device_only"), default=None,
                   help="default: device_only on GPU backends, end_to_end on the CPU")
    p.add_argument("--sweep", metavar="NAME[:AXIS]=V1,V2,...",
                   help="time every target at each value of one dynamic dimension: batch=1,2,4,...,64 (dimension 0 "
                        "of every input) or INPUT:AXIS=... (one input's); each --backend is a line, a --precision "
                        "list (fp32,fp16) adds one per precision")
    p.add_argument("--sessions", type=int, default=0, metavar="N",
                   help="with --sweep: sessions timed per point, the point being the median one (default 3 on GPU "
                        "targets, whose sessions each pick their own cuDNN algorithms; 1 on the CPU)")


def cmd_bench(args: argparse.Namespace) -> int:
    from app.core.measure import Budget

    if args.sweep is not None:
        return cmd_sweep(args)
    if args.sessions:
        raise CliInputError(f"--sessions {args.sessions} goes with --sweep.",
                            fix="Add --sweep batch=1 to time one point in several sessions, or leave --sessions out.")
    if len(args.backend) > 1:
        raise CliInputError(f"--backend given {len(args.backend)} times: one benchmark times one target.",
                            fix="Give one --backend, or time several with --sweep batch=1,2,4 (one line each).")
    args.backend = args.backend[0]
    if args.precision and "," in args.precision:
        raise CliInputError(f"--precision {args.precision}: one benchmark times one precision.",
                            fix="Give one precision, or time several with --sweep batch=1,2,4.")
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


def sweep_targets(args: argparse.Namespace) -> list[Target]:
    """The targets of a sweep: each --backend B:P[@SETTINGS] as written; one written without a precision takes each
    of --precision's (a comma list: fp32,fp16), FP32 by default, or the plan of --plan."""
    precisions = [p.strip().lower() for p in (args.precision or "").split(",") if p.strip()]
    precisions = precisions or (["plan"] if getattr(args, "plan", None) else ["fp32"])
    targets: list[Target] = []
    for given in args.backend:
        head, at, settings = given.partition("@")
        if ":" in head:
            targets.append(Target.parse(given))
            continue
        targets += [Target.parse(f"{head}:{p}{at}{settings}") for p in precisions]
    names = [t.name for t in targets]
    if twice := sorted({n for n in names if names.count(n) > 1}):
        raise CliInputError(f"--backend: {', '.join(twice)} given twice.", fix="Give each target once.")
    return targets


def _check_engine_sweep(args: argparse.Namespace, base: dict[str, tuple[int, ...]], swept: list[str],
                        sweep: SweepAxis) -> None:
    """A TensorRT target's shapes at every value, checked before any job starts: dims that share a dim_param take
    one size (sweeping one input's batch where another input shares it would fail every point)."""
    from app.core.engine import ProfileError, check_engine_shapes
    from app.core.measure import shapes_at

    graph = model_doc(args).model.graph
    for value in sweep.values:
        try:
            check_engine_shapes(graph, shapes_at(base, swept, sweep.axis, value))
        except ProfileError as exc:
            raise CliInputError(f"--sweep {sweep.word(value)}: {exc.message}",
                                fix=exc.fix + " Sweep the batch of every input (--sweep batch=...) where inputs share "
                                              "it.") from exc


def cmd_sweep(args: argparse.Namespace) -> int:
    """`trtlab bench --sweep`: every target at every value of one dynamic dimension."""
    from app.core.measure import (
        Budget,
        base_shapes,
        default_timing_mode,
        parse_sweep,
        resolve_input_shapes,
        swept_inputs,
    )

    targets = sweep_targets(args)
    early_checks(args)
    common = [m for m in ("device_only", "end_to_end")
              if all(m in get_backend(t.backend).timing_modes for t in targets)]
    if args.mode and args.mode not in common:
        lacking = [t.name for t in targets if args.mode not in get_backend(t.backend).timing_modes]
        raise CliInputError(f"--mode {args.mode}: {', '.join(lacking)} cannot time {args.mode}.",
                            fix="Use --mode end_to_end (every backend times it), or sweep GPU targets only.")
    mode = args.mode or (default_timing_mode(targets[0].backend) if default_timing_mode(targets[0].backend) in common
                         else "end_to_end")
    Budget.parse(args.warmup)
    if Budget.parse(args.iterations).count == 0:
        raise CliInputError("--iterations 0 measures nothing.", fix="Give a count such as --iterations 100.")
    if args.sessions < 0:
        raise CliInputError(f"--sessions {args.sessions}: give 1 or more.", fix="Write e.g. --sessions 3.")
    inputs = model_inputs(args)
    sweep = parse_sweep(args.sweep, [i.name for i in inputs])
    declared = {i.name: i.shape for i in inputs}
    swept = swept_inputs(declared, sweep)
    given = given_shapes(args)
    base = resolve_input_shapes(inputs, base_shapes(declared, given, swept, sweep.axis))  # every other dim: exit 2
    if any(t.builds_engine for t in targets):
        _check_engine_sweep(args, base, swept, sweep)
    check_available(*targets)
    spec = SweepSpec(model=args.model, sweep_targets=tuple(targets), input=sweep.input, axis=sweep.axis,
                     values=sweep.values, shapes=given, inputs=inputs_arg(args), warmup=args.warmup,
                     iterations=args.iterations, mode=mode, sessions=args.sessions, options=job_options(args),
                     **variant_params(args, targets))
    data = run_job(spec, f"Sweep {sweep.word()} of {', '.join(t.name for t in targets)}")
    result = SweepResult.from_json(data).replace(kind="sweep")  # `trtlab report` tells it from a bench by this
    emit(args, result, formats.format_sweep(result), order=data)
    return EXIT_OK if any(p.status == "ok" for p in result.points) else EXIT_JOB_FAILED
