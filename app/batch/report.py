"""A batch's HTML: one report per model (app.reports, from the jobs' recorded results) and the matrix page linking
them, written into the results folder."""

from __future__ import annotations

import hashlib
from pathlib import Path

from app.batch.matrix import BatchJob
from app.batch.store import command_line, read_job_results
from app.core.fileio import atomic_write_text
from app.core.results import BatchSummary


def write_reports(results: Path, jobs: list[BatchJob], summary: BatchSummary, matrix: Path) -> Path:
    """RESULTS_DIR/reports/<model>.html for each model with finished jobs, and RESULTS_DIR/report.html (the matrix);
    returns the matrix page."""
    from app.reports import build_matrix_report, build_report, current_environment

    recorded = read_job_results(results)
    env = current_environment()
    links: dict[str, str] = {}
    failures: list[dict] = []
    for model in dict.fromkeys(j.model for j in jobs):
        items = []
        for job in (j for j in jobs if j.model == model):
            record = recorded.get(job.id)
            if record is None:
                continue
            on = "" if record.gpu is None else f" (GPU {record.gpu})"
            if not record.done:
                failures.append({"label": job.label + on, "error": record.error, "exit_reason": record.exit_reason})
                continue
            if job.shard is not None:
                continue  # an evaluation's shard: its answers are in the final evaluation's result
            spec = job.spec.to_json()
            items.append({"kind": job.kind, "spec": spec, "data": dict(record.data), "title": job.label + on,
                          "finished_at": record.finished_at, "command": command_line(spec)})
        if not items:
            continue
        name = f"{Path(model).stem}-{hashlib.sha256(model.encode()).hexdigest()[:8]}.html"
        atomic_write_text(results / "reports" / name, build_report(items, environment=env,
                                                                   title=f"trtlab batch: {Path(model).name}"))
        links[model] = f"reports/{name}"
    page = results / "report.html"
    atomic_write_text(page, build_matrix_report(summary.to_json(), links, matrix=str(matrix), failures=failures))
    return page
