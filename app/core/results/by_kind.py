"""Each job's result type by the job's kind: where a finished job's JSON arrives (the window, a report, a project),
it is read once, as the type its kind names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

from app.core.results.compare import CompareResult
from app.core.results.evaluation import EvaluationResult
from app.core.results.imports import ImportComparison, ImportResult, KitResult
from app.core.results.jobs import (
    BenchResult,
    BuildResult,
    DiagnoseResult,
    FallbackResult,
    ProfileResult,
    RunResult,
    VariantResult,
)
from app.core.results.record import ResultFormatError
from app.core.results.speed import SweepResult, TuneResult

JobResultType: TypeAlias = (CompareResult | BenchResult | ProfileResult | DiagnoseResult | FallbackResult
                            | BuildResult | RunResult | VariantResult | EvaluationResult | ImportResult
                            | ImportComparison | KitResult | SweepResult | TuneResult)

RESULT_TYPES: dict[str, type[JobResultType]] = {
    "compare": CompareResult, "bench": BenchResult, "profile": ProfileResult, "diagnose": DiagnoseResult,
    "fallback": FallbackResult, "build": BuildResult, "run": RunResult, "variant": VariantResult,
    "eval": EvaluationResult, "import": ImportResult, "import_compare": ImportComparison, "kit": KitResult,
    "sweep": SweepResult, "tune": TuneResult}


def read_job_result(kind: str, doc: Mapping[str, Any]) -> JobResultType:
    """A job's JSON as its kind's result type (`ResultFormatError` for an unknown kind or JSON of another shape)."""
    cls = RESULT_TYPES.get(kind)
    if cls is None:
        raise ResultFormatError(f"'{kind}' is not a job whose result trtlab reads (known: {', '.join(RESULT_TYPES)})")
    return cls.from_json(doc)
