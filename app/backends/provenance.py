"""Where a result was made: host, CPU, GPUs with their driver, CUDA, and the versions of trtlab, ONNX, ONNX Runtime
and TensorRT. Every job's result carries it (`provenance` key), so results gathered from several machines — a batch
on a cluster — say which machine measured what. Read without loading CUDA or TensorRT into the process."""

from __future__ import annotations

import platform
import re
import shutil
import socket
import subprocess
from functools import lru_cache
from importlib import metadata
from typing import Any

# Distributions whose versions matter to a result; the first one installed of each group is reported.
_PACKAGES = {"onnx": ("onnx",), "onnxruntime": ("onnxruntime-gpu", "onnxruntime"),
             "tensorrt": ("tensorrt", "tensorrt-cu12", "tensorrt-cu13"),
             "tensorrt_rtx": ("tensorrt-rtx-cu13-bindings", "tensorrt-rtx-cu12-bindings", "tensorrt-rtx"),
             "numpy": ("numpy",)}


@lru_cache(maxsize=1)
def provenance() -> dict[str, Any]:
    """The facts of this machine and its software (cached for the process)."""
    from app import __version__

    versions = {"trtlab": __version__}
    for key, names in _PACKAGES.items():
        versions[key] = next((v for v in (_version(n) for n in names) if v), None)
    gpus, cuda = _gpus()
    return {"host": socket.gethostname(), "platform": platform.platform(), "python": platform.python_version(),
            "cpu": _cpu(), "gpus": gpus, "cuda": cuda, "versions": versions}


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _gpus() -> tuple[list[dict[str, str]], str | None]:
    """NVIDIA GPUs (name, driver) and the CUDA version the driver supports, from nvidia-smi; none without it."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return [], None
    try:
        listed = subprocess.run([exe, "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=20, check=False).stdout
        banner = subprocess.run([exe], capture_output=True, text=True, timeout=20, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return [], None
    gpus = []
    for line in listed.splitlines():
        name, _, driver = line.partition(",")
        if name.strip():
            gpus.append({"name": name.strip(), "driver": driver.strip()})
    m = re.search(r"CUDA Version:\s*([\d.]+)", banner)
    return gpus, m.group(1) if m else None
