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

from app.backends.base import BackendUnavailable
from app.backends.cuda_rt import DeviceBuffer, Stream, check, cudart, time_on_stream
from app.core.errors import TrtlabError

log = logging.getLogger(__name__)


class TrtRuntimeError(TrtlabError):
    title = "TensorRT run failed"
    user_error = False  # the job failed (exit 4 with its log), not the input


def import_trt() -> Any:
    try:
        import tensorrt as trt
    except ImportError as exc:
        raise BackendUnavailable("tensorrt is not installed.", fix='pip install "trtlab[tensorrt]"') from exc
    return trt


def host_dtype(trt: Any, dt: Any) -> tuple[np.dtype, str | None]:
    """The numpy dtype a tensor's bytes are moved as, and the name to decode them as (BF16/FP8), since
    `trt.nptype` raises TypeError for those (TENSORRT.md §6)."""
    try:
        return np.dtype(trt.nptype(dt)), None
    except TypeError:
        name = str(dt).rsplit(".", 1)[-1].upper()
        if name in ("BF16", "BFLOAT16"):
            return np.dtype(np.uint16), "bf16"
        if name in ("FP8", "FLOAT8", "FP8E4M3", "E4M3"):
            return np.dtype(np.uint8), "fp8"
        raise TrtRuntimeError(f"Tensor type {name} cannot be moved to the host by trtlab.",
                              fix="Keep this model's inputs and outputs FP32/FP16/INT32/INT64/BOOL (the precision "
                                  "variants do: graph I/O keeps its dtype).") from None


def decode(raw: np.ndarray, kind: str | None) -> np.ndarray:
    """BF16 bits → float32 exactly; FP8 (E4M3) bytes → float32 through ml_dtypes."""
    if kind is None:
        return raw
    if kind == "bf16":
        return (raw.astype(np.uint32) << 16).view(np.float32)
    import ml_dtypes

    return raw.view(ml_dtypes.float8_e4m3fn).astype(np.float32)


def encode(arr: np.ndarray, dtype: np.dtype, kind: str | None) -> np.ndarray:
    if kind is None:
        return np.ascontiguousarray(arr, dtype=dtype)
    import ml_dtypes

    target = ml_dtypes.bfloat16 if kind == "bf16" else ml_dtypes.float8_e4m3fn
    return np.ascontiguousarray(np.asarray(arr, dtype=np.float32).astype(target)).view(dtype)


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

    def __init__(self, engine_bytes: bytes, logger: Any, notes: list[str] | None = None) -> None:
        trt = self.trt = import_trt()
        self.runtime = trt.Runtime(logger)
        self.engine = self.runtime.deserialize_cuda_engine(engine_bytes)
        if self.engine is None:
            raise TrtRuntimeError("TensorRT could not load the engine (it was built by another TensorRT version, "
                                  "for another GPU, or the file is damaged).", fix="Build the engine again here.")
        self.context = self.engine.create_execution_context()
        if self.context is None:
            raise TrtRuntimeError("TensorRT could not create an execution context (out of GPU memory?).",
                                  fix="Free GPU memory or build with a smaller workspace.")
        self.stream = Stream()
        self.notes = list(notes or [])
        names = [self.engine.get_tensor_name(i) for i in range(self.engine.num_io_tensors)]
        mode = trt.TensorIOMode
        self.input_names = [n for n in names if self.engine.get_tensor_mode(n) == mode.INPUT]
        self.output_names = [n for n in names if self.engine.get_tensor_mode(n) == mode.OUTPUT]
        self.io_types = {n: host_dtype(trt, self.engine.get_tensor_dtype(n)) for n in names}
        self.buffers: dict[str, DeviceBuffer] = {}
        self.allocator: Any = None
        self.dynamic_outputs: list[str] = []

    # ----------------------------------------------------------------- binding
    def profile_problems(self, shapes: dict[str, tuple[int, ...]]) -> list[str]:
        """Input shapes outside the engine's optimization profile 0, named per input and dim."""
        problems = []
        for name in self.input_names:
            if name not in shapes:
                problems.append(f"input '{name}' is missing")
                continue
            if self.engine.is_shape_inference_io(name):
                continue
            lo, _, hi = (tuple(int(d) for d in s) for s in self.engine.get_tensor_profile_shape(name, 0))
            shape = tuple(int(d) for d in shapes[name])
            if len(shape) != len(lo):
                problems.append(f"input '{name}' has rank {len(shape)}, the engine takes rank {len(lo)}")
                continue
            for axis, (d, a, b) in enumerate(zip(shape, lo, hi, strict=True)):
                if not a <= d <= b:
                    problems.append(f"input '{name}' axis {axis} is {d}; the engine's profile allows {a}…{b}")
        return problems

    def _bind(self, feeds: dict[str, np.ndarray]) -> None:
        problems = self.profile_problems({k: tuple(v.shape) for k, v in feeds.items()})
        if problems:
            raise TrtRuntimeError("The inputs do not fit the engine: " + "; ".join(problems) + ".",
                                  fix="Use input shapes inside the profile the engine was built with, or build "
                                      "it again with a profile that covers them.")
        ctx = self.context
        self._host_inputs: dict[str, np.ndarray] = {}
        for name in self.input_names:
            dtype, kind = self.io_types[name]
            arr = encode(feeds[name], dtype, kind)
            if self.engine.is_shape_inference_io(name):
                # Shape tensors are read by TensorRT on the host (TENSORRT.md §6): bind host memory, kept alive.
                self._host_inputs[name] = arr
                if not ctx.set_input_shape(name, arr.shape) or not ctx.set_tensor_address(name, arr.ctypes.data):
                    raise TrtRuntimeError(f"TensorRT refused the values of shape input '{name}'.",
                                          fix="Check the engine's profile for that input.")
                continue
            if not ctx.set_input_shape(name, arr.shape):
                raise TrtRuntimeError(f"TensorRT refused shape {list(arr.shape)} for input '{name}'.",
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
        self.dynamic_outputs = []
        for name in self.output_names:
            shape = tuple(int(d) for d in ctx.get_tensor_shape(name))
            if any(d < 0 for d in shape):  # data-dependent: TensorRT asks the allocator during the run
                if self.allocator is None:
                    self.allocator = _make_output_allocator(self.trt)
                ctx.set_output_allocator(name, self.allocator)
                self.dynamic_outputs.append(name)
                continue
            dtype, _ = self.io_types[name]
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
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
        self.stream.synchronize()
        out = {}
        for name in self.output_names:
            dtype, kind = self.io_types[name]
            if name in self.dynamic_outputs:
                shape = self.allocator.shapes.get(name, (0,))
                buf = self.allocator.buffers.get(name)
            else:
                shape = tuple(int(d) for d in self.context.get_tensor_shape(name))
                buf = self.buffers.get(name)
            host = np.empty(shape, dtype=dtype)
            if host.nbytes and buf is not None:  # an empty data-dependent output may never get a buffer
                buf.download(host, self.stream)
            out[name] = decode(host, kind)
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
        from app.core.engine.inspect import TimingRecorder

        trt = self.trt
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
        for buf in self.buffers.values():
            buf.free()
        if self.allocator is not None:
            for buf in self.allocator.buffers.values():
                buf.free()
        self.buffers = {}
        self.context = None
        self.engine = None
        self.stream.close()


__all__ = ["TrtRuntimeError", "TrtSession", "check", "cudart", "decode", "encode", "host_dtype", "import_trt"]
