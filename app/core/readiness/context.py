"""One pass over the model that every readiness check reads: node keys, nested nodes and their owners, readers
of each tensor, and the stored tensors (initializers and Constant values)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import onnx

from app.core.model import TensorInfo, constant_tensor, graph_inputs, node_subgraphs, value_info_to_tensor_info
from app.core.precision import node_keys

_MAX_FUNCTION_DEPTH = 16


@dataclass(frozen=True)
class NestedNode:
    """A node anywhere in the model, with the top-level node it belongs to (itself at the top level)."""

    node: onnx.NodeProto
    owner: int          # index in graph.node
    where: str = ""     # "" at the top level, else e.g. "in the body of Loop 'loop'" or "in local function 'F'"


@dataclass(frozen=True)
class StoredTensor:
    """An initializer or a Constant node's value; ``owner`` is the top-level node index for nested ones."""

    name: str
    tensor: onnx.TensorProto
    owner: int | None
    constant_node: int | None = None   # index in graph.node of the Constant node that holds it (top level)


@dataclass
class GraphIndex:
    model: onnx.ModelProto
    keys: list[str]
    order: dict[str, int]
    inputs: list[TensorInfo]
    nodes: list[NestedNode] = field(default_factory=list)
    readers: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # tensor -> [(node index, input pos)]
    tensors: list[StoredTensor] = field(default_factory=list)
    functions: dict[tuple[str, str], onnx.FunctionProto] = field(default_factory=dict)

    @property
    def graph(self) -> onnx.GraphProto:
        return self.model.graph

    def opset(self, domain: str = "") -> int | None:
        for o in self.model.opset_import:
            if (o.domain or "") in ({"", "ai.onnx"} if domain in ("", "ai.onnx") else {domain}):
                return int(o.version)
        return None

    def reader_keys(self, tensor: str) -> list[str]:
        seen: dict[str, None] = {}
        for i, _ in self.readers.get(tensor, ()):
            seen.setdefault(self.keys[i], None)
        return list(seen)

    def is_function(self, node: onnx.NodeProto) -> bool:
        return (node.domain or "", node.op_type) in self.functions


def build_index(model: onnx.ModelProto) -> GraphIndex:
    g = model.graph
    keys = node_keys(g)
    index = GraphIndex(model=model, keys=keys, order={k: i for i, k in enumerate(keys)},
                       inputs=[value_info_to_tensor_info(v) for v in graph_inputs(g)],
                       functions={(f.domain or "", f.name): f for f in model.functions})
    for t in g.initializer:
        index.tensors.append(StoredTensor(t.name, t, None))
    for i, node in enumerate(g.node):
        for j, name in enumerate(node.input):
            if name:
                index.readers.setdefault(name, []).append((i, j))
        for nested in _expand(index, node, i, "", 0):
            index.nodes.append(nested)
            n = nested.node
            if n.op_type == "Constant" and n.output and (t := constant_tensor(n)) is not None:
                top = nested.where == ""
                index.tensors.append(StoredTensor(n.output[0], t, None if top else i, i if top else None))
            if nested.where:  # a nested node reading an outer tensor counts as its owner reading it
                for name in n.input:
                    if name:
                        index.readers.setdefault(name, []).append((i, -1))
    return index


def _expand(index: GraphIndex, node: onnx.NodeProto, owner: int, where: str, depth: int) -> Iterator[NestedNode]:
    """The node, the nodes of its subgraphs and of the local function it calls, depth first."""
    yield NestedNode(node, owner, where)
    label = f"'{node.name}'" if node.name else f"of '{next((o for o in node.output if o), '?')}'"
    for attr, sub in node_subgraphs(node):
        inner = f"in the {attr} of {node.op_type} {label}" + (f", {where}" if where else "")
        for t in sub.initializer:
            index.tensors.append(StoredTensor(t.name, t, owner))
        for child in sub.node:
            yield from _expand(index, child, owner, inner, depth)
    fn = index.functions.get((node.domain or "", node.op_type))
    if fn is not None and depth < _MAX_FUNCTION_DEPTH:
        inner = f"in local function '{fn.name}'" + (f", {where}" if where else "")
        for child in fn.node:
            yield from _expand(index, child, owner, inner, depth + 1)
