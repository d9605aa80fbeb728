"""`compare`'s result, typed: each candidate's outputs with their metrics and answer verdicts, the kinds, the
pictures of the answers, the plots' data (docs/cli.md, `compare --json`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.core.results.common import JobDoc, Placement, RandomOps
from app.core.results.evaluation import PresetInfo
from app.core.results.record import JSONValue, Record, converted, key, optional

TASK_KINDS = ("image", "classes", "detections", "yolo", "sequence", "audio")


@dataclass(frozen=True)
class Task(Record):
    """An output's answer metrics: the keys of its kind (docs/cli.md `task`), and whether the reference's answer
    was empty. `error`: the output's values did not read as its kind."""

    # detections and yolo
    matched: int | None = optional(None)
    missed: int | None = optional(None)
    extra_boxes: int | None = optional(None, json_key="extra")
    mean_iou: float | None = optional(None)
    score_threshold: float | None = optional(None)
    max_score_change: float | None = optional(None)
    nms_boundary: int | None = optional(None)
    # image
    mask_iou: float | None = optional(None)
    psnr_db: float | None = optional(None)
    probability: bool | None = optional(None)
    # classes
    top1: float | None = optional(None)
    top5: float | None = optional(None)
    # sequence
    token_agreement: float | None = optional(None)
    edit_distance: int | None = optional(None)
    ctc: bool | None = optional(None)
    # audio
    audio_snr_db: float | None = optional(None)
    lsd_db: float | None = optional(None)
    rate: int | None = optional(None)
    rate_known: bool | None = optional(None)
    seconds: float | None = optional(None)
    # every kind but classes
    empty_samples: int = optional(0)
    samples: int = optional(0)
    empty_reference: bool = optional(False)
    empty_reason: str = optional("")
    error: str = optional("")

    @property
    def failed_to_read(self) -> bool:
        return "error" in self.present or bool(self.error)


@dataclass(frozen=True)
class OutputResult(Record):
    """One output of a candidate against the reference (docs/cli.md: the compare output keys, then extras)."""

    name: str
    shape: tuple[int, ...] | None = None
    max_abs: float | None = None
    mean_abs: float | None = None
    median_abs: float | None = None
    p99_abs: float | None = None
    max_rel: float | None = None
    mean_rel: float | None = None
    cosine: float | None = None
    snr_db: float | None = None
    nan: int = 0
    inf: int = 0
    ref_nan: int = 0
    ref_inf: int = 0
    top1: float | None = None
    top5: float | None = None
    dtype: str | None = None
    ref_dtype: str | None = None
    dtype_mismatch: JSONValue = None
    shape_mismatch: JSONValue = None
    count: int = 0
    compared: int = 0
    exact_equal: int = 0
    new_nonfinite: int = 0
    quantiles: str | None = None
    passed: bool = True
    failures: tuple[str, ...] = ()
    kind: str = "tensor"
    kind_spec: str = "tensor"
    task: Task | None = None
    judged_by: tuple[str, ...] = ()

    @property
    def judged_by_answer(self) -> bool:
        """Judged by its task's metrics (a kind with answers whose values read as it)."""
        return self.task is not None and not self.task.failed_to_read

    @property
    def empty_reference(self) -> bool:
        """Its task had nothing to judge: the reference's answer was empty on every sample."""
        return self.task is not None and self.task.empty_reference


@dataclass(frozen=True)
class CandidateResult(Record):
    name: str
    passed: bool = False
    outputs: tuple[OutputResult, ...] = ()
    worst: str = ""
    tolerances: tuple[str, ...] = ()
    unused: tuple[str, ...] = key("unused_tolerances", ())

    def output(self, name: str) -> OutputResult | None:
        return next((o for o in self.outputs if o.name == name), None)


@dataclass(frozen=True)
class KindInfo(Record):
    """The kind an output was judged as, why, and whether the user gave it (docs/cli.md `output_kinds`)."""

    kind: str = "tensor"
    spec: str = "tensor"
    reason: str = ""
    user: bool = False
    dropped: str = optional("")
    group: tuple[str, ...] = optional(factory=tuple)
    part_of: str = optional("")


@dataclass(frozen=True)
class SampleFacts(Record):
    """One sample's own verdict facts in the answers (the keys of its kind)."""

    mask_iou: float | None = optional(None)
    psnr_db: float | None = optional(None)
    top1: bool | None = optional(None)
    edit_distance: int | None = optional(None)
    audio_snr_db: float | None = optional(None)
    lsd_db: float | None = optional(None)
    matched: int | None = optional(None)
    missed: int | None = optional(None)
    extra_boxes: int | None = optional(None, json_key="extra")
    ref_empty: bool | None = optional(None)


