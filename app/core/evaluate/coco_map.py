"""Detection accuracy: COCO mAP@0.5 and mAP@0.5:0.95 by pycocotools' COCOeval, per-class AP, the mean IoU of
matched boxes, and each image's F1.

The dataset's numbers are COCOeval's own (``evaluate`` then ``accumulate``, read as ``summarize`` reads them: all
areas, 100 detections per image and class; every box ``iscrowd`` 0, its area its width × height). COCOeval matches
each image on its own, so a resample of the images needs only the last step redone: ``DetectionRecords`` keeps
COCOeval's per-image matches and re-accumulates precision and recall under any weighting of the images — the
same arithmetic as ``COCOeval.accumulate``, equal to it to 1e-12 when every image counts once and equal to COCOeval
on the images drawn when some count twice or not at all (the tests hold both). Measured on a shared 2-core machine:
COCOeval over 200 images of about 7 true and 22 predicted boxes in 80 classes takes 0.35 s with its one area range
(1.0 s with its usual four, which nothing here reads), so rerunning it per resample would take 70 s for 200
resamples; re-accumulating takes 0.15 s. 5,000 images take 10 s in COCOeval (faster-coco-eval 1.8: 2.9 s, the same
mAP; not used, as the re-accumulation reads pycocotools' per-image matches, ``COCOeval.evalImgs``).

Each image's value (what "the images where a precision loses most" are sorted by) is its F1 at IoU 0.5 among the
boxes scored at least ``score_threshold`` — the boxes the Answers tab draws —: 2·TP / (2·TP + FP + FN), 1 for an
image with no true box and no box drawn. Unlike a per-image AP it is defined on images without objects, and a box
gained or lost moves it, as a person looking at the picture would see.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from app.core.evaluate.metrics import (
    EvalResult,
    EvaluationInputError,
    ImageId,
    PerImage,
    class_name,
    weighted_ratio,
)
from app.core.measure import SCORE_THRESHOLD

IOU_MATCH = 0.5
MAX_DETS = 100  # COCOeval's maxDets: the best 100 boxes per image and class count
_IOU_THRESHOLDS = np.linspace(0.5, 0.95, 10)  # COCOeval's iouThrs and recThrs, as its Params makes them
_RECALL_THRESHOLDS = np.linspace(0.0, 1.00, 101)
_CELLS = 4_000_000  # resamples × IoU thresholds × detections handled at once when re-accumulating


class TruthBoxes(Protocol):
    """An image's true boxes: ``boxes`` N×4 (x1, y1, x2, y2 in pixels) and ``classes`` N class ids."""

    @property
    def boxes(self) -> np.ndarray: ...

    @property
    def classes(self) -> np.ndarray: ...


class PredictedBoxes(TruthBoxes, Protocol):
    """A model's boxes for an image: ``boxes``, ``classes`` and ``scores`` (N)."""

    @property
    def scores(self) -> np.ndarray: ...


