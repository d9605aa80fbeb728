"""TensorRT for RTX as the trtlab backend `trt-rtx`: engines built ahead of time without a GPU, run on RTX GPUs.

The build is the TensorRT one (`trt.ensure_engine` with the RTX flavour): same parser, profiles, progress and
Cancel, with compute-capability targets instead of a timing cache, and a cache key on the RTX version and
the targets. Running a plan needs an RTX-class GPU (compute capability 8.0, 8.6, 8.9, 12.x, or 7.5 when built
for it) and cuda-python; the session is TensorRT's (`trt_runtime.TrtSession`) with the RTX module passed in
and a runtime cache beside the engine (RTX's replacement for the timing cache: kernels compiled on this GPU).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from app.backends.base import Availability, BackendUnavailable
from app.backends.trt_flavour import RTX

if TYPE_CHECKING:
    from app.backends.trt_runtime import TrtSession
    from app.jobs import JobContext


def availability() -> Availability:
    from app.backends.trt_env import rtx_environment

    return rtx_environment().availability()


class RtxBackend:
    name = "trt-rtx"
    precisions: tuple[str, ...] = ("fp32", "fp16", "bf16", "int8")
    timing_modes: tuple[str, ...] = ("end_to_end", "device_only")

    def availability(self) -> Availability:
        return availability()

    def prepare(self, model_path: str, options: dict[str, object] | None = None, *, ctx: JobContext | None = None,
                shapes: dict[str, tuple[int, ...]] | None = None) -> TrtSession:
        """Build (or take from the cache) the plan of `model_path` (a variant graph) and open a session on it."""
        a = self.availability()
        if not a.available:
            raise BackendUnavailable(f"trt-rtx: {a.reason}", fix=a.install_hint)
        import onnx

        from app.backends.trt import build_config_from, ensure_engine, job_logger, rtx_gpu
        from app.backends.trt_runtime import TrtSession
        from app.core.model import graph_inputs, value_info_to_tensor_info

        model = onnx.load(str(model_path), load_external_data=False)
        inputs = [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]
        config = build_config_from(dict(options or {}), inputs, dict(shapes or {}), model.graph)
        outcome = ensure_engine(str(model_path), config, ctx, flavour=RTX)
        trt = RTX.import_module()
        notes = [f"TensorRT for RTX {outcome.meta.get('trt_version')} plan for compute capability "
                 f"{outcome.meta.get('targets_text')}" + (" (from the engine cache)" if outcome.cached else ""),
                 "TF32 on" if config.tf32 else "TF32 off"]
        notes += [f"TensorRT for RTX: {w}" for w in outcome.warnings[:10]]
        # Compiled kernels belong to one GPU model: one runtime cache per engine and GPU.
        gpu = rtx_gpu()
        tag = re.sub(r"[^A-Za-z0-9.]+", "-", gpu[0]).strip("-") if gpu else "gpu"
        cache = outcome.path.with_name(f"{outcome.path.name}.{tag}.runtime-cache")
        return TrtSession(outcome.path.read_bytes(), job_logger(trt, ctx), notes, trt=trt, runtime_cache=str(cache))
