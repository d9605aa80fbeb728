"""The graph drawn by groups: a collapsed group is one box, an expanded one its content; only what shows is laid out.

:func:`group_tree` turns :func:`hierarchy`'s groups (by name scope) into arrays over a flat :class:`DisplayGraph`:
each display node's innermost group, each group's parent, depth and size. :func:`visible_graph` then builds the
display graph of one expansion state — every collapsed group whose parents are all expanded becomes one box; edges
between boxes are bundled (one edge per pair, however many tensors cross) — in numpy, so that expanding or
collapsing a group at 50,000 nodes costs the new drawing's size, not the model's. Group boxes carry the ONNX
nodes inside them (:attr:`DisplayGraph.members`), so colours, selection and plan edits roll up to them.

:func:`initial_expansion` picks what a model opens showing: groups are expanded breadth first while the drawing stays
within a budget of boxes, so a transformer opens as its layers, not as its Gathers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from app.core.model.display_graph import KIND_OP, NODE_HEIGHT, DisplayGraph, _box_width
from app.core.model.hierarchy import Group
from app.core.model.shape_fold import ShapeFolds

if TYPE_CHECKING:
    from app.core.layout import GraphLayout

KIND_GROUP = 3
GROUP_CATEGORY = "Group"
GROUP_HEIGHT = NODE_HEIGHT + 16.0  # a third line: what is inside
OPEN_BUDGET = 48                   # boxes a model opens showing, at most (groups expanded breadth first)
GROUPED_FROM = 120                 # nodes from which a model with name scopes opens grouped
NEST_LIMIT = 300                   # open groups laid out nested, at most (each is a layout of its own: ~2 ms)


@dataclass
class GroupTree:
    """Groups over the display nodes of one flat graph; group ids index these arrays."""

    full: DisplayGraph
    names: list[str]               # shown name (the scope's last part)
    paths: list[str]               # full scope path, unique
    parent: np.ndarray             # int32 (G,), -1 for a top-level group
    depth: np.ndarray              # int32 (G,), 0 for a top-level group
    owner: np.ndarray              # int32 (N,): each display node's innermost group, -1 for none
    size: np.ndarray               # int64 (G,): display nodes inside, nested groups included
    children: list[list[int]] = field(default_factory=list)
    run: np.ndarray | None = None  # bool (G,): a run of nodes without scopes (grouped by graph order, not by name)

    @property
    def scoped(self) -> bool:
        """Whether some group comes from a name scope (not only runs of unscoped nodes)."""
        return self.run is None or not bool(self.run.all())

    @property
    def count(self) -> int:
        return len(self.paths)

    def ancestors(self, g: int) -> list[int]:
        """g's enclosing groups, outermost first, g last."""
        out = []
        while g >= 0:
            out.append(g)
            g = int(self.parent[g])
        return out[::-1]

    def path_to(self, node: int) -> list[int]:
        """The groups around display node `node`, outermost first ([] when it is in none)."""
        g = int(self.owner[node])
        return self.ancestors(g) if g >= 0 else []

    def descendants(self, g: int) -> list[int]:
        out, stack = [], [g]
        while stack:
            h = stack.pop()
            out.append(h)
            stack.extend(self.children[h])
        return out

    def nodes_in(self, g: int) -> np.ndarray:
        """The display nodes inside group g (nested groups included)."""
        inside = np.zeros(self.count, dtype=bool)
        inside[self.descendants(g)] = True
        own = self.owner >= 0
        return np.nonzero(own & inside[np.where(own, self.owner, 0)])[0]

    def by_depth(self, max_depth: int) -> set[int]:
        """The groups to expand to show `max_depth` levels (0: every top-level group collapsed)."""
        return {g for g in range(self.count) if int(self.depth[g]) < max_depth}


