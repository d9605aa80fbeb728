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

Weights are tiny (one-element) initializers: structure is what matters here.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FAMILIES = ("resnet", "transformer", "unet")


class _Builder:
    """Appends nodes with unique names; every weight is a tiny initializer of its own."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._n = 0
        self._one = np.zeros(1, dtype=np.float32)
        self.scope = ""  # a name scope for the nodes ('/encoder/layer.3/attention'), as PyTorch's exporter writes

    def _name(self, base: str) -> str:
        self._n += 1
        return f"{base}_{self._n}"

    def weight(self, base: str = "w") -> str:
        name = self._name(base)
        self.inits.append(numpy_helper.from_array(self._one, name))
        return name

    def op(self, op_type: str, inputs: list[str], n_weights: int = 0, **attrs: object) -> str:
        """Add a node with one output; n_weights extra initializer inputs are appended."""
        ins = list(inputs) + [self.weight() for _ in range(n_weights)]
        out = self._name(op_type.lower())
        name = self._name(op_type)
        self.nodes.append(helper.make_node(op_type, ins, [out], name=f"{self.scope}/{name}" if self.scope else name,
                                           **attrs))
        return out

    def unit(self, x: str) -> str:
        """conv -> batch norm -> relu."""
        x = self.op("Conv", [x], 1, kernel_shape=[3, 3], pads=[1, 1, 1, 1])
        x = self.op("BatchNormalization", [x], 4)
        return self.op("Relu", [x])

    def model(self, name: str, inputs: list[onnx.ValueInfoProto], outputs: list[str]) -> onnx.ModelProto:
        outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs]
        graph = helper.make_graph(self.nodes, name, inputs, outs, initializer=self.inits)
        return helper.make_model(
            graph, ir_version=10, opset_imports=[helper.make_operatorsetid("", 17)], producer_name="trtlab-bench"
        )


def _image_input() -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 224, 224])


def resnet(target_nodes: int) -> onnx.ModelProto:
    """ResNet-like: stem, bottleneck blocks with identity/projection shortcuts, classifier head."""
    b = _Builder()
    x = b.unit("input")
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2])
    blocks = max(1, (target_nodes - 6) // 10)
    per_stage = max(1, blocks // 4)
    for i in range(blocks):
        y = b.unit(x)
        y = b.unit(y)
        y = b.op("Conv", [y], 1, kernel_shape=[1, 1])
        y = b.op("BatchNormalization", [y], 4)
        if i % per_stage == 0:
            sc = b.op("Conv", [x], 1, kernel_shape=[1, 1])
            sc = b.op("BatchNormalization", [sc], 4)
        else:
            sc = x
        x = b.op("Relu", [b.op("Add", [y, sc])])
    x = b.op("GlobalAveragePool", [x])
    x = b.op("Flatten", [x])
    x = b.op("Gemm", [x], 2)
    return b.model("resnet_like", [_image_input()], [x])


def _layer_norm(b: _Builder, x: str) -> str:
    return b.op("LayerNormalization", [x], 2, axis=-1)


def transformer(target_nodes: int, scoped: bool = False) -> onnx.ModelProto:
    """BERT-like encoder; the additive attention mask is computed once and used by every layer. `scoped`: nodes named
    by module as torch.onnx names them (`/encoder/layer.3/attention/self/MatMul_12`)."""
    b = _Builder()

    def scope(path: str) -> None:
        if scoped:
            b.scope = path
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, 128])
    mask_in = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [1, 128])
    scope("/embeddings")
    h = b.op("Gather", [b.weight("embeddings"), "input_ids"])
    h = b.op("Add", [h], 1)
    h = _layer_norm(b, h)
    scope("")
    m = b.op("Unsqueeze", ["attention_mask"], 1)
    m = b.op("Cast", [m], to=TensorProto.FLOAT)
    m = b.op("Sub", [b.weight("one"), m])
    mask = b.op("Mul", [m], 1)
    layers = max(1, (target_nodes - 8) // 34)
    for layer in range(layers):
        scope(f"/encoder/layer.{layer}/attention/self")
        heads = []
        for perm in ([0, 2, 1, 3], [0, 2, 3, 1], [0, 2, 1, 3]):
            t = b.op("MatMul", [h], 1)
            t = b.op("Add", [t], 1)
            t = b.op("Reshape", [t], 1)
            heads.append(b.op("Transpose", [t], perm=perm))
        q, k, v = heads
        s = b.op("MatMul", [q, k])
        s = b.op("Div", [s], 1)
        s = b.op("Add", [s, mask])
        s = b.op("Softmax", [s], axis=-1)
        c = b.op("MatMul", [s, v])
        scope(f"/encoder/layer.{layer}/attention/output")
        c = b.op("Transpose", [c], perm=[0, 2, 1, 3])
        c = b.op("Reshape", [c], 1)
        c = b.op("MatMul", [c], 1)
        c = b.op("Add", [c], 1)
        h = _layer_norm(b, b.op("Add", [c, h]))
        scope(f"/encoder/layer.{layer}/intermediate")
        f = b.op("MatMul", [h], 1)
        f = b.op("Add", [f], 1)
        g = b.op("Div", [f], 1)
        g = b.op("Erf", [g])
        g = b.op("Add", [g], 1)
        g = b.op("Mul", [f, g])
        g = b.op("Mul", [g], 1)
        scope(f"/encoder/layer.{layer}/output")
        f = b.op("MatMul", [g], 1)
        f = b.op("Add", [f], 1)
        h = _layer_norm(b, b.op("Add", [f, h]))
    return b.model("transformer_like", [ids, mask_in], [h])


def _rsu(b: _Builder, x: str, levels: int = 5) -> str:
    """Residual U block: inner encoder/decoder with a skip from inner block i to block N-i."""
    x = b.unit(x)
    top = x
    skips = []
    for _ in range(levels - 1):
        x = b.unit(x)
        skips.append(x)
        x = b.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = b.unit(x)
    for skip in reversed(skips):
        x = b.op("Resize", [x, "", b.weight("scales")], mode="linear")
        x = b.unit(b.op("Concat", [x, skip], axis=1))
    return b.op("Add", [x, top])


def unet(target_nodes: int) -> onnx.ModelProto:
    """U²-Net-like: outer U of RSU stages with long skips and fused side outputs, stacked."""
    b = _Builder()
    x = "input"
    outputs = []
    depth = 4  # outer levels
    per_stack = (2 * depth + 1) * 43 + 4 * depth + 4  # nodes of one outer U (an RSU has 43)
    stacks = max(1, round(target_nodes / per_stack))
    for _ in range(stacks):
        skips = []
        for _ in range(depth):
            x = _rsu(b, x)
            skips.append(x)
            x = b.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
        x = _rsu(b, x)
        sides = []
        for skip in reversed(skips):
            x = b.op("Resize", [x, "", b.weight("scales")], mode="linear")
            x = _rsu(b, b.op("Concat", [x, skip], axis=1))
            side = b.op("Conv", [x], 1, kernel_shape=[3, 3], pads=[1, 1, 1, 1])
            sides.append(b.op("Resize", [side, "", b.weight("scales")], mode="linear"))
        fused = b.op("Conv", [b.op("Concat", sides, axis=1)], 1, kernel_shape=[1, 1])
        outputs.append(b.op("Sigmoid", [fused]))
        x = b.op("Add", [x, fused])
    return b.model("unet_like", [_image_input()], outputs)


def make(family: str, target_nodes: int) -> onnx.ModelProto:
    """A model of the given family with about target_nodes nodes."""
    return {"resnet": resnet, "transformer": transformer, "unet": unet}[family](target_nodes)


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
