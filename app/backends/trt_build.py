"""Building a TensorRT engine from a variant ONNX graph, written from TENSORRT.md §1, §2, §5, §8 and §10 and
TENSORRT_RTX.md.

One code path for TensorRT 10.x, 11.x and TensorRT for RTX 1.x (whose build API is 11.1's): the module is
passed in (`app.backends.trt_flavour` imports it). A strongly typed network (the flag computed from the enum,
never hard-coded; 11.x and RTX ignore it) parsed with `parse_from_file` (external weights next to the file), no
precision builder flags (the precision is in the graph: Casts and Q/DQ), TF32 cleared unless asked for,
profiling verbosity DETAILED, a timing cache loaded and saved (TensorRT only: RTX's are no-ops), compute-
capability targets (RTX only), a progress monitor whose `step_complete` returns False on Cancel. The engine's
layers come from the engine inspector when this machine can load the engine, else from the builder's
`Layers:` dump (logged at VERBOSE with DETAILED), which is all there is without a GPU. Job processes only.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from app.core.errors import TrtlabError

log = logging.getLogger(__name__)

# Logger lines worth a visible warning in the UI (TensorRT reports these at WARNING or INFO level).
NOTABLE = re.compile(r"subnormal|overflow|outside (of )?(the )?(fp16|half)|clamp|fall(ing|s)? ?back|"
                     r"not (be )?supported|will be (cast|converted)|int64", re.IGNORECASE)
# Warnings that change nothing in the engine, logged as info so they do not bury the ones that do: the parser
# met a zero-element initializer (an empty Resize roi/scales) and bound no data to it.
QUIET = re.compile(r"Empty initializer \S+ was provided with non-empty data")
# TensorRT for RTX probes CUDA while it parses and builds; on a machine without a GPU (where RTX still builds)
# that probe fails with these lines, which say nothing about the model: logged as info, left out of messages.
NO_GPU = re.compile(r"catchCudaError|cudaError 35|CUDA driver version is insufficient|Error reading CUDA GPU")


class BuildFailed(TrtlabError):
    title = "TensorRT build failed"
    user_error = False  # the job failed (exit 4 with its log), not the input
    issues: list[dict] | None = None  # the parser's errors (`parser_issues`) when it refused the graph


class BuildCancelled(TrtlabError):
    title = "Build cancelled"


@dataclass
class BuildResult:
    engine: bytes
    timing_cache: bytes
    trt_version: str
    warnings: list[str] = field(default_factory=list)
    layer_info: dict | None = None      # the engine inspector's JSON (DETAILED), or the Layers: dump read as such
    layer_source: str = ""              # "inspector" | "builder log" | "" (none)


def trt_version(trt: Any) -> str:
    return str(getattr(trt, "__version__", "unknown"))


def network_flags(trt: Any) -> int:
    """STRONGLY_TYPED as a bit computed from the enum (its value is 1 in 10.x and 0 in 11.x)."""
    flag = getattr(trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED", None)
    return 0 if flag is None else 1 << int(flag)


def severity_level(trt: Any, severity: Any) -> str:
    s = trt.ILogger.Severity
    if severity in (s.INTERNAL_ERROR, s.ERROR):
        return "error"
    if severity == s.WARNING:
        return "warning"
    return "info" if severity == s.INFO else "debug"


def make_logger(trt: Any, emit: Callable[[str, str], None], verbose: bool = False) -> Any:
    """A thread-safe ILogger that forwards to the job log (`emit(level, message)`); one per process,
    shared by Builder and Runtime (TENSORRT.md §8). Notable lines are collected as warnings, error lines in
    `errors` (to explain a failed build) and the builder's `Layers:` dump in `layer_dumps`."""
    from app.core.engine import DUMP_HEADER

    gpu_free = str(getattr(trt, "__name__", "")).startswith("tensorrt_rtx")  # RTX builds without a GPU

    class JobLogger(trt.ILogger):
        def __init__(self) -> None:
            trt.ILogger.__init__(self)
            self.notable: list[str] = []
            self.errors: list[str] = []
            self.layer_dumps: list[str] = []

        def log(self, severity: Any, msg: str) -> None:
            level = severity_level(trt, severity)
            if level == "debug" and msg.startswith(DUMP_HEADER):
                self.layer_dumps.append(msg)  # one message per build: the only per-layer facts without a GPU
                del self.layer_dumps[:-4]
            if level == "debug" and not verbose:
                return  # VERBOSE lines arrive too (there is no minimum in the interface): drop them early
            if level == "warning" and QUIET.search(msg):
                level = "info"
            if gpu_free and level == "error" and NO_GPU.search(msg):
                level = "info"
            if level == "error":
                self.errors.append(msg.strip())
                del self.errors[:-50]
            if level in ("warning", "info") and NOTABLE.search(msg):
                self.notable.append(msg.strip())
                level = "warning"
            emit(level, msg.strip())

    return JobLogger()


