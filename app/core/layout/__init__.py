"""Graph layout: `layered.layered_layout` places the display graph (ranks, ordering, coordinates, edge routes);
`metrics` measures a layout (crossings, lengths)."""
