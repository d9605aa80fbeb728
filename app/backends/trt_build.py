"""Building a TensorRT engine from a variant ONNX graph, written from TENSORRT.md §1, §2, §5, §8 and §10.

One code path for TensorRT 10.x and 11.x: a strongly typed network (the flag computed from the enum, never
hard-coded; 11.x ignores it) parsed with `parse_from_file` (external weights next to the file), no
precision builder flags (the precision is in the graph: Casts and Q/DQ), TF32 cleared unless asked for,
profiling verbosity DETAILED, a timing cache loaded and saved, a progress monitor whose `step_complete`
returns False on Cancel. This module runs only in job processes; TensorRT is imported inside functions.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.backends.trt_runtime import import_trt
from app.core.errors import TrtlabError

log = logging.getLogger(__name__)

# Logger lines worth a visible warning in the UI (TensorRT reports these at WARNING or INFO level).
NOTABLE = re.compile(r"subnormal|overflow|outside (of )?(the )?(fp16|half)|clamp|fall(ing|s)? ?back|"
                     r"not (be )?supported|will be (cast|converted)|int64", re.IGNORECASE)


class BuildFailed(TrtlabError):
    title = "TensorRT build failed"
    user_error = False  # the job failed (exit 4 with its log), not the input


class BuildCancelled(TrtlabError):
    title = "Build cancelled"


@dataclass
class BuildResult:
    engine: bytes
    timing_cache: bytes
    trt_version: str
    warnings: list[str] = field(default_factory=list)
    layer_info: dict | None = None      # the engine inspector's JSON (DETAILED)


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
    shared by Builder and Runtime (TENSORRT.md §8). Notable lines are collected as warnings."""

    class JobLogger(trt.ILogger):
        def __init__(self) -> None:
            trt.ILogger.__init__(self)
            self.notable: list[str] = []

        def log(self, severity: Any, msg: str) -> None:
            level = severity_level(trt, severity)
            if level == "debug" and not verbose:
                return  # VERBOSE lines arrive too (there is no minimum in the interface): drop them early
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
        out.append(fields)
    return out


def build_engine(onnx_path: str, *, logger: Any, workspace_bytes: int | None = None, optimization_level: int = 3,
                 tf32: bool = False,
                 profiles: list[dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]] | None = None,
                 timing_cache: bytes = b"", tracker: Any = None) -> BuildResult:
    """Parse, configure and build; raises BuildFailed with the parser's issues, or BuildCancelled.

    `tracker` (app.core.engine.progress.PhaseTracker) receives TensorRT's progress callbacks; its
    `step_complete` returns False once Cancel was asked, which stops the build."""
    trt = import_trt()
    trt.init_libnvinfer_plugins(logger, "")
    builder = trt.Builder(logger)
    network = builder.create_network(network_flags(trt))
    parser = trt.OnnxParser(network, logger)  # kept alive until the build returns: it owns the weights
    if not parser.parse_from_file(str(onnx_path)):
        issues = parser_issues(parser)
        err = BuildFailed(f"TensorRT's ONNX parser refused the model ({len(issues)} error(s)): "
                          + "; ".join(i["text"] for i in issues[:3]),
                          fix="See the nodes named here in the graph; plan them differently or export again.")
        err.issues = issues  # type: ignore[attr-defined]
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
    cache = config.create_timing_cache(bytes(timing_cache))
    config.set_timing_cache(cache, False)  # ignore_mismatch is a required argument
    monitor = make_monitor(trt, tracker) if tracker is not None else None
    if monitor is not None:
        config.progress_monitor = monitor
    plan = builder.build_serialized_network(network, config)
    if plan is None:
        if tracker is not None and tracker.cancelled():
            raise BuildCancelled("The build was cancelled.", fix="")
        raise BuildFailed("TensorRT could not build the engine (its log above says why).",
                          fix="Look for the first error in the log; unsupported layers, out-of-memory and "
                              "profile problems are the usual causes.")
    engine_bytes = bytes(plan)
    new_cache = bytes(config.get_timing_cache().serialize())
    return BuildResult(engine_bytes, new_cache, trt_version(trt), list(getattr(logger, "notable", [])),
                       engine_layer_info(trt, logger, engine_bytes))


def engine_layer_info(trt: Any, logger: Any, engine_bytes: bytes) -> dict | None:
    """The engine inspector's JSON (TENSORRT.md §7), or None when this TensorRT cannot give it."""
    import json

    try:
        engine = trt.Runtime(logger).deserialize_cuda_engine(engine_bytes)
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
