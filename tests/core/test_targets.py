"""Targets (`B:P`): parsed once, then changed only through their own methods, never as text."""

from __future__ import annotations

import pytest

from app.core.targets import (
    PLAN,
    BackendSpecError,
    PrecisionNotAvailable,
    Target,
    plan_needed,
    require_plan,
)


def test_a_target_changes_its_precision_or_backend_as_a_new_value():
    t = Target.parse("trt:fp16")
    assert t.with_precision("INT8") == Target("trt", "int8") and t == Target("trt", "fp16")
    assert t.with_backend("ort-cuda").name == "ort-cuda:fp16"
    assert t.with_precision(PLAN).needs_plan and not t.needs_plan


def test_a_target_made_from_its_parts_is_checked_as_parsed():
    assert Target.of("ort-cpu") == Target.parse("ort-cpu") == Target("ort-cpu", "fp32")
    assert Target.of("trt", "PLAN") == Target.parse("trt:plan")
    with pytest.raises(BackendSpecError, match="Unknown precision 'fp8'"):
        Target.of("trt", "fp8")
    with pytest.raises(BackendSpecError, match="Unknown backend"):
        Target.of("tensorrt", "fp16")


def test_what_a_target_runs():
    assert Target.parse("ort-cpu").runs_fp32 and not Target.parse("ort-cpu:fp16").runs_fp32
    assert not Target.parse("ort-cpu:plan").runs_fp32
    assert Target.parse("trt:plan").needs_plan and not Target.parse("trt:int8").needs_plan


def test_a_plan_that_changes_nothing_is_said_as_fp32():
    plan = Target.parse("trt:plan")
    assert plan.plan_as_fp32(True) == Target("trt", "fp32")
    assert plan.plan_as_fp32(False) is plan
    fp16 = Target.parse("trt:fp16")
    assert fp16.plan_as_fp32(True) is fp16


def test_one_place_decides_a_job_needs_a_plan():
    assert plan_needed([Target.parse("ort-cpu"), Target.parse("trt:plan")]) == Target("trt", PLAN)
    assert plan_needed(["ort-cpu:fp16", "trt:plan"]) == Target("trt", PLAN)   # text as trtlab writes it
    assert plan_needed(["ort-cpu:fp16", ""]) is None
    require_plan(["ort-cpu:fp16"], None)
    require_plan(["ort-cpu:plan"], object())
    with pytest.raises(PrecisionNotAvailable, match="ort-cpu:plan needs a precision plan") as info:
        require_plan([Target.parse("ort-cpu:plan")], None)
    assert "ort-cpu:fp16" in info.value.fix


def test_a_target_carries_the_runtimes_settings_in_its_name():
    t = Target.parse("ort-cuda:fp16@nhwc=1,cuda_graph=1")
    assert t.name == "ort-cuda:fp16@cuda_graph=1,nhwc=1" and t.settings == {"cuda_graph": "1", "nhwc": "1"}
    assert t.base == Target("ort-cuda", "fp16") and Target.read(t.name) == t == Target.parse(t.name)
    assert t.with_precision("fp32").name == "ort-cuda:fp32@cuda_graph=1,nhwc=1"
    assert t.with_backend("ort-cpu").knobs == ()   # another backend's settings mean nothing there
    assert Target.parse("ort-cpu@threads=4").with_knobs({"mode": "parallel"}).name == "ort-cpu:fp32@mode=parallel"


@pytest.mark.parametrize(("text", "words"), [
    ("ort-cuda:fp16@warp=1", "has no setting 'warp'"),
    ("ort-cuda:fp16@conv_algo=fastest", "not a value of ort-cuda's conv_algo"),
    ("ort-cpu@threads=0", "not a value of ort-cpu's threads"),
    ("trt:fp16@cuda_graph=1", "trt has no setting"),
    ("ort-cuda@cuda_graph", "is not a setting NAME=VALUE"),
    ("ort-cuda@nhwc=1,nhwc=0", "set twice"),
])
def test_unknown_settings_are_refused_with_the_ones_there_are(text, words):
    with pytest.raises(BackendSpecError) as err:
        Target.parse(text)
    assert words in err.value.message and err.value.fix
