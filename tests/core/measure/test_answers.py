"""Judging answers, not tensors: boxes matched by class and IoU (order, score hysteresis, YOLO decoding, NMS),
top-1/top-5, mask IoU and PSNR, decoded sequences; how compare_samples lets the answer decide; the pictures."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from app.core.measure import answers as A
from app.core.measure import pictures
from app.core.measure.compare import compare_samples
from app.core.measure.kinds import OutputKind
from app.core.measure.tolerance import Tolerance
from app.core.results import SampleFacts

DET = OutputKind("detections")
V8 = OutputKind("yolo", layout="v8")
V5 = OutputKind("yolo", layout="v5")
NCHW = OutputKind("image", layout="nchw")


def _dets(rows, pad: int = 0) -> np.ndarray:
    """A [1, len(rows) + pad, 6] detection list (x1, y1, x2, y2, score, class); padding rows score 0."""
    arr = np.zeros((len(rows) + pad, 6), np.float32)
    if rows:
        arr[:len(rows)] = np.asarray(rows, np.float32)
    return arr[None]


BOXES = [[10, 10, 50, 60, 0.95, 0], [100, 40, 160, 120, 0.80, 1], [30, 150, 90, 200, 0.55, 2],
         [200, 10, 230, 50, 0.31, 0], [5, 200, 25, 230, 0.12, 1], [120, 180, 140, 210, 0.05, 2]]


# ----------------------------------------------------------------------------------------------- detections
def test_a_reordered_list_passes():
    ref = _dets(BOXES, pad=4)
    perm = np.array([5, 2, 9, 0, 7, 4, 3, 8, 1, 6])  # every row moves, the low-score rows too
    cand = ref[:, perm]
    r = A.judge_detections([ref], [cand], DET)
    assert r.task["matched"] == 4 and r.task["missed"] == 0 and r.task["extra"] == 0
    assert r.task["mean_iou"] == pytest.approx(1.0) and r.task["max_score_change"] == 0
    assert r.values == {"det_missed": 0.0, "det_extra": 0.0, "det_iou": pytest.approx(1.0)}
    assert r.defaults == ("det_missed:0", "det_extra:0")


def test_low_score_rows_swapping_places_change_nothing():
    ref = _dets([[0, 0, 10, 10, 0.9, 0], [50, 50, 60, 60, 0.02, 1], [80, 80, 90, 90, 0.03, 1]])
    cand = _dets([[0, 0, 10, 10, 0.9, 0], [80, 80, 90, 90, 0.031, 1], [50, 50, 60, 60, 0.019, 1]])
    r = A.judge_detections([ref], [cand], DET)
    assert (r.task["matched"], r.task["missed"], r.task["extra"]) == (1, 0, 0)


@pytest.mark.parametrize(("ref_score", "cand_score"), [(0.26, 0.24), (0.24, 0.26)])
def test_a_score_across_the_threshold_is_no_change(ref_score, cand_score):
    """0.26 against 0.24 with a threshold of 0.25: the other side's boxes are matched down to half the threshold."""
    ref = _dets([[0, 0, 10, 10, 0.9, 0], [20, 20, 40, 40, ref_score, 1]])
    cand = _dets([[0, 0, 10, 10, 0.9, 0], [20, 20, 40, 40, cand_score, 1]])
    r = A.judge_detections([ref], [cand], DET, threshold=0.25)
    assert r.task["missed"] == 0 and r.task["extra"] == 0 and r.task["matched"] == 2
    assert r.task["score_threshold"] == 0.25
    assert r.task["max_score_change"] == pytest.approx(0.02, abs=1e-6)


def test_a_score_far_under_the_threshold_is_missed():
    ref = _dets([[20, 20, 40, 40, 0.30, 1]])
    cand = _dets([[20, 20, 40, 40, 0.10, 1]])  # under half the threshold: lost
    r = A.judge_detections([ref], [cand], DET)
    assert (r.task["matched"], r.task["missed"], r.task["extra"]) == (0, 1, 0)


def test_a_removed_box_is_missed():
    ref = _dets(BOXES)
    cand = _dets([b for i, b in enumerate(BOXES) if i != 1])
    r = A.judge_detections([ref], [cand], DET)
    assert (r.task["matched"], r.task["missed"], r.task["extra"]) == (3, 1, 0)
    assert r.values["det_missed"] == 1.0
    (answer,) = r.answers
    assert [b["status"] for b in answer["ref"]].count("missed") == 1
    assert next(b for b in answer["ref"] if b["status"] == "missed")["box"] == [100, 40, 160, 120]


