"""Two imported TensorRT engines side by side on the ONNX graph (`trtlab import DIR --against DIR2`).

What NVIDIA's engine explorer compared engine layer by engine layer, compared here ONNX node by ONNX node, so two
engines whose layers differ (FP16 against INT8, TensorRT 10 against 11, two GPUs) still line up: per node the time
in each (:attr:`ImportResult.node_ms`: a fused layer's time split evenly over its nodes, a reformat's charged to the
nodes it serves) and the change, the precision that ran in each, and the nodes fused with it in each. Nodes are
matched by key (the model's node keys when the imports were mapped onto a graph, else TensorRT's names), so two
engines of the same model line up node for node; a fusion is compared on the nodes both engines run (the Q/DQ
nodes of an INT8 graph are not a fusion an FP32 engine lost).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from app.core.results import ImportComparison, ImportedNodeChange, ImportResult

__all__ = ["ChangeGroup", "change_words", "compare_imports", "fusion_words", "group_changes", "group_words",
           "import_label", "short_node"]


@dataclass
class _Node:
    """One ONNX node as an engine ran it."""

    layer: str = ""
    precision: str = ""
    partners: set[str] = field(default_factory=set)
    compute: bool = False


def import_label(r: ImportResult) -> str:
    """An imported engine in a few words: "fp16 · TensorRT 10.16.0 · NVIDIA GeForce RTX 4090"."""
    what = r.precision or (Path(r.variant).name if r.variant else "") or Path(r.imported_from).name or "engine"
    parts = [what, f"TensorRT {r.trt_version}" if r.trt_version else "", r.gpu]
    return " · ".join(p for p in parts if p)


def _nodes(r: ImportResult) -> dict[str, _Node]:
    """Each ONNX node the engine runs: the layer that ran it (its first compute layer in engine order, else the
    first layer claiming it), the precision (the mapping's, else that layer's), the nodes fused with it."""
    out: dict[str, _Node] = {}
    for layer in sorted(r.layers, key=lambda x: x.order):
        compute = layer.kind == "compute"
        for node in layer.onnx_nodes:
            cur = out.setdefault(node, _Node())
            if compute:
                cur.partners |= {n for n in layer.onnx_nodes if n != node}
            if not cur.layer or (compute and not cur.compute):
                cur.layer, cur.precision, cur.compute = layer.name, layer.precision, compute
    for node in r.node_ms:  # a node whose time came only through a reformat it is served by
        out.setdefault(node, _Node())
    for node, precision in r.ran.items():
        if node in out and precision:
            out[node].precision = precision
    return out


def _change(node: str, a: _Node | None, b: _Node | None, ra: ImportResult, rb: ImportResult,
            common: set[str]) -> ImportedNodeChange:
    ms_a = ra.node_ms.get(node) if a is not None else None
    ms_b = rb.node_ms.get(node) if b is not None else None
    if a is None or b is None:
        return ImportedNodeChange(
            node=node, ms_a=ms_a, ms_b=ms_b, precision_a=a.precision if a else "", precision_b=b.precision if b else "",
            layer_a=a.layer if a else "", layer_b=b.layer if b else "",
            fused_a=tuple(sorted(a.partners)) if a else (), fused_b=tuple(sorted(b.partners)) if b else (),
            only_in="a" if b is None else "b")
    gained = tuple(sorted((b.partners & common) - a.partners))
    lost = tuple(sorted((a.partners & common) - b.partners))
    return ImportedNodeChange(
        node=node, ms_a=ms_a, ms_b=ms_b, delta_ms=(ms_b - ms_a) if ms_a is not None and ms_b is not None else None,
        precision_a=a.precision, precision_b=b.precision, layer_a=a.layer, layer_b=b.layer,
        fused_a=tuple(sorted(a.partners)), fused_b=tuple(sorted(b.partners)), gained=gained, lost=lost,
        precision_changed=bool(a.precision and b.precision and a.precision != b.precision),
        fusion_changed=bool(gained or lost or (bool(a.partners) != bool(b.partners))))


def _size(c: ImportedNodeChange) -> float:
    """How much a node's time changed (a node one engine runs alone: its whole time)."""
    if c.delta_ms is not None:
        return abs(c.delta_ms)
    return abs((c.ms_b or 0.0) - (c.ms_a or 0.0))


