"""Detection metrics: a case small enough to work out by hand, and equality with pycocotools run directly."""

from __future__ import annotations

import contextlib
import io
import tracemalloc

import numpy as np
import pytest
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from app.core.evaluate import Boxes, DetectionAccumulator, EvaluationInputError
from app.core.evaluate.coco_map import MAX_DETS, greedy_matches


def _hand_case() -> DetectionAccumulator:
    acc = DetectionAccumulator(names=["cat", "dog"])
    truth = Boxes(np.array([[0.0, 0, 10, 10]]), np.array([0]))
    # Image a: an exact box (0.9), a box on nothing (0.8) and a dog where there is none (0.95).
    acc.add("a", truth, Boxes(np.array([[0, 0, 10, 10], [50, 50, 60, 60], [0, 0, 10, 10]], np.float32),
                              np.array([0, 0, 1]), np.array([0.9, 0.8, 0.95], np.float32)))
    # Image b: a box of IoU 0.78 (0.7): matched at IoU thresholds 0.5 … 0.75, missed at 0.8 … 0.95.
    acc.add("b", truth, Boxes(np.array([[0, 0, 10, 7.8]], np.float32), np.array([0]), np.array([0.7], np.float32)))
    return acc


def test_ap_worked_out_by_hand():
    result = _hand_case().result()
    # Cat detections by score: 0.9 hit, 0.8 miss, 0.7 hit (2 true cats). Precision envelope 1, 2/3, 2/3 at recall
    # 0.5, 0.5, 1: the 51 recall thresholds 0 … 0.5 read 1, the 50 above read 2/3.
    ap_matched = (51 + 50 * 2 / 3) / 101
    ap_missed = 51 / 101  # where the 0.78 box misses, recall stops at 0.5
    assert result.metrics["map50"] == pytest.approx(ap_matched, abs=1e-12)
    assert result.metrics["map"] == pytest.approx((6 * ap_matched + 4 * ap_missed) / 10, abs=1e-12)
    # The dog has no true box: COCO leaves it out of the mean and out of per-class AP.
    assert set(result.per_class) == {"cat"}
    assert result.per_class["cat"]["ap50"] == pytest.approx(ap_matched, abs=1e-12)
    assert result.per_class["cat"]["truths"] == 2
    # Matched at the score threshold: IoU 1 and 0.78.
    assert result.metrics["mean_iou"] == pytest.approx((1 + 0.78) / 2, abs=1e-6)


def test_per_image_f1_counts_the_boxes_drawn():
    acc = _hand_case()
    per = acc.per_image()
    assert per.metric == "f1" and per.higher_is_better and per.image_ids == ("a", "b")
    # a: one hit, two extra boxes → 2·1 / (2·1 + 2 + 0); b: one hit.
    assert per.values.tolist() == pytest.approx([0.5, 1.0])
    acc.add("empty", Boxes(np.zeros((0, 4)), np.zeros(0)), Boxes(np.zeros((0, 4)), np.zeros(0), np.zeros(0)))
    acc.add("faint", Boxes(np.zeros((0, 4)), np.zeros(0)), Boxes(np.array([[1.0, 1, 5, 5]]), np.array([0]),
                                                                 np.array([0.1])))
    assert acc.per_image().values[2:].tolist() == [1.0, 1.0]  # nothing true, nothing drawn above 0.25


def test_greedy_matching_takes_best_score_first_and_same_class_only():
    truth = np.array([[0.0, 0, 10, 10]])
    boxes = np.array([[0.0, 0, 10, 9], [0, 0, 10, 10], [0, 0, 10, 10]])
    order, iou = greedy_matches(truth, np.array([0]), boxes, np.array([0, 0, 1]), np.array([0.9, 0.5, 0.99]))
    assert order.tolist() == [2, 0, 1]  # by score
    assert iou.tolist() == pytest.approx([0.0, 0.9, 0.0])  # the dog takes nothing; 0.9 takes the cat before 0.5


