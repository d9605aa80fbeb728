"""A batch's results folder: one JSON file per finished job (written atomically as it finishes), and the summary.

    RESULTS_DIR/jobs/<id>.json   {"job": BatchJob JSON, "status", "result": JobResult JSON, "finished_at"}
    RESULTS_DIR/summary.json     the matrix: one row per cell (model × backend × precision × GPU kind)

Both are read and written as typed records (app.core.results: `JobRecord`, `BatchSummary`).

A rerun reads `jobs/` to skip what has finished (done or failed: a crashed job is a result, not something to retry);
`--force` runs everything again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from app.batch.matrix import BatchJob
from app.core.fileio import atomic_write_text
from app.core.results import (
    BatchCell,
    BatchSummary,
    BenchResult,
    BuildResult,
    CellJob,
    CompareResult,
    DiagnoseResult,
    EvaluationResult,
    FailedJob,
    JobCounts,
    JobRecord,
    ResultFormatError,
)
from app.core.safe_read import UnsafeFile, read_json_file

FINISHED = ("done", "failed")


def job_file(results: Path, job_id: str) -> Path:
    return results / "jobs" / f"{job_id}.json"


def write_job_result(results: Path, job: BatchJob, result: dict[str, Any]) -> Path:
    """Record a finished job; a cancelled one is not recorded (the next run does it again)."""
    record = JobRecord(job=job.to_json(), status=result.get("status", "failed"), result=result,
                       finished_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"), gpu=job.device)
    path = job_file(results, job.id)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(record.to_json(), indent=1, default=str) + "\n")
    return path


JOB_RESULT_LIMIT = 256 * 2**20  # one job's result JSON; a larger file is not one trtlab wrote


def read_job_results(results: Path) -> dict[str, JobRecord]:
    """Every recorded job by id; damaged files (a crash mid-write cannot make one, a hand edit can) are skipped."""
    out: dict[str, JobRecord] = {}
    for path in sorted((results / "jobs").glob("*.json")):
        try:
            record = JobRecord.from_json(read_json_file(str(path), "batch job result", JOB_RESULT_LIMIT))
        except (OSError, ValueError, UnsafeFile):  # ResultFormatError is a ValueError
            continue
        if record.status in FINISHED:
            out[path.stem] = record
    return out


def pending(jobs: Iterable[BatchJob], results: Path, force: bool = False) -> tuple[list[BatchJob], list[BatchJob]]:
    """(to run, already finished): a rerun skips finished jobs unless forced."""
    done = {} if force else read_job_results(results)
    todo: list[BatchJob] = []
    skipped: list[BatchJob] = []
    for job in jobs:
        (skipped if job.id in done else todo).append(job)
    return todo, skipped


def batch_summary(jobs: list[BatchJob], results: Path) -> BatchSummary:
    """The matrix as rows, one per cell: accuracy against the reference, latency and speed-up over FP32 on the
    same backend and GPU kind, whether the engine built, the worst layer, the dataset's main metric; and the count
    of jobs per status. An evaluation fills the cell of each of its targets; its shards only list themselves (their
    answers are in the final job's result)."""
    recorded = read_job_results(results)
    cells: dict[tuple[str, str, str, str], BatchCell] = {}
    counts = {"done": 0, "failed": 0, "not run": 0}
    for job in jobs:
        record = recorded.get(job.id)
        status = record.status if record is not None else "not run"
        counts[status] = counts.get(status, 0) + 1
        evaluated = _evaluation(record.data) if record is not None and record.done and job.fills and \
            job.shard is None else None
        targets = [name for name, _backend, _precision in job.fills] or [""]
        for (model, backend, precision, gpu), name in zip(job.cells(), targets, strict=True):
            cell = cells.get((model, backend, precision, gpu)) or BatchCell(model=model, backend=backend,
                                                                            precision=precision, gpu=job.gpu)
            ran_on = None if record is None else record.gpu
            cell = cell.replace(jobs={**cell.jobs, job.step: CellJob(id=job.id, status=status, gpu=ran_on)})
            if record is not None and not record.done:
                cell = cell.replace(failed=(*cell.failed, FailedJob(kind=job.step, error=record.error,
                                                                    exit_reason=record.exit_reason, gpu=ran_on)))
            elif evaluated is not None:
                cell = _fill_eval(cell, evaluated, name)
            elif record is not None and not job.fills:
                cell = _fill(cell, job.kind, record.data)
            cells[(model, backend, precision, gpu)] = cell
    fp32 = {(c.model, c.backend, c.gpu): c.median_ms for c in cells.values() if c.precision == "fp32"}
    rows = []
    for c in cells.values():
        base = fp32.get((c.model, c.backend, c.gpu))
        rows.append(c.filled(speedup=base / c.median_ms) if base and c.median_ms else c)
    return BatchSummary(jobs=JobCounts(total=len(jobs), done=counts["done"], failed=counts["failed"],
                                       not_run=counts["not run"]), cells=tuple(rows))


def summarize(jobs: list[BatchJob], results: Path) -> dict[str, Any]:
    """`batch_summary` as JSON (what summary.json holds but the matrix's path)."""
    return batch_summary(jobs, results).to_json()


def _fill(cell: BatchCell, kind: str, data: Mapping[str, Any]) -> BatchCell:
    """The cell with what a finished job of `kind` says; a result of a shape no job writes (a file edited by hand)
    says nothing."""
    try:
        if kind == "compare":
            compared = CompareResult.from_json(data)
            cand = compared.candidates[0] if compared.candidates else None
            outs = cand.outputs if cand is not None else ()
            cosines = [o.cosine for o in outs if o.cosine is not None]
            return cell.filled(passed=_verdict(cell.passed, cand.passed) if cand is not None else cell.passed,
                               cosine=min(cosines) if cosines else None,
                               max_abs=max((o.max_abs or 0.0 for o in outs), default=None),
                               worst=cand.worst if cand is not None else None)
        if kind == "bench":
            bench = BenchResult.from_json(data)
            return cell.filled(median_ms=bench.latency_ms.median, p90_ms=bench.latency_ms.p90,
                               unstable=bench.unstable)
        if kind == "build":
            build = BuildResult.from_json(data)
            ran: dict[str, int] = {}
            for layer in build.layers:
                ran[layer.precision] = ran.get(layer.precision, 0) + 1
            return cell.filled(built=build.ok, engine_layers=ran, mismatches=len(build.mismatches))
        if kind == "diagnose":
            diagnosed = DiagnoseResult.from_json(data)
            return cell.filled(worst_layer=diagnosed.worst, first_nonfinite=diagnosed.first_nonfinite)
    except ResultFormatError:
        pass
    return cell


def _evaluation(data: Mapping[str, Any]) -> EvaluationResult | None:
    """An evaluation's result; None for one of a shape no job writes (a file edited by hand)."""
    try:
        return EvaluationResult.from_json(data)
    except ResultFormatError:
        return None


def _fill_eval(cell: BatchCell, result: EvaluationResult, target: str) -> BatchCell:
    """The cell of `target` with what its evaluation says: the main metric, and for a candidate its change against
    the reference, the interval and whether its drop tolerances were met (the cell's verdict with them)."""
    main = result.main_metric
    common = {"eval_dataset": result.dataset.path, "eval_images": result.dataset.images, "eval_metric": main,
              "eval_reference": result.reference.name, "eval_reference_value": result.reference.metrics.get(main),
              "eval_cached": result.cached.get(target)}
    if target == result.reference.name:
        return cell.filled(**common, eval_value=result.reference.metrics.get(main))
    cand = next((c for c in result.candidates if c.name == target), None)
    if cand is None:
        return cell
    interval = cand.interval(main)
    return cell.filled(**common, eval_value=cand.metrics.get(main), eval_delta=cand.delta.get(main),
                       eval_ci=tuple(interval) if interval is not None else None, eval_passed=cand.passed,
                       eval_failures=tuple(cand.failures), passed=_verdict(cell.passed, cand.passed))


def _verdict(before: bool | None, now: bool) -> bool:
    """The cell's verdict once another job judged it: met only where every job's tolerances were."""
    return now if before is None else before and now


def write_summary(results: Path, matrix_path: Path, summary: BatchSummary | Mapping[str, Any]) -> Path:
    """RESULTS_DIR/summary.json: the summary and the matrix file it is of."""
    if not isinstance(summary, BatchSummary):
        summary = BatchSummary.from_json(summary)
    path = results / "summary.json"
    doc = summary.replace(matrix=str(matrix_path)).to_json()
    atomic_write_text(path, json.dumps(doc, indent=1, default=str) + "\n")
    return path


def summary_table(summary: BatchSummary) -> str:
    """The matrix on a terminal: one line per cell."""
    head = f"{'model':<26} {'backend':<9} {'precision':<10} {'gpu':<8} {'cosine':>10} {'median ms':>10} " \
           f"{'speed-up':>9}  status"
    lines = [head, "-" * len(head)]
    for r in summary.cells:
        cos = "" if r.cosine is None else f"{r.cosine:.6f}"
        med = "" if r.median_ms is None else f"{r.median_ms:.3f}"
        speed = "" if r.speedup is None else f"{r.speedup:.2f}×"
        if r.failed:
            status = "FAILED " + ", ".join(f.kind + ("" if f.gpu is None else f" on GPU {f.gpu}") for f in r.failed)
        elif r.passed is False:
            status = "tolerance not met"
            if r.eval_passed is False:
                status += ": " + r.accuracy_text()
        elif r.eval_metric is not None:
            status = r.accuracy_text()
        elif r.not_run:
            status = "not run"
        elif r.built:
            layers = r.engine_layers or {}
            mix = ", ".join(f"{n} {p}" for p, n in sorted(layers.items(), key=lambda kv: -kv[1]))
            status = f"engine built ({mix})" if mix else "engine built"
        else:
            status = "ok"
        on = sorted({j.gpu for j in r.jobs.values() if j.gpu is not None})
        if on:
            status += f" (GPU {', '.join(map(str, on))})"
        lines.append(f"{Path(r.model).stem[:26]:<26} {r.backend:<9} {r.precision[:10]:<10} "
                     f"{(r.gpu or '-')[:8]:<8} {cos:>10} {med:>10} {speed:>9}  {status}")
    c = summary.jobs
    lines.append(f"{c.total} jobs: {c.done} done, {c.failed} failed, {c.not_run} not run")
    return "\n".join(lines)


def model_project(results: Path, model: str) -> Any:
    """A model's finished jobs of a batch as a Project (app.core.project), so the window can open the model with
    them as if they had run there: comparisons and benchmarks in the Results dock, a diagnosis, an engine, an
    evaluation (its final job: a shard's result is only its counts)."""
    from app.core.project import Project, ProjectResult, now_iso

    recorded = [r for r in read_job_results(results).values() if r.done and r.job.get("model") == model
                and not _shard_record(r)]
    recorded.sort(key=lambda r: r.finished_at)
    items: list = []
    shapes: dict[str, Any] = {}
    reference, digest = None, ""
    for record in recorded:
        job, spec = record.job, record.job["spec"]
        digest = digest or job.get("model_sha256", "")  # recorded at expansion: no hashing on the GUI's thread
        shapes = shapes or dict(spec.get("shapes") or {})
        if job["kind"] == "bench" and job["precision"] == "fp32" and reference is None:
            reference = spec.get("target")
        items.append(ProjectResult(kind=job["kind"], spec=spec, data=dict(record.data), title=job.get("label", ""),
                                   finished_at=record.finished_at, command=command_line(spec)))
    return Project(model=model, model_sha256=digest,
                   shapes={k: [int(d) for d in v] for k, v in shapes.items()}, results=items,
                   settings={"bench_reference": reference} if reference else {}, saved_at=now_iso())


def _shard_record(record: JobRecord) -> bool:
    """Whether a recorded job is an evaluation's shard (its spec names its slice)."""
    spec = record.job.get("spec")
    return isinstance(spec, Mapping) and spec.get("shard") is not None


def command_line(spec: Mapping[str, Any]) -> str:
    """The trtlab command that runs a job of this spec again; empty for a job no project command line writes yet
    (an evaluation: its spec, in the job's file, has every setting)."""
    from app.core.project import ProjectError, cli_command

    try:
        return cli_command(spec)
    except ProjectError:
        return ""
