"""The resolved plan says what the variant really runs: checked against the FP16, BF16 and INT8 variants the
project's own transforms build from every shared model, node by node."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from app.core.model.shapes import ShapeResult, infer_shapes
from app.core.precision.plan import GraphFacts, PrecisionPlan, model_opsets, node_keys
from app.core.precision.transforms.half import half_inputs, to_half
from app.core.precision.transforms.int8 import Int8Error, to_int8
from app.core.precision.variants import build_variant
from tests.conftest import SHARED_FEEDS, cubic_u2netp
from tests.support.synthetic_graphs import make

# Every model in the shared folder, with inputs that run (small spatial sizes: calibration time is the cost).
FEEDS = {
    **SHARED_FEEDS,
    "slanet_table": lambda r: {"x": r.random((1, 3, 64, 64), dtype=np.float32)},
    "plcmos_v2": lambda r: {"degraded_audio": r.random((1, 1, 50, 257), dtype=np.float32),
                            "rater_embed": r.random((1, 64), dtype=np.float32)},
    "deepfilternet3_enc": lambda r: {"feat_erb": r.random((1, 1, 10, 32), dtype=np.float32),
                                     "feat_spec": r.random((1, 2, 10, 96), dtype=np.float32)},
    "slovorez_fp16": lambda r: {"input_layer": r.integers(0, 49, (1, 64)).astype(np.int32)},
    "eeg_conv_lstm": lambda r: {"x": r.random((1, 100, 30), dtype=np.float32)},
}
HALF_DTYPE = {"fp16": "float16", "bf16": "bfloat16"}
# Models whose INT8 variant the transform cannot make (none now: FP16 models get float16 scales).
INT8_BROKEN: dict[str, str] = {}


def _load(models_dir, name: str) -> onnx.ModelProto:
    path = models_dir / f"{name}.onnx"
    if not path.is_file():
        pytest.skip(f"{path.name} is not in {models_dir}")
    model = onnx.load(str(path))
    # Name every node by its plan key, so the variant's nodes are found by name (the keys do not change).
    for node, key in zip(model.graph.node, node_keys(model.graph), strict=True):
        node.name = key
    return model


def _by_name(model: onnx.ModelProto) -> dict[str, onnx.NodeProto]:
    return {n.name: n for n in model.graph.node if n.name}


def _dtypes(shapes: ShapeResult, names) -> list[str | None]:
    return [(info.dtype if (info := shapes.get(n)) is not None else None) for n in names if n]


@pytest.mark.parametrize("name", sorted(FEEDS))
@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_half_rows_are_what_the_half_variant_runs(models_dir, name, precision):
    model = _load(models_dir, name)
    shapes = infer_shapes(model)
    plan = PrecisionPlan(default=precision)
    rows = plan.resolve(model.graph, shapes, model_opsets(model))
    variant, report = to_half(model, plan, precision)
    onnx.checker.check_model(variant, full_check=True)  # every tensor's type agrees with its readers'
    vshapes, vnodes = infer_shapes(variant), _by_name(variant)
    half = HALF_DTYPE[precision]
    opset = model_opsets(variant).get("", 1)

    said_half = {r.key for r in rows if r.precision == precision}
    assert set(report.half_nodes) <= said_half
    for row in rows:
        if row.precision == "fixed":
            continue
        node = vnodes[row.key]
        outs, ins = _dtypes(vshapes, node.output), _dtypes(vshapes, node.input)
        if row.precision == precision:
            assert outs and all(d == half for d in outs), (row.key, outs)
            if row.key in report.half_nodes:
                # Every input the transform gives the half type really has it (weights and Casts alike).
                positions = half_inputs(node, opset, precision) or []
                assert all(_dtypes(vshapes, [node.input[j]]) in ([half], []) for j in positions if node.input[j])
            else:  # the model's own FP16 nodes: the transform leaves them as they are
                assert row.key in report.kept_fp32 and row.reason == ""
        elif row.kept:
            assert row.planned == precision and row.reason == report.kept_fp32[row.key]
            assert half not in outs and half not in ins, (row.key, outs, ins)
        else:
            assert row.precision in ("fp32", "fp16") and row.differs  # the model's own FP16, planned BF16
            assert all(d == HALF_DTYPE[row.precision] for d in outs) and "itself computes" in row.reason
    # Every node the transform kept FP32 is kept in the rows too, with the same words.
    for key, why in report.kept_fp32.items():
        row = next(r for r in rows if r.key == key)
        assert (row.kept and row.reason == why) or row.precision in HALF_DTYPE, (key, why, row)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(raises=Int8Error, strict=True,
                                                                          reason=INT8_BROKEN[n]))
                                  if n in INT8_BROKEN else n for n in sorted(FEEDS)])
def test_int8_rows_are_what_the_int8_variant_runs(models_dir, name):
    model = _load(models_dir, name)
    plan = PrecisionPlan(default="int8")
    rows = plan.resolve(model.graph, infer_shapes(model), model_opsets(model))
    # One calibration sample: only where Q/DQ goes matters here, not the scales.
    variant, report = to_int8(model, plan, [FEEDS[name](np.random.default_rng(0))], random_calibration=True)
    vnodes = _by_name(variant)
    dq_out = {o for n in variant.graph.node if n.op_type == "DequantizeLinear" for o in n.output}

    assert {r.key for r in rows if r.precision == "int8"} == set(report.quantized_nodes)
    # Every node planned INT8 that gets no Q/DQ says the transform's reason (a node the model itself computes
    # in FP16 shows FP16, its reason followed by that fact).
    assert {r.key for r in rows if r.differs} == set(report.skipped)
    assert all(r.reason.startswith(report.skipped[r.key]) for r in rows if r.differs)
    for row in rows:
        if row.precision == "fixed" or row.key in report.folded_nodes:  # a weight's producer, folded
            continue
        reads_dq = any(i in dq_out for i in vnodes[row.key].input)
        assert reads_dq == (row.precision == "int8"), (row.key, row.precision, row.reason)
    assert any(r.precision == "int8" for r in rows) and any(r.kept for r in rows)


def test_a_mixed_plan_through_build_variant(models_dir, tmp_path):
    """INT8 convolutions, FP16 elsewhere, on u2netp (its Resizes bicubic, which FP16 keeps in FP32): the variant the
    Run panel builds, row by row."""
    path = cubic_u2netp(models_dir, tmp_path / "u2netp.onnx")
    model = onnx.load(str(path))
    plan = PrecisionPlan(default="fp16", op_rules={"Conv": "int8"})
    rows = plan.resolve(model.graph, infer_shapes(model), model_opsets(model))
    variant = build_variant(path, plan, calib=lambda: ([FEEDS["u2netp"](np.random.default_rng(0))], True),
                            cache_dir=tmp_path / "cache")
    v = onnx.load(variant.path)
    vshapes, vnodes = infer_shapes(v), _by_name(v)
    dq_out = {o for n in v.graph.node if n.op_type == "DequantizeLinear" for o in n.output}
    seen = set()
    for row in rows:
        if row.precision == "fixed":
            continue
        node = vnodes[row.key]
        outs = _dtypes(vshapes, node.output)
        seen.add((row.precision, row.kept))
        if row.precision == "int8":
            assert any(i in dq_out for i in node.input), row.key
        elif row.precision == "fp16":
            assert all(d == "float16" for d in outs), (row.key, outs)
        else:
            assert row.kept and "float16" not in outs, (row.key, outs)
            assert not any(i in dq_out for i in node.input)
    assert seen == {("int8", False), ("fp16", False), ("fp32", True)}
    kept = {r.key: r.reason for r in rows if r.kept}
    assert {k: why for k, why in variant.report["half"]["kept_fp32"].items()} == \
        {k: why for k, why in kept.items() if next(r for r in rows if r.key == k).planned == "fp16"}


def test_cubic_resize_runs_fp32_and_says_why(models_dir, tmp_path):
    """A bicubic Resize stays FP32 in an FP16 plan and says so; u2netp's own bilinear Resizes convert."""
    linear = _load(models_dir, "u2netp")
    rows = PrecisionPlan(default="fp16").resolve(linear.graph, infer_shapes(linear), model_opsets(linear))
    assert all(r.precision == "fp16" and not r.kept for r in rows if r.op_type == "Resize")
    model = onnx.load(str(cubic_u2netp(models_dir, tmp_path / "u2netp.onnx")))
    shapes = infer_shapes(model)
    plan = PrecisionPlan(default="fp16")
    rows = plan.resolve(model.graph, shapes, model_opsets(model))
    resizes = [r for r in rows if r.op_type in ("Resize", "Upsample")]
    assert resizes and all(r.precision == "fp32" and r.planned == "fp16" and r.kept for r in resizes)
    assert all(r.reason.startswith("Resize in cubic mode is kept in FP32") for r in resizes)
    convs = [r for r in rows if r.op_type == "Conv"]
    assert convs and all(r.precision == "fp16" and not r.differs and r.reason == "" for r in convs)

    # Asking again for FP16 on a kept node records the wish (a saved plan keeps it) but the row still tells
    # the truth; the plan's JSON has the same keys as ever.
    key = resizes[0].key
    plan = plan.with_override(key, "fp16")
    doc = plan.to_json()
    assert set(doc) == {"schema_version", "model", "default", "op_rules", "overrides"}
    assert doc["overrides"] == {key: "fp16"}
    again = PrecisionPlan.from_json(doc).resolve(model.graph, shapes, model_opsets(model))
    row = next(r for r in again if r.key == key)
    assert (row.precision, row.planned, row.source, row.kept) == ("fp32", "fp16", "node", True)
    # A plan of FP32 nodes has nothing kept.
    assert not any(r.differs for r in PrecisionPlan().resolve(model.graph, shapes, model_opsets(model)))