def compare_imports(a: ImportResult, b: ImportResult, *, label_a: str = "", label_b: str = "") -> ImportComparison:
    """Engine B against engine A, ONNX node by ONNX node: the nodes both run first, largest time change first, then
    the nodes one runs alone (largest time first). ``delta_ms`` is B − A."""
    na, nb = _nodes(a), _nodes(b)
    common = set(na) & set(nb)
    changes = [_change(n, na.get(n), nb.get(n), a, b, common) for n in dict.fromkeys([*na, *nb])]
    changes.sort(key=lambda c: (bool(c.only_in), -_size(c), c.node))
    label_a, label_b = label_a or import_label(a), label_b or import_label(b)
    if label_a == label_b:
        label_a += f" ({Path(a.imported_from).name})"
        label_b += f" ({Path(b.imported_from).name})"
    notes: list[str] = []
    if a.model and b.model and Path(a.model).name != Path(b.model).name:
        notes.append(f"the engines come from different models ({Path(a.model).name}, {Path(b.model).name}): "
                     "their nodes are matched by name")
    if na and nb and len(common) < min(len(na), len(nb)) / 2:
        notes.append(f"only {len(common)} of the nodes are in both engines ({len(na)} in A, {len(nb)} in B): "
                     "were they built from the same graph?")
    if a.total_ms is None or b.total_ms is None:
        notes.append("one engine has no profile: its nodes have no times")
    total = (b.total_ms - a.total_ms) if a.total_ms is not None and b.total_ms is not None else None

    def median(r: ImportResult) -> float | None:
        return r.latency_ms.median if r.latency_ms is not None else None

    return ImportComparison(
        label_a=label_a, label_b=label_b, engine_a=a, engine_b=b, nodes=tuple(changes),
        total_ms_a=a.total_ms, total_ms_b=b.total_ms, total_delta_ms=total,
        median_ms_a=median(a), median_ms_b=median(b),
        precision_changes=sum(c.precision_changed for c in changes),
        fusion_changes=sum(c.fusion_changed for c in changes),
        only_a=tuple(c.node for c in changes if c.only_in == "a"),
        only_b=tuple(c.node for c in changes if c.only_in == "b"),
        notes=tuple(notes), model=a.model or b.model, model_sha256=a.model_sha256 or b.model_sha256,
        kind="import_compare")


def _ms(x: float | None) -> str:
    return "—" if x is None else f"{x:.4f}" if abs(x) < 0.1 else f"{x:.3f}"


def short_node(node: str) -> str:
    """A node key's last two path parts ("MagikaV2/Conv_0/Conv2D" -> "Conv_0/Conv2D"); a plain name as it is."""
    return "/".join(node.rsplit("/", 2)[-2:])


def _names(nodes: Iterable[str], shorten: bool) -> str:
    names = [short_node(n) if shorten else n for n in nodes]
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def fusion_words(c: ImportedNodeChange, *, shorten: bool = True) -> str:
    """How a node's fusion changed: "fused with Add_14 in B, no longer fused with Relu_13" ("" where it did not)."""
    parts = []
    if c.gained:
        parts.append(f"fused with {_names(c.gained, shorten)} in B")
    if c.lost:
        parts.append(f"no longer fused with {_names(c.lost, shorten)}")
    if c.fusion_changed and not (c.gained or c.lost):
        parts.append("fused in B, alone in A" if c.fused_b else "alone in B, fused in A")
    return ", ".join(parts)


