"""Native TensorRT as a trtlab backend: availability, engine build (or the engine cache), and a session.

Everything TensorRT-specific that can be pure lives in `app.core.engine` and is tested without TensorRT;
the calls themselves are in `trt_build` and `trt_runtime`, written from TENSORRT.md for 10.x and 11.x.
Builds and runs happen only in job processes.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.backends.base import Availability, BackendUnavailable

log = logging.getLogger(__name__)


_LOGGER: dict[str, Any] = {}   # one TensorRT logger per process (TENSORRT.md §8), forwarding to the current job


def job_logger(trt: Any, ctx: object | None) -> Any:
    """The process's TensorRT logger, now forwarding to `ctx`'s job log (or Python logging outside a job)."""
    from app.backends.trt_build import make_logger

    def emit(level: str, msg: str) -> None:
        target = _LOGGER.get("ctx")
        if target is not None:
            target.log(msg, level)
        else:
            log.log(logging.WARNING if level in ("warning", "error") else logging.DEBUG, msg)

    if "logger" not in _LOGGER:
        _LOGGER["logger"] = make_logger(trt, emit)
    _LOGGER["ctx"] = ctx
    logger = _LOGGER["logger"]
    logger.notable.clear()
    return logger


@dataclass
class EngineOutcome:
    path: Path
    meta: dict
    cached: bool
    warnings: list[str]
    layer_info: dict | None


def build_config_from(options: dict[str, Any], inputs: list, shapes: dict[str, tuple[int, ...]]) -> Any:
    """The BuildConfig for a job: options' workspace/level/TF32, and profiles from `--profile` specs
    (options["profiles"]: JSON) or else fixed at the run's input shapes."""
    from app.core.engine.cache import BuildConfig
    from app.core.engine.profiles import OptimizationProfile, profile_from_shapes, validate_profile

    if options.get("profiles"):
        profiles = [OptimizationProfile.from_json(p) for p in options["profiles"]]
    else:
        profiles = [profile_from_shapes(inputs, shapes)]
    for p in profiles:
        validate_profile(p, inputs)
    return BuildConfig(workspace_mb=options.get("workspace_mb"), optimization_level=int(options.get("opt_level", 3)),
                       tf32=bool(options.get("tf32", False)), profiles=profiles)


def ensure_engine(variant_path: str, config: Any, ctx: object | None, root: str | Path | None = None) -> EngineOutcome:
    """The engine for (variant, config, TensorRT version, GPU): from the cache, else built now."""
    from app.backends.cuda_rt import gpu_info
    from app.backends.trt_build import BuildCancelled, build_engine, trt_version
    from app.backends.trt_runtime import import_trt
    from app.core.engine import cache as ec
    from app.core.engine.progress import PhaseTracker
    from app.core.variants import model_digest

    trt = import_trt()
    version = trt_version(trt)
    gpu = gpu_info()
    root = Path(root) if root is not None else ec.default_root()
    key = ec.engine_key(model_digest(variant_path), config, version, gpu.name, gpu.compute_capability)
    found = ec.lookup_engine(root, key, version, gpu.name, gpu.compute_capability)
    if found is not None:
        layers = found.with_name(found.name + ".layers.json")
        info = json.loads(layers.read_text(encoding="utf-8")) if layers.exists() else None
        meta = ec.load_engine_meta(found)
        return EngineOutcome(found, meta, True, list(meta.get("warnings", [])), info)

    logger = job_logger(trt, ctx)
    tracker = PhaseTracker(emit=(lambda f, m: ctx.progress(f, m)) if ctx is not None else None,
                           cancelled=getattr(ctx, "cancelled", None), title="Building the TensorRT engine")
    tc_path = ec.timing_cache_path(root, version, gpu.name, gpu.compute_capability)
    timing = ec.load_timing_cache(tc_path) if config.uses_timing_cache else b""
    try:
        result = build_engine(variant_path, logger=logger, workspace_bytes=config.workspace_bytes,
                              optimization_level=config.optimization_level, tf32=config.tf32,
                              profiles=[p.trt_shapes() for p in config.profiles], timing_cache=timing,
                              tracker=tracker)
    except BuildCancelled:
        if ctx is not None:
            ctx.check_cancelled()
        raise
    if config.uses_timing_cache and result.timing_cache:
        ec.save_timing_cache(tc_path, result.timing_cache)
    path = ec.engine_path(root, key)
    meta = ec.make_engine_meta(key, config, version, gpu.name, gpu.compute_capability,
                               onnx_digest=model_digest(variant_path), warnings=result.warnings)
    ec.save_engine(path, result.engine, meta)
    if result.layer_info is not None:
        from app.core.fileio import atomic_write_text

        atomic_write_text(path.with_name(path.name + ".layers.json"), json.dumps(result.layer_info))
    return EngineOutcome(path, ec.load_engine_meta(path), False, result.warnings, result.layer_info)


class TrtBackend:
    name = "trt"
    precisions = ("fp32", "fp16", "bf16", "int8")
    timing_modes = ("end_to_end", "device_only")

    def availability(self) -> Availability:
        from app.backends.trt_env import environment

        return environment().availability()

    def prepare(self, model_path: str, options: dict[str, object] | None = None, *, ctx: object | None = None,
                shapes: dict[str, tuple[int, ...]] | None = None) -> Any:
        """Build (or take from the cache) the engine of `model_path` (a variant graph) and open a session."""
        a = self.availability()
        if not a.available:
            raise BackendUnavailable(f"trt: {a.reason}", fix=a.install_hint)
        import onnx

        from app.backends.trt_runtime import TrtSession, import_trt
        from app.core.tensors import graph_inputs, value_info_to_tensor_info

        opts = dict(options or {})
        model = onnx.load(str(model_path), load_external_data=False)
        inputs = [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]
        config = build_config_from(opts, inputs, dict(shapes or {}))
        outcome = ensure_engine(str(model_path), config, ctx)
        trt = import_trt()
        notes = [f"TensorRT {outcome.meta.get('trt_version')} engine on {outcome.meta.get('gpu_name')}"
                 + (" (from the engine cache)" if outcome.cached else ""),
                 "TF32 on" if config.tf32 else "TF32 off"]
        notes += [f"TensorRT: {w}" for w in outcome.warnings[:10]]
        return TrtSession(outcome.path.read_bytes(), job_logger(trt, ctx), notes)
