"""Concrete dims where ONNX inference leaves exporter-named ones (``unk__165``, ``Reluemb_dim_0``).

ONNX shape inference only reads a shape-carrying input (Reshape's target, Resize's sizes, Pad's pads) when
it is a stored constant; its data propagation stops at ops such as Cast. Exporters compute those inputs from
``Shape`` of an earlier tensor, so even a model with static inputs ends with symbolic dims downstream.

With static inputs those values are plain numbers. This pass walks the graph once, in order: it computes
the values of small shape-carrying tensors (:mod:`app.core.model.shape_ops`), and re-infers each node whose outputs
are still not static with ONNX's own per-node rules, now given those values. A ``Loop`` whose carried values
keep their shapes through one pass of its body gets those shapes (ONNX assumes any carried value may change
shape). Tensors the pass cannot settle keep what full-graph inference said.
"""

from __future__ import annotations

import logging

import numpy as np
import onnx
from onnx import AttributeProto, TypeProto, helper, numpy_helper

from app.core.model.shape_ops import MAX_VALUE_ELEMENTS, evaluate_node, is_static_type, known_dims, numel, type_of

log = logging.getLogger(__name__)

_SUBGRAPH_ATTRS = (AttributeProto.GRAPH, AttributeProto.GRAPHS)
_MAX_DEPTH = 4  # Loops nested deeper than this keep what inference said


def _merge(old: TypeProto | None, new: TypeProto) -> TypeProto | None:
    """The better-known of two types of one tensor, or None to keep the old one."""
    if new.WhichOneof("value") != "tensor_type":
        return None
    if old is not None and old.WhichOneof("value") == "tensor_type" and not new.tensor_type.elem_type:
        new.tensor_type.elem_type = old.tensor_type.elem_type
    return new if known_dims(new) > known_dims(old) else None


