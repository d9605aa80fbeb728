"""The work, with no Qt: `model/` (the model and its graph), `layout/`, `precision/` (plans, transforms, variants),
`measure/` (inputs, comparison, latency), `engine/` (engine facts), `readiness/` (the TensorRT check), and the
shared `errors`, `fileio`, `units`. docs/architecture.md maps them."""
