"""Before and after ONNX Runtime's quantizer: the graph edits that make its Q/DQ output fit TensorRT.

Before: weights that the model computes from constants (a weight-only INT8 export stores ``int8 weight``
→ Cast → Mul by a scale) are folded into float initializers, so the quantizer sees them as weights (per
channel) instead of activations. After: only the planned INT8 nodes read dequantized tensors
(:func:`keep_fp32_inputs`), every scale has the float type of the tensor it scales and is finite and
positive (:func:`fix_scales`), and no initializer is empty (TensorRT's parser warns on each one:
:func:`restore_empty_constants`).

If/Loop/Scan bodies read tensors of the enclosing graph by name, with no input of their node naming them (an
openWakeWord head's verifier weights, silero-vad's hop length and GRU weights). Every edit here counts those reads
(:func:`graph_reads`): a tensor a body reads is never dropped, and keeps its name and its float value. The bodies
themselves are the float model's own: the quantizer only works on the top-level graph.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from app.core.model import node_subgraphs
from app.core.precision.transforms.half_rules import outer_names
from app.core.precision.transforms.qdq_rules import QUANT_OPS

# Input positions that hold a weight, by op.
WEIGHT_INPUT = {"Conv": 1, "ConvTranspose": 1, "MatMul": 1, "Gemm": 1}
_FLOAT_TYPES = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16}


def graph_reads(graph: onnx.GraphProto) -> set[str]:
    """Every name `graph` reads: its nodes' inputs, what their subgraphs read from this scope, its outputs."""
    read = {o.name for o in graph.output}
    for node in graph.node:
        read.update(i for i in node.input if i)
        if node.attribute:
            read |= outer_names(node)
    return read


def fold_computed_weights(work: onnx.ModelProto, wanted: set[str], const_derived: set[str]
                          ) -> tuple[int, list[str]]:
    """Replace each weight of a `wanted` node that is computed from constants alone by its float value.

    Only tensors read by nothing but wanted nodes' weight inputs are folded (an embedding table that a
    Gather also reads, or a tensor an If/Loop body reads, stays in its compact form); the nodes that
    computed them go when nothing else reads them. Returns the number of weights folded and the names of
    the nodes removed.
    """
    g = work.graph
    inits = {t.name for t in g.initializer}
    readers: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
    for n in g.node:
        for j, i in enumerate(n.input):
            readers.setdefault(i, []).append((n, j))
    in_bodies = {i for n in g.node if n.attribute for i in outer_names(n)}
    outputs = {o.name for o in g.output}
    targets = []
    for n in g.node:
        pos = WEIGHT_INPUT.get(n.op_type)
        if n.name not in wanted or pos is None or pos >= len(n.input):
            continue
        w = n.input[pos]
        if w in inits or w not in const_derived or w in outputs or w in in_bodies or w in targets:
            continue
        if all(r.name in wanted and WEIGHT_INPUT.get(r.op_type) == k for r, k in readers.get(w, [])):
            targets.append(w)
    if not targets:
        return 0, []
    values = _evaluate(work, targets)
    for name in targets:
        g.initializer.append(numpy_helper.from_array(values[name], name))
    # Drop the nodes that computed them, and whatever fed only those nodes.
    removed: list[str] = []
    while True:
        read = graph_reads(g)
        have = {t.name for t in g.initializer}
        dead = [k for k, n in enumerate(g.node)
                if all(not o or o in have or o not in read for o in n.output)
                and all(o in const_derived for o in n.output if o)]
        if not dead:
            break
        for k in reversed(dead):
            removed.append(g.node[k].name)
            del g.node[k]
    read = graph_reads(g)
    keep = [t for t in g.initializer if t.name in read]
    del g.initializer[:]
    g.initializer.extend(keep)
    return len(targets), removed


