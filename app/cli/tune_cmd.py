"""`trtlab tune`: a runtime's own settings tried on one target, the fastest whose answers equal the default's."""

from __future__ import annotations

import argparse

from app.backends.tasks.speed_specs import TUNE_SESSIONS, TuneSpec
from app.cli.args import (
    add_common,
    check_available,
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
from app.core.results import TuneResult, TuneTrial
from app.core.targets import KNOBS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tune", help="try a runtime's settings (CUDA graphs, NHWC, cuDNN search, threads) and keep "
                                    "the fastest whose answers are unchanged")
    p.add_argument("--backend", required=True, metavar="B", help="ort-cuda or ort-cpu, with its precision (B:P)")
    add_common(p)
    p.add_argument("--batch", type=int, default=None, metavar="N",
                   help="the batch: dimension 0 of every input whose first dimension is dynamic")
    p.add_argument("--knobs", default="", metavar="K,K",
                   help="the settings to try (default: every setting of the backend; see docs/cli.md)")
    p.add_argument("--sessions", type=int, default=TUNE_SESSIONS, metavar="N",
                   help=f"sessions timed per combination (default {TUNE_SESSIONS}: cuDNN picks kernels per session)")
    p.add_argument("--warmup", default="20", metavar="N|Ts")
    p.add_argument("--iterations", default="100", metavar="N|Ts")


def batch_shapes(args: argparse.Namespace, batch: int) -> dict[str, tuple[int, ...]]:
    """--shapes with dimension 0 of every input set to `batch`; an input whose first dimension is fixed to another
    size is refused (its batch cannot change)."""
    if batch < 1:
        raise CliInputError(f"--batch {batch}: give a batch of 1 or more.", fix="Write e.g. --batch 32.")
    from app.core.measure import batch_shapes as at_batch
    from app.core.measure import resolve_input_shapes

    try:
        shapes = at_batch(model_inputs(args), given_shapes(args), batch)
        resolve_input_shapes(model_inputs(args), shapes)
    except TrtlabError as exc:
        raise CliInputError(exc.message, fix=exc.fix) from exc
    return shapes


def cmd_tune(args: argparse.Namespace) -> int:
    target = target_arg(args)
    if target.backend not in KNOBS:
        raise CliInputError(f"--backend {args.backend}: {target.backend} has no runtime settings to tune.",
                            fix=f"Tune {' or '.join(KNOBS)} (e.g. --backend ort-cuda:fp16).")
    early_checks(args, targets=[target])
    knobs = tuple(k.strip() for k in args.knobs.split(",") if k.strip())
    if unknown := [k for k in knobs if k not in KNOBS[target.backend]]:
        raise CliInputError(f"--knobs: {target.backend} has no setting {', '.join(unknown)}.",
                            fix=f"Its settings are {', '.join(KNOBS[target.backend])}.")
    if args.sessions < 1:
        raise CliInputError(f"--sessions {args.sessions}: give 1 or more.", fix="Write e.g. --sessions 3.")
    shapes = batch_shapes(args, args.batch) if args.batch is not None else shapes_arg(args)
    check_available(target)
    spec = TuneSpec(model=args.model, target=target, shapes=shapes, inputs=inputs_arg(args), knobs=knobs,
                    sessions=args.sessions, warmup=args.warmup, iterations=args.iterations,
                    options=job_options(args), **variant_params(args, [target]))
    data = run_job(spec, f"Tune {target.name}")
    result = TuneResult.from_json(data)
    emit(args, result, format_tune(result), order=data)
    return EXIT_OK


def _trial_line(t: TuneTrial) -> str:
    settings = ", ".join(f"{k}={v}" for k, v in t.knobs.items()) or "(its own settings)"
    if t.status != "ok":
        return f"  {settings:<46} {t.status.replace('_', ' ')}: {t.message or t.verdict}"
    spread = f"±{50 * t.spread:.1f}%" if t.spread is not None else ""
    speed = f"{t.speedup:.2f}×" if t.speedup is not None else "-"
    return f"  {settings:<46} {t.median_ms or 0.0:>9.3f} ms {spread:>7} {speed:>7}"


def format_tune(doc: TuneResult) -> str:
    """Each combination's median over the sessions, its spread and speed-up; refusals and changed answers with
    their reason; the choice."""
    lines = [f"{doc.target} at batch {doc.batch} ({doc.mode}, {doc.sessions} sessions per setting):",
             f"  {'settings':<46} {'median':>12} {'spread':>7} {'speed':>7}", _trial_line(doc.default)]
    lines += [_trial_line(t) for t in doc.trials]
    if doc.best == doc.default.target:
        lines.append(f"Best: {doc.best} — no setting beat its own settings with the answers unchanged.")
    else:
        lines.append(f"Best: {doc.best}, {doc.best_speedup:.2f}× its own settings, answers unchanged. Use it as "
                     f"--backend {doc.best} (or --candidate) in compare, bench and batch.")
    return "\n".join(lines + [f"note: {n}" for n in doc.notes])