@dataclass(frozen=True)
class Boxes:
    """Boxes of one image, as truth (no scores) or as a prediction."""

    boxes: np.ndarray
    classes: np.ndarray
    scores: np.ndarray | None = None


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of every box in ``a`` (N×4 xyxy) with every box in ``b`` (M×4), as COCO computes it (no +1 pixel)."""
    lo = np.maximum(a[:, None, :2], b[None, :, :2])
    hi = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.prod(np.clip(hi - lo, 0, None), axis=2)
    area_a = np.prod(a[:, 2:] - a[:, :2], axis=1)
    area_b = np.prod(b[:, 2:] - b[:, :2], axis=1)
    union = area_a[:, None] + area_b[None, :] - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def greedy_matches(truth: np.ndarray, truth_classes: np.ndarray, boxes: np.ndarray, classes: np.ndarray,
                   scores: np.ndarray, iou_min: float = IOU_MATCH) -> tuple[np.ndarray, np.ndarray]:
    """Each box, best score first, takes the unmatched true box of its class it overlaps most (IoU ≥ ``iou_min``).

    Returns, in score order (first of equal scores first), each box's index and the IoU of its match (0 when none).
    """
    order = np.argsort(-scores.astype(np.float64), kind="stable")
    iou = box_iou(boxes[order], truth)
    iou[classes[order][:, None] != truth_classes[None, :]] = 0.0
    taken = np.zeros(len(truth), dtype=bool)
    matched = np.zeros(len(order))
    for row in range(len(order)):
        cand = np.where(taken, 0.0, iou[row])
        if cand.size and cand.max() >= iou_min:
            g = int(np.argmax(cand))
            taken[g] = True
            matched[row] = cand[g]
    return order, matched


@dataclass(frozen=True)
class _ImageRecord:
    truth: np.ndarray  # G×4 float64
    truth_classes: np.ndarray  # G int32
    boxes: np.ndarray  # D×4 float32, at most MAX_DETS per class
    classes: np.ndarray  # D int32
    scores: np.ndarray  # D float32
    # at the score threshold: matched boxes (TP), unmatched drawn boxes (FP), missed true boxes (FN), sum of IoUs
    tp: int
    fp: int
    fn: int
    iou_sum: float

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.truth, self.truth_classes, self.boxes, self.classes, self.scores))


@dataclass(frozen=True)
class _Category:
    det_image: np.ndarray  # the image of each of its detections, in COCOeval's accumulate order (score, then image)
    matched: tuple[np.ndarray, ...]  # at each IoU threshold, the positions in that order of the matched detections
    truth_image: np.ndarray  # the image of each of its true boxes


@dataclass(frozen=True)
class DetectionRecords:
    """COCOeval's per-image matches by class, and each image's matched-box counts and IoU sum, re-accumulated under
    any weighting of the images (``values``)."""

    image_ids: tuple[ImageId, ...]
    categories: tuple[_Category, ...]
    tp: np.ndarray
    iou_sum: np.ndarray

    def __len__(self) -> int:
        return len(self.image_ids)

    def values(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        rows = weights.shape[0]
        ap = np.full((rows, len(self.categories), len(_IOU_THRESHOLDS)), np.nan)
        for k, cat in enumerate(self.categories):
            step = max(1, _CELLS // max(1, cat.det_image.size))
            for start in range(0, rows, step):
                ap[start:start + step, k] = _average_precision(cat, weights[start:start + step])
        counted = ~np.isnan(ap[:, :, 0])
        n = counted.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            map50 = np.where(n > 0, np.where(counted, ap[:, :, 0], 0).sum(axis=1) / np.maximum(n, 1), np.nan)
            map_ = np.where(n > 0, np.where(counted, ap.mean(axis=2), 0).sum(axis=1) / np.maximum(n, 1), np.nan)
        return {"map50": map50, "map": map_, "mean_iou": weighted_ratio(weights, self.iou_sum, self.tp)}


def _average_precision(cat: _Category, weights: np.ndarray) -> np.ndarray:
    """rows × T APs of one class, as COCOeval.accumulate computes them, each detection and true box counted as often
    as its image is drawn; nan where no true box is drawn."""
    npig = weights[:, cat.truth_image].sum(axis=1)
    ap = np.where(npig > 0, 0.0, np.nan)[:, None] * np.ones(len(_IOU_THRESHOLDS))
    if cat.det_image.size == 0:
        return ap
    w = weights[:, cat.det_image]
    # Counts are whole numbers, so every sum below is exact and equals COCOeval's.
    drawn = np.cumsum(w, axis=1)
    scale = np.where(npig > 0, npig, 1)[:, None]
    for t, matched in enumerate(cat.matched):
        if not matched.size:
            continue
        # Only the matched detections matter: recall rises only there, and the precision after an unmatched one is
        # below the precision before it, so the envelope (the best precision at any higher recall) is the same
        # taken over matched detections alone. tp / (fp + tp + eps) as COCOeval writes it, fp + tp being the drawn.
        tp = np.cumsum(w[:, matched], axis=1)
        precision = tp / (drawn[:, matched] + np.spacing(1))
        precision = np.maximum.accumulate(precision[:, ::-1], axis=1)[:, ::-1]
        # A recall threshold r takes the first point whose recall is ≥ r (COCOeval's searchsorted 'left'): each
        # point takes how many more thresholds lie at or below its recall than at the point before.
        reached = np.searchsorted(_RECALL_THRESHOLDS, (tp / scale).ravel(), side="right").reshape(tp.shape)
        taken = np.diff(reached, axis=1, prepend=0)
        ap[:, t] = (precision * taken).sum(axis=1) / len(_RECALL_THRESHOLDS)
    return np.where(npig[:, None] > 0, ap, np.nan)


def _unpack(value: Any, scored: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    if isinstance(value, tuple):
        boxes, rest = value[0], value[1:]
        if scored:
            return np.asarray(boxes), np.asarray(rest[1]), np.asarray(rest[0])
        return np.asarray(boxes), np.asarray(rest[0]), None
    return (np.asarray(value.boxes), np.asarray(value.classes),
            np.asarray(value.scores) if scored else None)


class DetectionAccumulator:
    """COCO mAP@0.5 and mAP@0.5:0.95, per-class AP (``ap`` at 0.5:0.95, ``ap50``), the mean IoU of the boxes
    matched at the score threshold (greedy by score, same class, IoU ≥ 0.5), and each image's F1.

    ``truth``: ``boxes`` N×4 xyxy pixels and ``classes`` (or a tuple ``(boxes, classes)``); ``prediction``: also
    ``scores`` (or ``(boxes, scores, classes)``). Only the best 100 boxes per image and class are kept, as COCOeval
    counts no more.
    """

    task = "detection"

    def __init__(self, names: Sequence[str] | Mapping[int, str] | None = None,
                 score_threshold: float = SCORE_THRESHOLD) -> None:
        self.names = names
        self.score_threshold = score_threshold
        self._ids: list[ImageId] = []
        self._images: list[_ImageRecord] = []
        self._coco: tuple[EvalResult, DetectionRecords] | None = None

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def record_bytes(self) -> list[int]:
        """The bytes of boxes kept for each image so far."""
        return [r.nbytes for r in self._images]

    def add(self, image_id: ImageId, truth: TruthBoxes | tuple[Any, ...],
            prediction: PredictedBoxes | tuple[Any, ...]) -> None:
        tb, tc, _ = _unpack(truth, scored=False)
        pb, pc, ps = _unpack(prediction, scored=True)
        tb = _boxes(image_id, "true boxes", tb).astype(np.float64)
        pb = _boxes(image_id, "predicted boxes", pb).astype(np.float32)
        tc, pc = _classes(image_id, "true", tc, len(tb)), _classes(image_id, "predicted", pc, len(pb))
        assert ps is not None
        ps = ps.reshape(-1).astype(np.float32)
        if len(ps) != len(pb):
            raise EvaluationInputError(f"Image {image_id}: {len(pb)} predicted boxes but {len(ps)} scores.")
        bad = np.flatnonzero((tb[:, 2] < tb[:, 0]) | (tb[:, 3] < tb[:, 1]))
        if bad.size:
            raise EvaluationInputError(
                f"Image {image_id}: true box {tb[bad[0]].tolist()} ends before it starts.",
                fix="Boxes are x1, y1, x2, y2 in pixels here; convert x, y, width, height or centre boxes first.")
        # A predicted box whose corners cross is empty (COCO would give it a negative area).
        pb[:, 2:] = np.maximum(pb[:, 2:], pb[:, :2])
        keep = _best_per_class(pc, ps)
        pb, pc, ps = pb[keep], pc[keep], ps[keep]
        order, iou = greedy_matches(tb, tc, pb.astype(np.float64), pc, ps)
        drawn = ps[order] >= self.score_threshold
        tp = int(np.count_nonzero(iou[drawn] > 0))
        self._ids.append(image_id)
        self._images.append(_ImageRecord(tb, tc, pb, pc, ps, tp, int(drawn.sum()) - tp, len(tb) - tp,
                                         float(iou[drawn].sum())))
        self._coco = None

    def per_image(self) -> PerImage:
        values = np.array([1.0 if r.tp + r.fp + r.fn == 0 else 2 * r.tp / (2 * r.tp + r.fp + r.fn)
                           for r in self._images])
        return PerImage("f1", True, tuple(self._ids), values)

    def result(self) -> EvalResult:
        return self._evaluate()[0]

    def records(self) -> DetectionRecords:
        return self._evaluate()[1]

    def _evaluate(self) -> tuple[EvalResult, DetectionRecords]:
        if self._coco is None:
            self._coco = _cocoeval(self)
        return self._coco


def _boxes(image_id: ImageId, what: str, boxes: np.ndarray) -> np.ndarray:
    if boxes.size == 0:
        return np.zeros((0, 4))
    if boxes.ndim != 2 or boxes.shape[1] != 4 or not np.all(np.isfinite(boxes)):
        raise EvaluationInputError(f"Image {image_id}: the {what} are not N×4 finite numbers (shape {boxes.shape}).")
    return boxes


def _classes(image_id: ImageId, what: str, classes: np.ndarray, n: int) -> np.ndarray:
    out = classes.reshape(-1).astype(np.int64)
    if len(out) != n:
        raise EvaluationInputError(f"Image {image_id}: {n} {what} boxes but {len(out)} classes.")
    if (out < 0).any():
        raise EvaluationInputError(f"Image {image_id}: a {what} class id is negative ({int(out.min())}).")
    return out.astype(np.int32)


def _best_per_class(classes: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Indices of the best MAX_DETS boxes of each class (first of equal scores first), in their original order."""
    order = np.argsort(-scores.astype(np.float64), kind="stable")
    rank = np.zeros(len(order), dtype=np.int64)
    for c in np.unique(classes):
        mine = order[classes[order] == c]
        rank[mine] = np.arange(len(mine))
    return np.flatnonzero(rank < MAX_DETS)


