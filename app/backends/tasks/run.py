"""`trtlab run`: one target on the input samples."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.backends.tasks.common import prepare_samples, run_outputs
from app.backends.tasks.specs import RunSpec, takes

if TYPE_CHECKING:
    from app.jobs import JobContext


@takes(RunSpec)
def run_task(spec: RunSpec, ctx: JobContext) -> dict:
    """`trtlab run`: one target on the input samples; outputs saved to outputs.npz."""
    target = spec.target
    prep = prepare_samples(spec, ctx)
    outs, notes = run_outputs(target, prep, spec, ctx)
    arrays = {f"{name}" if len(outs) == 1 else f"{name}__{i}": arr
              for i, sample in enumerate(outs) for name, arr in sample.items()}
    npz = ctx.save_arrays("outputs", arrays)
    return {
        "backend": target.name, "samples": len(outs), "inputs": prep.source_text, "random_data": prep.random_data,
        "notes": notes, "npz": npz,
        "outputs": [{"name": k, "shape": list(v.shape), "dtype": str(v.dtype)} for k, v in outs[0].items()],
    }