def make_monitor(trt: Any, tracker: Any) -> Any:
    """An IProgressMonitor forwarding to a PhaseTracker (whose step_complete returns False on Cancel)."""

    class Monitor(trt.IProgressMonitor):
        def __init__(self) -> None:
            trt.IProgressMonitor.__init__(self)

        def phase_start(self, phase_name: str, parent_phase: str | None, num_steps: int) -> None:
            tracker.phase_start(phase_name, parent_phase, num_steps)

        def step_complete(self, phase_name: str, step: int) -> bool:
            return bool(tracker.step_complete(phase_name, step))

        def phase_finish(self, phase_name: str) -> None:
            tracker.phase_finish(phase_name)

    return Monitor()


def parser_issues(parser: Any) -> list[dict]:
    """What each ParserError says, read with version-aware getattr (accessors are methods, §1)."""
    out = []
    for i in range(int(parser.num_errors)):
        e = parser.get_error(i)
        fields: dict[str, Any] = {}
        for key in ("code", "desc", "file", "line", "func", "node", "node_name", "node_operator",
                    "local_function_stack"):
            fn = getattr(e, key, None)
            try:
                value = fn() if callable(fn) else fn
            except Exception:  # an accessor missing in this version
                value = None
            fields[key] = str(value).rsplit(".", 1)[-1] if key == "code" and value is not None else value
        fields["text"] = str(e)
        for key in ("desc", "text"):  # without TensorRT for RTX's failed CUDA probes (no GPU here)
            if isinstance(fields.get(key), str):
                fields[key] = "\n".join(line for line in fields[key].splitlines() if not NO_GPU.search(line))
        out.append(fields)
    return out


def parse_only(onnx_path: str, *, trt: Any, logger: Any | None = None) -> list[dict]:
    """TensorRT's ONNX parser on a file, no build: the parser's issues ([] when it took the graph)."""
    with _no_garbage_collection():
        if logger is None:
            logger = make_logger(trt, lambda level, message: None)  # silent: the issues are the answer
        builder = trt.Builder(logger)
        network = builder.create_network(network_flags(trt))
        parser = trt.OnnxParser(network, logger)
        ok = parser.parse_from_file(str(onnx_path))
        issues = [] if ok else parser_issues(parser)
        del parser, network, builder
        return issues


def set_targets(trt: Any, config: Any, targets: tuple[str, ...] | list[str]) -> None:
    """TensorRT for RTX's compute-capability targets ('8.6' -> ComputeCapability.SM86); () keeps its default."""
    from app.core.engine import enum_names

    if not targets:
        return
    if not hasattr(config, "set_compute_capability"):
        raise BuildFailed(f"This TensorRT ({trt_version(trt)}) has no compute-capability targets.",
                          fix="Targets are a TensorRT for RTX setting: build with --backend trt-rtx, or drop "
                              "--target-cc.")
    config.num_compute_capabilities = len(targets)
    for i, name in enumerate(enum_names(targets)):
        config.set_compute_capability(getattr(trt.ComputeCapability, name), i)


def build_engine(onnx_path: str, *, trt: Any, logger: Any, workspace_bytes: int | None = None,
                 optimization_level: int = 3, tf32: bool = False,
                 profiles: list[dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]] | None = None,
                 targets: tuple[str, ...] = (), timing_cache: bytes | None = b"", tracker: Any = None,
                 inspect: bool = True) -> BuildResult:
    """Parse, configure and build with the TensorRT module `trt`; raises BuildFailed (with the parser's issues,
    or the build's errors explained), or BuildCancelled.

    `timing_cache` None builds without one (TensorRT for RTX, whose timing cache calls are no-ops); `targets`
    are RTX compute capabilities. `inspect` False skips the engine inspector (it needs a GPU that can load the
    engine), so the layers come from the builder's `Layers:` dump. `tracker`
    (app.core.engine.progress.PhaseTracker) receives TensorRT's progress callbacks; its `step_complete`
    returns False once Cancel was asked, which stops the build."""
    with _no_garbage_collection():
        return _build_engine(onnx_path, trt=trt, logger=logger, workspace_bytes=workspace_bytes,
                             optimization_level=optimization_level, tf32=tf32, profiles=profiles, targets=targets,
                             timing_cache=timing_cache, tracker=tracker, inspect=inspect)


