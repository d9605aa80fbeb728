"""Calibration data for INT8 quantization: a sample reader that reports progress and can be cancelled.

ONNX Runtime's calibrators pull samples through a reader (``get_next``); this one counts them, calls
``progress(fraction, "Calibrating: sample i of n")`` and polls ``cancelled()`` before each sample,
raising :class:`CalibrationCancelled` so that a job stops inside a long calibration. It also supports
``set_range``, which lets the calibrator take the samples a few at a time instead of holding every
sample's intermediate tensors at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from app.core.errors import TrtlabError

CALIB_METHODS = ("minmax", "entropy", "percentile")

ProgressFn = Callable[[float | None, str], None]
CancelFn = Callable[[], bool]


class CalibrationError(TrtlabError):
    """Calibration samples that do not fit the model."""

    title = "Invalid calibration data"


class CalibrationCancelled(TrtlabError):
    title = "Cancelled"


def check_method(method: str) -> str:
    if method not in CALIB_METHODS:
        raise CalibrationError(f"Unknown calibration method '{method}'.", fix=f"Use one of {', '.join(CALIB_METHODS)}.")
    return method


def ort_method(method: str) -> Any:  # onnxruntime.quantization.CalibrationMethod
    from onnxruntime.quantization import CalibrationMethod

    return {"minmax": CalibrationMethod.MinMax, "entropy": CalibrationMethod.Entropy,
            "percentile": CalibrationMethod.Percentile}[check_method(method)]


class SampleReader:
    """Feeds samples to ONNX Runtime's calibrator (its ``CalibrationDataReader`` protocol)."""

    def __init__(self, samples: Iterable[Mapping[str, np.ndarray]], input_names: list[str], *,
                 progress: ProgressFn | None = None, cancelled: CancelFn | None = None,
                 span: tuple[float, float] = (0.0, 1.0), dtypes: Mapping[str, np.dtype | None] | None = None) -> None:
        self.samples = list(samples)
        self.input_names = list(input_names)
        self.progress = progress
        self.cancelled = cancelled
        self.span = span
        self.dtypes = dict(dtypes or {})
        self.fed = 0
        self._next = 0
        self._end = len(self.samples)
        if not self.samples:
            raise CalibrationError("No calibration samples were given.",
                                   fix="Give at least one sample (random data, a .npz file or a folder).")
        for i, sample in enumerate(self.samples):
            missing = [n for n in self.input_names if n not in sample]
            if missing:
                raise CalibrationError(
                    f"Calibration sample {i + 1} has no value for input(s) {', '.join(map(repr, missing))}.",
                    fix=f"Each sample needs every model input: {', '.join(map(repr, self.input_names))}.")
            for name, want in self.dtypes.items():
                have = np.asarray(sample[name]).dtype if name in sample else None
                if want is not None and have is not None and have != want \
                        and not np.can_cast(have, want, casting="same_kind"):
                    raise CalibrationError(f"Calibration sample {i + 1}: input '{name}' holds {have} values but the "
                                           f"model takes {want}.", fix=f"Give '{name}' as {want}.")

    def __len__(self) -> int:
        return len(self.samples)

    def set_range(self, start_index: int, end_index: int) -> None:
        self._next, self._end = int(start_index), min(int(end_index), len(self.samples))

    def get_next(self) -> dict[str, np.ndarray] | None:
        if self._next >= self._end:
            return None
        if self.cancelled is not None and self.cancelled():
            raise CalibrationCancelled(f"Calibration was cancelled after {self.fed} of {len(self.samples)} "
                                       "sample(s).")
        i = self._next
        self._next += 1
        self.fed += 1
        if self.progress is not None:
            lo, hi = self.span
            self.progress(lo + (hi - lo) * i / len(self.samples),
                          f"Calibrating: sample {i + 1} of {len(self.samples)}")
        sample = self.samples[i]
        out = {}
        for n in self.input_names:
            arr, want = np.asarray(sample[n]), self.dtypes.get(n)
            out[n] = arr.astype(want) if want is not None and arr.dtype != want else arr
        return out

    def __iter__(self) -> Iterator[dict[str, np.ndarray]]:
        return self

    def __next__(self) -> dict[str, np.ndarray]:
        item = self.get_next()
        if item is None:
            raise StopIteration
        return item
