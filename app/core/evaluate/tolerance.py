"""Tolerances on a candidate's accuracy drop against FP32: ``METRIC:POINTS``.

The value is the change of the candidate against FP32 that is still accepted, in percentage points of the metric:
``map50:-0.5`` accepts mAP@0.5 falling by at most 0.5 points (0.512 → 0.507 passes, → 0.506 fails), ``top1:-0.3``
a top-1 accuracy at most 0.3 points lower, ``miou:-1`` one point of mIoU. For the error rates, CER and WER, it is
the accepted increase: ``cer:+0.2`` lets CER rise by at most 0.2 points (2.1 % → 2.3 %). A tolerance that asks for
an improvement (``map50:+1``, ``cer:-0.2``) or a change no metric can make (beyond 100 points) is refused.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from app.core.errors import InputError

# metric: what it is; True where higher is better (the tolerance is the drop accepted), False for error rates.
DROP_METRICS = {"map50": ("COCO mAP@0.5", True), "map": ("COCO mAP@0.5:0.95", True),
                "mean_iou": ("mean IoU of matched boxes", True), "top1": ("top-1 accuracy", True),
                "top5": ("top-5 accuracy", True), "miou": ("mean IoU over classes", True),
                "dice": ("mean Dice over classes", True), "exact": ("lines read exactly", True),
                "cer": ("character error rate", False), "wer": ("word error rate", False)}
_ALIASES = {"map@0.5": "map50", "map_50": "map50", "map50-95": "map", "map@0.5:0.95": "map", "top-1": "top1",
            "top-5": "top5", "iou": "mean_iou"}
# Float noise: 0.512 - 0.507 is 0.00500000000000006, which should still meet map50:-0.5.
_SLACK_POINTS = 1e-9


class DropToleranceError(InputError):
    title = "Invalid tolerance"


@dataclass(frozen=True)
class DropTolerance:
    """``metric`` and the change ``points`` accepted (percentage points; ≤ 0 for a score, ≥ 0 for an error rate)."""

    metric: str
    points: float

    @classmethod
    def parse(cls, text: str) -> DropTolerance:
        name, sep, value = str(text).partition(":")
        metric = _ALIASES.get(name.strip().lower(), name.strip().lower())
        example = "map50:-0.5, top1:-0.3, miou:-1 or cer:+0.2"
        if metric not in DROP_METRICS or not sep:
            raise DropToleranceError(
                f"'{text}' is not a tolerance on a dataset metric.",
                fix=f"Write METRIC:POINTS with METRIC one of {', '.join(DROP_METRICS)}, e.g. {example}.")
        try:
            points = float(value)
        except ValueError:
            points = math.nan
        if not math.isfinite(points):
            raise DropToleranceError(f"'{text}': '{value.strip()}' is not a number of percentage points.",
                                     fix=f"Write e.g. {example}.")
        what, higher = DROP_METRICS[metric]
        if higher and points > 0:
            raise DropToleranceError(
                f"'{text}' asks {what} to rise by {points:g} points; a tolerance is the drop accepted.",
                fix=f"Write {metric}:-{points:g} to accept a drop of at most {points:g} points.")
        if not higher and points < 0:
            raise DropToleranceError(
                f"'{text}' asks the {what} to fall by {-points:g} points; a tolerance is the rise accepted.",
                fix=f"Write {metric}:+{-points:g} to accept a rise of at most {-points:g} points.")
        if higher and points < -100:
            raise DropToleranceError(f"'{text}': {what} runs from 0 to 100 %, so it cannot drop {-points:g} points.",
                                     fix=f"Write a drop between 0 and 100 points, e.g. {metric}:-1.")
        return cls(metric, points)

    def __str__(self) -> str:
        return f"{self.metric}:{self.points:+g}" if self.points else f"{self.metric}:0"

    @property
    def higher_is_better(self) -> bool:
        return DROP_METRICS[self.metric][1]

    def met(self, delta: float) -> bool:
        """Whether a difference candidate − FP32, as a fraction (−0.004 is 0.4 points), is within the tolerance.

        An undefined difference (nan) is not met."""
        if not math.isfinite(delta):
            return False
        change = delta * 100
        return change >= self.points - _SLACK_POINTS if self.higher_is_better else change <= self.points + _SLACK_POINTS

    def check(self, deltas: Mapping[str, float]) -> str | None:
        """None when met, else why not in words; ``deltas`` are candidate − FP32 by metric, as fractions."""
        if self.metric not in deltas:
            return f"{self.metric} was not measured on this dataset (measured: {', '.join(deltas) or 'nothing'})"
        delta = deltas[self.metric]
        if self.met(delta):
            return None
        if not math.isfinite(delta):
            return f"{self.metric} could not be computed"
        return f"{self.metric} changed {delta * 100:+.2f} points, beyond {self}"
