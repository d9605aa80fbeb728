"""`trtlab eval` on a real segmenter and masks drawn by hand: u2netp (salient object) on two of trtlab's sample photos,
the cup with its saucer and spoon, and the rocket on its pad, each traced as ellipses and a polygon (below) and checked
by eye as a red overlay on the photo. u2netp's FP32 mask overlaps them by IoU 0.93 on the object, 0.98 on the
background."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from app.core.results import EvaluationResult
from tests.cli.runner import trtlab
from tests.support.evaluate import SAMPLES

SEGMENTER = Path("/work/shared/models/u2netp.onnx")
# The objects, traced on the photos' pixels: ellipses (x1, y1, x2, y2) and polygons.
TRACED = {
    "coffee": {"ellipses": [(75, 82, 478, 390), (173, 15, 398, 210)],           # the saucer, the cup
               "polygons": [[(392, 100), (405, 66), (424, 70), (410, 110)]]},    # the spoon's handle
    "rocket": {"ellipses": [],
               "polygons": [[(318, 127), (325, 136), (331, 150), (333, 400), (304, 400), (306, 150), (311, 136)]]},
}


@pytest.fixture(scope="module")
def salient(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """images/ and masks/ (0 background, 1 the object), the PNG masks layout."""
    root = tmp_path_factory.mktemp("salient")
    (root / "images").mkdir()
    (root / "masks").mkdir()
    for name, shapes in TRACED.items():
        shutil.copy(SAMPLES / f"{name}.jpg", root / "images" / f"{name}.jpg")
        with Image.open(SAMPLES / f"{name}.jpg") as photo:
            mask = Image.new("L", photo.size, 0)
        draw = ImageDraw.Draw(mask)
        for box in shapes["ellipses"]:
            draw.ellipse(box, fill=1)
        for polygon in shapes["polygons"]:
            draw.polygon(polygon, fill=1)
        mask.save(root / "masks" / f"{name}.png")
    return root


@pytest.fixture(scope="module")
def evaluated(salient: Path) -> EvaluationResult:
    if not SEGMENTER.is_file():
        pytest.skip(f"{SEGMENTER} is not here")
    r = trtlab("eval", SEGMENTER, "--dataset", salient, "--candidate", "ort-cpu:fp16", "--candidate", "ort-cpu:int8",
               "--json", "-")
    assert r.returncode == 0, r.stderr
    return EvaluationResult.from_json(json.loads(r.stdout))


def test_the_traced_masks_cover_the_objects(salient: Path):
    cup = np.asarray(Image.open(salient / "masks" / "coffee.png"))
    rocket = np.asarray(Image.open(salient / "masks" / "rocket.png"))
    assert set(np.unique(cup)) == {0, 1} and set(np.unique(rocket)) == {0, 1}
    assert 0.4 < cup.mean() < 0.6 and 0.02 < rocket.mean() < 0.05  # the cup fills half its photo, the rocket a sliver
    assert cup[240, 280] == 1 and cup[5, 5] == 0 and rocket[300, 318] == 1 and rocket[300, 100] == 0


def test_the_segmenter_finds_the_objects_and_fp16_keeps_them(evaluated: EvaluationResult):
    assert evaluated.dataset.task == "segmentation" and evaluated.dataset.format == "masks"
    assert evaluated.dataset.images == 2 and evaluated.main_metric == "miou"
    ref = evaluated.reference
    assert (ref.metrics["miou"] or 0) >= 0.9 and (ref.metrics["dice"] or 0) >= 0.95
    assert (ref.per_class["1"]["iou"] or 0) >= 0.85  # the object itself, not only the background
    fp16, int8 = evaluated.candidates
    assert abs(fp16.delta["miou"] or 0.0) <= 0.005
    assert int8.metrics["miou"] is not None and 0.0 <= int8.metrics["miou"] <= 1.0
    low_high = int8.interval("miou")
    assert low_high is not None and low_high[0] <= (int8.delta["miou"] or 0.0) <= low_high[1]