def test_an_added_box_is_extra():
    ref = _dets(BOXES)
    cand = _dets(BOXES + [[300, 300, 340, 350, 0.7, 0]])
    r = A.judge_detections([ref], [cand], DET)
    assert (r.task["matched"], r.task["missed"], r.task["extra"]) == (4, 0, 1)
    assert [b["status"] for b in r.answers[0]["cand"]].count("extra") == 1


def test_a_changed_class_is_missed_and_extra():
    ref = _dets(BOXES)
    changed = [list(b) for b in BOXES]
    changed[0][5] = 2
    r = A.judge_detections([ref], [_dets(changed)], DET)
    assert (r.task["matched"], r.task["missed"], r.task["extra"]) == (3, 1, 1)


def test_mean_iou_of_shifted_boxes():
    ref = _dets([[0, 0, 10, 10, 0.9, 0], [20, 0, 40, 20, 0.8, 0]])
    cand = _dets([[1, 0, 11, 10, 0.9, 0], [20, 2, 40, 22, 0.8, 0]])
    # IoU: 90 / 110 (shifted 1 of 10), and 360 / 440 (shifted 2 of 20)
    r = A.judge_detections([ref], [cand], DET)
    assert r.task["matched"] == 2
    assert r.task["mean_iou"] == pytest.approx((90 / 110 + 360 / 440) / 2)
    assert r.values["det_iou"] == pytest.approx(9 / 11)


def test_a_box_shifted_below_match_iou_is_missed_and_extra():
    ref = _dets([[0, 0, 10, 10, 0.9, 0]])
    cand = _dets([[6, 0, 16, 10, 0.9, 0]])  # IoU 40 / 160 = 0.25 < 0.5
    r = A.judge_detections([ref], [cand], DET)
    assert (r.task["missed"], r.task["extra"]) == (1, 1) and r.task["mean_iou"] is None
    assert r.values["det_iou"] == 1.0  # no match, nothing to average: not the reason it fails


def test_cxcywh_boxes():
    kind = OutputKind.parse("detections:cxcywh")
    ref = _dets([[5, 5, 10, 10, 0.9, 1]])
    cand = _dets([[6, 5, 10, 10, 0.9, 1]])
    r = A.judge_detections([ref], [cand], kind)
    assert r.answers[0]["ref"][0]["box"] == [0, 0, 10, 10]
    assert r.answers[0]["cand"][0]["box"] == [1, 0, 11, 10]
    assert r.task["mean_iou"] == pytest.approx(90 / 110)


def test_score_and_class_columns_and_one_class():
    kind = OutputKind.parse("detections:score=5,class=none")
    ref = np.array([[[0, 0, 10, 10, 7, 0.9]]], np.float32)  # column 4 is something else, score in column 5
    (boxes,) = A.decode_boxes(ref[0], kind, 0.1)
    assert boxes.tolist() == [[0, 0, 10, 10, pytest.approx(0.9), 0]]


def test_iou_matrix_hand_computed():
    a = np.array([[0, 0, 10, 10]], np.float64)
    b = np.array([[5, 5, 15, 15], [20, 20, 30, 30], [0, 0, 10, 10]], np.float64)
    assert A.iou_matrix(a, b).tolist() == [[pytest.approx(25 / 175), 0.0, 1.0]]
    assert A.iou_matrix(a, np.zeros((0, 4))).shape == (1, 0)


# ----------------------------------------------------------------------------------------------- YOLO heads
def test_yolo_v8_decoding():
    # [1, 4 + C, A] with C = 2, A = 3: cx, cy, w, h, then class scores (no objectness)
    head = np.array([[[50, 100, 10],      # cx
                      [40, 60, 10],       # cy
                      [20, 40, 4],        # w
                      [10, 30, 4],        # h
                      [0.9, 0.1, 0.05],   # class 0
                      [0.2, 0.7, 0.01]]],  # class 1
                    np.float32)
    (boxes,) = A.decode_boxes(head, V8, 0.25)
    assert boxes.shape == (2, 6)  # the third anchor scores 0.05
    np.testing.assert_allclose(boxes[0], [40, 35, 60, 45, 0.9, 0], rtol=1e-6)
    np.testing.assert_allclose(boxes[1], [80, 45, 120, 75, 0.7, 1], rtol=1e-6)


