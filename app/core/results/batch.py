"""A batch's results, typed: a finished job as its results folder records it (`JobRecord`, RESULTS_DIR/jobs/<id>.json)
and the matrix summarised (`BatchSummary`, RESULTS_DIR/summary.json and `trtlab batch --json`; docs/batch.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.core.results.record import JSONValue, Record, key, optional


@dataclass(frozen=True)
class JobRecord(Record):
    """One finished job of a batch: the job (its place in the matrix and its spec), how it ended, the job runner's
    result (its ``data`` is the job's own result JSON, read by kind: `CompareResult`, `BenchResult`…)."""

    job: Mapping[str, JSONValue] = field(default_factory=dict)
    status: str = ""
    result: Mapping[str, JSONValue] = field(default_factory=dict)
    finished_at: str = ""

    @property
    def done(self) -> bool:
        return self.status == "done"

    @property
    def data(self) -> Mapping[str, Any]:
        """The job's own result JSON (a failed job's: the error's details)."""
        data = self.result.get("data")
        return data if isinstance(data, Mapping) else {}

    @property
    def error(self) -> str:
        return _text(self.result.get("error"))

    @property
    def exit_reason(self) -> str:
        return _text(self.result.get("exit_reason"))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


@dataclass(frozen=True)
class JobCounts(Record):
    """The matrix's jobs by how they ended."""

    total: int = 0
    done: int = 0
    failed: int = 0
    not_run: int = key("not run", 0)


@dataclass(frozen=True)
class CellJob(Record):
    """One job of a cell: its id (RESULTS_DIR/jobs/<id>.json) and how it ended (done, failed, not run)."""

    id: str = ""
    status: str = ""


@dataclass(frozen=True)
class FailedJob(Record):
    kind: str = ""
    error: str = ""
    exit_reason: str = ""


@dataclass(frozen=True)
class BatchCell(Record):
    """One cell of the matrix (model × backend × precision × GPU kind): its jobs, and what each kind of job that
    finished says. A key is written only where its job ran, in the order the jobs run (build, compare, diagnose,
    bench), a value it had none for as null."""

    model: str = ""
    backend: str = ""
    precision: str = ""
    gpu: str | None = None
    jobs: Mapping[str, CellJob] = field(default_factory=dict)
    failed: tuple[FailedJob, ...] = ()
    # build
    built: bool | None = optional(None)
    engine_layers: Mapping[str, int] | None = optional(None)
    mismatches: int | None = optional(None)
    # compare
    passed: bool | None = optional(None)
    cosine: float | None = optional(None)
    max_abs: float | None = optional(None)
    worst: str | None = optional(None)
    # diagnose
    worst_layer: str | None = optional(None)
    first_nonfinite: str | None = optional(None)
    # bench
    median_ms: float | None = optional(None)
    p90_ms: float | None = optional(None)
    unstable: bool | None = optional(None)
    speedup: float | None = optional(None)  # against FP32 on the same backend and GPU kind

    def filled(self, **values: Any) -> BatchCell:
        """A copy with some of what a job says set: written even where a value is null."""
        return self.replace(**values, present=self.present | frozenset(values))

    @property
    def not_run(self) -> bool:
        return any(j.status == "not run" for j in self.jobs.values())


@dataclass(frozen=True)
class BatchSummary(Record):
    """The matrix as rows, one per cell, and the jobs per status. summary.json adds the matrix file; `trtlab batch
    --json` adds the command, the results folder, the summary's file and the report page."""

    kind: str = optional("")
    matrix: str = optional("")
    results: str = optional("")
    summary_file: str = optional("")
    report: str = optional("")
    jobs: JobCounts = JobCounts()
    cells: tuple[BatchCell, ...] = ()