def change_words(c: ImportedNodeChange, *, shorten: bool = True) -> str:
    """A node's change in words: "Conv_12: 0.410 → 0.220 ms (FP16 → INT8, fused with Add_14 in B)". With
    `shorten`, a node key's path is cut to its last two parts."""
    name = short_node(c.node) if shorten else c.node
    if c.only_in:
        ms = c.ms_a if c.only_in == "a" else c.ms_b
        precision = c.precision_a if c.only_in == "a" else c.precision_b
        what = ", ".join(p for p in ((precision or "").upper(), f"{_ms(ms)} ms" if ms is not None else "") if p)
        return f"{name}: only in {c.only_in.upper()}" + (f" ({what})" if what else "")
    parts: list[str] = []
    if c.precision_changed:
        parts.append(f"{c.precision_a.upper()} → {c.precision_b.upper()}")
    elif c.precision_a:
        parts.append(c.precision_a.upper())
    fusion = fusion_words(c, shorten=shorten)
    if fusion:
        parts.append(fusion)
    times = f"{_ms(c.ms_a)} → {_ms(c.ms_b)} ms"
    if c.delta_ms is not None and c.ms_a:
        times += f" ({c.delta_ms / c.ms_a:+.0%})"
    return f"{name}: {times}" + (f" ({', '.join(parts)})" if parts else "")



@dataclass(frozen=True)
class ChangeGroup:
    """The nodes both engines run that ran in the same layer of A and the same layer of B (one fusion in each): their
    times summed, the precision that ran, the fusion partners gained or lost outside the group."""

    nodes: tuple[str, ...]
    ms_a: float | None
    ms_b: float | None
    delta_ms: float | None
    precision_a: str
    precision_b: str
    gained: tuple[str, ...]
    lost: tuple[str, ...]
    fusion_changed: bool


def _sum(values: list[float | None]) -> float | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def group_changes(c: ImportComparison) -> list[ChangeGroup]:
    """The changed nodes both engines run, grouped by the layers that ran them (A's and B's) and their precisions,
    largest time change first: what the command line says in words."""
    groups: dict[tuple[str, str, str, str], list[ImportedNodeChange]] = {}
    for n in c.changed():
        if not n.only_in:
            key = (n.layer_a, n.layer_b, n.precision_a, n.precision_b) if n.layer_a and n.layer_b else (n.node,) * 4
            groups.setdefault(key, []).append(n)
    out = []
    for members in groups.values():
        names = {n.node for n in members}
        gained = tuple(sorted({g for n in members for g in n.gained} - names))
        lost = tuple(sorted({g for n in members for g in n.lost} - names))
        ms_a, ms_b = _sum([n.ms_a for n in members]), _sum([n.ms_b for n in members])
        first = members[0]
        out.append(ChangeGroup(
            nodes=tuple(n.node for n in members), ms_a=ms_a, ms_b=ms_b,
            delta_ms=(ms_b - ms_a) if ms_a is not None and ms_b is not None else None,
            precision_a=first.precision_a, precision_b=first.precision_b, gained=gained, lost=lost,
            fusion_changed=any(n.fusion_changed for n in members)))
    out.sort(key=lambda g: -abs(g.delta_ms or 0.0))
    return out


def group_words(g: ChangeGroup, *, shorten: bool = True) -> str:
    """A group's change in words: "Conv_12 + Relu_13: 0.410 → 0.220 ms (−46%) (FP16 → INT8, fused with Add_14 in
    B)"."""
    names = [short_node(n) if shorten else n for n in g.nodes]
    name = " + ".join(names[:3]) + (f" + {len(names) - 3} more" if len(names) > 3 else "")
    parts: list[str] = []
    if g.precision_a and g.precision_b and g.precision_a != g.precision_b:
        parts.append(f"{g.precision_a.upper()} → {g.precision_b.upper()}")
    elif g.precision_a:
        parts.append(g.precision_a.upper())
    if g.gained:
        parts.append(f"fused with {_names(g.gained, shorten)} in B")
    if g.lost:
        parts.append(f"no longer fused with {_names(g.lost, shorten)}")
    if g.fusion_changed and not (g.gained or g.lost):
        parts.append("fused differently")
    times = f"{_ms(g.ms_a)} → {_ms(g.ms_b)} ms"
    if g.delta_ms is not None and g.ms_a:
        times += f" ({g.delta_ms / g.ms_a:+.0%})"
    return f"{name}: {times}" + (f" ({', '.join(parts)})" if parts else "")
