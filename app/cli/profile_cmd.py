"""`trtlab profile`: per-node times and placement of one backend and precision (ONNX Runtime's profiler; engine
layer times on TensorRT), beside another target's (`--against`) or beside the same target's at another batch
(`--batch N --against-batch M`: which nodes stay launch-bound and which scale with the batch)."""

from __future__ import annotations

import argparse

from app.backends import Target
from app.backends.tasks.speed_specs import ProfileSpec
from app.cli import formats
from app.cli.args import (
    add_common,
    check_available,
    check_positive,
    early_checks,
    emit,
    given_shapes,
    inputs_arg,
    job_options,
    model_inputs,
    shapes_arg,
    target_arg,
    variant_params,
)
from app.cli.checks import CliInputError
from app.cli.jobrun import run_job
from app.cli.output import EXIT_OK
from app.core.errors import TrtlabError
from app.core.results import NodeDelta, ProfileDelta, ProfileResult

BOUND_WORDS = {"launch": "launch-bound", "compute": "scales", "between": "partly", "": ""}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("profile", help="per-node times and where each node runs")
    p.add_argument("--backend", required=True, metavar="B[:P]")
    p.add_argument("--against", metavar="B[:P]", help="profile this target too and set the two side by side (e.g. "
                                                       "--backend ort-cuda:fp16 --against ort-cuda)")
    p.add_argument("--batch", type=int, default=None, metavar="N",
                   help="profile at batch N: dim 0 of every input (the model's batch must be dynamic)")
    p.add_argument("--against-batch", type=int, default=None, metavar="M",
                   help="profile the same target at batch M too and set the two points side by side, per item: "
                        "which ops stay launch-bound and which scale with the batch (e.g. --batch 32 "
                        "--against-batch 1)")
    add_common(p)
    p.add_argument("--iterations", type=int, default=20, metavar="N", help="profiled runs (default 20, after 3 "
                                                                          "warm-up runs)")
    p.add_argument("--top", type=int, default=15, metavar="N", help="nodes listed in the table (default 15)")


def cmd_profile(args: argparse.Namespace) -> int:
    target = target_arg(args)
    check_positive(args.iterations, "--iterations")
    check_positive(args.top, "--top")
    against = Target.parse(args.against) if args.against else None
    if against is not None and args.against_batch is not None:
        raise CliInputError("--against and --against-batch both set the profile beside another one.",
                            fix="Compare two targets (--against B:P) or two batches of one (--against-batch M).")
    early_checks(args, targets=[target, against])
    check_available(target, *([against] if against is not None else []))
    shapes, batch = _point_shapes(args)
    spec = ProfileSpec(model=args.model, target=target, against=against, batch=batch, against_batch=args.against_batch,
                       shapes=shapes, inputs=inputs_arg(args), iterations=args.iterations,
                       options=job_options(args), **variant_params(args, [t for t in (against, target) if t]))
    title = f"Profile {target.name}" + (f" at batch {batch}" if batch is not None else "")
    data = run_job(spec, title + (f" against {against.name}" if against else "")
                   + (f" against batch {args.against_batch}" if args.against_batch is not None else ""))
    result = ProfileResult.from_json(data)
    delta = result.delta
    if delta is not None and delta.reference_point:
        text = formats.format_profile(result.replace(against=None), args.top) + "\n\n" + format_points(result, args.top)
    else:
        text = formats.format_profile(result, args.top)
    emit(args, result, text, order=data)
    return EXIT_OK


def _point_shapes(args: argparse.Namespace) -> tuple[dict[str, tuple[int, ...]], int | None]:
    """--shapes, and the batch of the target's point: --batch, or with --against-batch alone the batch --shapes
    gives (1 where it gives none). Each point's shapes are checked here, before any job starts: a model whose batch
    is fixed is refused."""
    from app.core.measure import batch_shapes, resolve_input_shapes

    if args.batch is None and args.against_batch is None:
        return shapes_arg(args), None
    for flag in ("--batch", "--against-batch"):
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is not None:
            check_positive(value, flag)
    inputs = model_inputs(args)
    given = given_shapes(args)
    batch = args.batch
    if batch is None:
        batch = next((d[0] for n, d in given.items() if d and n == inputs[0].name), 1) if inputs else 1
    if batch == args.against_batch:
        raise CliInputError(f"--against-batch {batch} is the batch profiled already.",
                            fix=f"Give another batch, e.g. --batch {batch} --against-batch {1 if batch > 1 else 8}.")
    for b in (batch, args.against_batch):
        if b is None:
            continue
        try:
            resolve_input_shapes(inputs, batch_shapes(inputs, given, b))
        except TrtlabError as exc:
            raise CliInputError(exc.message, fix=exc.fix) from exc
    return {k: tuple(v) for k, v in given.items()}, batch


def format_points(doc: ProfileResult, top: int = 15) -> str:
    """One target at two batches, per item: the summary, each op type at both points, and the slowest nodes."""
    d = doc.delta or ProfileDelta()
    a, b = d.reference_point, d.candidate_point
    lines = [f"{doc.backend} at {b} against {a} (times per item):", *(f"  {s}" for s in d.summary)]
    head = f"{a + ' ms':>12} {b + ' ms':>12} {'×time':>7} {a + ' %':>9} {b + ' %':>9}  follows the batch"
    lines.append(f"{'op':<22} {'nodes':>5} {head}")
    for o in d.ops[:top]:
        lines.append(f"{o.op[:22]:<22} {o.count:>5} {_row(o)} {100 * (o.reference_share or 0):>8.1f}% "
                     f"{100 * (o.share or 0):>8.1f}%  {BOUND_WORDS.get(o.bound, o.bound)}")
    nodes = sorted(d.nodes, key=lambda n: -n.ms)[:top]
    if nodes:
        lines += ["", f"{'node':<44} {'op':<14} {a + ' ms':>12} {b + ' ms':>12} {'×time':>7}  follows the batch"]
        lines += [f"{n.node[:44]:<44} {n.op[:14]:<14} {_row(n)}  {BOUND_WORDS.get(n.bound, n.bound)}" for n in nodes]
    return "\n".join(lines)


def _row(n: NodeDelta) -> str:
    ratio = "—" if n.ratio is None else f"{n.ratio:.2f}"
    return f"{formats.num(n.reference_per_item_ms, '.4f'):>12} {formats.num(n.per_item_ms, '.4f'):>12} {ratio:>7}"
