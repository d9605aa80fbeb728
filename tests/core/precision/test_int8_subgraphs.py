"""INT8 variants of graphs whose If/Loop bodies read tensors of the enclosing graph.

A body reads an outer tensor by name alone, with no input of its node naming it: weights that only a branch
reads, weights that the quantizer turns into INT8 copies, a tensor both branches read, and tensors written
later in the file than the node whose body reads them. Each variant passes the ONNX checker's full check and
runs in ONNX Runtime with the float model's answers.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from app.core.precision.plan import PrecisionPlan
from app.core.precision.transforms.int8 import to_int8
from app.core.precision.transforms.int8_fixup import drop_dead

SHAPE = [1, 4, 8, 8]


def _vi(name: str, shape: list[int] | None = None, dtype: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, shape)


def _init(name: str, shape: tuple[int, ...], seed: int) -> TensorProto:
    return numpy_helper.from_array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32), name)


def _model(nodes: list[onnx.NodeProto], inits: list[TensorProto], *, ordered: bool = True) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", [_vi("x", SHAPE), _vi("flag", [], TensorProto.BOOL)], [_vi("y", SHAPE)],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    if ordered:
        onnx.checker.check_model(m, full_check=True)  # the float model itself is valid
    return m


def _branch(name: str, nodes: list[onnx.NodeProto], out: str) -> onnx.GraphProto:
    return helper.make_graph(nodes, name, [], [_vi(out, SHAPE)])


def _conv(x: str, w: str, y: str, name: str) -> onnx.NodeProto:
    return helper.make_node("Conv", [x, w], [y], pads=[1, 1, 1, 1], name=name)


def branch_reads_a_quantized_weight() -> onnx.ModelProto:
    """Conv(x, w) at the top quantizes `w`; the then-branch runs its own Conv on the same float `w`."""
    then_g = _branch("then", [_conv("c", "w", "t", "inner_conv")], "t")
    else_g = _branch("else", [helper.make_node("Relu", ["c"], ["e"])], "e")
    return _model([_conv("x", "w", "c", "conv"),
                   helper.make_node("If", ["flag"], ["y"], then_branch=then_g, else_branch=else_g, name="branch")],
                  [_init("w", (4, 4, 3, 3), 0)])


def branch_only_weights() -> onnx.ModelProto:
    """Weights and a constant that only the then-branch reads (an openWakeWord head's verifier, silero-vad's
    hop length): nothing at the top reads them, yet the branch needs every one."""
    then_g = _branch("then", [_conv("c", "v", "t0", "inner_conv"), helper.make_node("Add", ["t0", "b"], ["t1"]),
                              helper.make_node("Mul", ["t1", "k"], ["t"])], "t")
    else_g = _branch("else", [helper.make_node("Relu", ["c"], ["e"])], "e")
    return _model([_conv("x", "w", "c", "conv"),
                   helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.float32(0.5)), name="k"),
                   helper.make_node("If", ["flag"], ["y"], then_branch=then_g, else_branch=else_g, name="branch")],
                  [_init("w", (4, 4, 3, 3), 0), _init("v", (4, 4, 3, 3), 1), _init("b", (1, 4, 1, 1), 2)])


def weight_shared_by_both_branches() -> onnx.ModelProto:
    """Both branches (and a Loop body inside one of them) read the one initializer the top Conv quantizes."""
    body = helper.make_graph([helper.make_node("Identity", ["cond"], ["cond_out"]),
                              _conv("acc", "w", "acc_out", "loop_conv")], "body",
                             [_vi("i", [], TensorProto.INT64), _vi("cond", [], TensorProto.BOOL), _vi("acc", SHAPE)],
                             [_vi("cond_out", [], TensorProto.BOOL), _vi("acc_out", SHAPE)])
    then_g = _branch("then", [helper.make_node("Loop", ["n", "", "c"], ["t"], body=body, name="loop")], "t")
    else_g = _branch("else", [_conv("c", "w", "e", "else_conv")], "e")
    return _model([_conv("x", "w", "c", "conv"),
                   helper.make_node("If", ["flag"], ["y"], then_branch=then_g, else_branch=else_g, name="branch")],
                  [_init("w", (4, 4, 3, 3), 0), numpy_helper.from_array(np.array(2, np.int64), "n")])


def nodes_out_of_order() -> onnx.ModelProto:
    """The If comes first in the file; the Conv whose output its branches read, and the Constant the then-branch
    reads, come after it."""
    then_g = _branch("then", [helper.make_node("Mul", ["c", "k"], ["t"])], "t")
    else_g = _branch("else", [_conv("c", "v", "e", "else_conv")], "e")
    return _model([helper.make_node("If", ["flag"], ["y"], then_branch=then_g, else_branch=else_g, name="branch"),
                   helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.float32(2.0)), name="k"),
                   _conv("r", "w", "c", "conv"), helper.make_node("Relu", ["x"], ["r"], name="relu")],
                  [_init("w", (4, 4, 3, 3), 0), _init("v", (4, 4, 3, 3), 1)], ordered=False)


CASES = {"branch_reads_a_quantized_weight": branch_reads_a_quantized_weight,
         "branch_only_weights": branch_only_weights,
         "weight_shared_by_both_branches": weight_shared_by_both_branches,
         "nodes_out_of_order": nodes_out_of_order}


def _run(model: onnx.ModelProto, feeds: dict) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, feeds)[0])


@pytest.mark.parametrize("case", sorted(CASES))
def test_int8_variant_keeps_what_bodies_read(case):
    model = CASES[case]()
    rng = np.random.default_rng(0)
    samples = [{"x": rng.standard_normal(SHAPE).astype(np.float32), "flag": np.array(k % 2 == 0)} for k in range(4)]
    variant, report = to_int8(model, PrecisionPlan(default="int8"), samples)
    onnx.checker.check_model(variant, full_check=True)
    assert "conv" in report.quantized_nodes
    assert any(n.op_type == "DequantizeLinear" for n in variant.graph.node)
    for flag in (True, False):
        feeds = {"x": samples[0]["x"], "flag": np.array(flag)}
        ref, got = _run(model, feeds), _run(variant, feeds)
        assert got.shape == ref.shape and np.isfinite(got).all()
        cos = float(ref.ravel() @ got.ravel() / (np.linalg.norm(ref) * np.linalg.norm(got)))
        assert cos > 0.98, (case, flag, cos)


def test_bodies_read_the_float_weight_not_its_int8_copy():
    model = weight_shared_by_both_branches()
    rng = np.random.default_rng(0)
    samples = [{"x": rng.standard_normal(SHAPE).astype(np.float32), "flag": np.array(True)} for _ in range(2)]
    variant, _ = to_int8(model, PrecisionPlan(default="int8"), samples)
    inits = {t.name: t for t in variant.graph.initializer}
    assert inits["w"].data_type == TensorProto.FLOAT  # the bodies' Convs stay float, on the float weight
    branch = next(n for n in variant.graph.node if n.op_type == "If")
    original = next(n for n in model.graph.node if n.op_type == "If")
    assert branch.attribute == original.attribute  # the bodies are the float model's own


def test_drop_dead_keeps_what_only_a_body_reads():
    model = branch_only_weights()
    before = {t.name for t in model.graph.initializer}
    drop_dead(model)
    assert {t.name for t in model.graph.initializer} == before


# --------------------------------------------------------------------------------------------- real models

SURVEY = Path(os.environ.get("TRTLAB_SURVEY", Path.home() / ".cache" / "trtlab" / "survey"))
# Models whose If bodies read weights and constants of the enclosing graph; inputs as survey.txt gives them.
REAL = {"openwakeword/hey_jarvis_v0.1.onnx": {"x.1": (1, 16, 96)},
        "silero-vad/silero_vad_16k_op15.onnx": {"input": (1, 512), "state": (2, 1, 128)}}


@pytest.mark.parametrize("rel", sorted(REAL), ids=lambda r: Path(r).stem)
def test_real_models_with_outer_scope_reads(rel):
    path = SURVEY / rel
    if not path.is_file():
        pytest.skip(f"{rel} is not fetched at {path.parent} (python benchmarks/survey_models.py fetches it; "
                    "$TRTLAB_SURVEY points elsewhere)")
    model = onnx.load(str(path))
    inits = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(0)

    def sample() -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for i in model.graph.input:
            if i.name in inits:
                continue
            if i.type.tensor_type.elem_type == TensorProto.INT64:  # silero-vad's sample rate
                out[i.name] = np.array(16000, np.int64)
            else:
                out[i.name] = rng.standard_normal(REAL[rel][i.name]).astype(np.float32)
        return out

    samples = [sample() for _ in range(3)]  # hey_jarvis: the third takes the branch that runs the verifier
    variant, report = to_int8(model, PrecisionPlan(default="int8"), samples, random_calibration=True)
    onnx.checker.check_model(variant, full_check=True)
    assert report.quantized_nodes
    for feeds in samples:
        ref, got = _run(model, feeds), _run(variant, feeds)
        assert got.shape == ref.shape and np.isfinite(got).all()
        assert np.abs(got - ref).max() < 0.05, (rel, np.abs(got - ref).max())