def test_yolo_v5_decoding_score_is_objectness_times_class():
    # [1, A, 5 + C]: cx, cy, w, h, objectness, class scores
    head = np.array([[[50, 40, 20, 10, 0.8, 0.9, 0.3],
                      [100, 60, 40, 30, 0.5, 0.2, 0.6],
                      [10, 10, 4, 4, 0.1, 0.9, 0.9]]], np.float32)
    (boxes,) = A.decode_boxes(head, V5, 0.25)
    assert boxes.shape == (2, 6)  # the third: 0.1 × 0.9 = 0.09
    np.testing.assert_allclose(boxes[0], [40, 35, 60, 45, 0.72, 0], rtol=1e-6)
    np.testing.assert_allclose(boxes[1], [80, 45, 120, 75, 0.30, 1], rtol=1e-6)


def test_yolo_v5_with_one_class_uses_objectness():
    head = np.array([[[50, 40, 20, 10, 0.8, 0.5]]], np.float32)  # 6 columns: one class
    (boxes,) = A.decode_boxes(head, V5, 0.25)
    np.testing.assert_allclose(boxes[0], [40, 35, 60, 45, 0.4, 0], rtol=1e-6)


def test_nms_removes_a_duplicate_of_the_same_class_only():
    rows = np.array([[0, 0, 10, 10, 0.9, 0], [1, 0, 11, 10, 0.8, 0],   # IoU 0.82 with the first: suppressed
                     [1, 0, 11, 10, 0.7, 1],                          # the same box, another class: kept
                     [30, 30, 40, 40, 0.6, 0]], np.float64)
    kept = A.nms(rows)
    assert kept[:, 4].tolist() == [0.9, 0.7, 0.6]


def test_yolo_head_duplicates_are_suppressed_before_matching():
    # Two anchors on the same object (v8 layout): NMS keeps the better one on both sides.
    head = np.array([[[50, 51], [40, 40], [20, 20], [10, 10], [0.9, 0.85]]], np.float32)
    r = A.judge_detections([head], [head.copy()], V8)
    assert (r.task["matched"], r.task["missed"], r.task["extra"]) == (1, 0, 0)
    cand = head.copy()
    cand[0, 4] = [0.85, 0.9]  # the other anchor wins: the same answer
    r = A.judge_detections([head], [cand], V8)
    assert (r.task["matched"], r.task["missed"], r.task["extra"]) == (1, 0, 0)
    assert r.task["mean_iou"] == pytest.approx(190 / 210)  # 20 × 10 boxes 1 px apart


def test_nms_boundary_is_not_missed():
    """A box that NMS keeps on one side and suppresses on the other because its overlap sits at 0.45."""
    # Second box overlaps the first 0.42 in the reference (kept), 0.47 in the candidate (suppressed).
    def head(shift: float) -> np.ndarray:
        # v8: cx, cy, w, h, one class
        return np.array([[[50, 50 + shift], [50, 50], [20, 20], [20, 20], [0.9, 0.8]]], np.float32)

    ref, cand = head(8.2), head(7.2)  # IoU (20-8.2)*20/(800-(20-8.2)*20) ≈ 0.42; with 7.2 ≈ 0.47
    assert A.iou_matrix(np.array([[40, 40, 60, 60]]), np.array([[48.2, 40, 68.2, 60]]))[0, 0] < A.NMS_IOU
    r = A.judge_detections([ref], [cand], V8)
    assert r.task["missed"] == 0 and r.task["extra"] == 0 and r.task["nms_boundary"] == 1
    assert r.task["matched"] == 1


# ----------------------------------------------------------------------------------------------- classes
def test_top1_top5_hand_computed():
    ref = np.zeros((4, 8), np.float32)
    ref[0, 1] = ref[1, 2] = ref[2, 3] = ref[3, 4] = 1  # best labels 1, 2, 3, 4
    cand = np.tile(np.arange(8, dtype=np.float32) / 100, (4, 1))  # all rank 7 > 6 > … > 0
    cand[0, 1] = 1            # row 0 agrees
    cand[1, 5] = 1            # row 1: best is 5; label 2 ranks 6th (after 5, 7, 6, 4, 3)
    cand[2, 0], cand[2, 3] = 1, 0.5  # row 2: label 3 second: in the top 5
    cand[3, 6] = 1            # row 3: 6 best, then 7, 5, 4: label 4 fourth
    r = A.judge_classes([ref[:2], ref[2:]], [cand[:2], cand[2:]])
    assert r.task == {"top1": 0.25, "top5": 0.75}
    assert r.values == {"top1": 0.25, "top5": 0.75} and r.defaults == ("top1:0.99",)
    assert r.answers[0]["ref"][0] == [1, 1.0] and r.answers[0]["cand"][0] == [1, 1.0]
    assert len(r.answers) == 2 and len(r.answers[0]["ref"]) == 5


