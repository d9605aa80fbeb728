"""Native TensorRT as a trtlab backend: availability, engine build (or the engine cache), and a session.

Everything TensorRT-specific that can be pure lives in `app.core.engine` and is tested without TensorRT;
the calls themselves are in `trt_build` and `trt_runtime`, written from TENSORRT.md for 10.x and 11.x and
shared with TensorRT for RTX (`trt_rtx`): `ensure_engine` takes the flavour (`trt_flavour`), which picks the
module, the cache key and whether a timing cache is kept. Builds and runs happen only in job processes.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.backends.base import Availability, BackendUnavailable
from app.backends.trt_flavour import TENSORRT, Flavour

if TYPE_CHECKING:
    import onnx

    from app.backends.trt_runtime import TrtSession
    from app.core.engine import BuildConfig
    from app.core.model import TensorInfo
    from app.jobs import JobContext

log = logging.getLogger(__name__)


_LOGGER: dict[str, Any] = {}   # one logger per TensorRT module and process (TENSORRT.md §8), forwarding to the job


def job_logger(trt: Any, ctx: JobContext | None) -> Any:
    """The process's logger for this TensorRT module, now forwarding to `ctx`'s job log (or Python logging
    outside a job)."""
    from app.backends.trt_build import make_logger

    def emit(level: str, msg: str) -> None:
        target = _LOGGER.get("ctx")
        if target is not None:
            target.log(msg, level)
        else:
            log.log(logging.WARNING if level in ("warning", "error") else logging.DEBUG, msg)

    name = getattr(trt, "__name__", "tensorrt")
    if name not in _LOGGER:
        _LOGGER[name] = make_logger(trt, emit)
    _LOGGER["ctx"] = ctx
    logger = _LOGGER[name]
    logger.notable.clear()
    return logger


@dataclass
class EngineOutcome:
    path: Path
    meta: dict
    cached: bool
    warnings: list[str]
    layer_info: dict | None
    layer_source: str = ""


def build_config_from(options: dict[str, Any], inputs: list[TensorInfo], shapes: dict[str, tuple[int, ...]],
                      graph: onnx.GraphProto | None = None) -> BuildConfig:
    """The BuildConfig for a job: options' workspace/level/TF32, and profiles from `--profile` specs
    (options["profiles"]: JSON) or else fixed at the run's input shapes. `graph` (the ONNX graph built) lets
    dims sharing a dim_param be checked, '?' included (TensorRT builds them at one size)."""
    from app.core.engine import BuildConfig, OptimizationProfile, named_dims, profile_from_shapes, validate_profile

    names = named_dims(graph) if graph is not None else None
    if options.get("profiles"):
        profiles = [OptimizationProfile.from_json(p) for p in options["profiles"]]
    else:
        profiles = [profile_from_shapes(inputs, shapes, dim_names=names)]
    for p in profiles:
        validate_profile(p, inputs, dim_names=names)
    return BuildConfig(workspace_mb=options.get("workspace_mb"), optimization_level=int(options.get("opt_level", 3)),
                       tf32=bool(options.get("tf32", False)), profiles=profiles,
                       targets=tuple(options.get("targets") or ()))


def rtx_gpu() -> tuple[str, str] | None:
    """(name, compute capability) of GPU 0 for TensorRT for RTX, or None: found the way `trt_env` finds it."""
    from app.backends.trt_env import environment

    gpus = environment().gpus
    return (gpus[0].name, gpus[0].compute_capability) if gpus else None


def ensure_engine(variant_path: str, config: BuildConfig, ctx: JobContext | None, root: str | Path | None = None,
                  flavour: Flavour = TENSORRT) -> EngineOutcome:
    """The engine for (variant, config, TensorRT version, GPU) — for TensorRT for RTX (variant, config, RTX
    version, targets) — from the cache, else built now."""
    from app.backends.trt_build import BuildCancelled, build_engine, trt_version
    from app.core.engine import (
        BuildConfigError,
        PhaseTracker,
        default_root,
        engine_key,
        engine_path,
        load_engine_meta,
        load_timing_cache,
        lookup_engine,
        make_engine_meta,
        make_rtx_engine_meta,
        rtx_engine_key,
        run_problem,
        save_engine,
        save_timing_cache,
        timing_cache_path,
    )
    from app.core.precision import model_digest

    trt = flavour.import_module()
    version = trt_version(trt)
    problem = flavour.version_problem(version)
    if problem:
        raise BackendUnavailable(problem, fix=flavour.install_hint)
    root = Path(root) if root is not None else default_root()
    digest = model_digest(variant_path)
    if flavour.portable:
        gpu = rtx_gpu()
        # The inspector needs a deserialized engine, so a GPU of a target; without one, the builder's dump.
        inspect = gpu is not None and not run_problem(config.targets, gpu[1], gpu[0])
        key = rtx_engine_key(digest, config, version)
        found = lookup_engine(root, key, version, None, None)
    else:
        from app.backends.cuda_rt import gpu_info

        if config.targets:
            raise BuildConfigError("Compute-capability targets are a TensorRT for RTX setting; TensorRT 10/11 "
                                   "builds for the GPU it runs on.", fix="Build with trt-rtx, or drop the targets.")
        info = gpu_info()
        gpu, inspect = (info.name, info.compute_capability), True
        key = engine_key(digest, config, version, *gpu)
        found = lookup_engine(root, key, version, *gpu)
    if found is not None:
        layers = found.with_name(found.name + ".layers.json")
        layer_info = json.loads(layers.read_text(encoding="utf-8")) if layers.exists() else None
        meta = load_engine_meta(found)
        return EngineOutcome(found, meta, True, list(meta.get("warnings", [])), layer_info,
                             str(meta.get("layer_source", "")))

    logger = job_logger(trt, ctx)
    tracker = PhaseTracker(emit=(lambda f, m: ctx.progress(f, m)) if ctx is not None else None,
                           cancelled=getattr(ctx, "cancelled", None), title=f"Building the {flavour.label} engine")
    timing: bytes | None = None  # TensorRT for RTX: timing caches are no-ops there
    tc_path = None
    if flavour.timing_cache and gpu is not None:
        tc_path = timing_cache_path(root, version, *gpu)
        timing = load_timing_cache(tc_path) if config.uses_timing_cache else b""
    try:
        result = build_engine(variant_path, trt=trt, logger=logger, workspace_bytes=config.workspace_bytes,
                              optimization_level=config.optimization_level, tf32=config.tf32,
                              profiles=[p.trt_shapes() for p in config.profiles], targets=config.targets,
                              timing_cache=timing, tracker=tracker, inspect=inspect)
    except BuildCancelled:
        if ctx is not None:
            ctx.check_cancelled()
        raise
    if tc_path is not None and config.uses_timing_cache and result.timing_cache:
        save_timing_cache(tc_path, result.timing_cache)
    path = engine_path(root, key)
    if flavour.portable:
        meta = make_rtx_engine_meta(key, config, version, onnx_digest=digest, warnings=result.warnings,
                                    layer_source=result.layer_source)
    else:
        assert gpu is not None  # found above: TensorRT 10/11 builds for the GPU it runs on
        meta = make_engine_meta(key, config, version, *gpu, onnx_digest=digest, warnings=result.warnings,
                                layer_source=result.layer_source)
    save_engine(path, result.engine, meta)
    if result.layer_info is not None:
        from app.core.fileio import atomic_write_text

        atomic_write_text(path.with_name(path.name + ".layers.json"), json.dumps(result.layer_info))
    return EngineOutcome(path, load_engine_meta(path), False, result.warnings, result.layer_info,
                         result.layer_source)


class TrtBackend:
    name = "trt"
    precisions: tuple[str, ...] = ("fp32", "fp16", "bf16", "int8")
    timing_modes: tuple[str, ...] = ("end_to_end", "device_only")

    def availability(self) -> Availability:
        from app.backends.trt_env import environment

        return environment().availability()

    def prepare(self, model_path: str, options: dict[str, object] | None = None, *, ctx: JobContext | None = None,
                shapes: dict[str, tuple[int, ...]] | None = None) -> TrtSession:
        """Build (or take from the cache) the engine of `model_path` (a variant graph) and open a session."""
        a = self.availability()
        if not a.available:
            raise BackendUnavailable(f"trt: {a.reason}", fix=a.install_hint)
        import onnx

        from app.backends.trt_runtime import TrtSession
        from app.core.model import graph_inputs, value_info_to_tensor_info

        opts = dict(options or {})
        model = onnx.load(str(model_path), load_external_data=False)
        inputs = [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]
        config = build_config_from(opts, inputs, dict(shapes or {}), model.graph)
        outcome = ensure_engine(str(model_path), config, ctx)
        trt = TENSORRT.import_module()
        notes = [f"TensorRT {outcome.meta.get('trt_version')} engine on {outcome.meta.get('gpu_name')}"
                 + (" (from the engine cache)" if outcome.cached else ""),
                 "TF32 on" if config.tf32 else "TF32 off"]
        notes += [f"TensorRT: {w}" for w in outcome.warnings[:10]]
        return TrtSession(outcome.path.read_bytes(), job_logger(trt, ctx), notes, trt=trt)