def _evaluate(work: onnx.ModelProto, names: list[str]) -> dict[str, np.ndarray]:
    """The values of constant-derived tensors, computed by ONNX's reference evaluator on their subgraph."""
    from onnx.reference import ReferenceEvaluator

    g = work.graph
    producer = {o: n for n in g.node for o in n.output}
    inits = {t.name: t for t in g.initializer}
    need, used, stack = [], set(), list(names)
    while stack:
        name = stack.pop()
        if name in used or name in inits or name not in producer:
            continue
        used.add(name)
        node = producer[name]
        if node not in need:
            need.append(node)
        stack.extend(i for i in node.input if i)
    order = {id(n): k for k, n in enumerate(g.node)}
    need.sort(key=lambda n: order[id(n)])
    feeds = {i for n in need for i in n.input if i in inits}
    sub = helper.make_graph(need, "weights", [], [helper.make_empty_tensor_value_info(n) for n in names],
                            [inits[i] for i in sorted(feeds)])
    model = helper.make_model(sub, opset_imports=list(work.opset_import), ir_version=work.ir_version)
    got = ReferenceEvaluator(model).run(None, {})
    return dict(zip(names, got, strict=True))


def keep_fp32_inputs(q: onnx.ModelProto, work: onnx.ModelProto, wanted: set[str]) -> None:
    """Give every node outside `wanted` its original inputs and outputs back; drop Q/DQ nobody reads.

    ONNX Runtime re-wires *every* reader of a quantized tensor (and renames a quantized graph output's
    producer); only the planned INT8 nodes should read the dequantized copy. A node with If/Loop/Scan bodies
    gets the float model's bodies back, which read the float tensors by their original names.
    """
    g = q.graph
    original = {n.name: n for n in work.graph.node}
    graph_outputs = {o.name for o in g.output}
    renamed: dict[str, str] = {}
    for node in g.node:
        orig = original.get(node.name)
        if node.op_type in QUANT_OPS or orig is None:
            continue
        for k, out in enumerate(node.output):
            if k < len(orig.output) and out != orig.output[k]:
                renamed[out] = orig.output[k]
                node.output[k] = orig.output[k]
    dq_alias: dict[str, str] = {}
    for node in g.node:
        if node.op_type not in QUANT_OPS:
            continue
        for j, name in enumerate(node.input):
            if name in renamed:
                node.input[j] = renamed[name]
        for k, out in enumerate(node.output):
            if out in graph_outputs and node.op_type == "DequantizeLinear":
                dq_alias[out] = node.output[k] = f"{out}_DequantizeLinear_Output"
    for node in g.node:
        orig = original.get(node.name)
        if node.op_type in QUANT_OPS or orig is None:
            continue
        if node.name in wanted:
            for j, name in enumerate(node.input):
                if name in dq_alias:
                    node.input[j] = dq_alias[name]
        else:
            del node.input[:]
            node.input.extend(orig.input)
            if any(True for _ in node_subgraphs(orig)):
                del node.attribute[:]
                node.attribute.extend(orig.attribute)
    restore_float_weights(q, work)
    drop_dead(q)


def restore_float_weights(q: onnx.ModelProto, work: onnx.ModelProto) -> None:
    """Float weights a float node (or an If/Loop/Scan body) reads again, when the quantizer replaced them by their
    INT8 copy or dropped them as unread."""
    g = q.graph
    have = {t.name for t in g.initializer} | {i.name for i in g.input} | {o for n in g.node for o in n.output}
    orig_inits = {t.name: t for t in work.graph.initializer}
    for node in g.node:
        for name in (*node.input, *(sorted(outer_names(node)) if node.attribute else ())):
            if name and name not in have and name in orig_inits:
                g.initializer.append(orig_inits[name])
                have.add(name)


def drop_dead(q: onnx.ModelProto) -> None:
    """Remove Q/DQ nodes whose outputs nobody reads, then initializers nobody reads (If/Loop/Scan bodies
    included)."""
    g = q.graph
    while True:
        read = graph_reads(g)
        dead = {i for i, n in enumerate(g.node) if n.op_type in QUANT_OPS and not any(o in read for o in n.output)}
        if not dead:
            break
        keep = [n for i, n in enumerate(g.node) if i not in dead]
        del g.node[:]
        g.node.extend(keep)
    read = graph_reads(g)
    keep_inits = [t for t in g.initializer if t.name in read]
    if len(keep_inits) != len(g.initializer):
        del g.initializer[:]
        g.initializer.extend(keep_inits)
    produced = {o for n in g.node for o in n.output} | {i.name for i in g.input} | {t.name for t in g.initializer}
    keep_vi = [v for v in g.value_info if v.name in produced]
    if len(keep_vi) != len(g.value_info):
        del g.value_info[:]
        g.value_info.extend(keep_vi)


