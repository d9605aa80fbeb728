"""`trt-rtx` availability: "can build" (the two wheels) and "can run" (cuda-python and an RTX-class GPU) said
separately, found without importing TensorRT for RTX; the backend's name everywhere the CLI and GUI look."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

from app.backends import BACKEND_NAMES, ENGINE_BACKENDS, Target, get_backend
from app.backends.trt_env import GpuListing, RtxEnvironment, TrtEnvironment, rtx_environment

H100 = GpuListing("NVIDIA H100 80GB HBM3", "9.0", 81559)
RTX4090 = GpuListing("NVIDIA GeForce RTX 4090", "8.9", 24564)
T4 = GpuListing("Tesla T4", "7.5", 15360)
V = "1.7.1.116"


def test_the_backend_is_registered():
    assert "trt-rtx" in BACKEND_NAMES and ENGINE_BACKENDS == ("trt", "trt-rtx")
    assert Target.parse("trt-rtx:fp16").name == "trt-rtx:fp16" and Target.parse("trt-rtx").precision == "fp32"
    backend = get_backend("trt-rtx")
    assert backend.name == "trt-rtx" and set(backend.precisions) == {"fp32", "fp16", "bf16", "int8"}


def test_building_and_running_are_told_apart():
    a = RtxEnvironment(V, V, None, []).availability()
    assert a.can_build and not a.can_run and not a.available
    assert "builds engines here" in a.reason and "RTX-class NVIDIA GPU" in a.reason
    assert a.to_json()["can_build"] is True and a.to_json()["can_run"] is False
    a = RtxEnvironment(V, V, "13.0", [H100]).availability()
    assert a.can_build and not a.available
    assert "RTX engines do not run on compute capability 9.0" in a.reason and "H100" in a.reason
    assert a.details["can_build"] == "yes" and a.details["can_run"] == "no"
    a = RtxEnvironment(V, V, "13.0", [RTX4090]).availability()
    assert a.available and a.can_build and a.reason == ""
    a = RtxEnvironment(V, V, None, [RTX4090]).availability()
    assert a.can_build and not a.available and "cuda-python" in a.reason and "cuda-python" in a.install_hint
    assert RtxEnvironment(V, V, "13.0", [T4]).availability().available  # Turing runs plans built for 7.5


def test_each_missing_wheel_is_named_with_its_fix():
    a = RtxEnvironment(None, None, "13.0", [RTX4090]).availability()
    assert a.can_build is False and a.build_reason == "TensorRT for RTX is not installed."
    assert a.install_hint == 'pip install "trtlab[tensorrt-rtx]"' and not a.available
    a = RtxEnvironment(V, None, None, []).availability()
    assert not a.can_build and "without its libraries (tensorrt-rtx-cu13-libs)" in a.build_reason
    a = RtxEnvironment("2.0.0", "2.0.0", None, []).availability()
    assert not a.can_build and "drives 1.x" in a.build_reason


def test_tensorrt_10_11_builds_exactly_where_it_runs():
    a = TrtEnvironment("11.1.0", "13.0", [H100]).availability()
    assert a.available and a.can_build
    a = TrtEnvironment("11.1.0", "13.0", []).availability()
    assert not a.available and a.can_build is False and "no NVIDIA GPU" in a.build_reason


def test_this_machine():
    env = rtx_environment()
    a = env.availability()
    if importlib.util.find_spec("tensorrt_rtx_bindings") is not None:
        assert env.bindings == env.libs == V and a.can_build
    if not env.gpus:
        assert not a.available and "builds engines here" in a.reason


def test_importing_the_backends_loads_no_tensorrt_and_no_qt():
    code = ("import sys; import app.backends, app.backends.trt_rtx, app.backends.trt, app.backends.tasks.common, "
            "app.backends.tasks.run, app.backends.tasks.compare, app.backends.tasks.bench, "
            "app.backends.tasks.diagnose, app.backends.tasks.fallback, app.backends.tasks.variant, "
            "app.backends.tasks.build; "
            "from app.backends import get_backend; get_backend('trt-rtx').availability(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('tensorrt', 'tensorrt_rtx', 'tensorrt_rtx_bindings', 'PySide6', 'pyqtgraph')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
