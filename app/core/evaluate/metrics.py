"""Accuracy against a labelled dataset: one streaming accumulator per task, each keeping a few numbers per image.

Every accumulator takes ``add(image_id, truth, prediction)`` one image at a time and keeps only a compact record of
that image (counts, a sparse pixel confusion, edit distances; never the image), so memory grows by a few bytes to a
few kilobytes per image. ``result()`` gives the dataset's metrics, ``per_image()`` one value per image (what "the
images where a precision loses most" are sorted by) and ``records()`` the per-image records from which any resample
of the images recomputes the dataset's metrics (``app.core.evaluate.bootstrap``).

Values are fractions (top-1 0.761, mIoU 0.652, CER 0.021), never percentages. Detection lives in ``coco_map.py``.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from app.core.errors import InputError

ImageId = Hashable
IGNORE_INDEX = 255
# Rows of resamples handed to a records object at once: bounds the memory of one bootstrap step.
_ROWS = 64


class EvaluationInputError(InputError):
    """A label or a prediction that does not fit the task (a class id beyond the classes, masks of two sizes)."""

    title = "Cannot evaluate"


class Records(Protocol):
    """Per-image records of one run, the dataset's metrics recomputable under any weighting of its images."""

    @property
    def image_ids(self) -> tuple[ImageId, ...]: ...

    def __len__(self) -> int: ...

    def values(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        """Each metric for each row of ``weights`` (resamples × images: how often each image was drawn)."""
        ...


@dataclass(frozen=True)
class EvalResult:
    """One run's metrics on a dataset: ``metrics`` (name → fraction), ``per_class`` (class → name → fraction)."""

    task: str
    images: int
    metrics: Mapping[str, float]
    per_class: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    # K×K counts, rows the truth and columns the prediction (classification and segmentation only).
    confusion: tuple[tuple[int, ...], ...] | None = None
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "task": self.task, "images": self.images, "metrics": {k: json_number(v) for k, v in self.metrics.items()},
            "per_class": {c: {k: json_number(v) for k, v in m.items()} for c, m in self.per_class.items()}}
        if self.confusion is not None:
            out["confusion"] = [list(row) for row in self.confusion]
        if self.notes:
            out["notes"] = list(self.notes)
        return out


@dataclass(frozen=True)
class PerImage:
    """One value per image (``nan`` where it is undefined), named by ``metric``; ``higher_is_better`` says which
    way a loss goes."""

    metric: str
    higher_is_better: bool
    image_ids: tuple[ImageId, ...]
    values: np.ndarray

    def to_json(self) -> dict[str, object]:
        return {"metric": self.metric, "higher_is_better": self.higher_is_better,
                "images": [{"image": str(i), "value": json_number(float(v))}
                           for i, v in zip(self.image_ids, self.values, strict=True)]}


def json_number(v: float) -> float | None:
    """JSON has no NaN: an undefined metric is written as null."""
    return None if v is None or not math.isfinite(v) else float(v)


def class_name(names: Sequence[str] | Mapping[int, str] | None, k: int) -> str:
    """The name of class ``k``: from the labels when they name it, else its index."""
    if names is None:
        return str(k)
    if isinstance(names, Mapping):
        return str(names.get(k, k))
    return str(names[k]) if 0 <= k < len(names) else str(k)


