"""Classification, segmentation and recognition metrics against counts worked out by hand."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest

from app.core.evaluate import (
    ClassificationAccumulator,
    EvaluationInputError,
    RecognitionAccumulator,
    SegmentationAccumulator,
)


def _scores(best: int, k: int) -> np.ndarray:
    s = np.linspace(0.1, 0.0, k)
    s[best] = 1.0
    return s


def test_classification_confusion_and_per_class_accuracy():
    acc = ClassificationAccumulator(3, names=["cat", "dog", "fox"])
    truth = [0, 0, 1, 2, 2, 2]
    predicted = [0, 1, 1, 2, 0, 2]
    for i, (t, p) in enumerate(zip(truth, predicted, strict=True)):
        acc.add(i, t, _scores(p, 3))
    result = acc.result()
    assert result.confusion == ((1, 1, 0), (0, 1, 0), (1, 0, 2))
    assert result.metrics == {"top1": pytest.approx(4 / 6)}  # no top-5 with 3 classes
    assert {c: m["accuracy"] for c, m in result.per_class.items()} == pytest.approx(
        {"cat": 0.5, "dog": 1.0, "fox": 2 / 3})
    assert acc.per_image().values.tolist() == [1, 0, 1, 1, 0, 1]
    out = json.loads(json.dumps(result.to_json()))
    assert out["confusion"][2] == [1, 0, 2] and out["per_class"]["dog"]["images"] == 1


@dataclass(frozen=True)
class _Top:
    top: tuple[int, ...]


def test_classification_top5_from_ranked_ids_and_scores():
    acc = ClassificationAccumulator(10)
    acc.add("a", 7, np.array([3, 1, 7, 0, 2]))  # ranked ids: 7 is third → top-5 only
    acc.add("b", 4, _Top((4, 0, 1, 2, 3)))  # anything with a ``top``
    acc.add("c", 9, np.array([3, 1, 7, 0, 2, 9]))  # sixth: neither
    scores = np.zeros(10)
    scores[[5, 6, 8, 9, 2]] = [0.9, 0.8, 0.7, 0.6, 0.5]
    acc.add("d", 2, scores)  # fifth best score
    result = acc.result()
    assert result.metrics["top1"] == pytest.approx(1 / 4)
    assert result.metrics["top5"] == pytest.approx(3 / 4)


def test_classification_refuses_classes_the_model_lacks():
    acc = ClassificationAccumulator(3)
    with pytest.raises(EvaluationInputError, match="class 5"):
        acc.add("x", 5, _scores(0, 3))
    with pytest.raises(EvaluationInputError, match="4 scores for 3 classes"):
        acc.add("x", 1, np.zeros(4))


def test_segmentation_iou_and_dice_from_the_pixel_confusion():
    acc = SegmentationAccumulator(4)
    truth = np.array([[0, 0, 1], [1, 2, 255]])
    pred = np.array([[0, 1, 1], [1, 2, 0]])  # the last pixel is ignored
    acc.add("a", truth, pred)
    result = acc.result()
    assert result.confusion == ((1, 1, 0, 0), (0, 2, 0, 0), (0, 0, 1, 0), (0, 0, 0, 0))
    # IoU: 0 → 1/(2+1-1), 1 → 2/(2+3-2), 2 → 1; class 3 is in neither, so not in the mean.
    assert result.metrics["miou"] == pytest.approx((1 / 2 + 2 / 3 + 1) / 3)
    assert result.metrics["dice"] == pytest.approx((2 / 3 + 4 / 5 + 1) / 3)
    assert set(result.per_class) == {"0", "1", "2"}
    # A second image: class 3 predicted where the truth is 2 → class 3 counts, with IoU 0.
    acc.add("b", np.full((2, 2), 2), np.array([[2, 2], [3, 3]]))
    result = acc.result()
    iou2 = 3 / 5  # TP 1 + 2, truth 1 + 4, predicted 1 + 2: union 5 + 3 - 3
    assert result.metrics["miou"] == pytest.approx((1 / 2 + 2 / 3 + iou2 + 0) / 4)
    per = acc.per_image()
    assert per.metric == "miou"
    assert per.values.tolist() == pytest.approx([(1 / 2 + 2 / 3 + 1) / 3, (2 / 4 + 0) / 2])
    # The sparse per-image records add up to the dataset's confusion.
    records = acc.records()
    assert records.confusions(np.ones((1, 2)))[0].tolist() == [list(r) for r in result.confusion]
    assert records.values(np.ones((1, 2)))["miou"][0] == pytest.approx(result.metrics["miou"])


def test_segmentation_refusals():
    acc = SegmentationAccumulator(2)
    with pytest.raises(EvaluationInputError, match="mask is"):
        acc.add("a", np.zeros((2, 2)), np.zeros((3, 2)))
    with pytest.raises(EvaluationInputError, match="class 7"):
        acc.add("a", np.full((2, 2), 7), np.zeros((2, 2)))


def test_recognition_cer_and_wer_are_edit_distances_over_reference_lengths():
    acc = RecognitionAccumulator()
    acc.add(0, "kitten", "sitting")  # 3 edits over 6 characters; 1 word of 1
    acc.add(1, "the cat sat", "the cat sat down")  # 5 inserted characters of 11; 1 inserted word of 3
    acc.add(2, "abc", "abc")
    result = acc.result()
    assert result.metrics["cer"] == pytest.approx((3 + 5) / (6 + 11 + 3))
    assert result.metrics["wer"] == pytest.approx((1 + 1) / (1 + 3 + 1))
    assert result.metrics["exact"] == pytest.approx(1 / 3)
    per = acc.per_image()
    assert per.metric == "cer" and not per.higher_is_better
    assert per.values.tolist() == pytest.approx([3 / 6, 5 / 11, 0])


def test_recognition_reads_padding_read_as_spaces_as_no_error():
    """PP-OCR reads a line's padding as a leading or trailing space: the line itself was read right."""
    acc = RecognitionAccumulator()
    acc.add(0, "Hello world", " Hello world ")
    acc.add(1, "precision  matters", "precision matters")
    acc.add(2, "Hello world", "Helloworld")  # a space missing inside the line is an error
    assert acc.records().char_edits.tolist() == [0, 0, 1]
    assert acc.result().metrics["exact"] == pytest.approx(2 / 3)


