"""`trtlab batch MATRIX.yaml`: every model × precision × backend × GPU kind of a matrix file, compared, benchmarked
(and built, diagnosed, evaluated on a dataset), on this machine or Ray; finished jobs are kept, so a rerun resumes
(see docs/batch.md)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from app.cli.checks import CliInputError
from app.cli.jobrun import interrupted_exit, signal_name
from app.cli.output import EXIT_JOB_FAILED, EXIT_NOT_MET, EXIT_OK, write_json

if TYPE_CHECKING:
    from app.batch import BatchJob, LocalExecutor
    from app.batch.ray_exec import RayExecutor
    from app.jobs import JobResult

BAR_WIDTH = 24


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("batch", help="run a matrix of models × precisions × backends (a YAML file)")
    p.add_argument("matrix", metavar="MATRIX.yaml")
    p.add_argument("-o", "--out", metavar="RESULTS_DIR",
                   help="where results go (default: MATRIX-results beside the matrix file); a rerun skips the jobs "
                        "already there")
    p.add_argument("--jobs", type=int, default=2, metavar="N",
                   help="jobs at once on this machine (default 2; benchmarks always run alone); with several GPUs, "
                        "GPU jobs go one per GPU beside these (the matrix's gpus: entry)")
    p.add_argument("--cluster", metavar="ray://HOST:PORT|local-ray",
                   help='run on a Ray cluster (pip install "trtlab[cluster]"); local-ray starts one here')
    p.add_argument("--models", choices=("auto", "shared", "ship"), default="auto",
                   help="how models reach cluster nodes: a path every node shares, or shipped through Ray's object "
                        "store by content (default: ship to ray:// clusters, share with local-ray)")
    p.add_argument("--force", action="store_true", help="run every job again, also those already finished")
    p.add_argument("--dry-run", action="store_true", help="list the jobs and exit")
    p.add_argument("--json", metavar="PATH|-", help="write the summary as JSON to PATH, or stdout with -")


def cmd_batch(args: argparse.Namespace) -> int:
    from app.batch import LocalExecutor, batch_summary, expand, load_matrix, pending, summary_table, write_summary

    matrix = load_matrix(args.matrix)
    jobs = expand(matrix)
    results = Path(args.out) if args.out else matrix.path.with_name(f"{matrix.name}-results")
    if results.exists() and not results.is_dir():
        raise CliInputError(f"-o '{results}' is a file.", fix="Give a folder for the results.")
    todo, skipped = pending(jobs, results, force=args.force)
    if args.dry_run:
        finished = {j.id for j in skipped}
        for job in jobs:
            sys.stdout.write(f"{job.id}  {'finished' if job.id in finished else 'to run   '}  {job.label}\n")
        return EXIT_OK
    executor: RayExecutor | LocalExecutor
    if args.cluster:
        from app.batch.ray_exec import RayExecutor

        executor = RayExecutor(args.cluster, models=args.models, results=results, gpus=matrix.gpus)
        where = f"Ray at {args.cluster}"
    else:
        executor = LocalExecutor(jobs=args.jobs, gpus=matrix.gpus)
        where = f"this machine, {args.jobs} at once"
        _check_backends(todo)  # on a cluster the nodes, not this machine, have the backends
    try:
        executor.check(todo)
        placement = getattr(executor, "placement", None)
        if placement is not None and placement.devices:
            what = "jobs" if placement.every else "GPU jobs"
            where += f"; {what} one per GPU on GPU {', '.join(map(str, placement.devices))}"
        results.mkdir(parents=True, exist_ok=True)
        sys.stderr.write(f"trtlab batch: {len(jobs)} jobs in {matrix.path.name}; {len(skipped)} already finished, "
                         f"{len(todo)} to run ({where}); results in {results}\n")
        ok = executor.run(todo, _Progress(len(jobs), len(skipped), results), on_interrupt=_said_interrupt)
    finally:
        close = getattr(executor, "close", None)
        if close is not None:
            close()
    summary = batch_summary(jobs, results)
    path = write_summary(results, matrix.path, summary)
    from app.batch.report import write_reports

    page = write_reports(results, jobs, summary, matrix.path)
    out = sys.stderr if args.json == "-" else sys.stdout
    out.write(summary_table(summary) + "\n")
    sys.stderr.write(f"Report: {page}\n")
    if args.json:
        write_json(summary.replace(kind="batch", matrix=str(matrix.path), results=str(results.resolve()),
                                   summary_file=str(path.resolve()), report=str(page.resolve())).to_json(), args.json)
    if not ok:
        sys.stderr.write(f"trtlab batch: interrupted ({signal_name(executor.interrupted or 2)}); finished jobs are "
                         "kept, run the same command again to resume.\n")
        return interrupted_exit(executor.interrupted or 2)
    if summary.jobs.failed:
        return EXIT_JOB_FAILED
    if any(c.passed is False for c in summary.cells):
        return EXIT_NOT_MET
    return EXIT_OK


def _check_backends(jobs: list) -> None:
    """Every backend the jobs need, there before anything starts (a build needs only the builder)."""
    from app.backends import BackendUnavailable, get_backend

    needs: dict[str, bool] = {}
    for job in jobs:
        for target in job.spec.targets():
            needs[target.backend] = needs.get(target.backend, False) or job.kind != "build"
    for backend, runs in sorted(needs.items()):
        a = get_backend(backend).availability()
        can = a.available if runs else bool(getattr(a, "can_build", a.available))
        if not can:
            reason = a.reason if runs else (getattr(a, "build_reason", "") or a.reason)
            raise BackendUnavailable(f"{backend}: {reason}", fix=a.install_hint or "Remove it from the matrix.")


def _said_interrupt(signum: int, forced: bool) -> None:
    what = "stopping the running jobs now" if forced else \
        "cancelling the running jobs (press Ctrl+C again to stop them at once)"
    sys.stderr.write(f"  {signal_name(signum)}: {what}\n")
    sys.stderr.flush()


class _Progress:
    """Records each finished job and prints a line with a bar over the whole matrix."""

    def __init__(self, total: int, finished: int, results: Path) -> None:
        self.total, self.finished, self.results = total, finished, results
        self.start = time.monotonic()

    def __call__(self, job: BatchJob, result: JobResult) -> None:
        from app.batch import write_job_result

        status = getattr(result, "status", "failed")
        if status != "cancelled":
            write_job_result(self.results, job, result.to_json())
            self.finished += 1
        filled = round(BAR_WIDTH * self.finished / max(1, self.total))
        bar = "█" * filled + "░" * (BAR_WIDTH - filled)
        took = getattr(result, "seconds", 0.0)
        on = "" if job.device is None else f" on GPU {job.device}"
        line = f"  [{self.finished:>{len(str(self.total))}}/{self.total} {bar}] {status:<9} {job.label}{on} " \
               f"({took:.1f} s{_shard_counts(job, result) if status == 'done' else ''})"
        if status == "failed":
            line += f"\n      {getattr(result, 'error', '')}"
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _shard_counts(job: BatchJob, result: JobResult) -> str:
    """An evaluation's shard: how many images it ran and how many of those came from the answer cache."""
    from app.core.results import EvalShardResult, ResultFormatError

    if job.shard is None or result.data is None:
        return ""
    try:
        shard = EvalShardResult.from_json(result.data)
    except ResultFormatError:
        return ""
    cached, computed = sum(shard.cached.values()), sum(shard.computed.values())
    return f", {shard.images} images, {cached} of {cached + computed} answers from the cache"
