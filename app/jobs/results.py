"""Saving and loading job results: JSON plus `.npz` files, never pickle."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from app.core.fileio import atomic_write_text
from app.jobs.protocol import JobResult

if TYPE_CHECKING:
    import numpy as np


def save_result(path: str | os.PathLike[str], result: JobResult) -> None:
    """Write the result as JSON, atomically.

    Non-finite numbers (a relative error of inf, a NaN metric) are written as the ``NaN`` and
    ``Infinity`` tokens that Python's json reads back, rather than failing the save.
    """
    atomic_write_text(path, json.dumps(result.to_json(), indent=2) + "\n")


def load_result(path: str | os.PathLike[str]) -> JobResult:
    """Read a result written by `save_result` (keys from newer versions are ignored)."""
    with open(path, encoding="utf-8") as fh:
        return JobResult.from_json(json.load(fh))


def load_arrays(npz_path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """All arrays of an ``.npz`` file, loaded without pickle (object arrays are refused), sizes checked first."""
    from app.core.safe_read import load_npz

    return load_npz(str(npz_path), "job's result arrays", member_limit=RESULT_ARRAYS_LIMIT,
                    total_limit=RESULT_ARRAYS_LIMIT)


RESULT_ARRAYS_LIMIT = 8 * 2**30  # a job's outputs for every sample: large models' outputs, not a bomb
