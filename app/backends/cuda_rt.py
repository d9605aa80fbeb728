"""CUDA device memory, streams and events through cuda-python (NVIDIA's own binding; no pycuda, no compiler).

Used by the native TensorRT backend: input/output buffers, a non-default stream for `execute_async_v3`,
and CUDA events for device-only latency. cuda-python's calls return tuples `(err, *values)`; every call
goes through `check`, which turns an error code into `CudaError` with CUDA's own name for it.

The import is version-robust: `cuda.bindings.runtime` (cuda-python ≥ 12.8, used by TensorRT ≥ 10.14's
samples) or the older `cuda.cudart`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.core.errors import TrtlabError


class CudaError(TrtlabError):
    title = "CUDA error"
    user_error = False  # the job failed (exit 4 with its log), not the input


class CudaUnavailable(TrtlabError):
    title = "CUDA not available"


@functools.cache
def cudart() -> Any:
    """The cuda-python runtime module; CudaUnavailable (with the install command) when it is missing."""
    try:
        from cuda.bindings import runtime  # cuda-python ≥ 12.8
        return runtime
    except ImportError:
        pass
    try:
        from cuda import cudart as runtime  # older cuda-python layout
        return runtime
    except ImportError as exc:
        raise CudaUnavailable("cuda-python is not installed, so trtlab cannot reach the GPU for TensorRT.",
                              fix='Install it: pip install "trtlab[tensorrt]" (or pip install cuda-python).') from exc


def check(result: Any) -> Any:
    """Unwrap a cuda-python result tuple; raise CudaError on anything but cudaSuccess."""
    rt = cudart()
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != rt.cudaError_t.cudaSuccess:
        name = rt.cudaGetErrorName(err)[1]
        text = rt.cudaGetErrorString(err)[1]
        name = name.decode() if isinstance(name, bytes) else str(name)
        text = text.decode() if isinstance(text, bytes) else str(text)
        raise CudaError(f"CUDA call failed: {name} ({text}).",
                        fix="Check that the GPU is free and the driver works (nvidia-smi); out of memory needs a "
                            "smaller batch or workspace.")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


@dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str
    compute_capability: str      # "9.0"
    total_memory: int            # bytes
    driver_version: int
    runtime_version: int

    def to_json(self) -> dict:
        return {"index": self.index, "name": self.name, "compute_capability": self.compute_capability,
                "total_memory": self.total_memory, "driver_version": self.driver_version,
                "runtime_version": self.runtime_version}


def gpu_info(index: int = 0) -> GpuInfo:
    """Name, compute capability and memory of a CUDA device (CudaUnavailable when there is none)."""
    rt = cudart()
    err, count = rt.cudaGetDeviceCount()
    if err != rt.cudaError_t.cudaSuccess or count == 0:
        raise CudaUnavailable("No CUDA GPU is visible to this process.",
                              fix="Run on a machine with an NVIDIA GPU and driver (nvidia-smi must list it).")
    if not 0 <= index < count:
        raise CudaUnavailable(f"GPU {index} does not exist; this machine has {count}.", fix="Use GPU 0.")
    props = check(rt.cudaGetDeviceProperties(index))
    name = props.name.decode(errors="replace") if isinstance(props.name, bytes) else str(props.name)
    return GpuInfo(index, name.rstrip("\x00").strip(), f"{props.major}.{props.minor}", int(props.totalGlobalMem),
                   int(check(rt.cudaDriverGetVersion())), int(check(rt.cudaRuntimeGetVersion())))


class Stream:
    """A non-default CUDA stream (TensorRT's enqueue wants one)."""

    def __init__(self) -> None:
        self.handle = check(cudart().cudaStreamCreate())

    @property
    def ptr(self) -> int:
        return int(self.handle)

    def synchronize(self) -> None:
        check(cudart().cudaStreamSynchronize(self.handle))

    def close(self) -> None:
        if self.handle is not None:
            check(cudart().cudaStreamDestroy(self.handle))
            self.handle = None


class Event:
    def __init__(self) -> None:
        self.handle = check(cudart().cudaEventCreate())

    def record(self, stream: Stream) -> None:
        check(cudart().cudaEventRecord(self.handle, stream.handle))

    def synchronize(self) -> None:
        check(cudart().cudaEventSynchronize(self.handle))

    def elapsed_ms(self, start: Event) -> float:
        """Milliseconds from `start` to this event (both recorded, this one completed)."""
        return float(check(cudart().cudaEventElapsedTime(start.handle, self.handle)))

    def close(self) -> None:
        if self.handle is not None:
            check(cudart().cudaEventDestroy(self.handle))
            self.handle = None


class DeviceBuffer:
    """`nbytes` of device memory (at least 1, so empty tensors still get an address)."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = int(nbytes)
        self.ptr = int(check(cudart().cudaMalloc(max(1, self.nbytes))))

    def ensure(self, nbytes: int) -> None:
        """Grow to hold `nbytes` (contents are not kept)."""
        if nbytes > self.nbytes:
            self.free()
            self.nbytes = int(nbytes)
            self.ptr = int(check(cudart().cudaMalloc(max(1, self.nbytes))))

    def upload(self, array: np.ndarray, stream: Stream | None = None) -> None:
        a = np.ascontiguousarray(array)
        if a.nbytes > self.nbytes:
            raise CudaError(f"{a.nbytes} bytes do not fit a {self.nbytes}-byte buffer.", fix="Allocate a larger one.")
        rt = cudart()
        kind = rt.cudaMemcpyKind.cudaMemcpyHostToDevice
        if stream is None:
            check(rt.cudaMemcpy(self.ptr, a.ctypes.data, a.nbytes, kind))
        else:
            check(rt.cudaMemcpyAsync(self.ptr, a.ctypes.data, a.nbytes, kind, stream.handle))
            stream.synchronize()  # the host array may be a temporary: never leave a copy from it pending

    def download(self, out: np.ndarray, stream: Stream | None = None) -> np.ndarray:
        """Copy the buffer's first `out.nbytes` bytes into `out` (C-contiguous) and return it."""
        if not out.flags.c_contiguous:
            raise CudaError("The host array must be C-contiguous.", fix="Pass np.ascontiguousarray(...).")
        if out.nbytes > self.nbytes:
            raise CudaError(f"{out.nbytes} bytes asked of a {self.nbytes}-byte buffer.", fix="Check the shape.")
        rt = cudart()
        kind = rt.cudaMemcpyKind.cudaMemcpyDeviceToHost
        if stream is None:
            check(rt.cudaMemcpy(out.ctypes.data, self.ptr, out.nbytes, kind))
        else:
            check(rt.cudaMemcpyAsync(out.ctypes.data, self.ptr, out.nbytes, kind, stream.handle))
            stream.synchronize()
        return out

    def free(self) -> None:
        if self.ptr:
            check(cudart().cudaFree(self.ptr))
            self.ptr = 0

    def __enter__(self) -> DeviceBuffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.free()


def time_on_stream(fn: Any, stream: Stream) -> float:
    """Device time in ms of the work `fn()` enqueues on `stream`, by CUDA events around it."""
    start, end = Event(), Event()
    try:
        start.record(stream)
        fn()
        end.record(stream)
        end.synchronize()
        return end.elapsed_ms(start)
    finally:
        start.close()
        end.close()