def test_top5_is_none_with_five_classes_or_fewer():
    ref = np.array([[0.1, 0.6, 0.3]], np.float32)
    r = A.judge_classes([ref], [np.array([[0.5, 0.4, 0.1]], np.float32)])
    assert r.task == {"top1": 0.0, "top5": None}


# ----------------------------------------------------------------------------------------------- images
def test_identical_masks_iou_1():
    x = np.random.default_rng(0).random((1, 1, 32, 32)).astype(np.float32)
    r = A.judge_image([x], [x.copy()], NCHW)
    assert r.task["mask_iou"] == 1.0 and r.task["probability"] is True and r.task["psnr_db"] == A.PSNR_CAP_DB
    assert r.defaults == ("mask_iou:0.9",)


def test_half_covered_mask_hand_computed():
    ref = np.zeros((1, 1, 32, 32), np.float32)
    ref[..., :16] = 0.9             # the left half
    cand = np.zeros_like(ref)
    cand[..., :8] = 0.8             # the left quarter: 256 of the union's 512
    r = A.judge_image([ref], [cand], NCHW)
    assert r.task["mask_iou"] == pytest.approx(0.5)
    assert r.answers == [{"mask_iou": pytest.approx(0.5), "psnr_db": r.task["psnr_db"], "ref_empty": False}]


def test_worst_sample_and_channel():
    ref = np.zeros((1, 2, 32, 32), np.float32)
    ref[:, :, :, :16] = 1
    good, bad = ref.copy(), ref.copy()
    bad[:, 1, :, :8] = 0  # channel 1 of sample 2 loses half its mask
    r = A.judge_image([ref, ref], [good, bad], NCHW)
    assert r.task["mask_iou"] == pytest.approx(0.5)
    assert [a["mask_iou"] for a in r.answers] == [1.0, pytest.approx(0.5)]


def test_nhwc_and_nhw_layouts():
    ref = np.zeros((1, 32, 32, 1), np.float32)
    ref[:, :, :16] = 1
    cand = ref.copy()
    cand[:, :, :8] = 0
    assert A.judge_image([ref], [cand], OutputKind("image", layout="nhwc")).task["mask_iou"] == pytest.approx(0.5)
    assert A.judge_image([ref[..., 0]], [cand[..., 0]], OutputKind("image", layout="nhw")).task["mask_iou"] \
        == pytest.approx(0.5)


def test_a_flickering_speck_is_no_changed_answer():
    """Specks far under 1 % of the picture: the union is floored at 1 % (1024 of 320 × 320 pixels)."""
    ref = np.zeros((1, 1, 320, 320), np.float32)
    ref[0, 0, 100:103, 100:103] = 0.9          # a 3 × 3 speck
    cand = np.zeros_like(ref)
    cand[0, 0, 100:103, 101:104] = 0.9         # moved one pixel: 6 pixels differ
    r = A.judge_image([ref], [cand], NCHW)
    assert r.task["mask_iou"] == pytest.approx(1 - 6 / 1024) and r.task["mask_iou"] > 0.99
    gone = np.zeros_like(ref)                  # the speck vanishes: 9 pixels
    assert A.judge_image([ref], [gone], NCHW).task["mask_iou"] == pytest.approx(1 - 9 / 1024)
    # a big mask is plain IoU
    big = np.zeros_like(ref)
    big[0, 0, :160] = 1
    half = np.zeros_like(ref)
    half[0, 0, :80] = 1
    assert A.judge_image([big], [half], NCHW).task["mask_iou"] == pytest.approx(0.5)