def test_recognition_counts_substitutions_deletions_and_empty_lines():
    acc = RecognitionAccumulator()
    acc.add("flaw", "flaw", "lawn")  # delete f, insert n: 2
    acc.add("empty", "", "xy")  # nothing to read, two characters read
    acc.add("gone", "ab cd", "")
    records = acc.records()
    assert records.char_edits.tolist() == [2, 2, 5]
    assert records.word_edits.tolist() == [1, 1, 2]
    assert acc.per_image().values.tolist() == pytest.approx([0.5, 2.0, 1.0])


def test_takes_the_predictions_predict_makes():
    from app.core.evaluate import Boxes, Classes, DetectionAccumulator, Detections, Mask, Text

    det = DetectionAccumulator()
    det.add(0, Boxes(np.array([[0.0, 0, 10, 10]]), np.array([3])),
            Detections(np.array([[0.0, 0, 10, 10]]), np.array([0.9]), np.array([3])))
    assert det.result().metrics["map50"] == pytest.approx(1.0)
    cls = ClassificationAccumulator(6)
    cls.add(0, 2, Classes((1, 2, 0, 3, 4), (0.5, 0.3, 0.1, 0.05, 0.05)))
    assert cls.result().metrics == {"top1": 0.0, "top5": 1.0}
    seg = SegmentationAccumulator(2)
    seg.add(0, np.array([[0, 1]]), Mask(np.array([[0, 1]]), 2))
    assert seg.result().metrics["miou"] == 1.0
    rec = RecognitionAccumulator()
    rec.add(0, "kitten", Text("sitting", (1, 2, 3)))
    assert rec.result().metrics["cer"] == pytest.approx(0.5)
