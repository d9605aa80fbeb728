"""The model summary: producer, versions, I/O, node and op counts, parameters, sizes."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import onnx

from app.core.model.loader import ModelDoc
from app.core.model.onnx_walk import constant_tensor, iter_graphs, iter_tensors, tensor_itemsize, tensor_numel
from app.core.model.randomness import RandomOp, describe_random_ops, find_random_ops, noise_inputs
from app.core.model.tensors import TensorInfo, graph_inputs, value_info_to_tensor_info


@dataclass
class ModelSummary:
    model: str
    producer: str
    ir_version: int
    opsets: dict[str, int]
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    nodes: int
    nodes_total: int
    subgraphs: int
    ops: dict[str, int]
    params: int
    param_bytes: int
    constant_params: int
    file_size: int
    external_bytes: int
    graph_name: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    random_ops: list[RandomOp] = field(default_factory=list)
    noise_inputs: dict[str, list[str]] = field(default_factory=dict)  # graph input -> random nodes it scales

    @property
    def random_text(self) -> str:
        """The summary's line on random nodes ("" when there are none)."""
        if not self.random_ops:
            return ""
        seeded = all(op.seed is not None for op in self.random_ops)
        text = describe_random_ops(self.random_ops) + ("; their seeds are fixed" if seeded else
                                                      "; outputs differ run to run unless their seeds are fixed")
        if self.noise_inputs:
            names = ", ".join(f"'{k}'" for k in self.noise_inputs)
            text += f"; their noise is scaled by input{'s' if len(self.noise_inputs) != 1 else ''} {names}"
        return text

    def to_json(self) -> dict[str, object]:
        """The `trtlab inspect --json` document (keys per CLI.md, plus extras)."""
        return {
            "model": self.model,
            "ir_version": self.ir_version,
            "opsets": self.opsets,
            "producer": self.producer,
            "nodes": self.nodes,
            "nodes_total": self.nodes_total,
            "subgraphs": self.subgraphs,
            "ops": self.ops,
            "params": self.params,
            "param_bytes": self.param_bytes,
            "constant_params": self.constant_params,
            "file_size": self.file_size,
            "external_bytes": self.external_bytes,
            "graph_name": self.graph_name,
            "metadata": self.metadata,
            "inputs": [t.to_json() for t in self.inputs],
            "outputs": [t.to_json() for t in self.outputs],
            "random_ops": [op.to_json() for op in self.random_ops],
            "noise_inputs": self.noise_inputs,
        }


def op_key(node: onnx.NodeProto) -> str:
    """Op type, prefixed by its domain when it is not the default ONNX domain."""
    if node.domain in ("", "ai.onnx"):
        return node.op_type
    return f"{node.domain}.{node.op_type}"


def summarize(doc: ModelDoc) -> ModelSummary:
    m = doc.model
    g = m.graph
    graphs = list(iter_graphs(g))
    ops: Counter[str] = Counter()
    for sub in graphs:
        ops.update(op_key(n) for n in sub.node)
    params = param_bytes = constant_params = 0
    for t in iter_tensors(g):
        n = tensor_numel(t)
        params += n
        param_bytes += int(n * tensor_itemsize(t.data_type))
    for sub in graphs:
        for node in sub.node:
            if node.op_type != "Constant":
                continue
            constant_params += sum(tensor_numel(a.t) for a in node.attribute if a.type == a.TENSOR)
            if not any(a.type == a.TENSOR for a in node.attribute):
                # value_float(s)/value_int(s) hold values too, but iter_tensors yields TensorProtos only
                value = constant_tensor(node)
                if value is not None:
                    n = tensor_numel(value)
                    params += n
                    param_bytes += int(n * tensor_itemsize(value.data_type))
                    constant_params += n
    producer = " ".join(x for x in (m.producer_name, m.producer_version) if x) or "unknown"
    random_ops = find_random_ops(m)
    return ModelSummary(
        model=str(doc.path),
        producer=producer,
        ir_version=int(m.ir_version),
        opsets={(o.domain or "ai.onnx"): int(o.version) for o in m.opset_import},
        inputs=[value_info_to_tensor_info(v) for v in graph_inputs(g)],
        outputs=[value_info_to_tensor_info(v) for v in g.output],
        nodes=len(g.node),
        nodes_total=sum(ops.values()),
        subgraphs=len(graphs) - 1,
        ops=dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))),
        params=params,
        param_bytes=param_bytes,
        constant_params=constant_params,
        file_size=doc.file_size,
        external_bytes=doc.external_bytes,
        graph_name=g.name,
        metadata={p.key: p.value for p in m.metadata_props},
        random_ops=random_ops,
        noise_inputs=noise_inputs(m) if random_ops else {},
    )
