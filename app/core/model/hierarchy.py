"""The hierarchy in a graph's node names: groups by name scope, for `trtlab inspect --json` and a grouped view.

Exporters name nodes by the module that made them: PyTorch and tf2onnx with `/` (`/model/encoder/layer.0/attention/
self/MatMul`), jax2tf the same way, torch.onnx's dynamo exporter and some others with `.` (`inner.encoder.layer.0.
attention.query.weight_cast`). A node's scope is its name without the last part; a numeric part joins the one
before it (`layer.0`, not `layer` › `0`). Names without scopes (`Conv_0`, `p2o.Conv.12`, Paddle's empty names)
are grouped in graph order — where neighbours in the graph mostly sit — into runs of at most :data:`RUN` nodes, so
that no level of the tree lists thousands of nodes. A group whose only content is one group is merged with it
(`StatefulPartitionedCall/masked_bert_model`), and a group with more than :data:`MAX_CHILDREN` direct nodes has them
split into runs as well (Model Explorer splits at 1,000); a group with more than :data:`MAX_GROUPS` groups has them
gathered into ranges (`layer.0 … layer.49`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol

import onnx

from app.core.model.onnx_walk import node_keys

RUN = 200            # unscoped nodes per run
MAX_CHILDREN = 1000  # direct nodes a group holds before they are split into runs
MAX_GROUPS = 100     # groups a group holds before they are gathered into ranges
_PADDLE = re.compile(r"^p2o\.[A-Za-z0-9_]+\.\d+$")  # Paddle2ONNX names a node by its op and a counter: no scope


def scope_of(name: str) -> tuple[str, ...]:
    """The scope parts of a node name (empty when it has none)."""
    if "/" in name:
        parts = [p for p in name.split("/") if p]
    elif "." in name and not _PADDLE.match(name):
        parts = []
        for p in name.split("."):
            if p.isdigit() and parts:
                parts[-1] = f"{parts[-1]}.{p}"
            elif p:
                parts.append(p)
    else:
        return ()
    return tuple(parts[:-1])


@dataclass
class Group:
    name: str
    path: str
    nodes: list[int] = field(default_factory=list)       # direct nodes, by index in graph.node
    children: dict[str, Group] = field(default_factory=dict)
    run: bool = False                                      # a run of unscoped nodes in graph order, not a scope

    @property
    def total(self) -> int:
        return len(self.nodes) + sum(c.total for c in self.children.values())

    def to_json(self) -> dict:
        return {"name": self.name, "path": self.path, "nodes": self.total,
                "children": [c.to_json() for c in self.children.values()]}


class _KeyOf(Protocol):
    """A node's key by its index: a list of them, or :class:`_Keys`."""

    def __getitem__(self, i: int, /) -> str: ...


def _runs(indices: list[int], keys: _KeyOf, parent: str) -> dict[str, Group]:
    out: dict[str, Group] = {}
    for start in range(0, len(indices), RUN):
        chunk = indices[start:start + RUN]
        name = f"{keys[chunk[0]]} … {keys[chunk[-1]]}" if len(chunk) > 1 else keys[chunk[0]]
        out[name] = Group(name, f"{parent}/{name}" if parent else name, list(chunk), run=True)
    return out


def _tidy(group: Group, keys: _KeyOf) -> Group:
    for name in list(group.children):
        group.children[name] = _tidy(group.children[name], keys)
    # one child group and nothing else: one level, "a/b"
    while not group.nodes and len(group.children) == 1:
        (child,) = group.children.values()
        group = Group(f"{group.name}/{child.name}" if group.name else child.name, child.path, child.nodes,
                      child.children, child.run)
    if len(group.nodes) > MAX_CHILDREN or (group.children and len(group.nodes) > RUN):
        group.children.update(_runs(group.nodes, keys, group.path))
        group.nodes = []
    if len(group.children) > MAX_GROUPS:  # 1,000 encoder layers: ranges of them (layer.0 … layer.99)
        subs = list(group.children.values())
        step = max(MAX_GROUPS // 2, -(-len(subs) // MAX_GROUPS))
        ranges: dict[str, Group] = {}
        for start in range(0, len(subs), step):
            chunk = subs[start:start + step]
            name = f"{chunk[0].name} … {chunk[-1].name}"
            path = f"{group.path}/{name}" if group.path else name
            ranges[name] = Group(name, path, [], {c.name: c for c in chunk})
        group.children = ranges
    return group


class _Keys:
    """node_keys(graph), computed on first use."""

    def __init__(self, graph: onnx.GraphProto) -> None:
        self.graph = graph
        self._keys: list[str] | None = None

    def __getitem__(self, i: int) -> str:
        if self._keys is None:
            self._keys = node_keys(self.graph)
        return self._keys[i]


def _scopes(graph: onnx.GraphProto) -> list[tuple[str, ...]]:
    """Each node's scope; in a graph that has scopes, a node without one takes the scope of the node its result
    feeds (else of the node it reads from): tf2onnx leaves `Reshape__337` between two ops of one attention block
    unscoped, and it belongs there, not in a run at the top."""
    known: dict[str, tuple[str, ...]] = {}  # a '/' name's scope is its prefix's: thousands of nodes share one

    def scope(name: str) -> tuple[str, ...]:
        cut = name.rfind("/")
        if cut < 0 or cut == len(name) - 1:
            return scope_of(name)
        prefix = name[:cut]
        found = known.get(prefix)
        if found is None:
            found = known[prefix] = scope_of(name)
        return found

    scopes = [scope(n.name) for n in graph.node]
    loose = [i for i, sc in enumerate(scopes) if not sc]
    if not loose or len(loose) == len(scopes):
        return scopes
    # Only the unscoped nodes' neighbours matter: their outputs' readers and their inputs' producers.
    outs = {o: i for i in loose for o in graph.node[i].output if o}
    ins = {x for i in loose for x in graph.node[i].input if x}
    readers: dict[int, list[int]] = {}
    producer: dict[str, int] = {}
    for r, n in enumerate(graph.node):
        for x in n.input:
            if x in outs:
                readers.setdefault(outs[x], []).append(r)
        for o in n.output:
            if o in ins:
                producer[o] = r
    for _ in range(3):  # chains of unscoped nodes take their neighbours' scope a step per pass
        changed = False
        for i in reversed(loose):
            if scopes[i]:
                continue
            near = [scopes[r] for r in readers.get(i, []) if scopes[r]]
            near = near or [scopes[producer[x]] for x in graph.node[i].input if x in producer and scopes[producer[x]]]
            if near:
                scopes[i] = min(near, key=len)  # the outermost of them: between two blocks it belongs to neither
                changed = True
        if not changed:
            break
    return scopes


def hierarchy(graph: onnx.GraphProto) -> list[Group]:
    """The groups of the top-level graph's nodes by name scope (see the module's doc); empty when the names carry
    no scopes and the graph is small enough to show flat."""
    keys = _Keys(graph)  # for the names of runs only: most graphs never need one
    root = Group("", "")
    unscoped: list[int] = []
    for i, scope in enumerate(_scopes(graph)):
        if not scope:
            unscoped.append(i)
            continue
        g = root
        for part in scope:
            if part not in g.children:
                g.children[part] = Group(part, f"{g.path}/{part}" if g.path else part)
            g = g.children[part]
        g.nodes.append(i)
    if not root.children and len(unscoped) <= RUN:
        return []
    root.children.update(_runs(unscoped, keys, "") if root.children or len(unscoped) > RUN else {})
    tidy = _tidy(root, keys)
    return list(tidy.children.values()) if not tidy.name else [tidy]
