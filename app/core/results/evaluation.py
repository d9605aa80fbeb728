"""`trtlab eval`'s result: a model's accuracy on a labelled dataset for the reference and each candidate, each
candidate's difference from the reference with its bootstrap interval, and whether it met the tolerances."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from app.core.results.common import JobDoc
from app.core.results.record import JSONValue, Record, optional

Metrics = Mapping[str, float | None]   # metric name → fraction (null where undefined)


@dataclass(frozen=True)
class ClassMapInfo(Record):
    """How the model's class indices were mapped to the dataset's categories: (model index, category id) pairs."""

    how: str = ""
    pairs: tuple[tuple[int, ...], ...] = ()
    unmatched: tuple[str, ...] = ()


@dataclass(frozen=True)
class DatasetInfo(Record):
    """The dataset evaluated: its folder, format, task, a one-line summary, the images used, the class map, and notes
    on it (what loading it noticed; under 50 images, that its intervals are wide)."""

    path: str = ""
    format: str = ""
    format_name: str = ""
    task: str = ""
    summary: str = ""
    images: int = 0
    class_map: ClassMapInfo | None = None
    notes: tuple[str, ...] = optional(factory=tuple)


@dataclass(frozen=True)
class PresetInfo(Record):
    """The preprocessing every image went through (app.core.evaluate.Preset's JSON) and it in words."""

    name: str = ""
    resize: str = ""
    size: tuple[int, ...] | None = None
    color: str = ""
    scale: float = 0.0
    mean: tuple[float, ...] = ()
    std: tuple[float, ...] = ()
    pad: float = 0.0
    limit: int = 0
    multiple: int = 1
    dynamic_width: bool = False
    layout: str = ""
    reason: str = ""
    describe: str = ""


@dataclass(frozen=True)
class WorstImage(Record):
    """An image on which a candidate loses against the reference: its path, the per-image metric of each, and a
    picture (a PNG data URI: the truth, the reference's answer and the candidate's side by side; "" if not drawn)."""

    image: str = ""
    reference: float | None = None
    candidate: float | None = None
    picture: str = optional("")


@dataclass(frozen=True)
class EvalRun(Record):
    """One target's accuracy on the dataset: the task's metrics, per class, (classification, segmentation) the
    confusion counts, rows the truth and columns the prediction, and each image's value of the per-image metric
    (`EvaluationResult.per_image_metric`) in the evaluation's order; null where it is undefined for the image."""

    name: str = ""
    metrics: Metrics = field(default_factory=dict)
    per_class: Mapping[str, Metrics] = field(default_factory=dict)
    confusion: tuple[tuple[int, ...], ...] | None = optional(None)
    values: tuple[float | None, ...] = optional(factory=tuple)


@dataclass(frozen=True)
class EvalCandidate(EvalRun):
    """A candidate's accuracy, its difference from the reference per metric (`delta`, candidate − reference, as
    fractions) with the 95 % paired bootstrap interval (`ci`: [low, high]), and the tolerances it failed."""

    passed: bool = True
    failures: tuple[str, ...] = ()
    delta: Metrics = field(default_factory=dict)
    ci: Mapping[str, tuple[float | None, ...]] = field(default_factory=dict)
    worst: tuple[WorstImage, ...] = optional(factory=tuple)

    def interval(self, metric: str) -> tuple[float, float] | None:
        """The metric's interval as two numbers; None where it is undefined."""
        low_high = self.ci.get(metric)
        if not low_high or len(low_high) != 2 or low_high[0] is None or low_high[1] is None:
            return None
        return float(low_high[0]), float(low_high[1])


@dataclass(frozen=True, kw_only=True)
class EvaluationResult(JobDoc):
    """`trtlab eval`: the dataset, the preset, the reference's accuracy and each candidate's against it. `per_image`
    is the JSON-lines file asked for ("" when none was), `per_image_metric` the metric of every run's `values`, and
    `cached` says per target how many images' answers came from the answer cache."""

    dataset: DatasetInfo = field(default_factory=DatasetInfo)
    preset: PresetInfo = field(default_factory=PresetInfo)
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    main_metric: str = ""
    output_kinds: Mapping[str, JSONValue] = field(default_factory=dict)
    reference: EvalRun = field(default_factory=EvalRun)
    candidates: tuple[EvalCandidate, ...] = ()
    tolerances: tuple[str, ...] = ()
    notes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    per_image: str = ""
    per_image_metric: str = optional("")
    cached: Mapping[str, int] = optional(factory=dict)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.candidates)
