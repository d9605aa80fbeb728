"""cuda-python buffers, streams and events: run for real where a CUDA GPU and cuda-python exist (the GPU
machine), skipped elsewhere with the reason."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from app.backends import cuda_rt


def _gpu_or_skip() -> cuda_rt.GpuInfo:
    try:
        return cuda_rt.gpu_info()
    except cuda_rt.CudaUnavailable as exc:
        pytest.skip(f"no CUDA GPU with cuda-python here: {exc.message}")


def test_missing_cuda_python_is_a_clear_error(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_cuda(name, *args, **kwargs):
        if name == "cuda" or name.startswith("cuda."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    cuda_rt.cudart.cache_clear()
    monkeypatch.setattr(builtins, "__import__", no_cuda)
    try:
        with pytest.raises(cuda_rt.CudaUnavailable) as exc:
            cuda_rt.cudart()
        assert "trtlab[tensorrt]" in exc.value.fix
    finally:
        monkeypatch.undo()
        cuda_rt.cudart.cache_clear()


def test_gpu_info_names_the_device():
    info = _gpu_or_skip()
    assert info.name and "\x00" not in info.name
    assert re.fullmatch(r"\d+\.\d+", info.compute_capability), info.compute_capability
    assert int(info.compute_capability.split(".")[0]) >= 5
    smi = shutil.which("nvidia-smi")
    if smi:  # the driver's own word for it
        out = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                             text=True).stdout.split()
        assert not out or info.compute_capability in out
    assert info.total_memory > 1 << 30 and info.driver_version > 0


def test_round_trip_through_device_memory_on_a_stream():
    _gpu_or_skip()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 1000), dtype=np.float32)
    stream = cuda_rt.Stream()
    try:
        with cuda_rt.DeviceBuffer(a.nbytes) as buf:
            buf.upload(a, stream)
            out = buf.download(np.empty_like(a), stream)
            assert np.array_equal(out, a)
            buf.ensure(a.nbytes * 4)  # growing keeps a valid address
            buf.upload(np.arange(10, dtype=np.int64))
            assert np.array_equal(buf.download(np.empty(10, np.int64)), np.arange(10))
            with pytest.raises(cuda_rt.CudaError):
                buf.download(np.empty(buf.nbytes + 1, np.uint8))
        assert buf.ptr == 0
    finally:
        stream.close()


def test_events_time_device_work():
    _gpu_or_skip()
    stream = cuda_rt.Stream()
    big = np.ones(64 << 20, np.uint8)
    try:
        with cuda_rt.DeviceBuffer(big.nbytes) as buf:
            rt = cuda_rt.cudart()

            def copy():
                cuda_rt.check(rt.cudaMemcpyAsync(buf.ptr, big.ctypes.data, big.nbytes,
                                                 rt.cudaMemcpyKind.cudaMemcpyHostToDevice, stream.handle))

            ms = cuda_rt.time_on_stream(copy, stream)
            assert 0.0 < ms < 5000.0
    finally:
        stream.close()


def test_cuda_errors_are_typed():
    _gpu_or_skip()
    with pytest.raises(cuda_rt.CudaError) as exc:
        cuda_rt.DeviceBuffer(1 << 50)  # a petabyte: out of memory
    assert "cudaErrorMemoryAllocation" in exc.value.message
