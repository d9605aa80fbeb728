"""Fold Constant-node weights into initializers, so converters and quantizers see them as weights.

paddle2onnx exports keep every weight in a Constant node; quantizers then treat them as activations and
FP16 converters convert them even on blocked nodes. Folding leaves ONNX Runtime's outputs bit-identical.
"""

from __future__ import annotations

import onnx

from app.core.model import constant_tensor


def fold_constants(model: onnx.ModelProto) -> tuple[onnx.ModelProto, int]:
    """A copy of `model` with top-level Constant nodes turned into initializers; returns it and the count.

    Constants inside If/Loop/Scan bodies stay: an initializer there would be a different scope.
    Graph outputs produced by a Constant keep their node, since an initializer cannot be a graph output
    in every IR version. Empty tensors (a Resize's unused roi or scales) keep their node too: they are no
    weight, and TensorRT's parser warns about every zero-size initializer.
    """
    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = out.graph
    outputs = {o.name for o in g.output}
    existing = {t.name for t in g.initializer} | {i.name for i in g.input}
    keep, folded = [], 0
    for node in g.node:
        tensor = constant_tensor(node) if node.op_type == "Constant" and len(node.output) == 1 else None
        name = node.output[0] if node.output else ""
        if tensor is None or name in outputs or name in existing or not name or 0 in tensor.dims:
            keep.append(node)
            continue
        init = g.initializer.add()
        init.CopyFrom(tensor)
        init.name = name
        if out.ir_version < 4:  # before IR 4 every initializer must also be declared as a graph input
            g.input.append(onnx.helper.make_tensor_value_info(name, init.data_type, list(init.dims)))
        folded += 1
    del g.node[:]
    g.node.extend(keep)
    return out, folded


def topo_sort(graph: onnx.GraphProto, outer: frozenset[str] = frozenset()) -> bool:
    """Order `graph`'s nodes (and its subgraphs') so that each comes after the nodes it reads, keeping the given
    order wherever it already is one; returns whether anything moved. ONNX requires the order, ONNX Runtime does not
    (it sorts for itself): models that load in ONNX Runtime can arrive unsorted (an SVTRv2 recognizer and an
    openWakeWord model did), and a variant written in their order failed the ONNX checker. A cycle, or a name that
    nothing produces, leaves those nodes at the end in their order (the checker then names them)."""
    import heapq

    from app.core.precision.transforms.half_rules import outer_names

    moved = False
    available = set(outer) | {i.name for i in graph.input} | {t.name for t in graph.initializer} | {""}
    for node in graph.node:
        for attr in node.attribute:
            subs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
            for sub in subs:
                moved |= topo_sort(sub, frozenset(available | {o for n in graph.node for o in n.output}))
    nodes = list(graph.node)
    producer = {o: i for i, n in enumerate(nodes) for o in n.output if o}
    needs = [{producer[x] for x in (*n.input, *outer_names(n)) if x not in available and x in producer
              and producer[x] != i} for i, n in enumerate(nodes)]
    readers: dict[int, list[int]] = {}
    for i, deps in enumerate(needs):
        for d in deps:
            readers.setdefault(d, []).append(i)
    waiting = [len(d) for d in needs]
    ready = [i for i, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for r in readers.get(i, []):
            waiting[r] -= 1
            if waiting[r] == 0:
                heapq.heappush(ready, r)
    placed = set(order)
    order += [i for i in range(len(nodes)) if i not in placed]
    if order != list(range(len(nodes))):
        del graph.node[:]
        graph.node.extend(nodes[i] for i in order)
        moved = True
    return moved
