"""`trtlab compare` judging answers as CI runs it: output kinds (inferred or --output-kind), task metrics in the
JSON, the answers as pictures, the sample photos as default inputs, and the exit codes."""

from __future__ import annotations

import json

import pytest

from app.core.measure.pictures import decode_picture
from tests.cli.runner import trtlab
from tests.detector_models import save, topk_detector_model, yolov8_head_model

U2NETP_OUTPUTS = ("1959", "1960", "1961", "1962", "1963", "1964", "1965")


def _compare(*args: object) -> tuple[int, dict, str]:
    r = trtlab("compare", *args, "--json", "-")
    assert "Traceback" not in r.stderr, r.stderr
    return r.returncode, (json.loads(r.stdout) if r.stdout.strip() else {}), r.stderr


@pytest.fixture(scope="module")
def topk_model(tmp_path_factory):
    return save(topk_detector_model(k=300), tmp_path_factory.mktemp("det"), "topk300.onnx")


@pytest.fixture(scope="module")
def yolo_model(tmp_path_factory):
    return save(yolov8_head_model(), tmp_path_factory.mktemp("yolo"), "yolov8_head.onnx")


@pytest.fixture(scope="module")
def u2netp_fp16(model_paths):
    """u2netp against FP16 on the CPU, with no --inputs: trtlab's sample photos."""
    return _compare(model_paths["u2netp"], "--candidate", "ort-cpu:fp16")


# ----------------------------------------------------------------------------------------------- detections
def test_topk_detector_fp16_passes_on_its_answer_while_cosine_is_low(topk_model):
    code, doc, err = _compare(topk_model, "--candidate", "ort-cpu:fp16")
    assert code == 0, err
    assert doc["output_kinds"]["dets"] == {"kind": "detections", "spec": "detections:xyxy",
                                           "reason": "rows of 6 values made through TopK", "user": False}
    (cand,) = doc["candidates"]
    (out,) = cand["outputs"]
    assert cand["passed"] and out["passed"] and out["kind"] == "detections" and out["kind_spec"] == "detections:xyxy"
    task = out["task"]
    assert task["missed"] == 0 and task["extra"] == 0 and task["matched"] > 0
    assert task["mean_iou"] > 0.99 and task["score_threshold"] == 0.25
    # FP16 reorders boxes of near-equal score among the 300: element-wise the list looks changed
    assert out["cosine"] < 0.999
    assert doc["random_data"] is False and "sample photos" in doc["inputs"]
    pics = doc["answers"]["outputs"]["dets"]
    assert pics["kind"] == "detections" and len(pics["ref"]) == doc["samples"]
    assert decode_picture(pics["candidates"]["ort-cpu:fp16"]["cand"][0]).size == (320, 320)


def test_topk_detector_as_a_tensor_fails_the_cosine_tolerance(topk_model):
    code, doc, err = _compare(topk_model, "--candidate", "ort-cpu:fp16", "--output-kind", "dets=tensor",
                              "--tol", "cos:0.999")
    assert code == 1, err
    (out,) = doc["candidates"][0]["outputs"]
    assert out["kind"] == "tensor" and out["task"] is None and not out["passed"]
    assert out["failures"][0].startswith("cos 0.99")
    assert doc["output_kinds"]["dets"]["user"] is True and doc["output_kinds"]["dets"]["reason"] == "set by you"
    assert doc["answers"]["outputs"] == {}  # a tensor has no answer to draw


def test_yolov8_head_is_decoded(yolo_model):
    code, doc, err = _compare(yolo_model, "--candidate", "ort-cpu:fp16", "--output-kind", "output0=yolo")
    assert code == 0, err
    (out,) = doc["candidates"][0]["outputs"]
    assert out["kind"] == "yolo" and out["kind_spec"] == "yolo:v8"
    assert out["task"]["matched"] > 0 and out["task"]["missed"] == 0 and out["task"]["extra"] == 0
    assert "nms_boundary" in out["task"]
    assert doc["answers"]["outputs"]["output0"]["kind"] == "yolo"


@pytest.mark.parametrize(("item", "words"), [
    ("nosuch=image", ["no output named 'nosuch'", "'output0'"]),
    ("output0=blob", ["'blob' is not an output kind", "detections"]),
    ("output0=yolo:v9", ["'v9' is not an option of the yolo kind", "v8"]),
    ("noequals", ["'noequals' is not NAME=KIND", "--output-kind output0=yolo"]),
])
def test_bad_output_kinds_exit_2(yolo_model, item, words):
    r = trtlab("compare", yolo_model, "--candidate", "ort-cpu:fp16", "--output-kind", item)
    assert r.returncode == 2, r.stderr
    assert all(w in r.stderr for w in words), r.stderr
    assert "Traceback" not in r.stderr and "Fix:" in r.stderr


# ----------------------------------------------------------------------------------------------- u2netp and photos
def test_u2netp_uses_the_sample_photos_by_default(u2netp_fp16):
    code, doc, err = u2netp_fp16
    assert code == 0, err
    assert "sample photos" in doc["inputs"] and doc["samples"] == 5 and doc["random_data"] is False
    assert {n: k["spec"] for n, k in doc["output_kinds"].items()} == dict.fromkeys(U2NETP_OUTPUTS, "image:nchw")
    (cand,) = doc["candidates"]
    assert cand["passed"]
    for out in cand["outputs"]:
        assert out["kind"] == "image" and out["passed"], out
        assert out["task"]["mask_iou"] >= 0.9 and out["task"]["psnr_db"] > 30 and out["task"]["probability"] is True


