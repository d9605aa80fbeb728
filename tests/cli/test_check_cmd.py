"""`trtlab check` as CI runs it: JSON per CLI.md, exit 1 on an error-level finding, 0 otherwise, 2 on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from app.cli.main import run_cli
from tests.conftest import weight_overflow_model

ROOT = Path(__file__).resolve().parents[2]
KEYS = {"model", "trt_version", "errors", "warnings", "findings"}
FINDING_KEYS = {"severity", "code", "nodes", "message", "fix"}


def trtlab(*args: object, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *map(str, args)], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout)


def save(tmp_path: Path, nodes, name: str = "m.onnx", inputs=None, inits=(), opset: int = 17) -> Path:
    inputs = inputs or [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])]
    g = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          list(inits))
    path = tmp_path / name
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10), path)
    return path


def relu(tmp_path: Path, **kw) -> Path:
    return save(tmp_path, [helper.make_node("Relu", ["x"], ["y"], name="relu")], **kw)


def test_clean_model_exits_0_with_json_on_stdout(tmp_path):
    r = trtlab("check", relu(tmp_path), "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)  # stdout holds the JSON only; the report went to stderr
    assert KEYS <= set(doc) and doc["errors"] == doc["warnings"] == 0 and doc["findings"] == []
    assert doc["trt_version"] == "11" and doc["model"].endswith("m.onnx")
    assert "readiness of m.onnx" in r.stderr and "nothing found" in r.stderr and "Traceback" not in r.stderr


def test_error_finding_exits_1_and_names_the_node(tmp_path):
    path = save(tmp_path, [helper.make_node("Unique", ["x"], ["y"], name="uniq")])
    out = tmp_path / "check.json"
    r = trtlab("check", path, "--json", out)
    assert r.returncode == 1, r.stderr
    doc = json.loads(out.read_text())
    (f,) = [f for f in doc["findings"] if f["code"] == "unsupported-op"]
    assert set(f) == FINDING_KEYS and f["severity"] == "error" and f["nodes"] == ["uniq"]
    assert doc["errors"] == 1
    # the human report goes to stdout when the JSON goes to a file, grouped by severity
    assert "ERRORS (1)" in r.stdout and "[unsupported-op]" in r.stdout and "nodes: uniq" in r.stdout
    assert "fix:" in r.stdout and "would fail" in r.stdout


def test_trt_version_selects_the_support_column(tmp_path, capsys):
    path = save(tmp_path, [helper.make_node("Swish", ["x"], ["y"], name="swish")], opset=24)
    assert run_cli(["check", str(path), "--trt-version", "10", "--json", "-"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["trt_version"] == "10" and [f["code"] for f in doc["findings"]] == ["unsupported-op"]
    assert run_cli(["check", str(path), "--trt-version", "11"]) == 0  # Swish arrived in TensorRT 11.0
    with pytest.raises(SystemExit) as exc:
        run_cli(["check", str(path), "--trt-version", "12"])
    assert exc.value.code == 2


def test_shapes_naming_a_missing_input_is_a_finding_that_names_the_real_one(tmp_path, capsys):
    path = save(tmp_path, [helper.make_node("Relu", ["images"], ["y"], name="relu")],
                inputs=[helper.make_tensor_value_info("images", TensorProto.FLOAT, ["N", 4])])
    code = run_cli(["check", str(path), "--shapes", "input:1x4", "--json", "-"])
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert code == 1
    (f,) = [f for f in doc["findings"] if f["code"] == "shape-unknown-input"]
    assert "'input'" in f["message"] and "'images' (N×4)" in f["message"]
    assert any(f["code"] == "dynamic-input" for f in doc["findings"])
    assert run_cli(["check", str(path), "--shapes", "images:2x4"]) == 0


@pytest.mark.parametrize("args", [["--shapes", "1x4"], ["--shapes", "images:1xa"], ["--plan", "missing.json"]])
def test_bad_input_exits_2_without_a_traceback(tmp_path, capsys, args):
    path = relu(tmp_path)
    assert run_cli(["check", str(path), *args]) == 2
    err = capsys.readouterr().err
    assert "trtlab check:" in err and "Traceback" not in err


def test_missing_model_exits_2(tmp_path):
    r = trtlab("check", tmp_path / "nope.onnx")
    assert r.returncode == 2 and "does not exist" in r.stderr and "Traceback" not in r.stderr


def test_plan_weights_that_overflow_fp16_are_a_warning(tmp_path, capsys):
    path = weight_overflow_model(tmp_path / "w.onnx")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"default": "fp16"}))
    assert run_cli(["check", str(path), "--plan", str(plan), "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (f,) = [f for f in doc["findings"] if f["code"] == "fp16-overflow"]
    assert f["severity"] == "warning" and f["nodes"] == ["mm2"] and doc["warnings"] == 1


def test_quantized_with_onnxruntime_defaults_exits_1(tmp_path, capsys):
    from onnxruntime.quantization import quantize_static

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(np.ones(4, np.float32), "b")
    src = save(tmp_path, [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", pads=[1, 1, 1, 1])],
               inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])], inits=[w, b])
    data = iter([{"x": rng.random((1, 3, 8, 8), dtype=np.float32)} for _ in range(2)])

    class Reader:
        def get_next(self):
            return next(data, None)

    dst = tmp_path / "q.onnx"
    quantize_static(str(src), str(dst), Reader())
    assert run_cli(["check", str(dst), "--json", "-"]) == 1
    found = {f["code"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert {"qdq-zero-point-not-zero", "qdq-int32-bias"} <= found


def test_every_shared_model_passes_without_errors(model_paths):
    """Exit 0 on all five; the four with dynamic dims get a dynamic-input warning until shapes are given."""
    procs = {stem: subprocess.Popen([sys.executable, "-m", "app", "check", str(p), "--json", "-"], cwd=ROOT,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for stem, p in model_paths.items()}
    for stem, proc in procs.items():
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, (stem, err)
        doc = json.loads(out)
        assert doc["errors"] == 0 and doc["warnings"] == (0 if stem == "u2netp" else 1), (stem, doc)
        assert "Traceback" not in err