@dataclass(frozen=True)
class TextPair(Record):
    """One sample's decoded text: the reference's and the candidate's."""

    ref: str | None = None
    cand: str | None = None


@dataclass(frozen=True)
class AnswerPictures(Record):
    """A candidate's pictures of one output, per sample (data URIs), and each sample's facts."""

    cand: tuple[JSONValue, ...] = optional(factory=tuple)
    diff: tuple[JSONValue, ...] = optional(factory=tuple)
    diff_max: tuple[float | None, ...] = optional(factory=tuple)
    text: tuple[TextPair, ...] = optional(factory=tuple)
    sound: tuple[JSONValue, ...] = optional(factory=tuple)
    per_sample: tuple[SampleFacts, ...] = optional(factory=tuple)


@dataclass(frozen=True)
class OutputAnswers(Record):
    kind: str = ""
    candidates: Mapping[str, AnswerPictures] = optional(factory=dict)
    ref: tuple[JSONValue, ...] | None = optional(None)
    ref_sound: tuple[JSONValue, ...] = optional(factory=tuple)


@dataclass(frozen=True)
class Answers(Record):
    """The answers as pictures: the input photos, then per output the reference's and each candidate's."""

    inputs: tuple[JSONValue, ...] = ()
    outputs: Mapping[str, OutputAnswers] = optional(factory=dict)
    photos: bool = optional(False)


@dataclass(frozen=True)
class Hist(Record):
    """A histogram as JSON lists: bin edges and counts."""

    edges: tuple[float, ...] = ()
    counts: tuple[float, ...] = ()


def _read_pair(v: Any) -> tuple[tuple[float, ...], tuple[float, ...]]:
    a, b = v
    return tuple(a), tuple(b)


def _write_pair(v: tuple[tuple[float, ...], tuple[float, ...]]) -> list[list[float]]:
    return [list(v[0]), list(v[1])]


@dataclass(frozen=True)
class ValueHists(Record):
    """An output's value histograms, the reference's and the candidate's, on shared edges: (edges, counts)."""

    ref: tuple[tuple[float, ...], tuple[float, ...]] | None = converted(_read_pair, _write_pair, None,
                                                                        is_optional=True)
    cand: tuple[tuple[float, ...], tuple[float, ...]] | None = converted(_read_pair, _write_pair, None,
                                                                         is_optional=True)


@dataclass(frozen=True)
class PlotData(Record):
    """One output's plots: |difference| histogram (edges, counts), value histograms per side, a (ref, cand)
    scatter subsample."""

    abs_diff: tuple[tuple[float, ...], tuple[float, ...]] | None = converted(_read_pair, _write_pair, None,
                                                                             is_optional=True)
    values: ValueHists | None = optional(None)
    scatter: tuple[tuple[float, ...], tuple[float, ...]] | None = converted(_read_pair, _write_pair, None,
                                                                            is_optional=True)


@dataclass(frozen=True)
class CompareResult(JobDoc):
    """A comparison: the reference, every candidate, what the outputs mean, and the answers as pictures."""

    reference: str = ""
    samples: int = 0
    candidates: tuple[CandidateResult, ...] = ()
    rel_eps: float | None = optional(None)
    snr_cap_db: float | None = optional(None)
    method: str = optional("")
    random_ops: RandomOps | None = optional(None)
    inputs: str = optional("")
    preprocessing: str = optional("")           # the preset the photos went through, in words (and why)
    preset: PresetInfo | None = optional(None)  # the same preset as app.core.evaluate.Preset's JSON
    random_data: bool = optional(False)
    notes: Mapping[str, tuple[str, ...]] = optional(factory=dict)
    shapes: Mapping[str, tuple[JSONValue, ...]] = optional(factory=dict)
    tolerances: tuple[str, ...] = optional(factory=tuple)
    plots: Mapping[str, Mapping[str, PlotData]] = optional(factory=dict)
    output_kinds: Mapping[str, KindInfo] = optional(factory=dict)
    placement: Mapping[str, Placement] = optional(factory=dict)
    answers: Answers | None = optional(None)

    def candidate(self, name: str) -> CandidateResult | None:
        return next((c for c in self.candidates if c.name == name), None)

    def kind_of(self, output: str) -> str:
        info = self.output_kinds.get(output)
        return info.kind if info is not None else ""