def _random_case(seed: int, n_images: int = 60, n_classes: int = 7):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_images):
        g = int(rng.integers(0, 9)) if i % 10 else 0  # every tenth image has no true box
        xy = rng.uniform(0, 400, (g, 2))
        truth = np.concatenate([xy, xy + rng.uniform(4, 120, (g, 2))], axis=1)
        classes = rng.integers(0, n_classes, g)
        hit = rng.random(g) < 0.75
        n_hit = int(hit.sum())
        boxes = truth[hit] + rng.normal(0, 6, (n_hit, 4))
        pred_classes = np.where(rng.random(n_hit) < 0.9, classes[hit], rng.integers(0, n_classes, n_hit))
        extra = int(rng.integers(0, 12)) if i % 7 else 0  # every seventh image has no extra box
        exy = rng.uniform(0, 400, (extra, 2))
        boxes = np.concatenate([boxes, np.concatenate([exy, exy + rng.uniform(4, 80, (extra, 2))], axis=1)])
        pred_classes = np.concatenate([pred_classes, rng.integers(0, n_classes, extra)])
        scores = rng.random(len(boxes))
        if i == 3:  # more boxes of one class than COCOeval counts
            crowd = rng.uniform(0, 300, (130, 2))
            boxes = np.concatenate([boxes, np.concatenate([crowd, crowd + 30], axis=1)])
            pred_classes = np.concatenate([pred_classes, np.full(130, 2)])
            scores = np.concatenate([scores, rng.random(130)])
        boxes = boxes.astype(np.float32)  # a model's boxes are float32; pycocotools gets the same values below
        boxes[:, 2:] = np.maximum(boxes[:, 2:], boxes[:, :2])
        rows.append((1000 + i, Boxes(truth, classes), Boxes(boxes, pred_classes, scores.astype(np.float32))))
    return rows


def _pycocotools(rows, n_classes):
    """COCOeval the usual way: a ground-truth dataset, loadRes of the detections, default parameters."""
    images = [{"id": image_id, "width": 640, "height": 480} for image_id, _, _ in rows]
    truth, dets = [], []
    for image_id, t, p in rows:
        for (x1, y1, x2, y2), c in zip(t.boxes.tolist(), t.classes.tolist(), strict=True):
            truth.append({"id": len(truth) + 1, "image_id": image_id, "category_id": c + 1,
                          "bbox": [x1, y1, x2 - x1, y2 - y1], "area": (x2 - x1) * (y2 - y1), "iscrowd": 0})
        for (x1, y1, x2, y2), c, s in zip(p.boxes.astype(np.float64).tolist(), p.classes.tolist(),
                                          p.scores.astype(np.float64).tolist(), strict=True):
            dets.append({"image_id": image_id, "category_id": c + 1, "bbox": [x1, y1, x2 - x1, y2 - y1], "score": s})
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO()
        gt.dataset = {"images": images, "annotations": truth, "categories": [{"id": k + 1} for k in range(n_classes)]}
        gt.createIndex()
        ev = COCOeval(gt, gt.loadRes(dets), "bbox")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return ev


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_pycocotools_on_the_same_boxes(seed):
    rows = _random_case(seed)
    acc = DetectionAccumulator()
    for row in rows:
        acc.add(*row)
    result = acc.result()
    ev = _pycocotools(rows, 7)
    assert result.metrics["map"] == pytest.approx(ev.stats[0], abs=1e-12)
    assert result.metrics["map50"] == pytest.approx(ev.stats[1], abs=1e-12)
    precision = ev.eval["precision"][:, :, :, 0, -1]  # all areas, 100 detections
    for k in range(7):
        if precision[0, 0, k] > -1:
            assert result.per_class[str(k)]["ap"] == pytest.approx(np.mean(precision[:, :, k]), abs=1e-12)
            assert result.per_class[str(k)]["ap50"] == pytest.approx(np.mean(precision[0, :, k]), abs=1e-12)
    # The records a resample re-reads give the same numbers when every image counts once.
    records = acc.records()
    again = records.values(np.ones((1, len(records))))
    assert again["map"][0] == pytest.approx(ev.stats[0], abs=1e-12)
    assert again["map50"][0] == pytest.approx(ev.stats[1], abs=1e-12)
    assert again["mean_iou"][0] == pytest.approx(result.metrics["mean_iou"], abs=1e-12)