def test_non_probability_image_is_judged_by_psnr():
    ref = np.linspace(-5, 5, 32 * 32, dtype=np.float32).reshape(1, 1, 32, 32)
    cand = ref + np.float32(0.1)
    r = A.judge_image([ref], [cand], NCHW)
    assert r.task["probability"] is False and r.task["mask_iou"] is None
    assert r.task["psnr_db"] == pytest.approx(10 * math.log10(10 ** 2 / 0.01), abs=1e-3)  # peak 10, mse 0.01
    assert r.defaults == A.IMAGE_NOT_PROBABILITY == ("psnr_db:30",)


# ----------------------------------------------------------------------------------------------- sequences
def test_ctc_collapse():
    assert A.collapse(np.array([0, 3, 3, 0, 4]), ctc=True) == [3, 4]
    assert A.collapse(np.array([3, 0, 3, 3, 4, 4, 0]), ctc=True) == [3, 3, 4]  # a blank separates repeats
    assert A.collapse(np.array([0, 3, 3, 0, 4]), ctc=False) == [0, 3, 3, 0, 4]


@pytest.mark.parametrize(("a", "b", "d"), [([1, 2, 3], [1, 2, 3], 0), ([1, 2, 3], [1, 3], 1), ([], [1, 2], 2),
                                           ([1, 2, 3], [3, 2, 1], 2), ([5, 1, 2, 3, 4], [1, 2, 3, 4, 6], 2)])
def test_edit_distance(a, b, d):
    assert A.edit_distance(a, b) == d == A.edit_distance(b, a)


def _one_hot(tokens, vocab: int = 6) -> np.ndarray:
    return np.eye(vocab, dtype=np.float32)[np.asarray(tokens)]


def test_judge_sequence_ctc():
    ref = _one_hot([[0, 3, 3, 0, 4]])      # [1, T=5, V=6] → 3, 4
    cand = _one_hot([[0, 3, 0, 3, 4]])     # → 3, 3, 4
    r = A.judge_sequence([ref], [cand], OutputKind("sequence"))
    assert r.task == {"token_agreement": pytest.approx(3 / 5), "edit_distance": 1, "ctc": True, "empty_samples": 0,
                      "samples": 1}
    assert r.values == {"token_agreement": pytest.approx(0.6), "edit_distance": 1.0}
    assert r.answers == [{"ref": [3, 4], "cand": [3, 3, 4], "edit_distance": 1, "ref_empty": False}]
    assert r.defaults == ("edit_distance:0",)
    plain = A.judge_sequence([ref], [cand], OutputKind.parse("sequence:noctc"))
    assert plain.task["edit_distance"] == 2 and plain.answers[0]["ref"] == [0, 3, 3, 0, 4]


def test_judge_sequence_time_major():
    # Two items over 4 steps, time-major [T=4, N=2, V=6]: item 0 reads 1 2 2 3, item 1 reads 5 5 0 4.
    items = np.array([[1, 2, 2, 3], [5, 5, 0, 4]])
    ref = np.swapaxes(_one_hot(items), 0, 1)
    assert ref.shape == (4, 2, 6)
    cand = ref.copy()
    cand[3, 1] = _one_hot([1])[0]           # item 1's last step becomes 1
    tnv = OutputKind.parse("sequence:tnv")
    assert A.tokens(ref, tnv).tolist() == items.tolist()
    r = A.judge_sequence([ref], [cand], tnv)
    assert r.task["token_agreement"] == pytest.approx(7 / 8) and r.task["edit_distance"] == 1
    # the first item is the one shown; the sample's edit distance is its worst item's
    assert r.answers == [{"ref": [1, 2, 3], "cand": [1, 2, 3], "edit_distance": 1, "ref_empty": False}]
    # read as batch-major, the same array is 4 items of 2 steps
    assert A.tokens(ref, OutputKind("sequence")).shape == (4, 2)


def test_judge_refuses_shapes_that_do_not_fit_the_kind():
    r = A.judge(V8, [np.zeros((1, 3), np.float32)], [np.zeros((1, 3), np.float32)])
    assert r is not None and "does not read as yolo:v8" in r.task["error"]
    assert A.judge(OutputKind("embedding"), [np.zeros(3)], [np.zeros(3)]) is None


# ----------------------------------------------------------------------------------------------- compare_samples
def _many_boxes(n: int = 40, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 300, (n, 2))
    wh = rng.uniform(10, 60, (n, 2))
    score = np.sort(rng.uniform(0.0, 1.0, n))[::-1]
    cls = rng.integers(0, 3, n)
    return np.column_stack([xy, xy + wh, score, cls]).astype(np.float32)[None]


