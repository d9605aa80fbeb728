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
                       finished_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
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
    same backend and GPU kind, whether the engine built, the worst layer; and the count of jobs per status."""
    recorded = read_job_results(results)
    cells: dict[tuple[str, str, str, str], BatchCell] = {}
    counts = {"done": 0, "failed": 0, "not run": 0}
    for job in jobs:
        cell = cells.get(job.cell()) or BatchCell(model=job.model, backend=job.backend, precision=job.precision,
                                                  gpu=job.gpu)
        record = recorded.get(job.id)
        status = record.status if record is not None else "not run"
        counts[status] = counts.get(status, 0) + 1
        cell = cell.replace(jobs={**cell.jobs, job.kind: CellJob(id=job.id, status=status)})
        if record is not None and not record.done:
            cell = cell.replace(failed=(*cell.failed, FailedJob(kind=job.kind, error=record.error,
                                                                exit_reason=record.exit_reason)))
        elif record is not None:
            cell = _fill(cell, job.kind, record.data)
        cells[job.cell()] = cell
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
            return cell.filled(passed=cand.passed if cand is not None else None,
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
            status = "FAILED " + ", ".join(f.kind for f in r.failed)
        elif r.passed is False:
            status = "tolerance not met"
        elif r.not_run:
            status = "not run"
        elif r.built:
            layers = r.engine_layers or {}
            mix = ", ".join(f"{n} {p}" for p, n in sorted(layers.items(), key=lambda kv: -kv[1]))
            status = f"engine built ({mix})" if mix else "engine built"
        else:
            status = "ok"
        lines.append(f"{Path(r.model).stem[:26]:<26} {r.backend:<9} {r.precision[:10]:<10} "
                     f"{(r.gpu or '-')[:8]:<8} {cos:>10} {med:>10} {speed:>9}  {status}")
    c = summary.jobs
    lines.append(f"{c.total} jobs: {c.done} done, {c.failed} failed, {c.not_run} not run")
    return "\n".join(lines)


def model_project(results: Path, model: str) -> Any:
    """A model's finished jobs of a batch as a Project (app.core.project), so the window can open the model with
    them as if they had run there: comparisons and benchmarks in the Results dock, a diagnosis, an engine."""
    from app.core.project import Project, ProjectResult, cli_command, now_iso

    recorded = [r for r in read_job_results(results).values() if r.done and r.job.get("model") == model]
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
                                   finished_at=record.finished_at, command=cli_command(spec)))
    return Project(model=model, model_sha256=digest,
                   shapes={k: [int(d) for d in v] for k, v in shapes.items()}, results=items,
                   settings={"bench_reference": reference} if reference else {}, saved_at=now_iso())
