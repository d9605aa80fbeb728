"""A batch's results, typed: a finished job as its results folder records it (`JobRecord`, RESULTS_DIR/jobs/<id>.json),
the matrix summarised (`BatchSummary`, RESULTS_DIR/summary.json and `trtlab batch --json`; docs/batch.md), and what
an evaluation's shard says (`EvalShardResult`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.core.results.common import JobDoc
from app.core.results.record import JSONValue, Record, key, optional


@dataclass(frozen=True)
class JobRecord(Record):
    """One finished job of a batch: the job (its place in the matrix and its spec), how it ended, the job runner's
    result (its ``data`` is the job's own result JSON, read by kind: `CompareResult`, `BenchResult`…), and the GPU
    it ran on (its index among the GPUs the batch saw, or on a Ray node its Ray GPU id; None: no GPU placement)."""

    job: Mapping[str, JSONValue] = field(default_factory=dict)
    status: str = ""
    result: Mapping[str, JSONValue] = field(default_factory=dict)
    finished_at: str = ""
    gpu: int | None = optional(None)

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
    """One job of a cell: its id (RESULTS_DIR/jobs/<id>.json), how it ended (done, failed, not run) and the GPU it
    ran on (None: no GPU placement)."""

    id: str = ""
    status: str = ""
    gpu: int | None = optional(None)


@dataclass(frozen=True)
class FailedJob(Record):
    kind: str = ""
    error: str = ""
    exit_reason: str = ""
    gpu: int | None = optional(None)


@dataclass(frozen=True)
class EvalShardResult(JobDoc):
    """What one shard of a batch's evaluation says (its answers went to the answer cache, for the final job): its
    ``shard`` (index, count), the ``images`` it ran, per target how many came from the ``cached`` answers and how
    many it ``computed``, and the ``seconds`` it took (app.core.evaluate: shards.py)."""

    shard: tuple[int, ...] = ()
    images: int = 0
    cached: Mapping[str, int] = field(default_factory=dict)
    computed: Mapping[str, int] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass(frozen=True)
class BatchCell(Record):
    """One cell of the matrix (model × backend × precision × GPU kind): its jobs, and what each kind of job that
    finished says. A key is written only where its job ran, in the order the jobs run (build, compare, diagnose,
    eval, bench), a value it had none for as null. `passed` is the cell's verdict: every tolerance judged in it met
    (its comparison's and its evaluation's), None where none was judged."""

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
    # eval: the dataset's main metric for this target, and for a candidate its change against the reference
    eval_dataset: str | None = optional(None)         # the dataset's folder
    eval_images: int | None = optional(None)          # images evaluated
    eval_metric: str | None = optional(None)          # map50, top1, miou or cer (fractions)
    eval_value: float | None = optional(None)         # this target's value
    eval_reference: str | None = optional(None)       # the reference's target (B:P); this cell's own when it is it
    eval_reference_value: float | None = optional(None)
    eval_delta: float | None = optional(None)         # this target − the reference
    eval_ci: tuple[float | None, ...] | None = optional(None)  # the delta's 95 % paired bootstrap interval
    eval_passed: bool | None = optional(None)         # its drop tolerances met; None for the reference
    eval_failures: tuple[str, ...] | None = optional(None)
    eval_cached: int | None = optional(None)          # of its images, how many came from the answer cache
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

    def accuracy_text(self) -> str:
        """The evaluation in a few words: 'top1 0.950 → 0.900 (−5.0 pts, 95 % CI −10.0 … 0.0) FAIL', 'top1 0.950
        (reference)'; empty where no evaluation filled the cell."""
        if self.eval_metric is None:
            return ""
        value = "—" if self.eval_value is None else f"{self.eval_value:.3f}"
        if self.eval_passed is None and self.eval_delta is None:
            return f"{self.eval_metric} {value} (reference)"
        ref = "—" if self.eval_reference_value is None else f"{self.eval_reference_value:.3f}"
        text = f"{self.eval_metric} {ref} → {value}"
        if self.eval_delta is not None:
            ci = self.eval_ci or ()
            interval = f", 95 % CI {_points(ci[0])} … {_points(ci[1])}" if len(ci) == 2 and None not in ci else ""
            text += f" ({_points(self.eval_delta)} pts{interval})"
        return text + ("" if self.eval_passed is None else " PASS" if self.eval_passed else " FAIL")


def _points(fraction: float | None) -> str:
    return "—" if fraction is None else f"{fraction * 100:+.1f}".replace("-", "−")


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
