"""Variant building and its cache: keys, reuse, identity plans and refusals."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from app.core.precision import PlanError, PrecisionPlan, node_keys
from app.core.variants import build_variant, samples_hash, variant_key


def _run(path: str, feeds: dict) -> list[np.ndarray]:
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def test_fp16_variant_is_built_once_then_cached(model_paths, tmp_path):
    path = model_paths["ppocr_cls_mobile_v2"]
    first = build_variant(path, PrecisionPlan(default="fp16"), cache_dir=tmp_path)
    assert not first.cached and not first.identity
    onnx.checker.check_model(onnx.load(first.path), full_check=True)
    mtime = (tmp_path / first.path.split("/")[-1]).stat().st_mtime_ns
    again = build_variant(path, PrecisionPlan(default="fp16"), cache_dir=tmp_path)
    assert again.cached and again.path == first.path and again.key == first.key
    assert (tmp_path / first.path.split("/")[-1]).stat().st_mtime_ns == mtime  # not rewritten
    assert any("fp16:" in n for n in again.notes)


def test_key_follows_plan_and_calibration_not_model_name():
    a = PrecisionPlan(default="fp16", model_name="one")
    b = PrecisionPlan(default="fp16", model_name="two")
    c = PrecisionPlan(default="fp16", overrides={"conv1": "fp32"})
    assert variant_key("m", a) == variant_key("m", b)
    assert variant_key("m", a) != variant_key("m", c)
    assert variant_key("m", a) != variant_key("other", a)
    assert variant_key("m", a, "x", "minmax") != variant_key("m", a, "y", "minmax")
    assert variant_key("m", a, "x", "minmax") != variant_key("m", a, "x", "entropy")


def test_samples_hash_sees_every_value():
    s = [{"x": np.zeros((2, 3), np.float32)}]
    t = [{"x": np.zeros((2, 3), np.float32)}]
    assert samples_hash(s) == samples_hash(t)
    t[0]["x"][1, 2] = 1e-7
    assert samples_hash(s) != samples_hash(t)
    assert samples_hash(s) != samples_hash([{"x": np.zeros((3, 2), np.float32)}])


def test_override_changes_the_variant_and_its_output(model_paths, tmp_path):
    path = str(model_paths["ppocr_cls_mobile_v2"])
    model = onnx.load(path)
    keys = node_keys(model.graph)
    conv = next(k for k, n in zip(keys, model.graph.node, strict=True) if n.op_type == "Conv")
    whole = build_variant(path, PrecisionPlan(default="fp16"), cache_dir=tmp_path)
    partial = build_variant(path, PrecisionPlan(default="fp16", overrides={conv: "fp32"}), cache_dir=tmp_path)
    assert whole.key != partial.key and whole.path != partial.path
    assert partial.report["half"]["half_nodes"] == whole.report["half"]["half_nodes"] - 1
    feeds = {model.graph.input[0].name: np.random.default_rng(0).random((1, 3, 48, 192), dtype=np.float32)}
    ref = _run(path, feeds)[0]
    assert np.allclose(_run(whole.path, feeds)[0], ref, atol=0.05)


def test_all_fp32_plan_is_the_model_itself(model_paths, tmp_path):
    path = str(model_paths["u2netp"])
    v = build_variant(path, PrecisionPlan(default="fp32"), cache_dir=tmp_path)
    assert v.identity and v.path == path and not list(tmp_path.iterdir())


def test_mixed_half_types_are_refused(model_paths, tmp_path):
    model = onnx.load(str(model_paths["ppocr_cls_mobile_v2"]))
    key = next(k for k, n in zip(node_keys(model.graph), model.graph.node, strict=True) if n.op_type == "Conv")
    with pytest.raises(PlanError, match="mixes FP16 and BF16") as exc:
        build_variant(model_paths["ppocr_cls_mobile_v2"], PrecisionPlan(default="fp16", overrides={key: "bf16"}),
                      cache_dir=tmp_path)
    assert exc.value.fix


def test_int8_without_calibration_is_refused(model_paths, tmp_path):
    with pytest.raises(PlanError, match="no calibration data") as exc:
        build_variant(model_paths["ppocr_cls_mobile_v2"], PrecisionPlan(default="int8"), cache_dir=tmp_path)
    assert "--calib" in exc.value.fix


def test_damaged_cache_entry_is_rebuilt(model_paths, tmp_path):
    path = model_paths["ppocr_cls_mobile_v2"]
    first = build_variant(path, PrecisionPlan(default="fp16"), cache_dir=tmp_path)
    meta = tmp_path / (first.path.split("/")[-1][:-5] + ".json")
    meta.write_text("{not json")
    again = build_variant(path, PrecisionPlan(default="fp16"), cache_dir=tmp_path)
    assert not again.cached
    onnx.checker.check_model(onnx.load(again.path))
