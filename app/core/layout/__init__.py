"""Graph layout: `layered_layout` places the display graph (ranks, ordering, coordinates, edge routes) and stops
with `LayoutCancelled` when asked to; `compound_layout` lays out nested groups, each on its own; `metrics` measures a
layout (crossings, lengths) for the tests and benchmarks; `place_edge_labels` decides where the edges' shape labels
go on a laid-out graph."""

from __future__ import annotations

from app.core.layout.compound import compound_layout
from app.core.layout.edge_labels import EdgeLabels, place_edge_labels
from app.core.layout.layered import GraphLayout, LayoutCancelled, layered_layout

__all__ = ["EdgeLabels", "GraphLayout", "LayoutCancelled", "compound_layout", "layered_layout", "place_edge_labels"]
