"""A batch's results folder: one JSON file per finished job (written atomically as it finishes), and the summary.

    RESULTS_DIR/jobs/<id>.json   {"job": BatchJob JSON, "status", "result": JobResult JSON, "finished_at"}
    RESULTS_DIR/summary.json     the matrix: one row per cell (model × backend × precision × GPU kind)

A rerun reads `jobs/` to skip what has finished (done or failed: a crashed job is a result, not something to retry);
`--force` runs everything again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from app.batch.matrix import BatchJob
from app.core.fileio import atomic_write_text
from app.core.safe_read import UnsafeFile, read_json_file

FINISHED = ("done", "failed")


def job_file(results: Path, job_id: str) -> Path:
    return results / "jobs" / f"{job_id}.json"


def write_job_result(results: Path, job: BatchJob, result: dict[str, Any]) -> Path:
    """Record a finished job; a cancelled one is not recorded (the next run does it again)."""
    doc = {"job": job.to_json(), "status": result.get("status", "failed"), "result": result,
           "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    path = job_file(results, job.id)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(doc, indent=1, default=str) + "\n")
    return path


JOB_RESULT_LIMIT = 256 * 2**20  # one job's result JSON; a larger file is not one trtlab wrote


def read_job_results(results: Path) -> dict[str, dict[str, Any]]:
    """Every recorded job by id; damaged files (a crash mid-write cannot make one, a hand edit can) are skipped."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted((results / "jobs").glob("*.json")):
        try:
            doc = read_json_file(str(path), "batch job result", JOB_RESULT_LIMIT)
        except (OSError, ValueError, UnsafeFile):
            continue
        if isinstance(doc, dict) and doc.get("status") in FINISHED:
            out[path.stem] = doc
    return out


def pending(jobs: Iterable[BatchJob], results: Path, force: bool = False) -> tuple[list[BatchJob], list[BatchJob]]:
    """(to run, already finished): a rerun skips finished jobs unless forced."""
    done = {} if force else read_job_results(results)
    todo: list[BatchJob] = []
    skipped: list[BatchJob] = []
    for job in jobs:
        (skipped if job.id in done else todo).append(job)
    return todo, skipped


def summarize(jobs: list[BatchJob], results: Path) -> dict[str, Any]:
    """The matrix as rows, one per cell: accuracy against the reference, latency and speed-up over FP32 on the
    same backend and GPU kind, whether the engine built, the worst layer; and the count of jobs per status."""
    recorded = read_job_results(results)
    cells: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    counts = {"total": len(jobs), "done": 0, "failed": 0, "not run": 0}
    for job in jobs:
        row = cells.setdefault(job.cell(), {"model": job.model, "backend": job.backend, "precision": job.precision,
                                            "gpu": job.gpu, "jobs": {}, "failed": []})
        doc = recorded.get(job.id)
        status = doc["status"] if doc else "not run"
        counts[status] = counts.get(status, 0) + 1
        row["jobs"][job.kind] = {"id": job.id, "status": status}
        if doc is None:
            continue
        result = doc.get("result") or {}
        if status != "done":
            row["failed"].append({"kind": job.kind, "error": result.get("error", ""),
                                  "exit_reason": result.get("exit_reason", "")})
            continue
        _fill(row, job.kind, result.get("data") or {})
    rows = list(cells.values())
    fp32 = {(r["model"], r["backend"], r["gpu"]): r.get("median_ms") for r in rows if r["precision"] == "fp32"}
    for r in rows:
        base = fp32.get((r["model"], r["backend"], r["gpu"]))
        if base and r.get("median_ms"):
            r["speedup"] = base / r["median_ms"]
    return {"jobs": counts, "cells": rows}