def test_the_model_s_own_fp16_nodes_show_fp16(models_dir):
    model = _load(models_dir, "slovorez_fp16")
    shapes = infer_shapes(model)
    rows = PrecisionPlan().resolve(model.graph, shapes, model_opsets(model))
    convs = [r for r in rows if r.op_type == "Conv"]
    assert convs and all(r.precision == "fp16" and r.planned == "fp32" and r.differs and not r.kept
                         for r in convs)
    assert "itself computes it in FP16" in convs[0].reason


def test_bf16_follows_the_opset(models_dir):
    """Conv admits bfloat16 only from opset 22: at the model's opset 11 the row says so, as the transform does."""
    model = _load(models_dir, "ppocr_cls_mobile_v2")
    shapes = infer_shapes(model)
    rows = PrecisionPlan(default="bf16").resolve(model.graph, shapes, model_opsets(model))
    conv = next(r for r in rows if r.op_type == "Conv")
    assert conv.kept and conv.reason == "Conv has no bf16 kernel at opset 11"


def test_resolve_with_facts_is_the_same_and_fast():
    """A resolve runs after every plan edit on the GUI thread: on a 10k-node graph the graph's facts are found once
    and every later resolve uses them, with the same rows as a resolve that finds them itself."""
    model = make("resnet", 10000)
    shapes = infer_shapes(model)
    opsets = model_opsets(model)
    facts = GraphFacts(model.graph, shapes, opsets)
    plan = PrecisionPlan(default="fp16", op_rules={"MatMul": "int8"})
    assert plan.resolve(model.graph, shapes, opsets, facts=facts) == plan.resolve(model.graph, shapes, opsets)
    built = []
    real_init = GraphFacts.__init__

    def counting_init(self, *args, **kwargs):
        built.append(1)
        real_init(self, *args, **kwargs)

    GraphFacts.__init__ = counting_init
    try:
        for k in range(5):
            plan = plan.with_override(model.graph.node[k * 11].name, "fp32" if k % 2 else "bf16")
            rows = plan.resolve(model.graph, shapes, opsets, facts=facts)
    finally:
        GraphFacts.__init__ = real_init
    assert len(rows) == len(model.graph.node) > 9000
    # The cost is in finding the graph's facts (benchmarks time it): with them given, no resolve finds them again.
    assert built == []
