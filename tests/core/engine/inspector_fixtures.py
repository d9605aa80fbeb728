"""The hand-written engine-inspector fixtures (fixtures/README.md) and the ONNX graph and plan they were written for."""

from __future__ import annotations

from pathlib import Path

from onnx import TensorProto, helper

from app.core.precision.plan import PrecisionPlan

FIXTURES = Path(__file__).parent / "fixtures"

STEM = "/stem/conv/Conv + /stem/act/Relu"
QUANT = "/blk/conv1/input_quantizer/QuantizeLinear"
CONV1 = "/blk/conv1/weight_quantizer/DequantizeLinear + /blk/conv1/Conv + /blk/act1/Relu"
CONV2 = "/blk/conv2/weight_quantizer/DequantizeLinear + /blk/conv2/Conv + /blk/Add"
SHUFFLE = "node_of_tr_out"
GAP = "/head/GlobalAveragePool"
MYELIN = "{ForeignNode[/head/Flatten.../head/Softmax]}"
REFORMAT_IN = "Reformatting CopyNode for Input Tensor 0 to /stem/conv/Conv + /stem/act/Relu"
REFORMAT_GAP = "Reformatting CopyNode for Input Tensor 0 to /head/GlobalAveragePool"
LAYER_ORDER = [REFORMAT_IN, STEM, QUANT, CONV1, CONV2, SHUFFLE, REFORMAT_GAP, GAP, MYELIN]
PRECISIONS = ["fp32", "fp16", "fp16", "int8", "int8", "fp16", "fp16", "fp32", "fp32"]


def load(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def fixture_graph():
    """The ONNX graph the fixtures were written for (see fixtures/README.md); node 12 is unnamed."""
    n = helper.make_node
    nodes = [
        n("Conv", ["images", "stem.w", "stem.b"], ["/stem/conv/Conv_output_0"], name="/stem/conv/Conv"),
        n("Relu", ["/stem/conv/Conv_output_0"], ["/stem/act/Relu_output_0"], name="/stem/act/Relu"),
        n("QuantizeLinear", ["/stem/act/Relu_output_0", "s1", "z1"], ["q1"],
          name="/blk/conv1/input_quantizer/QuantizeLinear"),
        n("DequantizeLinear", ["q1", "s1", "z1"], ["dq1"], name="/blk/conv1/input_quantizer/DequantizeLinear"),
        n("DequantizeLinear", ["w1.q", "w1.s", "w1.z"], ["w1"], name="/blk/conv1/weight_quantizer/DequantizeLinear"),
        n("Conv", ["dq1", "w1", "b1"], ["/blk/conv1/Conv_output_0"], name="/blk/conv1/Conv"),
        n("Relu", ["/blk/conv1/Conv_output_0"], ["/blk/act1/Relu_output_0"], name="/blk/act1/Relu"),
        n("QuantizeLinear", ["/blk/act1/Relu_output_0", "s2", "z2"], ["q2"],
          name="/blk/conv2/input_quantizer/QuantizeLinear"),
        n("DequantizeLinear", ["q2", "s2", "z2"], ["dq2"], name="/blk/conv2/input_quantizer/DequantizeLinear"),
        n("DequantizeLinear", ["w2.q", "w2.s", "w2.z"], ["w2"], name="/blk/conv2/weight_quantizer/DequantizeLinear"),
        n("Conv", ["dq2", "w2", "b2"], ["/blk/conv2/Conv_output_0"], name="/blk/conv2/Conv"),
        n("Add", ["/blk/conv2/Conv_output_0", "/stem/act/Relu_output_0"], ["/blk/Add_output_0"], name="/blk/Add"),
        n("Transpose", ["/blk/Add_output_0"], ["tr_out"], perm=[0, 1, 3, 2]),
        n("GlobalAveragePool", ["tr_out"], ["/head/GlobalAveragePool_output_0"], name="/head/GlobalAveragePool"),
        n("Flatten", ["/head/GlobalAveragePool_output_0"], ["/head/Flatten_output_0"], name="/head/Flatten"),
        n("MatMul", ["/head/Flatten_output_0", "fc.w"], ["/head/fc/MatMul_output_0"], name="/head/fc/MatMul"),
        n("Add", ["/head/fc/MatMul_output_0", "fc.b"], ["/head/fc/Add_output_0"], name="/head/fc/Add"),
        n("Softmax", ["/head/fc/Add_output_0"], ["/head/Softmax_output_0"], name="/head/Softmax"),
        n("Identity", ["/head/Softmax_output_0"], ["probs"], name="/head/Identity"),
    ]
    return helper.make_graph(nodes, "fixture", [helper.make_tensor_value_info("images", TensorProto.FLOAT,
                                                                              [1, 3, 32, 32])],
                             [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])])


def fixture_plan() -> PrecisionPlan:
    return PrecisionPlan(default="fp16", overrides={"/blk/conv1/Conv": "int8", "/blk/conv2/Conv": "int8",
                                                    "/head/Softmax": "fp32"})
