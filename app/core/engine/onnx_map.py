"""Engine layers mapped onto the ONNX graph's nodes (this project's node keys), with the precision each node ran in.

Pure logic: nothing here imports tensorrt. :func:`map_to_onnx` takes exact names first, then the loose rules,
whose matches are listed in :attr:`OnnxMapping.approximate`: Myelin renames (``'.'`` to ``'_'`` plus a
``"_myl<N>_<M>"`` suffix), the parser's ``"<name>_<N>"`` suffix for the extra layers of one node, the caller of a
local function, and range members. A range ``first...last`` without metadata is expanded to the graph nodes
between its ends, in graph order, that no other engine layer claims. The names come from
:func:`app.core.engine.onnx_origins.onnx_nodes_of`; :class:`NodeLookup` finds them in the graph.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import onnx

from app.core.engine.engine_layers import EngineInfo, EngineLayer
from app.core.engine.layer_precision import combine_precisions
from app.core.engine.onnx_origins import OnnxOrigin, onnx_nodes_of
from app.core.model import node_keys

__all__ = ["NodeLookup", "OnnxMapping", "map_to_onnx"]

_UNIQUE_SUFFIX_RE = re.compile(r"^(.+)_\d+$")


class NodeLookup:
    """Finds this project's node key (``precision.node_keys``) for a name TensorRT reports.

    Built from a graph (full rules) or from a list of keys (names, keys and ``node_of_<output>`` for
    ``"<Op>:<output>"`` keys only).
    """

    def __init__(self, keys: Sequence[str], names: Sequence[str] | None = None,
                 first_outputs: Sequence[str] | None = None, op_types: Sequence[str] | None = None,
                 owners: Mapping[str, int] | None = None) -> None:
        self.keys = list(keys)
        self.names = list(names) if names is not None else list(keys)
        self.op_types = list(op_types) if op_types is not None else [""] * len(self.keys)
        self._owners = dict(owners or {})
        self._by_key = {k: i for i, k in enumerate(self.keys)}
        self._by_name: dict[str, list[int]] = {}
        for i, n in enumerate(self.names):
            if n:
                self._by_name.setdefault(n, []).append(i)
        self._by_output: dict[str, int] = {}
        if first_outputs is not None:
            for i, out in enumerate(first_outputs):
                if out and not self.names[i]:
                    self._by_output.setdefault(out, i)
        else:
            for i, k in enumerate(self.keys):
                op, sep, out = k.partition(":")
                if sep and op and out and "@" not in out:
                    self._by_output.setdefault(out, i)
        self._mangled: dict[str, list[int]] = {}
        for i, n in enumerate(self.names):
            if n:
                self._mangled.setdefault(n.replace(".", "_"), []).append(i)

    @classmethod
    def from_graph(cls, graph: onnx.GraphProto | onnx.ModelProto) -> NodeLookup:
        if isinstance(graph, onnx.ModelProto):
            graph = graph.graph
        owners: dict[str, int] = {}
        for i, node in enumerate(graph.node):
            for name in _nested_node_names(node):
                owners.setdefault(name, i)
        return cls(node_keys(graph), [n.name for n in graph.node],
                   [n.output[0] if len(n.output) else "" for n in graph.node], [n.op_type for n in graph.node],
                   owners)

    @classmethod
    def of(cls, graph: onnx.GraphProto | onnx.ModelProto | Sequence[str] | NodeLookup) -> NodeLookup:
        if isinstance(graph, NodeLookup):
            return graph
        if isinstance(graph, (onnx.GraphProto, onnx.ModelProto)):
            return cls.from_graph(graph)
        return cls(list(graph))

    def __len__(self) -> int:
        return len(self.keys)

    def exact(self, name: str) -> list[int]:
        """Indices for an exact ONNX name, key, or ``node_of_<first output>``."""
        if not name:
            return []
        if name in self._by_name:
            return list(self._by_name[name])
        if name in self._by_key:
            return [self._by_key[name]]
        if name.startswith("node_of_"):
            out = name[len("node_of_"):]
            if out in self._by_output:
                return [self._by_output[out]]
        return []

    def loose(self, name: str) -> list[int]:
        """Indices by the loose rules: Myelin renames ('.' -> '_') and the parser's "_<N>" suffix."""
        hits = self._mangled.get(name.replace(".", "_"), [])
        if len(hits) == 1:
            return list(hits)
        m = _UNIQUE_SUFFIX_RE.match(name)
        if m:
            hits = self.exact(m.group(1)) or self._mangled.get(m.group(1).replace(".", "_"), [])
            if len(hits) == 1:
                return list(hits)
        return []

    def owner(self, name: str) -> int | None:
        """The top-level node whose subgraph (If/Loop/Scan body) holds a node of this name."""
        return self._owners.get(name)

    def by_function(self, function: str) -> list[int]:
        """Top-level nodes that call a local function (their op_type is the function's name)."""
        return [i for i, op in enumerate(self.op_types) if op and op == function]


def _nested_node_names(node: onnx.NodeProto) -> Iterable[str]:
    for attr in node.attribute:
        graphs = list(attr.graphs)
        if attr.HasField("g"):
            graphs.append(attr.g)
        for g in graphs:
            for inner in g.node:
                if inner.name:
                    yield inner.name
                yield from _nested_node_names(inner)



