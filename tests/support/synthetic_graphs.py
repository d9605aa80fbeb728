"""Neural-network-shaped ONNX models for layout benchmarks and tests, built with onnx.helper.

Three families, each scaled to roughly a requested node count:

- ``resnet``: bottleneck blocks (conv-bn-relu x3 with a projection shortcut at each stage start)
  joined by Add, i.e. short skip connections beside a long spine.
- ``transformer``: BERT-style encoder layers (Q/K/V branches, softmax attention, residual Adds,
  LayerNorm, GELU MLP). One ``attention_mask`` graph input is turned into an additive mask once
  (Unsqueeze, Cast, Sub, Mul, as real exports do) and that tensor is consumed by every layer: one
  producer with consumers all the way down the graph.
- ``unet``: U²-Net-like stacked encoder/decoders. Each stage is a residual U block (inner U of five
  levels, skip from inner block i to block N-i); stages form an outer U (skip from stage i to stage
  N-i, spanning several inner U's) whose decoder stages also feed side outputs into a final fusion
  Concat; outer U's are stacked to reach the size. Long skips nested at two scales.

Weights are small (a few channels, a hidden size of 8) but every model is valid ONNX: it passes
``onnx.checker.check_model(model, full_check=True)`` (strict shape inference), so shape inference runs
through the whole graph as it does on a real export. Structure is what matters here, not the values.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FAMILIES = ("resnet", "transformer", "unet")


class _Builder:
    """Appends nodes with unique names; every weight is a small initializer of its own."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._n = 0
        self.scope = ""  # a name scope for the nodes ('/encoder/layer.3/attention'), as PyTorch's exporter writes

    def _name(self, base: str) -> str:
        self._n += 1
        return f"{base}_{self._n}"

    def weight(self, base: str = "w", shape: tuple[int, ...] = (1,)) -> str:
        """A float32 initializer of zeros."""
        return self.const(base, np.zeros(shape, dtype=np.float32))

    def const(self, base: str, value: np.ndarray) -> str:
        """An initializer with these values (int64 axes, shapes and scales where the operator wants them)."""
        name = self._name(base)
        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def op(self, op_type: str, inputs: list[str], weights: tuple[tuple[int, ...], ...] = (), **attrs: object) -> str:
        """Add a node with one output; one float initializer input of each shape in `weights` is appended."""
        ins = list(inputs) + [self.weight(shape=w) for w in weights]
        out = self._name(op_type.lower())
        name = self._name(op_type)
        self.nodes.append(helper.make_node(op_type, ins, [out], name=f"{self.scope}/{name}" if self.scope else name,
                                           **attrs))
        return out

    def unit(self, x: str, c_in: int, c_out: int = 4) -> str:
        """conv 3x3 (c_in -> c_out channels) -> batch norm -> relu."""
        x = self.op("Conv", [x], ((c_out, c_in, 3, 3),), kernel_shape=[3, 3], pads=[1, 1, 1, 1])
        x = self.op("BatchNormalization", [x], ((c_out,),) * 4)
        return self.op("Relu", [x])

    def model(self, name: str, inputs: list[onnx.ValueInfoProto], outputs: list[str],
              shape: list[int]) -> onnx.ModelProto:
        """The model, its float outputs of this shape."""
        outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, shape) for o in outputs]
        graph = helper.make_graph(self.nodes, name, inputs, outs, initializer=self.inits)
        return helper.make_model(
            graph, ir_version=10, opset_imports=[helper.make_operatorsetid("", 17)], producer_name="trtlab-bench"
        )


_C = 4  # channels of the convolutional families
_H, _HEADS, _SEQ = 8, 2, 128  # the encoder's hidden size, attention heads, sequence length


def _image_input(side: int = 224) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, side, side])


