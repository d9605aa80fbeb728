"""Small ONNX models that tests in more than one place build: a residual chain of any length, a stride-4 FPN, a
VITS-like voice that draws random numbers, Ifs nested deeper than protobuf reads, an FP16 overflow, and the
engine fixtures' graph as a loadable model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def residual_chain(blocks: int) -> onnx.ModelProto:
    """``blocks`` × (Relu and Sigmoid of x, Add, Mul): 4 nodes a block on x[1, 16]."""
    nodes, x = [], "x"
    for i in range(blocks):
        a, b, c, d = (f"{k}{i}" for k in "abcd")
        nodes += [helper.make_node("Relu", [x], [a], name=f"relu{i}"),
                  helper.make_node("Sigmoid", [x], [b], name=f"sig{i}"),
                  helper.make_node("Add", [a, b], [c], name=f"add{i}"),
                  # every 50th block also reads the graph input: long edges, as masks make in transformers
                  helper.make_node("Mul", [c, "x" if i % 50 == 0 else x], [d], name=f"mul{i}")]
        x = d
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 16])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 10
    return m


def _ones(name: str, shape) -> onnx.TensorProto:
    return numpy_helper.from_array(np.ones(shape, np.float32), name)


def fpn() -> onnx.ModelProto:
    """x[1,1,H,W] → c1 = Conv s2 → c2 = Conv s2 → up = Resize ×2 → Add(c1, up): H and W must be 4k or 4k+3."""
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], strides=[2, 2], name="down1"),
             helper.make_node("Conv", ["c1", "w2"], ["c2"], strides=[2, 2], name="down2"),
             helper.make_node("Resize", ["c2", "", "scales"], ["up"], mode="nearest", name="up"),
             helper.make_node("Add", ["c1", "up"], ["y"], name="fpn_add")]
    inits = [_ones("w1", [1, 1, 1, 1]), _ones("w2", [1, 1, 1, 1]),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")]
    graph = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, "H", "W"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, "Ho", "Wo"])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


VITS_CHANNELS, VITS_FRAMES = 8, 256


def vits_like_model() -> onnx.ModelProto:
    """input [1, 8, 256] → Conv → + RandomNormalLike noise × scales[0] → output: the noise path of a VITS decoder."""
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((VITS_CHANNELS, VITS_CHANNELS, 3)) * 0.1).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["input", "w"], ["conv"], name="/dec/conv", pads=[1, 1]),
        helper.make_node("RandomNormalLike", ["conv"], ["noise"], name="/RandomNormalLike", dtype=TensorProto.FLOAT),
        helper.make_node("Gather", ["scales", "zero"], ["noise_scale"], name="/Gather", axis=0),
        helper.make_node("Mul", ["noise", "noise_scale"], ["scaled"], name="/Mul"),
        helper.make_node("Add", ["conv", "scaled"], ["output"], name="/Add"),
    ]
    graph = helper.make_graph(
        nodes, "vits_like",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, VITS_CHANNELS, VITS_FRAMES]),
         helper.make_tensor_value_info("scales", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, VITS_CHANNELS, VITS_FRAMES])],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array(0, np.int64), "zero")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(num: int, payload: bytes) -> bytes:
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def nested_if_model(depth: int) -> bytes:
    """An If inside an If ... ``depth`` deep, written as protobuf bytes (protobuf itself refuses to build one
    deeper than its nesting limit)."""
    def value_info(name: str) -> bytes:
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, [1]).SerializeToString()

    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y0"])], "leaf", [],
                              [helper.make_tensor_value_info("y0", TensorProto.FLOAT, [1])]).SerializeToString()
    for i in range(1, depth + 1):
        other = helper.make_graph([helper.make_node("Identity", ["x"], [f"e{i}"])], f"else{i}", [],
                                  [helper.make_tensor_value_info(f"e{i}", TensorProto.FLOAT, [1])]).SerializeToString()
        then_attr = _field(1, b"then_branch") + _field(6, graph) + _varint(20 << 3) + _varint(5)
        else_attr = _field(1, b"else_branch") + _field(6, other) + _varint(20 << 3) + _varint(5)
        node = _field(1, b"c") + _field(2, f"y{i}".encode()) + _field(4, b"If") + _field(5, then_attr) \
            + _field(5, else_attr)
        inputs = (_field(11, helper.make_tensor_value_info("c", TensorProto.BOOL, []).SerializeToString())
                  + _field(11, value_info("x"))) if i == depth else b""
        graph = _field(1, node) + _field(2, f"g{i}".encode()) + inputs + _field(12, value_info(f"y{i}"))
    opset = _field(1, b"") + _varint(2 << 3) + _varint(17)
    return _varint(1 << 3) + _varint(10) + _field(7, graph) + _field(8, opset)


def overflow_model() -> onnx.ModelProto:
    """x[1, 4] → Relu → ×1000 → ×1000 → Sigmoid: the second Mul ('scale2', 1e6) is beyond FP16's range."""
    big = numpy_helper.from_array(np.array([1000.0], np.float32), "k")
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"], name="relu"),
                          helper.make_node("Mul", ["r", "k"], ["m1"], name="scale1"),
                          helper.make_node("Mul", ["m1", "k"], ["m2"], name="scale2"),  # 1e6: beyond FP16
                          helper.make_node("Sigmoid", ["m2"], ["y"], name="sig")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], initializer=[big])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 10
    return m


def fixture_model(folder: Path) -> Path:
    """The engine fixtures' graph (tests/core/engine/inspector_fixtures.py) as a loadable model, saved in
    ``folder``: every tensor it reads but never makes becomes a small weight."""
    from tests.core.engine.inspector_fixtures import fixture_graph

    g = fixture_graph()
    made = {o for n in g.node for o in n.output} | {i.name for i in g.input}
    for name in sorted({i for n in g.node for i in n.input if i and i not in made}):
        int8 = name.endswith(".q") or name.startswith("z") or name.endswith(".z")
        g.initializer.append(numpy_helper.from_array(np.zeros(1, np.int8 if int8 else np.float32), name))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    path = folder / "fixture.onnx"
    onnx.save(m, str(path))
    return path
