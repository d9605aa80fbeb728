"""A BF16 variant made runnable on ONNX Runtime's CPU provider, which has no BF16 kernels but BF16 Casts.

Every node that reads or writes a bfloat16 tensor computes in FP32 between Casts: its bfloat16 inputs are
widened to float32, and its float32 results rounded back to bfloat16 under their original names. Every tensor
keeps its name and type, so the graph's values are the BF16 variant's values rounded as BF16 storage would round
them, computed with FP32 arithmetic — what ONNX Runtime itself does for FP16 on the CPU (PRECISION_NOTES.md), and
what `app.core.measure.compute` calls emulated BF16.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

_PASS_THROUGH = frozenset({"Cast", "If", "Loop", "Scan"})  # Casts run in BF16 on the CPU; bodies are handled inside


def has_bfloat16(model: onnx.ModelProto) -> bool:
    """Whether any tensor of the model (graph, initializers, subgraphs) is bfloat16."""
    return bool(_bf16_names(model.graph))


def _bf16_names(graph: onnx.GraphProto) -> set[str]:
    names = {v.name for v in (*graph.input, *graph.output, *graph.value_info)
             if v.type.tensor_type.elem_type == TensorProto.BFLOAT16}
    names |= {t.name for t in graph.initializer if t.data_type == TensorProto.BFLOAT16}
    for node in graph.node:
        if node.op_type in ("Cast", "CastLike") and any(a.name == "to" and a.i == TensorProto.BFLOAT16
                                                        for a in node.attribute):
            names.update(o for o in node.output if o)
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                names |= _bf16_names(a.g)
            for sub in a.graphs:
                names |= _bf16_names(sub)
    return names


def widen_bfloat16(model: onnx.ModelProto, ops: frozenset[str] | set[str] | None = None) -> onnx.ModelProto:
    """A copy of `model` whose BF16 nodes compute in FP32 between Casts (inferred types decide which); with
    `ops`, only the nodes of those op types (the ones a GPU provider has no BF16 kernel for)."""
    typed = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    out = onnx.ModelProto()
    out.CopyFrom(typed)
    _widen_graph(out.graph, None if ops is None else frozenset(ops))
    return out


def _widen_graph(graph: onnx.GraphProto, ops: frozenset[str] | None = None) -> None:
    bf16 = _bf16_names(graph)
    new_nodes: list[onnx.NodeProto] = []
    for k, node in enumerate(graph.node):
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                _widen_graph(a.g, ops)
            for sub in a.graphs:
                _widen_graph(sub, ops)
        touches = [i for i in node.input if i in bf16] + [o for o in node.output if o in bf16]
        if node.op_type in _PASS_THROUGH or not touches or (ops is not None and node.op_type not in ops):
            new_nodes.append(node)
            continue
        for j, name in enumerate(node.input):
            if name in bf16:
                wide = f"{name}__emu_fp32_{k}_{j}"
                new_nodes.append(helper.make_node("Cast", [name], [wide], to=TensorProto.FLOAT,
                                                  name=f"{wide}__cast"))
                node.input[j] = wide
        rounding = []
        for j, name in enumerate(node.output):
            if name in bf16:
                wide = f"{name}__emu_fp32"
                node.output[j] = wide
                rounding.append(helper.make_node("Cast", [wide], [name], to=TensorProto.BFLOAT16,
                                                 name=f"{name}__emu_round"))
        for a in node.attribute:  # a node whose output type is an attribute (Constant's or ConstantOfShape's value…)
            if a.name == "to" and a.i == TensorProto.BFLOAT16:
                a.i = TensorProto.FLOAT
            elif a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.BFLOAT16:
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float32), a.t.name))
        new_nodes.append(node)
        new_nodes.extend(rounding)
    del graph.node[:]
    graph.node.extend(new_nodes)
    del graph.value_info[:]  # the widened tensors' types are re-inferred by the runtime


def cpu_runnable(model_path: str) -> tuple[str | bytes, bool]:
    """The model for ONNX Runtime's CPU provider: itself, or (a BF16 variant) its BF16 nodes widened to FP32
    between rounding Casts, serialized; and whether it was widened."""
    try:
        head = onnx.load(model_path, load_external_data=False)
    except Exception:  # noqa: BLE001 - unreadable here: ONNX Runtime's own load says why, below
        return model_path, False
    if not has_bfloat16(head):
        return model_path, False
    model = onnx.load(model_path)
    if model.ByteSize() >= 1_800_000_000:
        return model_path, False  # too large to pass as bytes: ORT's own refusal names the BF16 kernels
    return widen_bfloat16(model).SerializeToString(), True