@dataclass
class OnnxMapping:
    """Engine layers <-> ONNX nodes (this project's node keys)."""

    layers: dict[str, list[str]] = field(default_factory=dict)       # onnx key -> engine layer names
    nodes: dict[str, list[str]] = field(default_factory=dict)        # engine layer name -> onnx keys
    precision: dict[str, str] = field(default_factory=dict)          # onnx key -> precision that ran
    unmapped: list[str] = field(default_factory=list)                # engine layers of no ONNX node
    unknown: dict[str, list[str]] = field(default_factory=dict)      # engine layer -> names not in the graph
    approximate: dict[str, list[str]] = field(default_factory=dict)  # engine layer -> keys found by loose rules
    missing: list[str] = field(default_factory=list)                 # graph keys no engine layer ran
    lookup: NodeLookup | None = field(default=None, repr=False, compare=False)

    def keys_for_name(self, layer_name: str) -> list[str]:
        """Keys for an engine layer name, also one the inspector did not list (e.g. a profiler name)."""
        if layer_name in self.nodes:
            return list(self.nodes[layer_name])
        if self.lookup is None:
            return []
        refs = onnx_nodes_of(layer_name)
        out: list[str] = []
        for name in refs.nodes:
            hits = self.lookup.exact(name) or self.lookup.loose(name)
            out.extend(self.lookup.keys[i] for i in hits)
        return list(dict.fromkeys(out))


def _resolve_origin(lookup: NodeLookup, origin: OnnxOrigin) -> tuple[list[int], bool]:
    hits = lookup.exact(origin.node)
    if hits:
        return hits, False
    for caller in reversed(origin.callers):         # the last caller is the top-level call site
        hits = lookup.exact(caller)
        if hits:
            return hits, True
    owner = lookup.owner(origin.node)
    if owner is not None:
        return [owner], True
    for fn in origin.functions[:1]:
        hits = lookup.by_function(fn)
        if len(hits) == 1:
            return hits, True
    return [], False


def map_to_onnx(layers: EngineInfo | Iterable[EngineLayer],
                graph: onnx.GraphProto | onnx.ModelProto | Sequence[str] | NodeLookup,
                *, profile: int = 0) -> OnnxMapping:
    """Which engine layers ran each ONNX node, and in which precision (rules in the module docstring).

    ``graph`` is the ONNX graph (or model), or just its node keys/names. An :class:`EngineInfo` contributes
    the layers of one optimization ``profile``; a plain list of layers is used as given.
    """
    lookup = NodeLookup.of(graph)
    todo = layers.profile_layers(profile) if isinstance(layers, EngineInfo) else list(layers)
    result = OnnxMapping(lookup=lookup)
    claimed: dict[int, list[str]] = {}
    pending_ranges: list[tuple[EngineLayer, list[tuple[str, str]]]] = []

    def claim(idx: int, layer: EngineLayer, loose: bool) -> None:
        names = claimed.setdefault(idx, [])
        if layer.name not in names:
            names.append(layer.name)
        keys = result.nodes.setdefault(layer.name, [])
        key = lookup.keys[idx]
        if key not in keys:
            keys.append(key)
        if loose:
            approx = result.approximate.setdefault(layer.name, [])
            if key not in approx:
                approx.append(key)

    for layer in todo:
        refs = onnx_nodes_of(layer)
        found = False
        if refs.source == "metadata":
            for origin in refs.origins:
                hits, loose = _resolve_origin(lookup, origin)
                for idx in hits:
                    claim(idx, layer, loose)
                found |= bool(hits)
                if not hits:
                    result.unknown.setdefault(layer.name, []).append(origin.node)
        elif refs.source == "name":
            for name in refs.nodes:
                hits = lookup.exact(name)
                loose = refs.loose
                if not hits:
                    hits, loose = lookup.loose(name), True
                for idx in hits:
                    claim(idx, layer, loose)
                found |= bool(hits)
                if not hits:
                    result.unknown.setdefault(layer.name, []).append(name)
            if refs.ranges:
                pending_ranges.append((layer, list(refs.ranges)))
        if not found and not refs.ranges:
            result.unmapped.append(layer.name)

    # Myelin ranges named by their ends only: the nodes between the ends that no other layer claims.
    for layer, ranges in pending_ranges:
        for first, last in ranges:
            a = next(iter(lookup.exact(first) or lookup.loose(first)), None)
            b = next(iter(lookup.exact(last) or lookup.loose(last)), None)
            if a is None or b is None:
                continue
            lo, hi = min(a, b), max(a, b)
            for idx in range(lo + 1, hi):
                if idx not in claimed:
                    claim(idx, layer, True)
        if layer.name not in result.nodes and layer.name not in result.unmapped:
            result.unmapped.append(layer.name)

    by_name = {layer.name: layer for layer in todo}
    for idx in sorted(claimed):
        key = lookup.keys[idx]
        result.layers[key] = claimed[idx]
        result.precision[key] = combine_precisions(by_name[n].precision for n in claimed[idx] if n in by_name)
    result.missing = [k for i, k in enumerate(lookup.keys) if i not in claimed]
    return result
