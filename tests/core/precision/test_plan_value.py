"""The precision plan is a value: its edits return new plans, equality and its key come from what it asks."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle

import pytest

from app.core.precision import PlanError, PrecisionPlan
from app.core.precision.variants import variant_key


def _plan() -> PrecisionPlan:
    return PrecisionPlan(default="fp16", op_rules={"Conv": "int8"}, overrides={"n1": "fp32"}, model_name="m.onnx")


def test_every_edit_returns_a_new_plan_and_leaves_the_old_one_as_it_was():
    plan = _plan()
    before = plan.to_json()
    edits = [plan.with_override("n2", "bf16"), plan.with_overrides(["n2", "n3"], "fp32"), plan.without_override("n1"),
             plan.with_op_rule("MatMul", "fp16"), plan.without_op_rule("Conv"), plan.with_default("int8"),
             plan.with_model_name("other.onnx"), plan.cleared(), plan.with_rules_of(PrecisionPlan(default="bf16"))]
    assert all(isinstance(e, PrecisionPlan) and e is not plan and e != plan for e in edits)
    assert plan.to_json() == before
    assert edits[0].overrides == {"n1": "fp32", "n2": "bf16"}
    assert edits[2].overrides == {} and edits[4].op_rules == {}
    assert edits[7].to_json() == {**before, "op_rules": {}, "overrides": {}}
    assert edits[8].default == "bf16" and edits[8].model_name == "m.onnx"   # a loaded plan keeps the model's name


def test_a_plan_cannot_be_changed_in_place():
    plan = _plan()
    with pytest.raises(TypeError):
        plan.overrides["n2"] = "fp16"  # type: ignore[index]  # what the test checks: the mapping is read-only
    with pytest.raises(AttributeError):
        plan.op_rules.pop("Conv")  # type: ignore[attr-defined]  # a read-only mapping has no pop
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.default = "fp32"  # type: ignore[misc]  # frozen
    given = {"n1": "fp32"}
    made = PrecisionPlan(overrides=given)
    given["n2"] = "fp16"  # the caller's dict stays the caller's
    assert "n2" not in made.overrides


def test_equality_and_hash_come_from_the_value():
    a, b = _plan(), PrecisionPlan(default="fp16", overrides={"n1": "fp32"}, op_rules={"Conv": "int8"},
                                  model_name="m.onnx")
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a.with_override("n1", "fp32") == a   # an edit that asks nothing new is the same plan
    assert a.with_model_name("x.onnx") != a and a.with_model_name("x.onnx").key == a.key
    assert a.with_override("n2", "fp16").key != a.key
    # the order edits came in does not matter
    assert PrecisionPlan().with_override("b", "fp16").with_override("a", "fp32") == \
        PrecisionPlan().with_override("a", "fp32").with_override("b", "fp16")


def test_the_variant_cache_key_is_the_plans_value_without_its_name():
    a = _plan()
    assert variant_key("m", a) == variant_key("m", a.with_model_name("renamed.onnx"))
    assert variant_key("m", a) == variant_key("m", PrecisionPlan.from_json(a.to_json()))
    assert variant_key("m", a) != variant_key("m", a.with_op_rule("Conv", None))


def test_the_json_and_the_plan_file_are_unchanged(tmp_path):
    plan = _plan().with_override("a0", "bf16")
    doc = plan.to_json()
    assert doc == {"schema_version": 1, "model": "m.onnx", "default": "fp16", "op_rules": {"Conv": "int8"},
                   "overrides": {"a0": "bf16", "n1": "fp32"}}
    assert json.loads(json.dumps(doc)) == doc
    plan.save(tmp_path / "p.json")
    assert json.loads((tmp_path / "p.json").read_text()) == doc
    back = PrecisionPlan.load(tmp_path / "p.json")
    assert back == plan and back.to_json() == doc


def test_a_plan_copies_and_pickles_as_a_value():
    plan = _plan()
    assert pickle.loads(pickle.dumps(plan)) == plan
    assert copy.deepcopy(plan) == plan and copy.copy(plan) == plan
    assert dataclasses.replace(plan, default="bf16").overrides == plan.overrides


def test_a_bad_edit_is_refused_as_a_bad_plan():
    with pytest.raises(PlanError, match="Unknown precision 'fp8'"):
        _plan().with_override("n2", "fp8")
    with pytest.raises(PlanError, match="Unknown precision"):
        _plan().with_default("half")
    with pytest.raises(PlanError, match="not a mapping"):
        PrecisionPlan(overrides=["n1"])  # type: ignore[arg-type]  # what the test checks