def group_tree(full: DisplayGraph, groups: list[Group]) -> GroupTree:
    """The tree of `groups` (from :func:`hierarchy` of the same graph) over `full`'s display nodes (no groups: a tree
    of none, every node at the top)."""
    display_of = np.full(len(full.graph.node), -1, dtype=np.int64)
    ops = np.nonzero(full.kinds == KIND_OP)[0]
    display_of[full.onnx_index[ops]] = ops
    names: list[str] = []
    paths: list[str] = []
    parent: list[int] = []
    depth: list[int] = []
    children: list[list[int]] = []
    owner = np.full(full.node_count, -1, dtype=np.int32)
    run: list[bool] = []
    stack: list[tuple[Group, int, int]] = [(g, -1, 0) for g in reversed(groups)]
    while stack:
        grp, up, d = stack.pop()
        gid = len(paths)
        names.append(grp.name)
        paths.append(grp.path or grp.name)
        parent.append(up)
        depth.append(d)
        children.append([])
        if up >= 0:
            children[up].append(gid)
        run.append(grp.run)
        idx = display_of[np.asarray(grp.nodes, dtype=np.int64)] if grp.nodes else np.zeros(0, dtype=np.int64)
        owner[idx[idx >= 0]] = gid
        stack.extend((c, gid, d + 1) for c in reversed(list(grp.children.values())))
    par = np.asarray(parent, dtype=np.int32).reshape(-1)
    dep = np.asarray(depth, dtype=np.int32).reshape(-1)
    size = np.bincount(owner[owner >= 0], minlength=len(paths)).astype(np.int64)
    for g in np.argsort(-dep, kind="stable"):  # innermost first: each group adds its size to its parent's
        if par[g] >= 0:
            size[par[g]] += size[g]
    return GroupTree(full, names, paths, par, dep, owner, size, children, np.asarray(run, dtype=bool))


def _visible_group(tree: GroupTree, expanded: set[int]) -> np.ndarray:
    """Per group: the collapsed group that stands for it on screen (itself, or a collapsed ancestor), -1 when it and
    all its ancestors are expanded (its direct nodes show)."""
    vis = np.full(tree.count, -1, dtype=np.int64)
    for g in np.argsort(tree.depth, kind="stable"):  # parents before children
        up = int(tree.parent[g])
        stand = int(vis[up]) if up >= 0 else -1
        vis[g] = stand if stand >= 0 else (-1 if int(g) in expanded else int(g))
    return vis


def representatives(tree: GroupTree, expanded: set[int]) -> np.ndarray:
    """Per display node of the flat graph: the node itself (>= 0, its index) or the collapsed group box standing for
    it, as -(group + 1)."""
    if tree.count == 0:
        return np.arange(tree.full.node_count)
    vis = _visible_group(tree, expanded)
    own = tree.owner
    stand = np.where(own >= 0, vis[np.where(own >= 0, own, 0)], -1)
    return np.where(stand >= 0, -(stand + 1), np.arange(tree.full.node_count))


def op_mix(titles: list[str], top: int = 3) -> str:
    """'MatMul 12 · Add 9 · Reshape 6 …' for the ops in a group."""
    counts = Counter(titles).most_common()
    text = " · ".join(f"{op} {n}" for op, n in counts[:top])
    return text + (" …" if len(counts) > top else "")


