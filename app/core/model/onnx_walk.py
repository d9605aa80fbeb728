"""Walking an ONNX graph and its subgraphs (If/Loop/Scan bodies) without recursion limits."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import SupportsIndex, SupportsInt

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto

SUBGRAPH_OPS = frozenset({"If", "Loop", "Scan"})


def node_subgraphs(node: onnx.NodeProto) -> Iterator[tuple[str, onnx.GraphProto]]:
    """(attribute name, graph) for each subgraph attribute of a node."""
    for attr in node.attribute:
        if attr.type == AttributeProto.GRAPH:
            yield attr.name, attr.g
        elif attr.type == AttributeProto.GRAPHS:
            for i, g in enumerate(attr.graphs):
                yield f"{attr.name}[{i}]", g


def iter_graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """The graph and every nested subgraph, depth first."""
    stack = [graph]
    while stack:
        g = stack.pop()
        yield g
        for node in g.node:
            if node.attribute:  # most nodes have none: no need to look further
                stack.extend(sub for _, sub in node_subgraphs(node))


def constant_tensor(node: onnx.NodeProto) -> TensorProto | None:
    """The value of a Constant node as a TensorProto (None for sparse or unusual forms)."""
    if node.op_type != "Constant" or node.domain not in ("", "ai.onnx"):
        return None
    for attr in node.attribute:
        if attr.name == "value" and attr.type == AttributeProto.TENSOR:
            return attr.t
        if attr.name == "value_float":
            return onnx.numpy_helper.from_array(np.array(attr.f, dtype=np.float32))
        if attr.name == "value_floats":
            return onnx.numpy_helper.from_array(np.array(attr.floats, dtype=np.float32))
        if attr.name == "value_int":
            return onnx.numpy_helper.from_array(np.array(attr.i, dtype=np.int64))
        if attr.name == "value_ints":
            return onnx.numpy_helper.from_array(np.array(attr.ints, dtype=np.int64))
    return None


def iter_tensors(graph: onnx.GraphProto, *, every_attribute: bool = False) -> Iterator[TensorProto]:
    """Every stored tensor: initializers, sparse initializers and Constant node values, in all graphs; with
    `every_attribute`, the tensor attributes of every node too (ConstantOfShape's value…)."""
    for g in iter_graphs(graph):
        yield from g.initializer
        for sparse in g.sparse_initializer:
            yield sparse.values
        for node in g.node:
            if every_attribute or node.op_type == "Constant":
                for attr in node.attribute:
                    if attr.type == AttributeProto.TENSOR:
                        yield attr.t


def tensor_numel(t: TensorProto) -> int:
    return int(np.prod(t.dims, dtype=np.int64)) if t.dims else 1


def tensor_itemsize(data_type: int) -> float:
    """Bytes per element; sub-byte types (int4, float4) count as fractions."""
    if data_type in (TensorProto.STRING, TensorProto.UNDEFINED):
        return 0.0
    if data_type in _SUBBYTE:
        return 0.5
    try:
        return float(np.dtype(onnx.helper.tensor_dtype_to_np_dtype(data_type)).itemsize)
    except (KeyError, TypeError, ValueError):
        return 0.0


_SUBBYTE = {getattr(TensorProto, n) for n in ("INT4", "UINT4", "FLOAT4E2M1") if hasattr(TensorProto, n)}


def dtype_name(data_type: int) -> str:
    """'float32', 'int64', 'bfloat16'… for an ONNX TensorProto data type."""
    if data_type in _NAMES:
        return _NAMES[data_type]
    try:
        return TensorProto.DataType.Name(data_type).lower()
    except ValueError:
        return f"type{data_type}"

_NAMES: dict[int, str] = {
    TensorProto.FLOAT: "float32", TensorProto.DOUBLE: "float64", TensorProto.FLOAT16: "float16",
    TensorProto.BFLOAT16: "bfloat16", TensorProto.BOOL: "bool", TensorProto.STRING: "string",
}


def attr_int(value: object) -> int:
    """An attribute value (as ``onnx.helper.get_attribute_value`` gives it) as an int, converted as ``int()`` does;
    TypeError for a value ``int()`` refuses (a tensor, a list)."""
    if isinstance(value, str | bytes | bytearray | SupportsInt | SupportsIndex):
        return int(value)
    raise TypeError(f"an integer attribute holds {type(value).__name__}")


def attr_ints(value: object) -> list[int]:
    """A list attribute's value as ints (each converted by :func:`attr_int`); TypeError for a value that is not
    a list."""
    if not isinstance(value, Iterable):
        raise TypeError(f"an integer list attribute holds {type(value).__name__}")
    return [attr_int(v) for v in value]


def node_key(node: onnx.NodeProto, index: int) -> str:
    """A stable key: the node's name, else its first output's name, else its position."""
    if node.name:
        return node.name
    first = next((o for o in node.output if o), "")
    return f"{node.op_type}:{first}" if first else f"#{index}"


def node_keys(graph: onnx.GraphProto) -> list[str]:
    """Keys of every top-level node; a duplicated name gets its first output appended to stay unique."""
    keys = [node_key(n, i) for i, n in enumerate(graph.node)]
    seen: dict[str, int] = {}
    for k in keys:
        seen[k] = seen.get(k, 0) + 1
    out = []
    for i, (k, n) in enumerate(zip(keys, graph.node, strict=True)):
        if seen[k] > 1:
            first = next((o for o in n.output if o), str(i))
            k = f"{k}@{first}"
        out.append(k)
    return out


def graph_constants(graph: onnx.GraphProto) -> dict[str, onnx.TensorProto]:
    """{name: tensor} of a graph's initializers and of its Constant nodes that hold a tensor (`value`)."""
    found = {t.name: t for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.output:
            for a in node.attribute:
                if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
                    found[node.output[0]] = a.t
    return found