def test_reordered_detections_pass_as_detections_and_fail_as_tensor():
    ref = _many_boxes()
    perm = np.random.default_rng(1).permutation(ref.shape[1])
    cand = ref[:, perm]
    kinds = {"dets": OutputKind("detections")}
    tol = [Tolerance("cos", 0.999)]
    as_tensor = compare_samples([{"dets": ref}], [{"dets": cand}], "c", tol)
    m = as_tensor.outputs[0]
    assert m.cosine < 0.999 and not as_tensor.passed and m.kind == "tensor" and m.task is None
    assert any(f.startswith("cos ") for f in m.failures)
    as_dets = compare_samples([{"dets": ref}], [{"dets": cand}], "c", kinds=kinds)
    m = as_dets.outputs[0]
    assert as_dets.passed and m.kind == "detections" and m.task["missed"] == 0 and m.task["extra"] == 0
    assert m.cosine < 0.999  # still reported, as detail


def test_element_wise_tolerances_judge_only_element_wise_outputs():
    """`--tol cos:0.999` holds the tensor output to it; the detections are judged by their answer (set their kind
    to tensor to hold them to an element-wise tolerance)."""
    ref = _many_boxes()
    cand = ref[:, ::-1].copy()
    feat = np.linspace(-1, 1, 64, dtype=np.float32).reshape(1, 64)
    rep = compare_samples([{"dets": ref, "feat": feat}], [{"dets": cand, "feat": feat * 0.5 + 0.3}], "c",
                          [Tolerance("cos", 0.999)], kinds={"dets": OutputKind("detections"), "feat": OutputKind()})
    dets, feat_m = rep.outputs
    assert dets.passed and dets.cosine < 0.999 and dets.task["missed"] == 0
    assert not feat_m.passed and feat_m.failures[0].startswith("cos ") and not rep.passed


def test_det_missed_tolerance_allows_one_missed_box():
    ref = _many_boxes()
    cand = ref.copy()
    first = int(np.argmax(ref[0, :, 4]))
    cand[0, first, 4] = 0.0  # the best box is lost
    kinds = {"dets": OutputKind("detections")}
    default = compare_samples([{"dets": ref}], [{"dets": cand}], "c", kinds=kinds)
    m = default.outputs[0]
    assert not default.passed and m.task["missed"] == 1 and m.failures == ["det_missed 1 > 0"]
    allowed = compare_samples([{"dets": ref}], [{"dets": cand}], "c", [Tolerance.parse("det_missed:1")], kinds=kinds)
    assert allowed.passed and allowed.outputs[0].task["missed"] == 1
    assert allowed.tolerances == ["det_missed:1"]


@pytest.mark.parametrize("kind", ["detections", "tensor"])
def test_a_nan_in_the_candidate_always_fails(kind):
    ref = _many_boxes()
    cand = ref.copy()
    cand[0, 30, 1] = np.nan  # a low-score box's corner: no answer changes, but NaN is never fine
    rep = compare_samples([{"dets": ref}], [{"dets": cand}], "c", [Tolerance.parse("det_missed:5")],
                          kinds={"dets": OutputKind(kind)})
    assert not rep.passed and "NaN/Inf" in rep.outputs[0].failures[0]


