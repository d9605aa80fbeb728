"""Running a TensorRT engine: cuda-python buffers, `set_input_shape` / `set_tensor_address` /
`execute_async_v3` on a non-default stream, shapes checked against the engine's profile before running,
an output allocator for data-dependent shapes, BF16/FP8 outputs decoded, CUDA-event timing.

Written from TENSORRT.md §6 (identical calls in 10.x and 11.x). TensorRT is imported inside functions,
and this module runs only in job processes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from app.backends.cuda_rt import DeviceBuffer, Stream, check, cudart, time_on_stream
from app.core.errors import TrtlabError

log = logging.getLogger(__name__)


class TrtRuntimeError(TrtlabError):
    title = "TensorRT run failed"
    user_error = False  # the job failed (exit 4 with its log), not the input


def import_trt() -> Any:
    """The `tensorrt` module (TensorRT 10.x/11.x); TensorRT for RTX comes from `trt_flavour.RTX.import_module()`."""
    from app.backends.trt_flavour import TENSORRT

    return TENSORRT.import_module()


def tensor_type(dt: Any) -> str:
    """The TensorRT DataType name of a tensor (app.core.engine.dtypes knows every one, BF16/FP8/INT4
    included, where `trt.nptype` raises for them: TENSORRT.md §6)."""
    from app.core.engine import trt_name

    return trt_name(dt)


def encode(arr: np.ndarray, type_name: str, name: str = "") -> np.ndarray:
    """Host bytes (uint8) for a tensor of this TensorRT type, from any numeric array."""
    from app.core.engine import encode as to_bytes

    return np.frombuffer(to_bytes(arr, type_name, name=name), dtype=np.uint8)


def decode(raw: np.ndarray, type_name: str, shape: tuple[int, ...], name: str = "") -> np.ndarray:
    """A tensor's host bytes as an array for comparison: float types as float32 exactly (BF16, FP8 too)."""
    from app.core.engine import decode_output

    return decode_output(raw, type_name, shape, name=name)


def _make_output_allocator(trt: Any) -> Any:
    class OutputAllocator(trt.IOutputAllocator):
        """Device memory for outputs whose shape is known only after the run (NonZero, NMS…)."""

        def __init__(self) -> None:
            trt.IOutputAllocator.__init__(self)
            self.buffers: dict[str, DeviceBuffer] = {}
            self.shapes: dict[str, tuple[int, ...]] = {}

        def reallocate_output(self, tensor_name: str, memory: int, size: int, alignment: int) -> int:
            buf = self.buffers.get(tensor_name)
            if buf is None:
                buf = self.buffers[tensor_name] = DeviceBuffer(size)
            else:
                buf.ensure(size)
            return buf.ptr

        def notify_shape(self, tensor_name: str, shape: Any) -> None:
            self.shapes[tensor_name] = tuple(int(d) for d in shape)

    return OutputAllocator()


