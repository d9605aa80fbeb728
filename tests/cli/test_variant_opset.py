"""`trtlab variant --precision bf16` on an opset-11 convnet: refused with the way out (exit 2), and `--opset 22`
taking it: the model converted by ONNX's version converter, its FP32 outputs checked, and a BF16 variant that
passes every gate written (exit 0)."""

from __future__ import annotations

import json

import onnx
from onnx import TensorProto

from tests.cli.runner import trtlab


def test_bf16_below_opset_22_is_refused_with_the_opset_flag_as_the_fix(model_paths, tmp_path):
    out = tmp_path / "u2.bf16.onnx"
    r = trtlab("variant", str(model_paths["u2netp"]), "--precision", "bf16", "-o", str(out))
    assert r.returncode == 2, r.stderr
    assert "convert no node" in r.stderr and "no bf16 kernel at opset 11" in r.stderr and "--opset 22" in r.stderr
    assert not out.exists()


def test_opset_22_gives_a_bf16_variant_that_converts(model_paths, tmp_path):
    out = tmp_path / "u2.bf16.onnx"
    r = trtlab("variant", str(model_paths["u2netp"]), "--precision", "bf16", "--opset", "22", "-o", str(out),
               "--json", str(tmp_path / "v.json"))
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "v.json").read_text())
    assert any("opset raised from 11 to 22" in n and "FP32 outputs checked equal" in n for n in doc["notes"])
    assert len(doc["report"]["half"]["half_nodes"]) > 300
    model = onnx.load(str(out))
    assert next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")) == 22
    onnx.checker.check_model(model, full_check=True)
    assert any(t.data_type == TensorProto.BFLOAT16 for t in model.graph.initializer)


def test_an_opset_onnx_does_not_know_is_a_usage_error(model_paths, tmp_path):
    r = trtlab("variant", str(model_paths["u2netp"]), "--precision", "bf16", "--opset", "99", "-o",
               str(tmp_path / "x.onnx"))
    assert r.returncode == 2 and "--opset 99" in r.stderr and "--opset 22" in r.stderr
