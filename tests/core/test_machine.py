"""The machine facts results carry: versions from package metadata (TensorRT for RTX by its real wheel names),
GPUs from nvidia-smi when it is there."""

from __future__ import annotations

import importlib.util
import subprocess
from importlib import metadata

import pytest

from app.core import machine


def test_versions_name_the_installed_runtimes():
    import onnx
    import onnxruntime

    v = machine.versions()
    assert v["onnx"] == onnx.__version__ and v["onnxruntime"] == onnxruntime.__version__
    if importlib.util.find_spec("tensorrt_rtx_bindings") is not None:
        # Installed as tensorrt-rtx-cu13-bindings: found under its real distribution name.
        assert v["tensorrt-rtx"] == metadata.version("tensorrt-rtx-cu13-bindings")
    from app.core.project import environment

    # A project's environment leaves out runtimes that are not installed (TensorRT for RTX on a GPU machine
    # without it, say): the same answer, read without a KeyError.
    assert environment()["versions"].get("tensorrt-rtx") == v["tensorrt-rtx"]


def test_gpus_and_cuda_come_from_nvidia_smi(monkeypatch):
    machine.nvidia.cache_clear()
    monkeypatch.setattr(machine.shutil, "which", lambda name: "/usr/bin/nvidia-smi")
    outputs = {True: "NVIDIA H100 80GB HBM3, 570.86.15\n", False: "| NVIDIA-SMI 570.86.15   CUDA Version: 12.8 |"}

    def fake_run(cmd, **kwargs):
        return subprocess.CompletedProcess(cmd, 0, stdout=outputs[len(cmd) > 1], stderr="")

    monkeypatch.setattr(machine.subprocess, "run", fake_run)
    try:
        assert machine.nvidia() == ((("NVIDIA H100 80GB HBM3", "570.86.15"),), "12.8")
        assert machine.gpu_names() == ["NVIDIA H100 80GB HBM3"]
    finally:
        machine.nvidia.cache_clear()


def test_no_nvidia_smi_means_no_gpus(monkeypatch):
    machine.nvidia.cache_clear()
    monkeypatch.setattr(machine.shutil, "which", lambda name: None)
    try:
        assert machine.nvidia() == ((), None) and machine.gpu_names() == []
    finally:
        machine.nvidia.cache_clear()


@pytest.mark.parametrize("key", ["host", "platform", "python", "cpu", "gpus", "cuda", "versions"])
def test_provenance_has_every_fact(key):
    assert key in machine.provenance()