@contextlib.contextmanager
def _no_garbage_collection() -> Iterator[None]:
    """No cyclic garbage collection while TensorRT runs. TensorRT calls the Python logger and progress monitor
    while holding its own lock; a collection started there that frees an earlier Builder (kept in a cycle, e.g.
    by a caught exception's traceback) waits for that same lock, and the process hangs (seen with TensorRT for
    RTX 1.7 in `createInferBuilder`). Collected afterwards, outside TensorRT, the same objects free cleanly."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _build_engine(onnx_path: str, *, trt: Any, logger: Any, workspace_bytes: int | None, optimization_level: int,
                  tf32: bool, profiles: list | None, targets: tuple[str, ...], timing_cache: bytes | None,
                  tracker: Any, inspect: bool) -> BuildResult:
    trt.init_libnvinfer_plugins(logger, "")
    builder = trt.Builder(logger)
    network = builder.create_network(network_flags(trt))
    parser = trt.OnnxParser(network, logger)  # kept alive until the build returns: it owns the weights
    if not parser.parse_from_file(str(onnx_path)):
        issues = parser_issues(parser)
        err = BuildFailed(f"TensorRT's ONNX parser refused the model ({len(issues)} error(s)): "
                          + "; ".join(i["text"] for i in issues[:3]),
                          fix="See the nodes named here in the graph; plan them differently or export again.")
        err.issues = issues
        raise err
    config = builder.create_builder_config()
    if workspace_bytes:
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(workspace_bytes))
    config.builder_optimization_level = int(optimization_level)
    config.profiling_verbosity = trt.ProfilingVerbosity.DETAILED
    if not tf32:
        config.clear_flag(trt.BuilderFlag.TF32)  # on by default in 10.x and 11.x: strict FP32 unless asked
    for shapes in profiles or []:
        p = builder.create_optimization_profile()
        for name, (lo, opt, hi) in shapes.items():
            p.set_shape(name, tuple(lo), tuple(opt), tuple(hi))
        config.add_optimization_profile(p)
    set_targets(trt, config, tuple(targets))
    if timing_cache is not None:
        cache = config.create_timing_cache(bytes(timing_cache))
        config.set_timing_cache(cache, False)  # ignore_mismatch is a required argument
    monitor = make_monitor(trt, tracker) if tracker is not None else None
    if monitor is not None:
        config.progress_monitor = monitor
    errors = getattr(logger, "errors", None)
    dumps = getattr(logger, "layer_dumps", None)
    if errors is not None:
        errors.clear()
    if dumps is not None:
        dumps.clear()
    plan = builder.build_serialized_network(network, config)
    if plan is None:
        if tracker is not None and tracker.cancelled():
            raise BuildCancelled("The build was cancelled.", fix="")
        from app.core.engine import explain_build_failure

        message, fix = explain_build_failure(list(errors or []))
        raise BuildFailed(message, fix=fix)
    engine_bytes = bytes(plan)
    new_cache = bytes(config.get_timing_cache().serialize()) if timing_cache is not None else b""
    info, source = (engine_layer_info(trt, logger, engine_bytes), "inspector") if inspect else (None, "")
    if info is None:
        info, source = dump_layer_info(list(dumps or [])), "builder log"
    return BuildResult(engine_bytes, new_cache, trt_version(trt), list(getattr(logger, "notable", [])), info,
                       source if info is not None else "")


def dump_layer_info(messages: list[str]) -> dict | None:
    """The builder's `Layers:` dump as inspector JSON (app.core.engine.layer_dump), or None without one."""
    from app.core.engine import find_dump, parse_layer_dump

    text = find_dump(messages)
    if text is None:
        return None
    try:
        return parse_layer_dump(text)
    except Exception as exc:  # reading the log must never fail a good build
        log.warning("the builder's layer dump could not be read: %s", exc)
        return None


def engine_layer_info(trt: Any, logger: Any, engine_bytes: bytes) -> dict | None:
    """The engine inspector's JSON (TENSORRT.md §7), or None when this TensorRT cannot give it."""
    import json

    try:
        engine = trt.Runtime(logger).deserialize_cuda_engine(engine_bytes)
        if engine is None:  # no GPU that can load it: TensorRT logged why and returned None
            return None
        inspector = engine.create_engine_inspector()
        # With dynamic inputs the inspector reports "N/A due to dynamic shapes" unless it has a context whose
        # input shapes are set (TENSORRT.md §7): use the first profile's opt shapes.
        context = engine.create_execution_context()
        for i in range(engine.num_io_tensors):
            name = engine.get_tensor_name(i)
            if engine.get_tensor_mode(name) == trt.TensorIOMode.INPUT and not engine.is_shape_inference_io(name):
                context.set_input_shape(name, tuple(engine.get_tensor_profile_shape(name, 0)[1]))
        inspector.execution_context = context
        # strict=False: layer metadata may carry raw control characters (ONNX names joined by \x1E)
        return json.loads(inspector.get_engine_information(trt.LayerInformationFormat.JSON), strict=False)
    except Exception as exc:  # introspection must never fail a good build
        log.warning("engine inspection failed: %s", exc)
        return None