def weighted_ratio(weights: np.ndarray, numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """sum(w·num) / sum(w·den) for each row of weights; nan where the denominator is 0."""
    num = weights @ numerator.astype(np.float64)
    den = weights @ denominator.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


# --- classification ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ClassificationRecords:
    """Each image's true class, predicted class and whether the truth was among the five best."""

    image_ids: tuple[ImageId, ...]
    truth: np.ndarray
    top1: np.ndarray
    in_top5: np.ndarray
    num_classes: int

    def __len__(self) -> int:
        return len(self.image_ids)

    def values(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        ones = np.ones(len(self), dtype=np.float64)
        out = {"top1": weighted_ratio(weights, self.truth == self.top1, ones)}
        if self.num_classes >= 5:
            out["top5"] = weighted_ratio(weights, self.in_top5, ones)
        return out


class ClassificationAccumulator:
    """Top-1, top-5 (with at least five classes), the K×K confusion and per-class accuracy.

    ``truth`` is the class index; ``prediction`` the model's K scores (the best is the answer, the first of equal
    scores wins), class indices ranked best first (an integer array), or anything with such a ``top``.
    """

    task = "classification"

    def __init__(self, num_classes: int, names: Sequence[str] | Mapping[int, str] | None = None) -> None:
        if num_classes < 1:
            raise ValueError("num_classes must be at least 1")
        self.num_classes = num_classes
        self.names = names
        self._ids: list[ImageId] = []
        self._truth: list[int] = []
        self._top1: list[int] = []
        self._top5: list[bool] = []

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, image_id: ImageId, truth: int, prediction: Any) -> None:
        k = self.num_classes
        label = int(truth)
        if hasattr(prediction, "top"):
            prediction = np.asarray(prediction.top, dtype=np.int64)
        if not 0 <= label < k:
            raise EvaluationInputError(f"Image {image_id}: class {label} is not one of the model's {k} classes.",
                                       fix="Check the labels file or the class map of the dataset.")
        pred = np.asarray(prediction).reshape(-1)
        if pred.size == 0:
            raise EvaluationInputError(f"Image {image_id}: the prediction is empty.")
        if np.issubdtype(pred.dtype, np.integer):
            ranked = pred[:5]
        else:
            if pred.size != k:
                raise EvaluationInputError(f"Image {image_id}: {pred.size} scores for {k} classes.",
                                           fix="Give the number of classes the model's output has.")
            ranked = np.argsort(-pred.astype(np.float64), kind="stable")[:5]
        if not 0 <= int(ranked[0]) < k:
            raise EvaluationInputError(f"Image {image_id}: predicted class {int(ranked[0])} is not one of {k}.")
        self._ids.append(image_id)
        self._truth.append(label)
        self._top1.append(int(ranked[0]))
        self._top5.append(bool(np.any(ranked == label)))

    def records(self) -> ClassificationRecords:
        return ClassificationRecords(tuple(self._ids), np.asarray(self._truth, dtype=np.int32),
                                     np.asarray(self._top1, dtype=np.int32), np.asarray(self._top5, dtype=bool),
                                     self.num_classes)

    def confusion(self) -> np.ndarray:
        """K×K counts: row the true class, column the predicted one."""
        k = self.num_classes
        flat = np.asarray(self._truth, dtype=np.int64) * k + np.asarray(self._top1, dtype=np.int64)
        return np.bincount(flat, minlength=k * k).reshape(k, k)

    def result(self) -> EvalResult:
        rec = self.records()
        values = {name: float(v[0]) for name, v in rec.values(np.ones((1, len(rec)))).items()}
        conf = self.confusion()
        per_class = {}
        for k in range(self.num_classes):
            n = int(conf[k].sum())
            if n:
                per_class[class_name(self.names, k)] = {"accuracy": float(conf[k, k] / n), "images": float(n)}
        return EvalResult(self.task, len(rec), values, per_class, tuple(tuple(int(v) for v in r) for r in conf))

    def per_image(self) -> PerImage:
        rec = self.records()
        return PerImage("correct", True, rec.image_ids, (rec.truth == rec.top1).astype(np.float64))


# --- semantic segmentation -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SegmentationRecords:
    """Each image's pixel confusion, sparse: the flat (truth·K + prediction) cells it touches and their counts."""

    image_ids: tuple[ImageId, ...]
    num_classes: int
    offsets: np.ndarray  # image i's cells are cells[offsets[i]:offsets[i + 1]]
    cells: np.ndarray
    counts: np.ndarray

    def __len__(self) -> int:
        return len(self.image_ids)

    def confusions(self, weights: np.ndarray) -> np.ndarray:
        """rows × K × K pixel counts, each image's confusion weighted."""
        k = self.num_classes
        image = np.repeat(np.arange(len(self)), np.diff(self.offsets))
        out = np.zeros((weights.shape[0], k * k), dtype=np.float64)
        for start in range(0, weights.shape[0], 8):
            rows = weights[start:start + 8]
            contrib = rows[:, image] * self.counts[None, :]
            index = self.cells[None, :] + (np.arange(rows.shape[0]) * k * k)[:, None]
            out[start:start + rows.shape[0]] = np.bincount(index.ravel(), contrib.ravel(),
                                                           minlength=rows.shape[0] * k * k).reshape(-1, k * k)
        return out.reshape(-1, k, k)

    def values(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        iou, dice = iou_dice(self.confusions(weights))
        return {"miou": _nanmean(iou), "dice": _nanmean(dice)}


def iou_dice(confusion: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-class IoU = TP/(TP+FP+FN) and Dice = 2TP/(2TP+FP+FN) of (… × K × K) confusions; nan for a class in
    neither the truth nor the prediction."""
    tp = np.diagonal(confusion, axis1=-2, axis2=-1).astype(np.float64)
    truth = confusion.sum(axis=-1)
    pred = confusion.sum(axis=-2)
    union = truth + pred - tp
    with np.errstate(invalid="ignore", divide="ignore"):
        iou = np.where(union > 0, tp / np.where(union > 0, union, 1), np.nan)
        dice = np.where(union > 0, 2 * tp / np.where(union > 0, truth + pred, 1), np.nan)
    return iou, dice


def _nanmean(a: np.ndarray) -> np.ndarray:
    present = ~np.isnan(a)
    n = present.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, np.where(present, a, 0).sum(axis=-1) / np.maximum(n, 1), np.nan)


class SegmentationAccumulator:
    """mIoU and Dice from one K×K pixel confusion over the dataset (pixels whose truth is 255 ignored), each the mean
    over the classes present in the truth or the prediction; per image, that image's mIoU.

    ``truth`` and ``prediction`` are H×W class maps of the same size (or anything with such ``labels``).
    """

    task = "segmentation"

    def __init__(self, num_classes: int, names: Sequence[str] | Mapping[int, str] | None = None,
                 ignore_index: int = IGNORE_INDEX) -> None:
        if num_classes < 1:
            raise ValueError("num_classes must be at least 1")
        self.num_classes = num_classes
        self.names = names
        self.ignore_index = ignore_index
        self._ids: list[ImageId] = []
        self._cells: list[np.ndarray] = []
        self._counts: list[np.ndarray] = []
        self._total = np.zeros((num_classes, num_classes), dtype=np.int64)

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, image_id: ImageId, truth: Any, prediction: Any) -> None:
        k = self.num_classes
        t = np.asarray(getattr(truth, "labels", truth))
        p = np.asarray(getattr(prediction, "labels", prediction))
        if t.shape != p.shape:
            raise EvaluationInputError(f"Image {image_id}: the mask is {t.shape} but the prediction {p.shape}.",
                                       fix="Map the prediction back to the mask's size before evaluating.")
        keep = t != self.ignore_index
        t = t[keep].astype(np.int64)
        p = p[keep].astype(np.int64)
        for what, values in (("mask", t), ("prediction", p)):
            bad = values[(values < 0) | (values >= k)]
            if bad.size:
                raise EvaluationInputError(
                    f"Image {image_id}: the {what} holds class {int(bad[0])}, beyond the model's {k} classes.",
                    fix=f"Check the class map; pixels to skip should be {self.ignore_index}.")
        dense = np.bincount(t * k + p, minlength=k * k)
        cells = np.flatnonzero(dense)
        self._ids.append(image_id)
        self._cells.append(cells.astype(np.int32))
        self._counts.append(dense[cells].astype(np.int64))
        self._total += dense.reshape(k, k)

    def records(self) -> SegmentationRecords:
        sizes = [len(c) for c in self._cells]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        cells = np.concatenate(self._cells) if self._cells else np.zeros(0, np.int32)
        counts = np.concatenate(self._counts) if self._counts else np.zeros(0, np.int64)
        return SegmentationRecords(tuple(self._ids), self.num_classes, offsets, cells, counts)

    def result(self) -> EvalResult:
        iou, dice = iou_dice(self._total)
        metrics = {"miou": float(_nanmean(iou)), "dice": float(_nanmean(dice))}
        per_class = {class_name(self.names, k): {"iou": float(iou[k]), "dice": float(dice[k]),
                                                  "pixels": float(self._total[k].sum())}
                     for k in range(self.num_classes) if not math.isnan(iou[k])}
        conf = tuple(tuple(int(v) for v in row) for row in self._total)
        return EvalResult(self.task, len(self), metrics, per_class, conf)

    def per_image(self) -> PerImage:
        k = self.num_classes
        values = np.empty(len(self))
        for i, (cells, counts) in enumerate(zip(self._cells, self._counts, strict=True)):
            dense = np.zeros(k * k, dtype=np.int64)
            dense[cells] = counts
            values[i] = float(_nanmean(iou_dice(dense.reshape(k, k))[0]))
        return PerImage("miou", True, tuple(self._ids), values)


# --- text recognition ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RecognitionRecords:
    """Each line's character and word edit distances to its reference, the reference's lengths, and exactness."""

    image_ids: tuple[ImageId, ...]
    char_edits: np.ndarray
    chars: np.ndarray
    word_edits: np.ndarray
    words: np.ndarray
    exact: np.ndarray

    def __len__(self) -> int:
        return len(self.image_ids)

    def values(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        return {"cer": weighted_ratio(weights, self.char_edits, self.chars),
                "wer": weighted_ratio(weights, self.word_edits, self.words),
                "exact": weighted_ratio(weights, self.exact, np.ones(len(self)))}


class RecognitionAccumulator:
    """CER and WER (the sum of Levenshtein edits over the sum of reference lengths, in characters and in
    whitespace-separated words, by rapidfuzz) and the share of lines read exactly; per image, that line's CER.

    ``truth`` and ``prediction`` are strings (or anything with such a ``text``). Both are compared with their
    whitespace normalised (leading and trailing spaces dropped, runs of spaces read as one): a recogniser that reads
    padding as a space has not misread the line (PaddleOCR's own metric goes further and ignores every space). An
    empty reference line counts no characters: its per-image CER is its edit count (0 when it is read empty).
    """

    task = "recognition"

    def __init__(self) -> None:
        self._ids: list[ImageId] = []
        self._rows: list[tuple[int, int, int, int, bool]] = []

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, image_id: ImageId, truth: Any, prediction: Any) -> None:
        from rapidfuzz.distance import Levenshtein  # the eval extra: imported when text is scored

        ref_words = str(getattr(truth, "text", truth)).split()
        hyp_words = str(getattr(prediction, "text", prediction)).split()
        ref, hyp = " ".join(ref_words), " ".join(hyp_words)
        self._ids.append(image_id)
        self._rows.append((Levenshtein.distance(ref, hyp), len(ref), Levenshtein.distance(ref_words, hyp_words),
                           len(ref_words), ref == hyp))

    def records(self) -> RecognitionRecords:
        rows = np.asarray(self._rows, dtype=np.int64).reshape(-1, 5)
        return RecognitionRecords(tuple(self._ids), rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3],
                                  rows[:, 4].astype(bool))

    def result(self) -> EvalResult:
        rec = self.records()
        values = {name: float(v[0]) for name, v in rec.values(np.ones((1, len(rec)))).items()}
        return EvalResult(self.task, len(rec), values)

    def per_image(self) -> PerImage:
        rec = self.records()
        return PerImage("cer", False, rec.image_ids, rec.char_edits / np.maximum(rec.chars, 1))
