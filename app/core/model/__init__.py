"""The model and its graph: loading (`loader`), summary, shapes and their value propagation, the display graph,
search and selection, weights and stored tensors, the demo model. Import from the modules, e.g.
`from app.core.model.loader import load_model`."""