def test_a_resample_equals_pycocotools_on_the_drawn_images():
    """Weights of 0 and 2 give COCOeval's numbers on the images left out and drawn twice."""
    rows = _random_case(5, n_images=30)
    acc = DetectionAccumulator()
    for row in rows:
        acc.add(*row)
    weights = np.tile([0.0, 1.0, 2.0], 10)
    drawn = []
    for row, w in zip(rows, weights, strict=True):
        for copy in range(int(w)):
            drawn.append((row[0] * 10 + copy, row[1], row[2]))
    ev = _pycocotools(drawn, 7)
    again = acc.records().values(weights[None, :])
    assert again["map"][0] == pytest.approx(ev.stats[0], abs=1e-9)
    assert again["map50"][0] == pytest.approx(ev.stats[1], abs=1e-9)


def test_memory_is_a_record_per_image():
    """5,000 images: the accumulator keeps each image's boxes as compact arrays, nothing more."""
    acc = DetectionAccumulator()
    rng = np.random.default_rng(0)
    photo = np.zeros((480, 640, 3), np.uint8)  # what the model saw; never handed to the accumulator
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        truths = []
        for i in range(5000):
            xy = rng.uniform(0, 400, (3, 2))
            truth = Boxes(np.concatenate([xy, xy + 20], axis=1), np.array([0, 1, 2]))
            pred = Boxes(truth.boxes.astype(np.float32) + 1, np.array([0, 1, 2]), np.array([0.9, 0.5, 0.1], np.float32))
            acc.add(i, truth, pred)
            if i < 3:
                truths.append(truth.boxes)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    sizes = acc.record_bytes
    assert len(acc) == len(sizes) == 5000
    # 3 true boxes (float64 xyxy + int32 class) and 3 predicted (float32 xyxy, int32 class, float32 score).
    assert set(sizes) == {3 * (32 + 4) + 3 * (16 + 4 + 4)}
    assert max(sizes) < photo.nbytes / 1000
    assert not any(np.shares_memory(r.truth, t) for r, t in zip(acc._images, truths, strict=False))
    # What grew is the records plus a fixed few hundred bytes of Python objects per image.
    assert grown < sum(sizes) + 5000 * 2500


def test_keeps_the_best_hundred_boxes_per_class():
    acc = DetectionAccumulator()
    scores = np.linspace(0.01, 0.99, 150).astype(np.float32)
    boxes = np.tile(np.array([[0, 0, 10, 10]], np.float32), (150, 1))
    acc.add(0, Boxes(np.zeros((0, 4)), np.zeros(0)), Boxes(boxes, np.r_[np.zeros(120), np.ones(30)], scores))
    kept = acc._images[0]
    assert (kept.classes == 0).sum() == MAX_DETS and (kept.classes == 1).sum() == 30
    assert kept.scores[kept.classes == 0].min() == scores[20]  # the 100 best of class 0


def test_refuses_boxes_that_cannot_be_xyxy():
    acc = DetectionAccumulator()
    with pytest.raises(EvaluationInputError) as err:
        acc.add("p", Boxes(np.array([[10.0, 10, 5, 30]]), np.array([0])), Boxes(np.zeros((0, 4)), [], []))
    assert "x1, y1, x2, y2" in err.value.fix
    with pytest.raises(EvaluationInputError):
        acc.add("q", (np.zeros((2, 3)), np.zeros(2)), (np.zeros((0, 4)), np.zeros(0), np.zeros(0)))
    with pytest.raises(EvaluationInputError):
        acc.add("r", (np.zeros((1, 4)), np.zeros(2)), (np.zeros((0, 4)), np.zeros(0), np.zeros(0)))


def test_no_truth_at_all_gives_undefined_map_not_a_crash():
    acc = DetectionAccumulator()
    acc.add(0, Boxes(np.zeros((0, 4)), np.zeros(0)), Boxes(np.array([[0.0, 0, 1, 1]]), np.array([0]), np.array([0.9])))
    result = acc.result()
    assert np.isnan(result.metrics["map"]) and result.to_json()["metrics"]["map"] is None
