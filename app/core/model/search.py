"""Search over node names, op types and tensor names."""

from __future__ import annotations

from dataclasses import dataclass

from app.core.model.display_graph import KIND_OP, DisplayGraph


@dataclass(frozen=True)
class SearchHit:
    node: int
    reason: str  # "name", "op", "tensor"
    text: str


def search_graph(graph: DisplayGraph, query: str, limit: int = 100_000) -> list[SearchHit]:
    """Case-insensitive substring search; each node appears once, with why it matched."""
    q = query.strip().lower()
    if not q:
        return []
    hits: list[SearchHit] = []
    seen: set[int] = set()
    onnx_nodes = graph.graph.node
    for i in range(graph.node_count):
        reason: str | None = None
        text = ""
        if q in graph.names[i].lower():
            reason, text = "name", graph.names[i]
        elif graph.kinds[i] == KIND_OP and q in graph.titles[i].lower():
            reason, text = "op", graph.titles[i]
        elif graph.kinds[i] == KIND_OP:
            n = onnx_nodes[int(graph.onnx_index[i])]
            for t in (*n.input, *n.output):
                if t and q in t.lower():
                    reason, text = "tensor", t
                    break
        if reason is not None and i not in seen:
            seen.add(i)
            hits.append(SearchHit(i, reason, text))
            if len(hits) >= limit:
                break
    return hits
