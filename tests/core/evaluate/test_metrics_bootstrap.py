"""Paired bootstrap differences: zero for identical answers, below zero for a clearly worse candidate."""

from __future__ import annotations

import json

import numpy as np
import pytest

from app.core.evaluate import (
    Boxes,
    ClassificationAccumulator,
    DetectionAccumulator,
    RecognitionAccumulator,
    SegmentationAccumulator,
    compare_runs,
    paired_bootstrap,
    worst_images,
)


def _mean(values, weights):
    return weights @ values / weights.sum(axis=1)


def test_identical_answers_give_zero_and_a_zero_interval():
    values = np.random.default_rng(0).random(200)
    diff = paired_bootstrap(values, values.copy(), _mean, n=300, seed=1, metric="score")
    assert (diff.delta, diff.low, diff.high, diff.resamples) == (0.0, 0.0, 0.0, 300)


def test_a_worse_candidate_lies_below_zero_and_the_same_seed_gives_the_same_interval():
    rng = np.random.default_rng(0)
    ref = (rng.random(200) < 0.9).astype(float)
    cand = np.where(rng.random(200) < 0.3, 0.0, ref)  # loses about 27 images in 100
    diff = paired_bootstrap(ref, cand, _mean, n=500, seed=3)
    assert diff.delta == pytest.approx(cand.mean() - ref.mean())
    assert diff.low < diff.delta < diff.high < 0
    assert paired_bootstrap(ref, cand, _mean, n=500, seed=3) == diff
    with pytest.raises(ValueError):
        paired_bootstrap(ref, cand[:10], _mean)


def _classifier_runs(flip: float):
    rng = np.random.default_rng(1)
    ref, cand = ClassificationAccumulator(6), ClassificationAccumulator(6)
    for i in range(200):
        truth = int(rng.integers(0, 6))
        scores = rng.random(6)
        scores[truth] += 0.8 if rng.random() < 0.9 else 0.0
        ref.add(i, truth, scores)
        worse = scores.copy()
        if rng.random() < flip:
            worse[truth] = 0.0
        cand.add(i, truth, worse)
    return ref, cand


def test_classification_pair():
    ref, cand = _classifier_runs(0.0)
    same = compare_runs(ref, cand, n=200)
    assert set(same.differences) == {"top1", "top5"}
    assert all((d.delta, d.low, d.high) == (0.0, 0.0, 0.0) for d in same.differences.values())
    ref, cand = _classifier_runs(0.3)
    pair = compare_runs(ref, cand, n=400, seed=2)
    top1 = pair.differences["top1"]
    assert top1.delta == pytest.approx(cand.result().metrics["top1"] - ref.result().metrics["top1"])
    assert top1.high < 0
    out = json.loads(json.dumps(pair.to_json(), allow_nan=False))
    assert {"metrics", "per_class", "delta", "ci", "reference", "per_class_delta", "confusion"} <= set(out)
    assert out["ci"]["top1"] == [top1.low, top1.high] and out["resamples"]["top1"] == 400


def _detections(shift: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    acc = DetectionAccumulator()
    for i in range(200):
        g = int(rng.integers(1, 6))
        xy = rng.uniform(0, 400, (g, 2))
        truth = np.concatenate([xy, xy + rng.uniform(20, 100, (g, 2))], axis=1)
        classes = rng.integers(0, 5, g)
        boxes = (truth + rng.normal(0, 2, truth.shape) + shift * rng.random((g, 1))).astype(np.float32)
        acc.add(i, Boxes(truth, classes), Boxes(boxes, classes, rng.random(g).astype(np.float32) * 0.7 + 0.3))
    return acc


def test_detection_pair_recomputes_map_from_the_drawn_images():
    ref = _detections(0.0)
    assert all((d.delta, d.low, d.high) == (0.0, 0.0, 0.0) for d in compare_runs(ref, _detections(0.0), n=100)
               .differences.values())
    cand = _detections(25.0)  # boxes pushed off their objects
    pair = compare_runs(ref, cand, n=200, seed=0)
    assert set(pair.differences) == {"map50", "map", "mean_iou"}
    for name in ("map50", "map", "mean_iou"):
        d = pair.differences[name]
        assert d.delta == pytest.approx(cand.result().metrics[name] - ref.result().metrics[name])
        assert d.low <= d.delta <= d.high < 0, name
        assert d.resamples == 200
    assert pair.to_json()["per_class_delta"]["0"]["ap50"] < 0


def test_segmentation_and_recognition_pairs():
    rng = np.random.default_rng(0)
    seg_ref, seg_cand = SegmentationAccumulator(3), SegmentationAccumulator(3)
    rec_ref, rec_cand = RecognitionAccumulator(), RecognitionAccumulator()
    for i in range(120):
        mask = rng.integers(0, 3, (8, 8))
        seg_ref.add(i, mask, np.where(rng.random((8, 8)) < 0.1, 0, mask))
        seg_cand.add(i, mask, np.where(rng.random((8, 8)) < 0.4, 0, mask))
        word = "".join(rng.choice(list("abcdef"), 8))
        rec_ref.add(i, word, word)
        rec_cand.add(i, word, word[:-2] if rng.random() < 0.5 else word)
    seg = compare_runs(seg_ref, seg_cand, n=300)
    assert seg.differences["miou"].high < 0 and seg.differences["dice"].high < 0
    rec = compare_runs(rec_ref, rec_cand, n=300)
    assert rec.differences["cer"].low > 0  # an error rate: worse is up
    assert rec.differences["exact"].high < 0


def test_worst_images_first():
    ref, cand = RecognitionAccumulator(), RecognitionAccumulator()
    for name, truth, a, b in (("ok", "abcd", "abcd", "abcd"), ("bad", "abcd", "abcd", "xxxx"),
                              ("meh", "abcd", "abcd", "abcx"), ("better", "abcd", "abxx", "abcd")):
        ref.add(name, truth, a)
        cand.add(name, truth, b)
    rows = worst_images(ref.per_image(), cand.per_image())
    assert [r[0] for r in rows] == ["bad", "meh", "ok", "better"]
    assert rows[0][1:] == (0.0, 1.0)
    assert len(worst_images(ref.per_image(), cand.per_image(), limit=2)) == 2
