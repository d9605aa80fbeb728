"""The plan check: nodes whose engine precision differs from the precision plan, on the fixture engine and by rule."""

from __future__ import annotations

from app.core.engine.inspector_json import parse_engine_info
from app.core.engine.onnx_map import map_to_onnx
from app.core.engine.plan_check import Mismatch, plan_mismatches
from tests.core.engine.inspector_fixtures import GAP, fixture_graph, fixture_plan, load


def test_plan_mismatches_on_the_fixture_engine():
    graph = fixture_graph()
    plan = fixture_plan()
    rows = plan.resolve(graph)
    planned = {r.key: r.precision for r in rows}
    assert planned["/blk/conv1/input_quantizer/QuantizeLinear"] == "fixed"
    op_types = {r.key: r.op_type for r in rows}
    m = map_to_onnx(parse_engine_info(load("engine_11x_detailed.json")), graph)
    found = plan_mismatches(m.precision, planned, mapping=m, op_types=op_types)
    warnings = [x for x in found if x.severity == "warning"]
    infos = [x for x in found if x.severity == "info"]
    assert [(x.key, x.planned, x.ran) for x in warnings] == [
        ("/head/GlobalAveragePool", "fp16", "fp32"), ("/head/Flatten", "fp16", "fp32"),
        ("/head/fc/MatMul", "fp16", "fp32"), ("/head/fc/Add", "fp16", "fp32")]
    assert warnings[0].layers == (GAP,)
    assert warnings[0].message == ("/head/GlobalAveragePool: planned FP16 but ran FP32: a wider type than planned, "
                                   "correct but slower (engine layer: /head/GlobalAveragePool).")
    assert [(x.key, x.ran) for x in infos] == [("/blk/act1/Relu", "int8"), ("/blk/Add", "int8")]
    assert "fused into the quantized kernel of /blk/conv1/Conv" in infos[0].message
    missing = plan_mismatches(m.precision, planned, mapping=m, include_missing=True)
    assert [x for x in missing if x.ran == ""] == [
        Mismatch("/head/Identity", "fp16", "", "info",
                 "/head/Identity: planned FP16, but no engine layer ran it (folded at build time, eliminated, "
                 "or inside a Myelin region whose members are not listed).")]


def test_plan_mismatch_rules():
    ran = {"conv": "fp16", "relu": "fp16", "mm": "fp16", "gemm": "int8", "a": "fp16", "b": "bf16",
           "c": "mixed", "shape": "int64", "q": "int8", "lone": "int8", "dark": "unknown", "same": "fp32"}
    planned = {"conv": "int8", "relu": "int8", "mm": "fp32", "gemm": "fp8", "a": "bf16", "b": "fp16",
               "c": "fp16", "shape": "fp16", "q": "fixed", "lone": "fp16", "dark": "fp16", "same": "fp32",
               "nowhere": "fp16"}
    ops = {"conv": "Conv", "relu": "Relu", "mm": "MatMul"}
    found = {x.key: x for x in plan_mismatches(ran, planned, op_types=ops)}
    assert set(found) == {"conv", "relu", "mm", "a", "b", "c", "lone"}
    assert found["conv"].severity == "warning" and "check the Q/DQ" in found["conv"].message
    assert found["relu"].severity == "info" and "Relu has no INT8 kernel" in found["relu"].message
    assert found["mm"].severity == "warning" and "accuracy may suffer" in found["mm"].message
    assert "another 16-bit type" in found["a"].message and "another 16-bit type" in found["b"].message
    assert found["c"].severity == "info"
    assert found["lone"].severity == "warning" and "no INT8-planned node in its layer" in found["lone"].message
    # gemm is planned with a precision the plan does not know (fp8): skipped.
    assert "gemm" not in found
    # Without op types an INT8-planned activation that ran float is a warning.
    assert plan_mismatches({"relu": "fp16"}, {"relu": "int8"})[0].severity == "warning"
    # Warnings come first.
    order = [x.severity for x in plan_mismatches(ran, planned, op_types=ops)]
    assert order == sorted(order, key=lambda s: s != "warning")
