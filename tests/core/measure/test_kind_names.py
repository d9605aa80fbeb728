"""Class names from the model's own metadata (Ultralytics' `names`) label its answers: boxes and classes are drawn
with "FACE_FEMALE" rather than "class 1"; a labels file given by the user still wins."""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from app.core.measure import OutputKind, answer_labels, infer_output_kinds
from tests.support.evaluate import survey_model


def _classifier(names: str | None) -> onnx.ModelProto:
    graph = helper.make_graph([helper.make_node("Softmax", ["x"], ["scores"], axis=1)], "c",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
                              [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    if names is not None:
        helper.set_model_props(model, {"names": names})
    return model


def test_a_classifiers_metadata_names_label_its_classes():
    kinds = infer_output_kinds(_classifier("{0: 'cat', 1: 'dog', 2: 'bird'}"), None, {"x": [1, 3]})
    assert kinds["scores"].kind == "classes"
    assert answer_labels(kinds["scores"]) == ["cat", "dog", "bird"]


def test_without_names_indices_are_shown_and_a_labels_file_wins(tmp_path):
    assert answer_labels(infer_output_kinds(_classifier(None), None, {"x": [1, 3]})["scores"]) is None
    labels = tmp_path / "labels.txt"
    labels.write_text("a\nb\nc\n", encoding="utf-8")
    chosen = {"scores": OutputKind.parse(f"classes:labels={labels}")}
    kinds = infer_output_kinds(_classifier("{0: 'cat', 1: 'dog', 2: 'bird'}"), None, {"x": [1, 3]}, chosen)
    assert answer_labels(kinds["scores"]) == ["a", "b", "c"]


def test_nudenets_boxes_are_named_by_its_metadata():
    model = onnx.load(str(survey_model("nudenet/320n.onnx")), load_external_data=False)
    kinds = infer_output_kinds(model, {"output0": [1, 22, 2100]}, {"images": [1, 3, 320, 320]})
    labels = answer_labels(kinds["output0"])
    assert kinds["output0"].kind == "yolo" and labels is not None
    assert len(labels) == 18 and labels[1] == "FACE_FEMALE" and labels[12] == "FACE_MALE"
