"""Finding TensorRT, cuda-python and the GPU without importing TensorRT or initialising CUDA."""

from __future__ import annotations

from app.backends.trt_env import GpuListing, TrtEnvironment, environment, parse_nvidia_smi

H100 = GpuListing("NVIDIA H100 80GB HBM3", "9.0", 81559)


def test_nvidia_smi_lines_are_parsed():
    text = "NVIDIA H100 80GB HBM3, 9.0, 81559\nNVIDIA H200, 9.0, 143771\n\n"
    gpus = parse_nvidia_smi(text)
    assert gpus == [H100, GpuListing("NVIDIA H200", "9.0", 143771)]
    assert parse_nvidia_smi("No devices were found") == []


def test_each_missing_piece_is_named_with_its_fix():
    a = TrtEnvironment(None, "13.0", [H100]).availability()
    assert not a.available and a.reason == "tensorrt is not installed." and "trtlab[tensorrt]" in a.install_hint
    assert a.details["gpu"] == H100.name and a.details["compute_capability"] == "9.0"
    a = TrtEnvironment("8.6.1", "13.0", [H100]).availability()
    assert not a.available and "10.x and 11.x" in a.reason
    a = TrtEnvironment("10.13.0", None, [H100]).availability()
    assert not a.available and "cuda-python" in a.reason
    a = TrtEnvironment("11.1.0", "13.0", [], "nvidia-smi is not on the PATH").availability()
    assert not a.available and "no NVIDIA GPU" in a.reason and "nvidia-smi" in a.reason
    a = TrtEnvironment("11.1.0", "13.0", [H100]).availability()
    assert a.available and a.details["tensorrt"] == "11.1.0" and a.details["gpu_memory"] == "80 GiB"


def test_this_machine_is_described_without_importing_tensorrt():
    import sys

    env = environment()
    assert "tensorrt" not in sys.modules
    a = env.availability()
    if env.tensorrt is None:
        assert not a.available and a.reason == "tensorrt is not installed."