class _Schemas:
    """ONNX op schemas at the model's opsets, looked up once per op."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.opsets = {("" if o.domain == "ai.onnx" else o.domain): int(o.version) for o in model.opset_import}
        self.local = {(f.domain, f.name) for f in model.functions}
        self.cache: dict[tuple[str, str], onnx.defs.OpSchema | None] = {}

    def get(self, node: onnx.NodeProto) -> onnx.defs.OpSchema | None:
        domain = "" if node.domain == "ai.onnx" else node.domain
        key = (domain, node.op_type)
        if key not in self.cache:
            schema = None
            if (node.domain, node.op_type) not in self.local and domain in self.opsets:
                try:
                    schema = onnx.defs.get_schema(node.op_type, self.opsets[domain], domain)
                except onnx.defs.SchemaError:
                    schema = None
            self.cache[key] = schema
        return self.cache[key]


def refine_types(model: onnx.ModelProto, types: dict[str, TypeProto],
                 inner: dict[str, TypeProto] | None = None, depth: int = 0) -> int:
    """Settle the types of ``model.graph``'s tensors in ``types`` in place; returns how many improved.

    ``types`` holds what full-graph inference found (inputs with the user's shapes, value infos, outputs);
    small initializers seed the values. Types learnt inside Loop bodies go to ``inner``. A failure at one
    node leaves that node as inference left it.
    """
    graph = model.graph
    opset = next((int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    schemas = _Schemas(model)
    values: dict[str, np.ndarray] = {}
    for t in graph.initializer:
        types.setdefault(t.name, helper.make_tensor_type_proto(t.data_type, list(t.dims)))
        if t.data_location != onnx.TensorProto.EXTERNAL and numel(t.dims) <= MAX_VALUE_ELEMENTS:
            try:
                values[t.name] = numpy_helper.to_array(t)
            except Exception:  # an odd encoding only costs this tensor's value  # noqa: BLE001
                continue
    static = {name for name, t in types.items() if is_static_type(t)}
    improved = 0
    # Tensors this pass learnt something about; a node with none among its inputs would be re-inferred
    # from exactly what full-graph inference saw, so it is skipped (most nodes of a dynamic model).
    fresh: set[str] = {i.name for i in graph.input}  # set by the user, or a Loop body's entry types
    for node in graph.node:
        outs = [o for o in node.output if o]
        if not outs:
            continue
        if node.domain in ("", "ai.onnx"):
            computed = evaluate_node(node, values, types, opset)
            for name, value in zip(node.output, computed or (), strict=False):
                if not name or value is None:
                    continue
                values[name] = value
                if node.op_type != "Constant":
                    fresh.add(name)
                if name not in static and (vt := type_of(value)) is not None:
                    types[name] = vt
                    static.add(name)
                    improved += 1
        if all(o in static for o in outs):
            continue
        has_subgraph = any(a.type in _SUBGRAPH_ATTRS for a in node.attribute)
        if not (fresh if has_subgraph else any(i in fresh for i in node.input)):
            continue
        learnt = _infer_node(model, schemas, node, types, values, has_subgraph)
        if node.op_type == "Loop" and node.domain in ("", "ai.onnx") and depth < _MAX_DEPTH:
            learnt.update(_loop_carried(model, node, types, values, inner, depth))
        for name, new in learnt.items():
            merged = _merge(types.get(name), new)
            if merged is not None:
                types[name] = merged
                fresh.add(name)
                improved += 1
                if is_static_type(merged):
                    static.add(name)
    return improved


def _infer_node(model: onnx.ModelProto, schemas: _Schemas, node: onnx.NodeProto, types: dict[str, TypeProto],
                values: dict[str, np.ndarray], has_subgraph: bool) -> dict[str, TypeProto]:
    """ONNX's shape rule for one node, given the input types and the values known so far."""
    schema = schemas.get(node)
    if schema is None or any(i and i not in types for i in node.input):
        return {}
    # Subgraph bodies read outer-scope tensors by name, so they need every type, not only the node's inputs.
    in_types = types if has_subgraph else {i: types[i] for i in node.input if i}
    in_data = {i: numpy_helper.from_array(values[i], i) for i in node.input if i in values}
    try:
        return dict(onnx.shape_inference.infer_node_outputs(
            schema, node, in_types, in_data, opset_imports=list(model.opset_import),
            ir_version=model.ir_version or onnx.IR_VERSION))
    except Exception as exc:  # one node's rules failing must not stop the rest  # noqa: BLE001
        log.debug("per-node inference of %s '%s' failed: %s", node.op_type, node.name, exc)
        return {}


def _loop_carried(model: onnx.ModelProto, node: onnx.NodeProto, types: dict[str, TypeProto],
                  values: dict[str, np.ndarray], inner: dict[str, TypeProto] | None,
                  depth: int) -> dict[str, TypeProto]:
    """Final types of a Loop's carried values that leave one pass of the body with the shapes they entered.

    Such a value has that shape after every iteration, whatever the trip count. Scan outputs are left
    alone: their length is the number of iterations, which the body's condition may decide at run time.
    """
    body = next((a.g for a in node.attribute if a.name == "body" and a.type == AttributeProto.GRAPH), None)
    carried = list(node.input[2:])
    if body is None or len(body.input) != 2 + len(carried) or len(body.output) < 1 + len(carried):
        return {}
    if not all(is_static_type(types.get(c)) for c in carried):
        return {}
    sub = _body_model(model, body, [helper.make_tensor_type_proto(onnx.TensorProto.INT64, []),
                                    helper.make_tensor_type_proto(onnx.TensorProto.BOOL, [])]
                      + [types[c] for c in carried], types, values)
    if sub is None:
        return {}
    try:
        inferred = onnx.shape_inference.infer_shapes(sub, check_type=False, strict_mode=False, data_prop=True)
    except Exception as exc:  # the body stays as full-graph inference left it  # noqa: BLE001
        log.debug("inference of the body of Loop '%s' failed: %s", node.name, exc)
        return {}
    body_types: dict[str, TypeProto] = {}
    for vi in list(inferred.graph.input) + list(inferred.graph.value_info) + list(inferred.graph.output):
        if known_dims(vi.type) > known_dims(body_types.get(vi.name)):
            body_types[vi.name] = vi.type
    refine_types(inferred, body_types, inner, depth + 1)
    out: dict[str, TypeProto] = {}
    for k, name in enumerate(node.output[:len(carried)]):
        after = body_types.get(body.output[1 + k].name)
        if name and is_static_type(after) and after == types[carried[k]]:
            out[name] = after
    if inner is not None and len(out) == len(carried):
        # Every carried value keeps its shape, so each pass of the body sees these same types.
        outer = {i.name for i in sub.graph.input[2 + len(carried):]} | {t.name for t in sub.graph.initializer}
        inner.update({n: t for n, t in body_types.items() if n not in outer})
    return out


def _body_model(model: onnx.ModelProto, body: onnx.GraphProto, input_types: list[TypeProto],
                types: dict[str, TypeProto], values: dict[str, np.ndarray]) -> onnx.ModelProto | None:
    """The body as a model of its own: outer-scope tensors it reads become inputs (or constants)."""
    g = onnx.GraphProto()
    g.CopyFrom(body)
    for vi, t in zip(g.input, input_types, strict=True):
        vi.type.CopyFrom(t)
    for vi in g.output:
        if vi.type.HasField("tensor_type"):
            vi.type.tensor_type.ClearField("shape")  # as exported, they are often stale symbols
    del g.value_info[:]  # likewise; inference finds them again from the entry types
    defined = {i.name for i in g.input} | {t.name for t in g.initializer}
    used: list[str] = []
    stack = [g]
    while stack:
        sg = stack.pop()
        defined |= {o for n in sg.node for o in n.output}
        defined |= {i.name for i in sg.input} | {t.name for t in sg.initializer}
        for n in sg.node:
            used.extend(i for i in n.input if i)
            stack.extend(a.g for a in n.attribute if a.type == AttributeProto.GRAPH)
            stack.extend(x for a in n.attribute if a.type == AttributeProto.GRAPHS for x in a.graphs)
    for name in dict.fromkeys(u for u in used if u not in defined):
        if name in values:
            g.initializer.append(numpy_helper.from_array(values[name], name))
        elif name in types:
            g.input.append(helper.make_value_info(name, types[name]))
        else:
            return None  # an outer tensor of unknown type: inference would stop at it anyway
    sub = helper.make_model(g, opset_imports=list(model.opset_import))
    sub.ir_version = model.ir_version
    sub.functions.extend(model.functions)
    return sub
