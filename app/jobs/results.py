"""Saving and loading job results: JSON plus `.npz` (never pickle)."""

from __future__ import annotations

import json
import os

import numpy as np

from app.core.fileio import atomic_write_text
from app.jobs.protocol import JobResult


def save_result(path: str | os.PathLike[str], result: JobResult) -> None:
    atomic_write_text(path, json.dumps(result.to_json(), indent=2, allow_nan=False))


def load_result(path: str | os.PathLike[str]) -> JobResult:
    with open(path, encoding="utf-8") as fh:
        return JobResult.from_json(json.load(fh))


def load_arrays(npz_path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    with np.load(npz_path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}
