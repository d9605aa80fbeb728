"""The jobs of the run / compare / bench pipeline, one module each: `fn(spec, ctx) -> dict`.

Each job takes its own typed spec (`specs`: RunSpec, CompareSpec, … — made and checked by the CLI or the GUI, sent
as JSON, parsed back in the job's process). They run in a child process (app.jobs) for the GUI and the CLI alike,
named by "module:function" strings (each spec's `job`); results are JSON-safe, arrays go to `.npz` files in the
job's folder. A job's process imports its own module (and `common`, `specs`), never the others: this package
re-exports nothing, so a stale job path fails loudly.

- `run:run_task` — `trtlab run`: one target on the input samples.
- `compare:compare_task` — `trtlab compare`: the reference and each candidate, every metric, plot data.
- `bench:bench_task` — `trtlab bench`: latency statistics of one target (engine layer times on TensorRT).
- `diagnose:diagnose_task` — `trtlab diagnose`: every float intermediate tensor compared (`layer_errors`).
- `fallback:fallback_task` — `trtlab fallback`: the nodes to keep FP32 so a candidate meets a target.
- `variant:variant_task` — `trtlab variant`: the variant graph of a precision or plan, saved where asked.
- `build:build_task` — `trtlab build`: a TensorRT engine or RTX plan, its layers mapped to ONNX nodes.
- `specs` — one frozen dataclass per job kind, and `takes`, which parses a job's JSON params back into its spec.
- `common` — what the jobs share: the target's plan, input and calibration samples, variants, sessions, progress.
"""