def _cocoeval(acc: DetectionAccumulator) -> tuple[EvalResult, DetectionRecords]:
    """Run COCOeval once over every image's boxes, in memory, and keep its per-image matches."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    images = acc._images
    present = sorted({int(c) for r in images for c in np.concatenate([r.truth_classes, r.classes])})
    truth: list[dict[str, object]] = []
    dets: list[dict[str, object]] = []
    for i, r in enumerate(images):
        sides = ((r.truth, r.truth_classes, None, truth), (r.boxes, r.classes, r.scores, dets))
        for rows, classes, scores, out in sides:
            for j, (box, c) in enumerate(zip(rows.astype(np.float64).tolist(), classes.tolist(), strict=True)):
                w, h = box[2] - box[0], box[3] - box[1]
                ann: dict[str, object] = {"id": len(out) + 1, "image_id": i + 1, "category_id": c + 1,
                                          "bbox": [box[0], box[1], w, h], "area": w * h, "iscrowd": 0}
                if scores is not None:
                    ann["score"] = float(scores[j])
                out.append(ann)
    cats = [{"id": c + 1} for c in present]
    image_list = [{"id": i + 1} for i in range(len(images))]
    with contextlib.redirect_stdout(io.StringIO()):  # COCOeval prints its progress
        gt, dt = COCO(), COCO()
        # What COCO.loadRes does for boxes (area, id, iscrowd 0), without copying every detection first.
        gt.dataset = {"images": image_list, "annotations": truth, "categories": cats}
        dt.dataset = {"images": image_list, "annotations": dets, "categories": cats}
        gt.createIndex()
        dt.createIndex()
        ev = COCOeval(gt, dt, "bbox")
        ev.params.areaRng, ev.params.areaRngLbl, ev.params.maxDets = [[0, 1e10]], ["all"], [MAX_DETS]
        if images:
            ev.evaluate()
            ev.accumulate()
    ids = tuple(acc._ids)
    tp = np.array([r.tp for r in images], dtype=np.float64)
    iou_sum = np.array([r.iou_sum for r in images], dtype=np.float64)
    mean_iou = float(weighted_ratio(np.ones((1, len(images))), iou_sum, tp)[0]) if images else float("nan")
    if not images or not present:
        return (EvalResult("detection", len(images), {"map50": float("nan"), "map": float("nan"),
                                                      "mean_iou": mean_iou}),
                DetectionRecords(ids, (), tp, iou_sum))
    s = ev.eval["precision"][:, :, :, 0, 0]  # T × R × K, -1 for a class with no true box
    metrics = {"map50": _mean_valid(s[0]), "map": _mean_valid(s), "mean_iou": mean_iou}
    per_class = {}
    for k, c in enumerate(present):
        if s[0, 0, k] > -1:
            per_class[class_name(acc.names, c)] = {"ap": float(np.mean(s[:, :, k])), "ap50": float(np.mean(s[0, :, k])),
                                                    "truths": float(sum(int((r.truth_classes == c).sum())
                                                                        for r in images))}
    return (EvalResult("detection", len(images), metrics, per_class),
            DetectionRecords(ids, tuple(_categories(ev, len(present), len(images))), tp, iou_sum))


def _mean_valid(s: np.ndarray) -> float:
    """The mean of the entries COCOeval filled, as ``COCOeval.summarize`` takes it (nan when none)."""
    valid = s[s > -1]
    return float(np.mean(valid)) if valid.size else float("nan")


def _categories(ev: Any, n_categories: int, n_images: int) -> list[_Category]:
    """Each class's detections in COCOeval.accumulate's order, matched or not at each IoU threshold."""
    out = []
    for k in range(n_categories):
        entries = [(i, e) for i, e in enumerate(ev.evalImgs[k * n_images:(k + 1) * n_images]) if e is not None]
        t = len(_IOU_THRESHOLDS)
        scores = np.concatenate([e["dtScores"][:MAX_DETS] for _, e in entries]) if entries else np.zeros(0)
        order = np.argsort(-scores, kind="mergesort")
        det_image = np.concatenate([np.full(len(e["dtScores"][:MAX_DETS]), i) for i, e in entries] or [np.zeros(0)])
        matched = np.concatenate([e["dtMatches"][:, :MAX_DETS] for _, e in entries] or [np.zeros((t, 0))], axis=1)
        # Every box here has iscrowd 0 and an area within COCOeval's one range, so it ignores none of them.
        assert not any(np.any(e["dtIgnore"]) or np.any(e["gtIgnore"]) for _, e in entries)
        truth_image = np.concatenate([np.full(len(e["gtIgnore"]), i) for i, e in entries] or [np.zeros(0)])
        out.append(_Category(det_image[order].astype(np.int64),
                             tuple(np.flatnonzero(row) for row in matched[:, order] > 0), truth_image.astype(np.int64)))
    return out