def fix_scales(q: onnx.ModelProto, work: onnx.ModelProto, float_type: dict[str, int]
               ) -> tuple[dict[str, str], int]:
    """Make every Q/DQ scale the float type of its tensor, finite and positive.

    `float_type` is each tensor's element type in the float model. A scale of 0 (a tensor that was
    all zero in calibration, or a scale too small for float16) becomes the smallest positive value its
    type holds, or 1.0 for an all-zero range; a scale that is not finite (the tensor held Inf in
    calibration) cannot quantize anything: the nodes reading that Q/DQ get their float input back. Returns
    those nodes (name -> why, for the report) and the number of scales that were 0.
    """
    g = q.graph
    inits = {t.name: t for t in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    given_up: dict[str, str] = {}
    zeros = 0
    bad_dq: dict[str, str] = {}                     # DQ output -> the float tensor it stands for
    for node in g.node:
        if node.op_type not in QUANT_OPS or len(node.input) < 2 or node.input[1] not in inits:
            continue
        x = node.input[0]
        if node.op_type == "DequantizeLinear":
            src = producer.get(x)
            x = src.input[0] if src is not None and src.op_type == "QuantizeLinear" else _weight_name(x)
        want = float_type.get(x, TensorProto.FLOAT)
        scale = inits[node.input[1]]
        values = numpy_helper.to_array(scale).astype(np.float64)
        if not np.isfinite(values).all():
            if node.op_type == "DequantizeLinear":
                bad_dq[node.output[0]] = x
            continue
        if want not in _FLOAT_TYPES:
            want = TensorProto.FLOAT
        dtype = helper.tensor_dtype_to_np_dtype(want)
        if want == TensorProto.BFLOAT16:
            continue  # ORT's quantizer gives no bfloat16 models scales of another type; leave them be
        tiny = float(np.finfo(dtype).smallest_subnormal)
        fixed = np.where(values > 0, np.maximum(values, tiny), 1.0).astype(dtype)
        zeros += int((values <= 0).sum())  # a shared scale is fixed at its first reader, counted once
        if scale.data_type != want or not np.array_equal(fixed.astype(np.float64), values):
            scale.CopyFrom(numpy_helper.from_array(fixed.reshape(values.shape), scale.name))
    if bad_dq:
        original = {n.name: n for n in work.graph.node}
        for node in g.node:
            name = next((i for i in node.input if i in bad_dq), None)
            if node.op_type in QUANT_OPS or name is None or node.name not in original:
                continue
            del node.input[:]  # all of its inputs, its weight too: a node is INT8 whole or not at all
            node.input.extend(original[node.name].input)
            given_up[node.name] = (f"its input '{bad_dq[name]}' held Inf or NaN in calibration, so no finite INT8 "
                                   "scale exists for it: it stays float")
        restore_float_weights(q, work)
        drop_dead(q)
    return given_up, zeros


def _weight_name(quantized: str) -> str:
    """The float weight an INT8 initializer was made from (ONNX Runtime appends '_quantized')."""
    return quantized.removesuffix("_quantized")


def restore_empty_constants(model: onnx.ModelProto, names: dict[str, str] | None = None) -> int:
    """Give back the empty tensors that folding made initializers; returns how many.

    TensorRT's parser warns "Empty initializer … was provided with non-empty data" once per empty
    initializer (u2netp's Resize nodes: 76 of them), though it takes the same tensors as Constant nodes
    without a word. An empty optional Resize input (``roi``, ``scales``, from opset 13) is simply left
    out; any other empty initializer becomes a Constant node again (named as before, from `names`).
    """
    g = model.graph
    empty = {t.name: t for t in g.initializer if 0 in t.dims}
    if not empty:
        return 0
    opset = next((int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    for n in g.node:
        if n.op_type == "Resize" and opset >= 13:
            for j in (1, 2):
                if j < len(n.input) and n.input[j] in empty:
                    n.input[j] = ""
    read = graph_reads(g)
    keep = [t for t in g.initializer if t.name not in empty]
    consts = [helper.make_node("Constant", [], [name], name=(names or {}).get(name, f"Constant:{name}"), value=t)
              for name, t in empty.items() if name in read]
    del g.initializer[:]
    g.initializer.extend(keep)
    if consts:
        nodes = consts + list(g.node)
        del g.node[:]
        g.node.extend(nodes)
    return len(empty)