def _fill(row: dict[str, Any], kind: str, data: dict[str, Any]) -> None:
    if kind == "compare":
        cand = (data.get("candidates") or [{}])[0]
        outs = cand.get("outputs") or []
        cosines = [o["cosine"] for o in outs if o.get("cosine") is not None]
        row.update({"passed": cand.get("passed"), "cosine": min(cosines) if cosines else None,
                    "max_abs": max((o.get("max_abs") or 0.0 for o in outs), default=None),
                    "worst": cand.get("worst")})
    elif kind == "bench":
        lat = data.get("latency_ms") or {}
        row.update({"median_ms": lat.get("median"), "p90_ms": lat.get("p90"), "unstable": data.get("unstable")})
    elif kind == "build":
        ran: dict[str, int] = {}
        for layer in data.get("layers") or []:
            ran[layer.get("precision", "?")] = ran.get(layer.get("precision", "?"), 0) + 1
        row.update({"built": bool(data.get("ok", True)), "engine_layers": ran,
                    "mismatches": len(data.get("mismatches") or [])})
    elif kind == "diagnose":
        row.update({"worst_layer": data.get("worst"), "first_nonfinite": data.get("first_nonfinite")})


def write_summary(results: Path, matrix_path: Path, summary: dict[str, Any]) -> Path:
    path = results / "summary.json"
    atomic_write_text(path, json.dumps({"matrix": str(matrix_path), **summary}, indent=1, default=str) + "\n")
    return path


def summary_table(summary: dict[str, Any]) -> str:
    """The matrix on a terminal: one line per cell."""
    head = f"{'model':<26} {'backend':<9} {'precision':<10} {'gpu':<8} {'cosine':>10} {'median ms':>10} " \
           f"{'speed-up':>9}  status"
    lines = [head, "-" * len(head)]
    for r in summary["cells"]:
        cos = "" if r.get("cosine") is None else f"{r['cosine']:.6f}"
        med = "" if r.get("median_ms") is None else f"{r['median_ms']:.3f}"
        speed = "" if r.get("speedup") is None else f"{r['speedup']:.2f}×"
        if r["failed"]:
            status = "FAILED " + ", ".join(f["kind"] for f in r["failed"])
        elif r.get("passed") is False:
            status = "tolerance not met"
        elif any(j["status"] == "not run" for j in r["jobs"].values()):
            status = "not run"
        elif r.get("built"):
            layers = r.get("engine_layers") or {}
            mix = ", ".join(f"{n} {p}" for p, n in sorted(layers.items(), key=lambda kv: -kv[1]))
            status = f"engine built ({mix})" if mix else "engine built"
        else:
            status = "ok"
        lines.append(f"{Path(r['model']).stem[:26]:<26} {r['backend']:<9} {r['precision'][:10]:<10} "
                     f"{(r['gpu'] or '-')[:8]:<8} {cos:>10} {med:>10} {speed:>9}  {status}")
    c = summary["jobs"]
    lines.append(f"{c['total']} jobs: {c.get('done', 0)} done, {c.get('failed', 0)} failed, "
                 f"{c.get('not run', 0)} not run")
    return "\n".join(lines)


def model_project(results: Path, model: str) -> Any:
    """A model's finished jobs of a batch as a Project (app.core.project), so the window can open the model with
    them as if they had run there: comparisons and benchmarks in the Results dock, a diagnosis, an engine."""
    from app.core.project import Project, ProjectResult, cli_command, now_iso

    recorded = [d for d in read_job_results(results).values()
                if d["status"] == "done" and (d.get("job") or {}).get("model") == model]
    recorded.sort(key=lambda d: d.get("finished_at", ""))
    items: list = []
    shapes: dict[str, Any] = {}
    reference, digest = None, ""
    for doc in recorded:
        job, spec = doc["job"], doc["job"]["spec"]
        digest = digest or job.get("model_sha256", "")  # recorded at expansion: no hashing on the GUI's thread
        shapes = shapes or dict(spec.get("shapes") or {})
        if job["kind"] == "bench" and job["precision"] == "fp32" and reference is None:
            reference = spec.get("target")
        items.append(ProjectResult(kind=job["kind"], spec=spec, data=(doc.get("result") or {}).get("data") or {},
                                   title=job.get("label", ""), finished_at=doc.get("finished_at", ""),
                                   command=cli_command(spec)))
    return Project(model=model, model_sha256=digest,
                   shapes={k: [int(d) for d in v] for k, v in shapes.items()}, results=items,
                   settings={"bench_reference": reference} if reference else {}, saved_at=now_iso())