def _kind_case(kind: str) -> tuple[OutputKind, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    if kind == "detections":
        ref = _many_boxes()
        shift = np.array([0.5, 0.5, 0.5, 0.5, 0, 0], np.float32)  # every box 0.5 px right and down
        return OutputKind("detections"), ref, ref + shift
    if kind == "yolo":
        head = np.zeros((1, 6, 64), np.float32)
        head[0, :4] = rng.uniform(20, 40, (4, 64))
        head[0, 4:] = rng.uniform(0, 0.2, (2, 64))
        head[0, 4, :3] = [0.9, 0.8, 0.7]
        return OutputKind("yolo", layout="v8"), head, head * np.float32(1.001)
    if kind == "image":
        ref = rng.random((1, 1, 40, 48)).astype(np.float32)
        return OutputKind("image", layout="nchw"), ref, np.clip(ref + 0.01, 0, 1)
    if kind == "classes":
        ref = rng.random((1, 10)).astype(np.float32)
        return OutputKind("classes"), ref, ref * np.float32(1.01)
    ref = _one_hot([[0, 1, 1, 0, 2, 3]], 5) + rng.random((1, 6, 5)).astype(np.float32) * 0.1
    return OutputKind("sequence"), ref, ref * np.float32(1.01)


TASK_KEYS = {"detections": {"matched", "missed", "extra", "mean_iou", "score_threshold"},
             "yolo": {"matched", "missed", "extra", "mean_iou", "score_threshold"},
             "image": {"mask_iou", "psnr_db"}, "classes": {"top1", "top5"},
             "sequence": {"token_agreement", "edit_distance"}}


@pytest.mark.parametrize("kind", sorted(TASK_KEYS))
def test_json_has_kind_and_task(kind):
    k, ref, cand = _kind_case(kind)
    rep = compare_samples([{"out": ref}], [{"out": cand}], "ort-cpu:fp16", kinds={"out": k})
    doc = json.loads(json.dumps(rep.to_json()))
    (out,) = doc["outputs"]
    assert out["kind"] == kind and out["kind_spec"] == k.text()
    assert TASK_KEYS[kind] <= set(out["task"]), out["task"]
    assert rep.passed, out["failures"]
    assert "answers" not in out  # drawn as pictures, not written into the JSON


def test_json_of_an_element_wise_output():
    rep = compare_samples([{"y": np.ones((1, 8), np.float32)}], [{"y": np.ones((1, 8), np.float32)}], "c")
    out = rep.to_json()["outputs"][0]
    assert out["kind"] == "tensor" and out["kind_spec"] == "tensor" and out["task"] is None


def test_task_tolerances_of_another_kind_do_not_apply():
    k, ref, cand = _kind_case("classes")
    rep = compare_samples([{"out": ref}], [{"out": cand}], "c", [Tolerance.parse("mask_iou:0.999")],
                          kinds={"out": k})
    # mask_iou means nothing for classes: the kind's own default (top1:0.99) judges it
    assert rep.passed and rep.outputs[0].task["top1"] == 1.0


def test_image_mask_iou_tolerance_applies():
    ref = np.zeros((1, 1, 32, 32), np.float32)
    ref[..., :16] = 1
    cand = ref.copy()
    cand[..., 15] = 0  # one column of 16 lost: IoU 15/16
    kinds = {"m": NCHW}
    assert compare_samples([{"m": ref}], [{"m": cand}], "c", kinds=kinds).passed
    strict = compare_samples([{"m": ref}], [{"m": cand}], "c", [Tolerance.parse("mask_iou:0.99")], kinds=kinds)
    assert not strict.passed and strict.outputs[0].failures == ["mask_iou 0.937500 < 0.99"]


# ----------------------------------------------------------------------------------------------- pictures
def _pictures(kind: str) -> tuple[OutputKind, dict[str, list]]:
    k, ref, cand = _kind_case(kind)
    result = A.judge(k, [ref], [cand])
    assert result is not None
    return k, pictures.output_pictures(k, [ref], [cand], result.answers, [None], (64, 64))


@pytest.mark.parametrize("kind", sorted(TASK_KEYS))
def test_output_pictures_decode_for_every_kind(kind):
    _, pics = _pictures(kind)
    expected = {"image": {"ref", "cand", "diff", "diff_max"}, "detections": {"ref", "cand"}, "yolo": {"ref", "cand"},
                "classes": {"cand"}, "sequence": {"cand", "text"}}[kind]
    assert set(pics) == expected
    for key in ("ref", "cand", "diff"):
        for uri in pics.get(key, []):
            assert uri.startswith(("data:image/png;base64,", "data:image/jpeg;base64,"))
            img = pictures.decode_picture(uri)
            assert 16 <= min(img.size) and max(img.size) <= pictures.MAX_SIDE + 60, (key, img.size)
    if kind == "image":
        assert [pictures.decode_picture(u).size for u in pics["ref"]] == [(48, 40)]  # W × H of the plane
        assert pics["diff"][0].startswith("data:image/jpeg") and pics["diff_max"] == [pytest.approx(0.01, abs=1e-6)]
    if kind in ("detections", "yolo"):
        assert pictures.decode_picture(pics["cand"][0]).size == (pictures.MAX_SIDE, pictures.MAX_SIDE)
    if kind == "sequence":
        assert pics["text"] == [{"ref": "1 2 3", "cand": "1 2 3"}]


def test_boxes_picture_marks_missed_boxes_in_red():
    ref = _dets([[4, 4, 30, 30, 0.9, 0]])
    r = A.judge_detections([ref], [_dets([], pad=1)], DET)  # the candidate finds nothing
    assert r.task["missed"] == 1
    pics = pictures.output_pictures(DET, [ref], [ref], r.answers, [None], (64, 64))
    img = np.asarray(pictures.decode_picture(pics["cand"][0]))
    assert (np.abs(img.astype(int) - pictures.MISSED_COLOUR).sum(axis=-1) < 30).sum() > 100


def test_u2netp_mask_picture_is_not_blank(models_dir):
    """A real run of u2netp on a sample photo: the mask picture has a salient object, dark and bright pixels."""
    import onnx
    import onnxruntime as ort

    from app.core.evaluate import photo_source, photo_tensor
    from app.core.measure import make_samples, resolve_input_shapes, sample_photos
    from app.core.model.tensors import graph_inputs, value_info_to_tensor_info

    path = models_dir / "u2netp.onnx"
    if not path.is_file():
        pytest.skip(f"u2netp.onnx is not in {models_dir}")
    if not sample_photos():
        pytest.skip("the sample photos are not installed")
    model = onnx.load(str(path))
    infos = [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]
    shapes = resolve_input_shapes(infos, {})
    source = photo_source(model, infos, shapes)
    assert source is not None
    feeds = make_samples(model, infos, shapes, source, 1, photos=photo_tensor)[0]
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    (mask,) = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"]).run(["1959"], feeds)
    cand = np.clip(mask + np.float32(0.02), 0, 1)
    result = A.judge(NCHW, [mask], [cand])
    pics = pictures.output_pictures(NCHW, [mask], [cand], result.answers, [pictures.input_picture(feeds, None)],
                                    (320, 320))
    grey = np.asarray(pictures.decode_picture(pics["ref"][0]).convert("L"), np.float64)
    assert grey.shape == (320, 320)
    bright, dark = (grey > 200).mean(), (grey < 50).mean()
    assert bright > 0.02 and dark > 0.2, (bright, dark)
    assert pictures.decode_picture(pics["diff"][0]).size == (320, 320)
    photo = pictures.input_picture(feeds, source.preprocess)
    assert photo is not None and photo.size == (320, 320) and np.asarray(photo).std() > 20


def test_each_sample_has_its_own_verdict_facts_and_words():
    """Per-sample facts (what the Answers tab and the report caption each picture with): counts per image for boxes,
    the top-1 for labels, the edit distance for text; one answer per sample whatever the batch."""
    from app.core.measure import sample_words
    from app.core.measure.answers import judge_classes, judge_detections, judge_sequence
    from app.core.measure.kinds import OutputKind

    box = [10, 10, 50, 50, 0.9, 1]
    other = [60, 60, 90, 90, 0.8, 2]
    ref = [np.array([[box, other], [box, other]], np.float32)]            # one sample, a batch of two images
    cand = [np.array([[box, [0, 0, 0, 0, 0, 0]], [box, other]], np.float32)]
    r = judge_detections(ref, cand, OutputKind("detections"))
    assert len(r.answers) == 1 and r.task["missed"] == 1
    assert {k: r.answers[0][k] for k in ("matched", "missed", "extra")} == {"matched": 3, "missed": 1, "extra": 0}
    facts = SampleFacts.from_json(r.answers[0])
    assert sample_words("detections", facts) == "this sample: 1 missed, 0 extra (3 matched)"
    c = judge_classes([np.array([[0.1, 0.9]]), np.array([[0.6, 0.4]])],
                      [np.array([[0.2, 0.8]]), np.array([[0.4, 0.6]])])
    assert [a["top1"] for a in c.answers] == [True, False]
    assert sample_words("classes", SampleFacts.from_json(c.answers[1])) == "this sample: the top-1 label changed"
    logits = np.eye(4, dtype=np.float32)[[0, 3, 3, 0, 2]][None]
    changed = np.eye(4, dtype=np.float32)[[0, 3, 3, 0, 1]][None]
    q = judge_sequence([logits, logits], [logits, changed], OutputKind("sequence", layout="ntv"))
    assert [a["edit_distance"] for a in q.answers] == [0, 1]
    assert sample_words("sequence", SampleFacts.from_json(q.answers[0])) == "this sample: same text"
    assert sample_words("tensor", SampleFacts()) == "" and sample_words("detections", None) == ""
