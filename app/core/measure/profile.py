"""Per-node profiles from ONNX Runtime's own profiler (its chrome-trace JSON): where each node ran and how long it
took, mapped back to the model's node names.

ONNX Runtime profiles the graph it runs, after its optimisations: nodes it fused or rewrote carry names of its own
(`801_nchwc`, `fused Conv_0`, `Conv_0_token_3`). Each is mapped to the model's node by name, by that name less
ONNX Runtime's decorations, or by an output name it kept; unnamed model nodes are written `Op:output` as `diagnose`
writes them. A node that ran on the CPU inside a GPU session is a fallback, unless it only reads shapes, computes
integers (shapes, indices: ONNX Runtime places those on the CPU on purpose) or copies between devices (Memcpy).

Times: each node's median over the profiled runs (µs in the trace, ms here); the run's total is the median of
ONNX Runtime's `model_run` events; the share outside kernels is what the total leaves after every node's time.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import onnx

CPU = "CPUExecutionProvider"
COPY_OPS = frozenset({"MemcpyFromHost", "MemcpyToHost"})
SHAPE_OPS = frozenset({"Shape", "Size", "Constant", "ConstantOfShape"})
_DECORATION = re.compile(r"(^fused |^InsertedPrecisionFreeCast_|_kernel_time$|_nchwc$|_token_\d+$"
                         r"|_fence_(before|after)$|/\w*Fusion$)")
_INTEGER = ("int64", "int32", "int8", "uint8", "bool")


@dataclass
class NodeTime:
    node: str            # the model's node name (or ONNX Runtime's, when it matches none)
    op: str
    provider: str
    ms: float            # median per run
    runs: int = 0
    model_node: bool = True
    shape_work: bool = False  # every output is an integer (a shape, an index): ONNX Runtime keeps those on the CPU

    def to_json(self) -> dict[str, object]:
        return {"node": self.node, "op": self.op, "provider": self.provider, "ms": round(self.ms, 6),
                "model_node": self.model_node}


@dataclass
class Profile:
    backend: str
    runs: int
    total_ms: float | None
    nodes: list[NodeTime] = field(default_factory=list)

    @property
    def by_op(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for n in self.nodes:
            out[n.op] = out.get(n.op, 0.0) + n.ms
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    @property
    def placement(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for n in self.nodes:
            out[n.provider] = out.get(n.provider, 0) + 1
        return out

    @property
    def fallback_nodes(self) -> list[str]:
        """Compute nodes a GPU session ran on the CPU (none for a CPU session)."""
        if set(self.placement) <= {CPU}:
            return []
        return [n.node for n in self.nodes
                if n.provider == CPU and n.op not in SHAPE_OPS | COPY_OPS and not n.shape_work]

    def time_in(self, ops: Iterable[str]) -> float:
        wanted = set(ops)
        return sum(n.ms for n in self.nodes if n.op in wanted)

    def to_json(self, top: int | None = None) -> dict[str, object]:
        kernels = sum(n.ms for n in self.nodes)
        nodes = sorted(self.nodes, key=lambda n: -n.ms)
        return {"backend": self.backend, "runs": self.runs, "total_ms": _r(self.total_ms),
                "kernels_ms": _r(kernels),
                "outside_kernels_share": _r(max(0.0, 1 - kernels / self.total_ms)) if self.total_ms else None,
                "nodes": [n.to_json() for n in (nodes[:top] if top else nodes)], "node_count": len(self.nodes),
                "by_op": {k: _r(v) for k, v in self.by_op.items()}, "placement": self.placement,
                "fallback_nodes": self.fallback_nodes, "cast_ms": _r(self.time_in({"Cast"})),
                "casts": sum(1 for n in self.nodes if n.op == "Cast"), "copy_ms": _r(self.time_in(COPY_OPS)),
                "copies": sum(1 for n in self.nodes if n.op in COPY_OPS)}


def _r(v: float | None) -> float | None:
    return None if v is None else round(float(v), 6)


def model_names(graph: onnx.GraphProto) -> tuple[dict[str, onnx.NodeProto], dict[str, onnx.NodeProto]]:
    """({node name: node}, {output name: the node that makes it})."""
    names = {n.name: n for n in graph.node if n.name}
    outputs = {o: n for n in graph.node for o in n.output if o}
    return names, outputs


def shown_name(node: onnx.NodeProto) -> str:
    """A model node as trtlab names it everywhere: its name, or `Op:output` when it has none."""
    return node.name or f"{node.op_type}:{node.output[0] if node.output else ''}"


def _model_node(ort_name: str, op: str, names: Mapping[str, onnx.NodeProto],
                outputs: Mapping[str, onnx.NodeProto]) -> str | None:
    """The model node(s) an ONNX Runtime node stands for. A fusion keeps the last node's output name (Conv+Relu is
    named after the Relu's output): it is shown as `Conv_0 + Relu_1`."""
    bare = ort_name
    for _ in range(3):
        bare = _DECORATION.sub("", bare)
    for candidate in (ort_name, bare):
        node = names.get(candidate) or outputs.get(candidate)
        if node is None:
            continue
        if op and node.op_type != op and node.input and (first := outputs.get(node.input[0])) is not None \
                and first.op_type == op:
            return f"{shown_name(first)} + {shown_name(node)}"
        return shown_name(node)
    return None


def parse_ort_profile(events: list[dict], graph: onnx.GraphProto, backend: str, skip_runs: int = 0) -> Profile:
    """The profile of `events` (ONNX Runtime's trace) of `graph`: the first `skip_runs` runs are warm-up."""
    runs = [e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"]
    starts = sorted(float(e["ts"]) for e in runs)
    kept = starts[skip_runs:]
    first = kept[0] if kept else 0.0
    per_node: dict[str, dict[int, float]] = {}
    info: dict[str, tuple[str, str]] = {}
    integer: dict[str, bool] = {}
    for e in events:
        if e.get("cat") != "Node" or not str(e.get("name", "")).endswith("_kernel_time"):
            continue
        ts = float(e.get("ts", 0))
        if kept and ts < first:
            continue
        run = sum(1 for s in kept if s <= ts) - 1
        name = str(e["name"])[: -len("_kernel_time")]
        args = e.get("args") or {}
        per_node.setdefault(name, {})
        per_node[name][run] = per_node[name].get(run, 0.0) + float(e.get("dur", 0)) / 1000.0
        info[name] = (str(args.get("op_name", "")), str(args.get("provider", "")))
        outs = [k for t in args.get("output_type_shape") or [] if isinstance(t, dict) for k in t]
        integer[name] = bool(outs) and all(k in _INTEGER for k in outs)
    names, outputs = model_names(graph)
    nodes = []
    for name, times in per_node.items():
        op, provider = info[name]
        mapped = _model_node(name, op, names, outputs)
        nodes.append(NodeTime(mapped or name, op, provider, statistics.median(times.values()), len(times),
                              mapped is not None, integer.get(name, False)))
    totals = [float(e["dur"]) / 1000.0 for e in runs if float(e["ts"]) >= first] if kept else []
    return Profile(backend, len(kept), statistics.median(totals) if totals else None, nodes)