class _Through(Mapping):
    """A flat graph's map read through the visible graph: keys (visible nodes) or values (flat nodes) translated on
    access, so that building a drawing at 50,000 nodes does not copy dicts of 50,000 entries."""

    def __init__(self, base: Mapping, key_of: np.ndarray | None = None, value_of: np.ndarray | None = None) -> None:
        self._base, self._key_of, self._value_of = base, key_of, value_of

    def _key(self, k: object) -> object:
        if self._key_of is None:
            return k
        if not isinstance(k, int | np.integer) or not 0 <= int(k) < len(self._key_of) or self._key_of[k] < 0:
            return None
        return int(self._key_of[k])

    @staticmethod
    def _value(value_of: np.ndarray, v: int | list[int]) -> int | list[int]:
        if isinstance(v, list):
            return sorted({int(value_of[d]) for d in v})
        return int(value_of[v])

    def __getitem__(self, k: object) -> object:
        key = self._key(k)
        if key is None or key not in self._base:
            raise KeyError(k)
        value = self._base[key]
        return value if self._value_of is None else self._value(self._value_of, value)

    def __iter__(self) -> Iterator[Any]:
        if self._key_of is None:
            return iter(self._base)
        back = {int(f): v for v, f in enumerate(self._key_of.tolist()) if f >= 0}
        return (back[k] for k in self._base if k in back)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def visible_graph(tree: GroupTree, expanded: set[int], folds: ShapeFolds | None = None,
                  unfolded: frozenset[int] = frozenset()) -> DisplayGraph:
    """The display graph of one expansion state (see the module's doc). Its `members` map each group box to the ONNX
    nodes inside; `shown_as` maps each flat display node to the visible node standing for it. Lay it out with
    :func:`grouped_layout`."""
    full = tree.full
    rep = representatives(tree, expanded)
    hidden = np.zeros(full.node_count, dtype=bool)  # folded into a badge: drawn as the node they feed
    if folds is not None:
        hidden = folds.into >= 0
        if unfolded:
            hidden &= ~np.isin(folds.into, np.fromiter(unfolded, dtype=np.int64))
        rep = np.where(hidden, rep[np.where(hidden, folds.into, 0)], rep)
    # Visible items in the flat graph's order of their first node: a group shows where its first node was.
    keys, first, inverse = np.unique(rep, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    shown_as = rank[inverse].astype(np.int64)
    keys = keys[order]
    n = len(keys)
    real = keys >= 0
    flat = np.where(real, keys, 0)

    kinds = np.where(real, full.kinds[flat], KIND_GROUP).astype(np.int8)
    onnx_index = np.where(real, full.onnx_index[flat], -1).astype(np.int32)
    widths = np.where(real, full.widths[flat], 0.0)
    heights = np.where(real, full.heights[flat], GROUP_HEIGHT)
    titles = [full.titles[k] if k >= 0 else "" for k in keys.tolist()]
    names = [full.names[k] if k >= 0 else "" for k in keys.tolist()]
    cats = [full.categories[k] if k >= 0 else GROUP_CATEGORY for k in keys.tolist()]
    members: dict[int, np.ndarray] = {}
    group_of: dict[int, int] = {}
    boxes = np.nonzero(~real)[0]
    if len(boxes):
        in_box = np.nonzero(rep < 0)[0]
        by_box = in_box[np.argsort(shown_as[in_box], kind="stable")]
        cuts = np.searchsorted(shown_as[by_box], boxes)
        ends = np.append(cuts[1:], len(by_box))
        for v, lo, hi in zip(boxes.tolist(), cuts.tolist(), ends.tolist(), strict=True):
            g = -int(keys[v]) - 1
            inside = by_box[lo:hi]
            label = f"{int(tree.size[g]):,} nodes · {op_mix([full.titles[i] for i in inside[:2000].tolist()])}"
            titles[v], names[v] = tree.names[g], label
            widths[v] = max(_box_width(tree.names[g], label[:40]), 150.0)
            on = full.onnx_index[inside]
            members[v] = on[on >= 0].astype(np.int64)
            group_of[v] = g

    # Edges between visible items, one per pair (the first tensor names it); none inside a box.
    src = shown_as[full.edges[:, 0]] if len(full.edges) else np.zeros(0, dtype=np.int64)
    dst = shown_as[full.edges[:, 1]] if len(full.edges) else np.zeros(0, dtype=np.int64)
    inner = hidden[full.edges[:, 0]] | hidden[full.edges[:, 1]] if len(full.edges) else np.zeros(0, dtype=bool)
    orig = np.nonzero((src != dst) & ~inner)[0]  # nothing into or out of a folded chain
    _, pick, counts = np.unique(src[orig] * n + dst[orig], return_index=True, return_counts=True)
    by_pos = np.argsort(pick, kind="stable")
    pick, counts = pick[by_pos], counts[by_pos]
    chosen = orig[pick]
    edges = np.stack([src[chosen], dst[chosen]], axis=1).astype(np.int32).reshape(-1, 2)
    edge_tensors = [full.edge_tensors[e] for e in chosen.tolist()]
    labels = [(full.edge_labels[e] if e < len(full.edge_labels) else "") if c == 1 else f"{c} tensors"
              for e, c in zip(chosen.tolist(), counts.tolist(), strict=True)]

    flat_of = np.where(real, keys, -1)
    dg = DisplayGraph(
        graph=full.graph, node_count=n, kinds=kinds, onnx_index=onnx_index, titles=titles, names=names,
        categories=cats, widths=widths.astype(np.float64), heights=heights.astype(np.float64), edges=edges,
        edge_tensors=edge_tensors, weights=_Through(full.weights, key_of=flat_of),
        folded_constants=full.folded_constants, producer=_Through(full.producer, value_of=shown_as),
        consumers=_Through(full.consumers, value_of=shown_as), edge_labels=labels,
        subgraphs=_Through(full.subgraphs, key_of=flat_of))
    onnx_shown = np.full(len(full.graph.node), -1, dtype=np.int64)
    ops = np.nonzero(full.onnx_index >= 0)[0]
    onnx_shown[full.onnx_index[ops]] = shown_as[ops]
    dg.members, dg.group_of, dg.shown_as, dg.onnx_shown, dg.flat_of = members, group_of, shown_as, onnx_shown, flat_of
    if folds is not None:
        dg.fold_badges = {int(shown_as[c]): (n, c in unfolded) for c, n in folds.count.items() if rep[c] >= 0}
    return dg


def grouped_layout(tree: GroupTree, vis: DisplayGraph, cache: dict | None = None) -> GraphLayout:
    """Lay out a drawing by groups nested: each expanded group (of more than one node) as a box holding its content,
    laid out on its own (:func:`app.core.layout.compound_layout`; `cache` keeps each group's layout for the next
    expansion). Fills `vis.frame_meta` with each such group's (name, depth, enclosing group). With more than
    :data:`NEST_LIMIT` groups open, the drawing is laid out flat instead (no outlines)."""
    from app.core.layout import compound_layout, layered_layout

    def container(g: int) -> int:  # the expanded group that holds what g holds: groups of one node hold nothing
        while g >= 0 and int(tree.size[g]) <= 1:
            g = int(tree.parent[g])
        return g

    assert vis.flat_of is not None
    keys: list[tuple[str, int]] = []
    where = np.empty(vis.node_count, dtype=np.int64)
    for v, k in enumerate(vis.flat_of.tolist()):
        if k < 0:
            g = vis.group_of[v]
            keys.append(("g", g))
            where[v] = container(int(tree.parent[g]))
        else:
            keys.append(("n", k))
            where[v] = container(int(tree.owner[k]))
    parent: dict[int, int] = {}
    todo = {int(c) for c in where.tolist() if c >= 0}
    while todo:
        c = todo.pop()
        if c in parent:
            continue
        parent[c] = container(int(tree.parent[c]))
        if parent[c] >= 0:
            todo.add(parent[c])
    if len(parent) > NEST_LIMIT:  # thousands of open groups (Expand All at 50,000 nodes): one flat layout, in seconds
        vis.frame_meta = {}
        return layered_layout(vis.node_count, vis.edges, vis.widths, vis.heights)
    vis.frame_meta = {c: (tree.names[c], int(tree.depth[c]), p) for c, p in parent.items()}
    return compound_layout(vis.widths, vis.heights, vis.edges, where, parent, keys, cache)


def initial_expansion(tree: GroupTree, budget: int = OPEN_BUDGET) -> set[int]:
    """Groups to expand at first: every scope group down to the deepest level at which the drawing stays within
    `budget` boxes (a transformer: its layers), and every group of one node (a box for one node says nothing). Runs
    of unscoped nodes (shape arithmetic, mostly) stay boxes."""
    if tree.count == 0:
        return set()
    run = tree.run if tree.run is not None else np.zeros(tree.count, dtype=bool)
    opens = ~run
    direct = np.bincount(tree.owner[tree.owner >= 0], minlength=tree.count)
    loose = int((tree.owner < 0).sum())
    depth = 0
    for d in range(1, int(tree.depth.max()) + 2):
        # boxes: loose nodes, direct nodes of expanded groups, collapsed groups whose parents are all expanded
        expanded = opens & (tree.depth < d)
        up_open = np.array([p < 0 or expanded[p] for p in tree.parent.tolist()], dtype=bool)
        ancestors_open = up_open.copy()
        for g in np.argsort(tree.depth, kind="stable").tolist():
            p = int(tree.parent[g])
            if p >= 0:
                ancestors_open[g] = ancestors_open[p] and expanded[p]
        shown = loose + int(direct[expanded & ancestors_open].sum()) + int((~expanded & ancestors_open).sum())
        if shown > budget:
            break
        depth = d
    return {g for g in range(tree.count) if (opens[g] and int(tree.depth[g]) < depth) or int(tree.size[g]) <= 1}
