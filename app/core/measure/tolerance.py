"""Tolerances: ``METRIC:VALUE``, a floor for similarity metrics and a ceiling for error metrics.

Element-wise metrics (cos, max_abs, mean_abs, max_rel, snr_db) apply to every output; the task metrics of an
output kind (``app.core.measure.answers``) apply to the outputs of that kind and are not applicable elsewhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from app.core.errors import TrtlabError

# metric: (the OutputMetrics attribute or task value, "min" when the tolerance is a floor, "max" when a ceiling)
METRICS = {"cos": ("cosine", "min"), "max_abs": ("max_abs", "max"), "mean_abs": ("mean_abs", "max"),
           "max_rel": ("max_rel", "max"), "snr_db": ("snr_db", "min"), "top1": ("top1", "min"),
           "top5": ("top5", "min"), "det_missed": ("det_missed", "max"), "det_extra": ("det_extra", "max"),
           "det_iou": ("det_iou", "min"), "mask_iou": ("mask_iou", "min"), "psnr_db": ("psnr_db", "min"),
           "token_agreement": ("token_agreement", "min"), "edit_distance": ("edit_distance", "max"),
           "audio_snr_db": ("audio_snr_db", "min"), "lsd_db": ("lsd_db", "max")}
ELEMENTWISE = ("cos", "max_abs", "mean_abs", "max_rel", "snr_db")
# What each metric can be: a tolerance outside it can never be met (or is always met), so it is refused.
RANGES = {"cos": (-1.0, 1.0), "top1": (0.0, 1.0), "top5": (0.0, 1.0), "max_abs": (0.0, math.inf),
          "mean_abs": (0.0, math.inf), "max_rel": (0.0, math.inf), "det_missed": (0.0, math.inf),
          "det_extra": (0.0, math.inf), "det_iou": (0.0, 1.0), "mask_iou": (0.0, 1.0), "token_agreement": (0.0, 1.0),
          "edit_distance": (0.0, math.inf), "lsd_db": (0.0, math.inf)}
_ALIASES = {"cosine": "cos", "snr": "snr_db", "top-1": "top1", "top-5": "top5", "psnr": "psnr_db",
            "missed": "det_missed", "extra": "det_extra", "iou": "det_iou", "edit": "edit_distance",
            "tokens": "token_agreement", "lsd": "lsd_db", "audio_snr": "audio_snr_db"}


class ToleranceError(TrtlabError):
    title = "Invalid tolerance"


class Measured(Protocol):
    def value(self, metric: str) -> float | None: ...


@dataclass
class Tolerance:
    """``metric:value`` — a floor for similarity metrics, a ceiling for error metrics and counts."""

    metric: str
    value: float

    @classmethod
    def parse(cls, text: str) -> Tolerance:
        metric, _, value = str(text).partition(":")
        metric = metric.strip().lower()
        metric = _ALIASES.get(metric, metric)
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if metric not in METRICS or not math.isfinite(number):
            raise ToleranceError(f"'{text}' is not a tolerance.",
                                 fix=f"Write METRIC:VALUE with METRIC one of {', '.join(METRICS)}, e.g. cos:0.999 "
                                     "or det_missed:0.")
        lo, hi = RANGES.get(metric, (-math.inf, math.inf))
        if not lo <= number <= hi:
            span = f"between {lo:g} and {hi:g}" if math.isfinite(hi) else f"at least {lo:g}"
            example = {"cos": "cos:0.999", "top1": "top1:0.99"}.get(metric, f"{metric}:0.01")
            raise ToleranceError(f"{text}: {metric} is always {span}, so {number:g} is out of range.",
                                 fix=f"Write e.g. {example}.")
        return cls(metric, number)

    def __str__(self) -> str:
        """METRIC:VALUE, the value as short as it reads back exactly (cos:0.999; cos:0.9999999, never cos:1)."""
        short = f"{self.value:g}"
        return f"{self.metric}:{short if float(short) == self.value else repr(self.value)}"

    @property
    def floor(self) -> bool:
        return METRICS[self.metric][1] == "min"

    def check(self, m: Measured) -> str | None:
        """None when met (or not applicable: a task metric on an output of another kind), else why not."""
        got = m.value(self.metric)
        if got is None:
            return None if self.metric not in ELEMENTWISE else f"{self.metric} could not be computed"
        ok = got >= self.value if self.floor else got <= self.value
        sign = "<" if self.floor else ">"
        return None if ok else f"{self.metric} {fmt_metric(self.metric, got)} {sign} {self.value:g}"

    def passes(self, m: Measured) -> bool:
        return self.check(m) is None


def fmt_metric(metric: str, v: float) -> str:
    """Cosine-like values show enough decimals to tell 0.9999995 from 1; counts show as integers."""
    if metric in ("cos", "cosine", "top1", "top5", "mask_iou", "det_iou", "token_agreement") and 0 < 1 - v < 1:
        return f"{v:.{min(12, max(6, 2 - math.floor(math.log10(1 - v))))}f}"
    if metric in ("det_missed", "det_extra", "edit_distance"):
        return f"{v:.0f}"
    return f"{v:.6g}"


DEFAULT_TOLERANCES = (Tolerance("cos", 0.99),)
