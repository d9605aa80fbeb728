"""The graph: canvas, drawing, overlays, find bar, node colours, export, and the compare window."""
