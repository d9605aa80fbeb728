"""Batches: a matrix of models × precisions × backends × GPU kinds (a YAML file) expanded into typed job specs with
stable ids (`load_matrix`, `expand`), run by an executor (`LocalExecutor`: this machine, trtlab's job runner), each
result recorded as it finishes and summarised (`write_job_result`, `pending`, `batch_summary`, `summary_table`)."""

from __future__ import annotations

from app.batch.local import LocalExecutor, gpu_matches, local_gpus
from app.batch.matrix import STEPS, BatchJob, Matrix, MatrixError, expand, job_id, load_matrix, parse_matrix
from app.batch.store import (
    batch_summary,
    model_project,
    pending,
    read_job_results,
    summarize,
    summary_table,
    write_job_result,
    write_summary,
)

__all__ = ["STEPS", "BatchJob", "LocalExecutor", "Matrix", "MatrixError", "batch_summary", "expand", "gpu_matches",
           "job_id", "load_matrix", "local_gpus", "model_project", "parse_matrix", "pending", "read_job_results",
           "summarize", "summary_table", "write_job_result", "write_summary"]
