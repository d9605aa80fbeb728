"""Mapping a model's classes to a dataset's categories: by name, COCO's 80 → 91 ids, a labels file, refusals."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import helper

from app.core.dataset import COCO_80_NAMES, COCO_80_TO_91, ClassMapError, class_map, model_class_names

NUDENET = Path.home() / ".cache" / "trtlab" / "survey" / "nudenet" / "320n.onnx"
COCO_91 = tuple((cid, name) for cid, name in zip(COCO_80_TO_91, COCO_80_NAMES, strict=True))


def _model_with(names: str | None) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])
    model = helper.make_model(helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g", [x],
                                               [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])]))
    if names is not None:
        helper.set_model_props(model, {"names": names, "stride": "32"})
    return model


def test_ultralytics_names_from_a_real_model_map_by_name():
    if not NUDENET.is_file():
        pytest.skip(f"{NUDENET} is absent (the survey's NudeNet detector is downloaded by hand)")
    names = model_class_names(onnx.load(str(NUDENET), load_external_data=False))
    assert names is not None and len(names) == 18 and names[1] == "FACE_FEMALE"
    mapping = class_map(names, [(1, "FACE_FEMALE"), (2, "face_male")])
    assert mapping.pairs == ((1, 1), (12, 2)) and mapping.how == "by name"
    assert mapping.dataset_id(12) == 2 and mapping.model_index(1) == 1 and mapping.dataset_id(0) is None


def test_model_class_names_reads_dict_and_list_literals():
    assert model_class_names(_model_with("{0: 'person', 1: 'traffic light'}")) == {0: "person", 1: "traffic light"}
    assert model_class_names(_model_with("['cat', 'dog']")) == {0: "cat", 1: "dog"}
    assert model_class_names(_model_with("not a literal (")) is None
    assert model_class_names(_model_with(None)) is None


def test_names_match_ignoring_case_spaces_underscores_hyphens():
    mapping = class_map(["Traffic light", "fire-hydrant", "stop_sign"],
                        [(10, "TRAFFIC_LIGHT"), (11, "fire hydrant"), (13, "Stop-Sign")])
    assert mapping.pairs == ((0, 10), (1, 11), (2, 13))


def test_a_mismatch_is_refused_with_both_lists():
    with pytest.raises(ClassMapError) as err:
        class_map({0: "FACE_FEMALE", 1: "FACE_MALE", 2: "BELLY_EXPOSED"},
                  [(1, "face_female"), (2, "face_male"), (3, "armpits"), (4, "feet")])
    text = str(err.value)
    assert "2 of the dataset's 4 categories match no model class (at most 0 may)" in text
    assert "model classes" in text and "dataset categories" in text
    row = next(line for line in text.splitlines() if "BELLY_EXPOSED" in line)
    assert "3 armpits" in row and "✗ no model class" in row  # side by side on one row
    assert "1 face_female  ← model 0" in text and err.value.fix


def test_coco_80_to_91():
    by_names = class_map(list(COCO_80_NAMES), COCO_91)
    assert by_names.pairs == tuple(enumerate(COCO_80_TO_91)) and "80 → 91" in by_names.how
    no_names = class_map(None, COCO_91, model_classes=80)
    assert no_names.pairs == by_names.pairs and "80 names" in no_names.how
    assert no_names.dataset_id(79) == 90 and no_names.dataset_id(11) == 13  # toothbrush, stop sign
    # a COCO subset (a few categories) maps through the same ids
    assert class_map(list(COCO_80_NAMES), [(1, "person"), (3, "car"), (18, "dog")]).pairs == ((0, 1), (2, 3), (16, 18))


def test_labels_file_and_index_named_categories(tmp_path):
    labels = tmp_path / "labels.txt"
    labels.write_text("title\nparagraph\ntable\nfigure\n")
    mapping = class_map(None, [(1, "title"), (2, "paragraph"), (3, "table"), (4, "figure")], labels_file=labels)
    assert mapping.pairs == ((0, 1), (1, 2), (2, 3), (3, 4)) and "labels.txt" in mapping.how
    assert class_map(None, [(0, "0"), (1, "1")], model_classes=2).pairs == ((0, 0), (1, 1))
    with pytest.raises(ClassMapError, match="does not name its classes"):
        class_map(None, [(0, "cat"), (1, "dog")], model_classes=2)


def test_tolerance_background_and_few_unmatched():
    mapping = class_map(["ball", "box"], [(0, "background"), (1, "ball"), (2, "box")])
    assert mapping.pairs == ((0, 1), (1, 2)) and mapping.unmatched == ()
    many = [(k, f"c{k}") for k in range(20)]
    tolerated = class_map([f"c{k}" for k in range(19)], many)
    assert tolerated.unmatched == ("c19",)
    with pytest.raises(ClassMapError, match="no dataset category matches"):
        class_map(["a", "b"], [(0, "x"), (1, "y")])