def resnet(target_nodes: int) -> onnx.ModelProto:
    """ResNet-like: stem, bottleneck blocks with identity/projection shortcuts, classifier head."""
    b = _Builder()
    x = b.unit("input", 3)
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2])
    blocks = max(1, (target_nodes - 6) // 10)
    per_stage = max(1, blocks // 4)
    for i in range(blocks):
        y = b.unit(x, _C)
        y = b.unit(y, _C)
        y = b.op("Conv", [y], ((_C, _C, 1, 1),), kernel_shape=[1, 1])
        y = b.op("BatchNormalization", [y], ((_C,),) * 4)
        if i % per_stage == 0:
            sc = b.op("Conv", [x], ((_C, _C, 1, 1),), kernel_shape=[1, 1])
            sc = b.op("BatchNormalization", [sc], ((_C,),) * 4)
        else:
            sc = x
        x = b.op("Relu", [b.op("Add", [y, sc])])
    x = b.op("GlobalAveragePool", [x])
    x = b.op("Flatten", [x])
    x = b.op("Gemm", [x], ((_C, 10), (10,)))
    return b.model("resnet_like", [_image_input()], [x], [1, 10])


def _layer_norm(b: _Builder, x: str) -> str:
    return b.op("LayerNormalization", [x], ((_H,), (_H,)), axis=-1)


def transformer(target_nodes: int, scoped: bool = False) -> onnx.ModelProto:
    """BERT-like encoder; the additive attention mask is computed once and used by every layer. `scoped`: nodes named
    by module as torch.onnx names them (`/encoder/layer.3/attention/self/MatMul_12`)."""
    b = _Builder()

    def scope(path: str) -> None:
        if scoped:
            b.scope = path
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, _SEQ])
    mask_in = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [1, _SEQ])
    one, hh, ff = (1,), (_H,), (4 * _H,)
    scope("/embeddings")
    h = b.op("Gather", [b.weight("embeddings", (32, _H)), "input_ids"])
    h = b.op("Add", [h], (hh,))
    h = _layer_norm(b, h)
    scope("")
    m = b.op("Unsqueeze", ["attention_mask", b.const("axes", np.array([1, 2], dtype=np.int64))])
    m = b.op("Cast", [m], to=TensorProto.FLOAT)
    m = b.op("Sub", [b.weight("one"), m])
    mask = b.op("Mul", [m], (one,))
    split = np.array([1, _SEQ, _HEADS, _H // _HEADS], dtype=np.int64)
    merged = np.array([1, _SEQ, _H], dtype=np.int64)
    layers = max(1, (target_nodes - 8) // 34)
    for layer in range(layers):
        scope(f"/encoder/layer.{layer}/attention/self")
        heads = []
        for perm in ([0, 2, 1, 3], [0, 2, 3, 1], [0, 2, 1, 3]):
            t = b.op("MatMul", [h], ((_H, _H),))
            t = b.op("Add", [t], (hh,))
            t = b.op("Reshape", [t, b.const("shape", split)])
            heads.append(b.op("Transpose", [t], perm=perm))
        q, k, v = heads
        s = b.op("MatMul", [q, k])
        s = b.op("Div", [s], (one,))
        s = b.op("Add", [s, mask])
        s = b.op("Softmax", [s], axis=-1)
        c = b.op("MatMul", [s, v])
        scope(f"/encoder/layer.{layer}/attention/output")
        c = b.op("Transpose", [c], perm=[0, 2, 1, 3])
        c = b.op("Reshape", [c, b.const("shape", merged)])
        c = b.op("MatMul", [c], ((_H, _H),))
        c = b.op("Add", [c], (hh,))
        h = _layer_norm(b, b.op("Add", [c, h]))
        scope(f"/encoder/layer.{layer}/intermediate")
        f = b.op("MatMul", [h], ((_H, 4 * _H),))
        f = b.op("Add", [f], (ff,))
        g = b.op("Div", [f], (one,))
        g = b.op("Erf", [g])
        g = b.op("Add", [g], (one,))
        g = b.op("Mul", [f, g])
        g = b.op("Mul", [g], (one,))
        scope(f"/encoder/layer.{layer}/output")
        f = b.op("MatMul", [g], ((4 * _H, _H),))
        f = b.op("Add", [f], (hh,))
        h = _layer_norm(b, b.op("Add", [f, h]))
    return b.model("transformer_like", [ids, mask_in], [h], [1, _SEQ, _H])


def _rsu(b: _Builder, x: str, c_in: int, levels: int = 5) -> str:
    """Residual U block: inner encoder/decoder with a skip from inner block i to block N-i. Halves the side
    levels-1 times inside (and doubles it back), so the input's side must be a multiple of 2**(levels-1)."""
    x = b.unit(x, c_in)
    top = x
    skips = []
    for _ in range(levels - 1):
        x = b.unit(x, _C)
        skips.append(x)
        x = b.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = b.unit(x, _C)
    for skip in reversed(skips):
        x = b.op("Resize", [x, "", _scales(b, 2)], mode="linear")
        x = b.unit(b.op("Concat", [x, skip], axis=1), 2 * _C)
    return b.op("Add", [x, top])


def _scales(b: _Builder, factor: int) -> str:
    return b.const("scales", np.array([1, 1, factor, factor], dtype=np.float32))


def unet(target_nodes: int) -> onnx.ModelProto:
    """U²-Net-like: outer U of RSU stages with long skips and fused side outputs, stacked."""
    b = _Builder()
    x, c_in = "input", 3
    outputs = []
    depth = 4  # outer levels
    side = 2 ** (depth + 4) * 2  # halved depth times outside and 4 times inside each RSU: 512
    per_stack = (2 * depth + 1) * 43 + 4 * depth + 4  # nodes of one outer U (an RSU has 43)
    stacks = max(1, round(target_nodes / per_stack))
    for _ in range(stacks):
        skips = []
        for _ in range(depth):
            x = _rsu(b, x, c_in)
            c_in = _C
            skips.append(x)
            x = b.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
        x = _rsu(b, x, _C)
        sides = []
        for level, skip in enumerate(reversed(skips)):
            x = b.op("Resize", [x, "", _scales(b, 2)], mode="linear")
            x = _rsu(b, b.op("Concat", [x, skip], axis=1), 2 * _C)
            out = b.op("Conv", [x], ((1, _C, 3, 3),), kernel_shape=[3, 3], pads=[1, 1, 1, 1])
            sides.append(b.op("Resize", [out, "", _scales(b, 2 ** (depth - 1 - level))], mode="linear"))
        fused = b.op("Conv", [b.op("Concat", sides, axis=1)], ((1, depth, 1, 1),), kernel_shape=[1, 1])
        outputs.append(b.op("Sigmoid", [fused]))
        x = b.op("Add", [x, fused])
    return b.model("unet_like", [_image_input(side)], outputs, [1, 1, side, side])


def make(family: str, target_nodes: int) -> onnx.ModelProto:
    """A model of the given family with about target_nodes nodes."""
    return {"resnet": resnet, "transformer": transformer, "unet": unet}[family](target_nodes)


def checked(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` once ``onnx.checker.check_model(full_check=True)`` passes (raises ValidationError if not): benchmarks
    time valid graphs only."""
    onnx.checker.check_model(model, full_check=True)
    return model


def onnx_edges(graph: onnx.GraphProto, *, skip_constants: bool = True) -> tuple[int, np.ndarray, list[str]]:
    """(node count, (E, 2) edges, op types): node i -> node j when an output of i feeds j.

    Constant nodes are left out when skip_constants is set; graph inputs and initializers are not
    nodes. One edge per (producer output, consumer input) use, so Mul(x, x) gives two edges.
    """
    keep = [nd for nd in graph.node if not (skip_constants and nd.op_type == "Constant")]
    producer: dict[str, int] = {}
    for i, nd in enumerate(keep):
        for o in nd.output:
            if o:
                producer[o] = i
    src: list[int] = []
    dst: list[int] = []
    for j, nd in enumerate(keep):
        for name in nd.input:
            i = producer.get(name)
            if i is not None:
                src.append(i)
                dst.append(j)
    edges = np.stack([np.asarray(src, np.int64), np.asarray(dst, np.int64)], axis=1).reshape(-1, 2)
    return len(keep), edges, [nd.op_type for nd in keep]