def test_u2netp_answers_carry_pictures(u2netp_fp16):
    _, doc, _ = u2netp_fp16
    answers = doc["answers"]
    assert answers["photos"] is True and len(answers["inputs"]) == 5
    assert all(u.startswith("data:image/jpeg;base64,") for u in answers["inputs"])
    assert decode_picture(answers["inputs"][0]).size == (320, 320)
    entry = answers["outputs"]["1959"]
    assert entry["kind"] == "image" and len(entry["ref"]) == 5
    mine = entry["candidates"]["ort-cpu:fp16"]
    assert len(mine["cand"]) == len(mine["diff"]) == len(mine["diff_max"]) == 5
    assert all(0 <= d < 1 for d in mine["diff_max"])
    for uri in (entry["ref"][0], mine["cand"][0], mine["diff"][0]):
        assert decode_picture(uri).size == (320, 320)
    assert [s["mask_iou"] >= 0.9 for s in mine["per_sample"]] == [True] * 5
    grey = decode_picture(entry["ref"][0]).convert("L")
    lo, hi = grey.getextrema()
    assert lo < 30 and hi > 220, "a mask with something in it"


def test_u2netp_random_inputs(model_paths):
    code, doc, err = _compare(model_paths["u2netp"], "--candidate", "ort-cpu:fp16", "--inputs", "random")
    assert doc["random_data"] is True and "random" in doc["inputs"] and doc["samples"] == 1
    assert doc["answers"]["photos"] is False
    outs = doc["candidates"][0]["outputs"]
    assert all(o["kind"] == "image" for o in outs)
    # On noise u2netp finds no object: every mask is empty, so there is no answer to compare (an IoU of 1 between two
    # empty masks says nothing). The values decide: FP16 rounding of the near-zero maps drags the cosine of the first
    # outputs under 0.99, and the comparison fails on them, saying why.
    assert all(o["task"]["empty_reference"] is True and o["judged_by"] == ["cos:0.99"] for o in outs)
    assert all(o["task"]["empty_reason"] == "an empty mask (no pixel above 0.5) on the sample" for o in outs)
    assert min(o["cosine"] for o in outs) < 0.99
    assert code == 1 and not doc["candidates"][0]["passed"]
    assert all(o["passed"] == (o["cosine"] >= 0.99) for o in outs)


def test_u2netp_mask_iou_tolerance_applies(model_paths, u2netp_fp16):
    _, base, _ = u2netp_fp16
    worst = min(o["task"]["mask_iou"] for o in base["candidates"][0]["outputs"])
    assert worst < 0.999, "FP16 changes a few mask pixels on the photos"
    code, doc, err = _compare(model_paths["u2netp"], "--candidate", "ort-cpu:fp16", "--tol", "mask_iou:0.999")
    assert code == 1, err
    assert doc["tolerances"] == ["mask_iou:0.999"]
    failed = [o for o in doc["candidates"][0]["outputs"] if not o["passed"]]
    assert failed and all(f.startswith("mask_iou ") and f.endswith("< 0.999") for o in failed for f in o["failures"])
    assert all(o["task"]["mask_iou"] >= 0.999 for o in doc["candidates"][0]["outputs"] if o["passed"])


# ----------------------------------------------------------------------------------------------- nothing to judge
@pytest.fixture(scope="module")
def absent_model(tmp_path_factory):
    """A detector of things the sample photos do not hold: no score reaches 0.25 on any of them."""
    return save(topk_detector_model(k=300, class_bias=-14.0), tmp_path_factory.mktemp("absent"), "absent.onnx")


def test_a_detector_on_photos_without_its_objects_says_so_and_exits_by_its_values(absent_model):
    code, doc, err = _compare(absent_model, "--candidate", "ort-cpu:fp16")
    (out,) = doc["candidates"][0]["outputs"]
    task = out["task"]
    assert task["empty_reference"] is True and task["empty_samples"] == task["samples"] == doc["samples"] == 5
    assert task["empty_reason"] == "no box scores above 0.25 on any of the 5 samples"
    assert out["judged_by"] == ["cos:0.99"]  # the element-wise verdict decides, not "0 matched"
    # FP16 reorders the 300 near-equal low scores: the values moved, so the exit is the values' verdict
    assert (code == 1) == (out["cosine"] < 0.99) and (code == 0) == out["passed"]
    text = trtlab("compare", absent_model, "--candidate", "ort-cpu:fp16").stdout
    assert "no answer to compare: no box scores above 0.25 on any of the 5 samples" in text
    assert "give inputs that hold what this model finds" in text
    assert "same boxes" not in text


def test_the_same_detector_on_photos_with_its_objects_is_judged_by_boxes(tmp_path):
    model = save(topk_detector_model(k=300, class_bias=-10.0), tmp_path, "present.onnx")
    code, doc, err = _compare(model, "--candidate", "ort-cpu:fp16")
    (out,) = doc["candidates"][0]["outputs"]
    assert code == 0, err
    assert out["judged_by"] == ["det_missed:0", "det_extra:0"] and out["task"]["matched"] > 0
    assert "empty_reference" not in out["task"] and 0 < out["task"]["empty_samples"] < 5


def test_the_report_says_there_was_nothing_to_compare(absent_model, tmp_path):
    out = tmp_path / "absent.json"
    trtlab("compare", absent_model, "--candidate", "ort-cpu:fp16", "--json", str(out))
    page = tmp_path / "absent.html"
    r = trtlab("report", str(out), "-o", str(page))
    assert r.returncode == 0, r.stderr
    text = page.read_text(encoding="utf-8")
    assert "The reference found nothing to compare on these inputs (dets)" in text
    assert "no answer to compare" in text and "nothing to compare: the reference found nothing" in text
    assert "boxes unchanged: 0 matched" not in text  # the scorecard judges by the values, not by zero boxes