class TrtSession:
    """A deserialized engine with its execution context, stream and buffers (the backend Session protocol)."""

    def __init__(self, engine_bytes: bytes, logger: Any, notes: list[str] | None = None, *, trt: Any = None,
                 runtime_cache: str | None = None) -> None:
        trt = self.trt = trt if trt is not None else import_trt()
        self.runtime = trt.Runtime(logger)
        self.engine = self.runtime.deserialize_cuda_engine(engine_bytes)
        if self.engine is None:
            raise TrtRuntimeError("TensorRT could not load the engine (it was built by another TensorRT version, "
                                  "for another GPU, or the file is damaged).", fix="Build the engine again here.")
        self.runtime_cache_path = runtime_cache
        self._runtime_cache: Any = None
        self.context = self._make_context()
        if self.context is None:
            raise TrtRuntimeError("TensorRT could not create an execution context (out of GPU memory?).",
                                  fix="Free GPU memory or build with a smaller workspace.")
        self.stream = Stream()
        self.notes = list(notes or [])
        names = [self.engine.get_tensor_name(i) for i in range(self.engine.num_io_tensors)]
        mode = trt.TensorIOMode
        self.input_names = [n for n in names if self.engine.get_tensor_mode(n) == mode.INPUT]
        self.output_names = [n for n in names if self.engine.get_tensor_mode(n) == mode.OUTPUT]
        self.io_types = {n: tensor_type(self.engine.get_tensor_dtype(n)) for n in names}
        self.buffers: dict[str, DeviceBuffer] = {}
        self.allocator: Any = None
        self.dynamic_outputs: list[str] = []

    def _make_context(self) -> Any:
        """An execution context; with a runtime cache file (TensorRT for RTX: the kernels it compiled on this
        GPU before), through an IRuntimeConfig that reads it, so the first runs need not compile again."""
        if self.runtime_cache_path is None or not hasattr(self.engine, "create_runtime_config"):
            return self.engine.create_execution_context()
        from pathlib import Path

        try:
            config = self.engine.create_runtime_config()
            cache = config.create_runtime_cache()
            path = Path(self.runtime_cache_path)
            if path.is_file():
                cache.deserialize(path.read_bytes())
            config.set_runtime_cache(cache)
            context = self.engine.create_execution_context(config)
            self._runtime_cache, self._runtime_config = cache, config
            return context
        except Exception as exc:  # a stale or unreadable cache costs compile time, never the run
            log.warning("runtime cache %s not used: %s", self.runtime_cache_path, exc)
            return self.engine.create_execution_context()

    def _save_runtime_cache(self) -> None:
        if self._runtime_cache is None or self.runtime_cache_path is None:
            return
        try:
            from app.core.fileio import atomic_write_bytes

            atomic_write_bytes(self.runtime_cache_path, bytes(self._runtime_cache.serialize()))
        except Exception as exc:
            log.warning("runtime cache %s not saved: %s", self.runtime_cache_path, exc)

    # ----------------------------------------------------------------- binding
    def profile_problems(self, shapes: dict[str, tuple[int, ...]]) -> list[str]:
        """Input shapes outside the engine's optimization profile 0, named per input and axis."""
        from app.core.engine import InputProfile, OptimizationProfile, shape_in_profile

        ranges = {}
        for name in self.input_names:
            if self.engine.is_shape_inference_io(name):
                continue
            lo, opt, hi = (tuple(int(d) for d in s) for s in self.engine.get_tensor_profile_shape(name, 0))
            ranges[name] = InputProfile(name, lo, opt, hi)
        return shape_in_profile(OptimizationProfile(ranges), {k: v for k, v in shapes.items() if k in ranges})

    def _bind(self, feeds: dict[str, np.ndarray]) -> None:
        problems = self.profile_problems({k: tuple(v.shape) for k, v in feeds.items()})
        if problems:
            raise TrtRuntimeError("The inputs do not fit the engine: " + "; ".join(problems) + ".",
                                  fix="Use input shapes inside the profile the engine was built with, or build "
                                      "it again with a profile that covers them.")
        ctx = self.context
        self._host_inputs: dict[str, np.ndarray] = {}
        for name in self.input_names:
            shape = tuple(np.shape(feeds[name]))
            arr = encode(feeds[name], self.io_types[name], name)
            if self.engine.is_shape_inference_io(name):
                # Shape tensors are read by TensorRT on the host (TENSORRT.md §6): bind host memory, kept alive.
                self._host_inputs[name] = arr
                if not ctx.set_input_shape(name, shape) or not ctx.set_tensor_address(name, arr.ctypes.data):
                    raise TrtRuntimeError(f"TensorRT refused the values of shape input '{name}'.",
                                          fix="Check the engine's profile for that input.")
                continue
            if not ctx.set_input_shape(name, shape):
                raise TrtRuntimeError(f"TensorRT refused shape {list(shape)} for input '{name}'.",
                                      fix="Check the engine's optimization profile.")
            buf = self.buffers.get(name)
            if buf is None:
                buf = self.buffers[name] = DeviceBuffer(arr.nbytes)
            buf.ensure(arr.nbytes)
            buf.upload(arr, self.stream)
            ctx.set_tensor_address(name, buf.ptr)
        missing = ctx.infer_shapes()
        if missing:
            raise TrtRuntimeError(f"TensorRT cannot infer the shapes of {', '.join(map(str, missing))}.",
                                  fix="Give every input (shape inputs included) a value.")
        from app.core.engine import buffer_nbytes

        self.dynamic_outputs = []
        for name in self.output_names:
            shape = tuple(int(d) for d in ctx.get_tensor_shape(name))
            if any(d < 0 for d in shape):  # data-dependent: TensorRT asks the allocator during the run
                if self.allocator is None:
                    self.allocator = _make_output_allocator(self.trt)
                ctx.set_output_allocator(name, self.allocator)
                self.dynamic_outputs.append(name)
                continue
            nbytes = buffer_nbytes(self.io_types[name], shape)
            buf = self.buffers.get(name)
            if buf is None:
                buf = self.buffers[name] = DeviceBuffer(nbytes)
            buf.ensure(nbytes)
            ctx.set_tensor_address(name, buf.ptr)

    def _execute(self) -> None:
        if not self.context.execute_async_v3(self.stream.ptr):
            raise TrtRuntimeError("TensorRT's execute_async_v3 failed (the log says why).",
                                  fix="See the job log; out of GPU memory or a bad input shape are usual causes.")

    def _fetch(self) -> dict[str, np.ndarray]:
        from app.core.engine import buffer_nbytes

        self.stream.synchronize()
        out = {}
        for name in self.output_names:
            if name in self.dynamic_outputs:
                shape = self.allocator.shapes.get(name, (0,))
                buf = self.allocator.buffers.get(name)
            else:
                shape = tuple(int(d) for d in self.context.get_tensor_shape(name))
                buf = self.buffers.get(name)
            raw = np.zeros(buffer_nbytes(self.io_types[name], shape), dtype=np.uint8)
            if raw.nbytes and buf is not None:  # an empty data-dependent output may never get a buffer
                buf.download(raw, self.stream)
            out[name] = decode(raw, self.io_types[name], shape, name)
        return out

    # ----------------------------------------------------------------- Session protocol
    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        self._bind(feeds)
        self._execute()
        return self._fetch()

    def timed_runner(self, feeds: dict[str, np.ndarray], mode: str) -> Callable[[], float | None]:
        if mode == "device_only":
            self._bind(feeds)

            def once() -> float:
                # CUDA events around the enqueue: device time only, inputs and outputs stay on the GPU.
                return time_on_stream(self._execute, self.stream)
            return once

        def once_e2e() -> float:
            t0 = time.perf_counter_ns()
            self.run(feeds)
            return (time.perf_counter_ns() - t0) / 1e6
        return once_e2e

    def profile_layers(self, feeds: dict[str, np.ndarray], runs: int = 20) -> list[tuple[str, float]]:
        """(engine layer, ms) for every layer of `runs` runs, through an IProfiler (TENSORRT.md §7)."""
        from app.core.engine import TimingRecorder

        trt: Any = self.trt  # the TensorRT module (untyped): its IProfiler is subclassed below
        recorder = TimingRecorder()

        class Profiler(trt.IProfiler):
            def __init__(self) -> None:
                trt.IProfiler.__init__(self)

            def report_layer_time(self, layer_name: str, ms: float) -> None:
                recorder.report_layer_time(layer_name, ms)

        profiler = Profiler()
        self._bind(feeds)
        self.context.profiler = profiler
        try:
            for _ in range(max(1, runs)):
                self._execute()
                self.stream.synchronize()
                if not getattr(self.context, "enqueue_emits_profile", True):
                    self.context.report_to_profiler()
        finally:
            self.context.profiler = None
        return list(recorder.records)

    def close(self) -> None:
        try:
            if self.stream.handle is not None:
                self.stream.synchronize()
        except TrtlabError:
            pass
        self._save_runtime_cache()
        self._runtime_cache = None
        for buf in self.buffers.values():
            buf.free()
        if self.allocator is not None:
            for buf in self.allocator.buffers.values():
                buf.free()
        self.buffers = {}
        self.context = None
        self.engine = None
        self.stream.close()


__all__ = ["TrtRuntimeError", "TrtSession", "check", "cudart", "decode", "encode", "import_trt", "tensor_type"]
