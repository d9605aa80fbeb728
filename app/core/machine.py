"""The facts of this machine that results carry: versions of trtlab and the runtimes, the CPU, the NVIDIA GPUs with
their driver, and the CUDA version the driver supports. Read from package metadata and `nvidia-smi`, never by
importing TensorRT or CUDA (that would load them into the process). Used by every job's `provenance`, a project's
`environment`, reports and the batch executors."""

from __future__ import annotations

import os
import platform
import re
import shutil
import socket
import subprocess
from functools import lru_cache
from importlib import metadata
from typing import Any

# Each runtime and the distributions it comes in; the first one installed is reported.
DISTRIBUTIONS = {"onnx": ("onnx",), "onnxruntime": ("onnxruntime-gpu", "onnxruntime"),
                 "tensorrt": ("tensorrt", "tensorrt-cu13", "tensorrt-cu12"),
                 "tensorrt-rtx": ("tensorrt-rtx-cu13-bindings", "tensorrt-rtx-cu12-bindings", "tensorrt-rtx"),
                 "numpy": ("numpy",)}


def versions() -> dict[str, str | None]:
    """trtlab's version and each runtime's (None: not installed)."""
    from app import __version__

    out: dict[str, str | None] = {"trtlab": __version__}
    for key, dists in DISTRIBUTIONS.items():
        out[key] = next((v for v in map(_version, dists) if v), None)
    return out


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@lru_cache(maxsize=1)
def nvidia() -> tuple[tuple[tuple[str, str], ...], str | None]:
    """((GPU name, driver version) per GPU, the CUDA version the driver supports), from nvidia-smi; none
    without it (cached for the process)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return (), None
    try:
        listed = subprocess.run([exe, "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=20, check=False).stdout
        banner = subprocess.run([exe], capture_output=True, text=True, timeout=20, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return (), None
    gpus = []
    for line in listed.splitlines():
        name, _, driver = line.partition(",")
        if name.strip():
            gpus.append((name.strip(), driver.strip()))
    m = re.search(r"CUDA Version:\s*([\d.]+)", banner)
    return tuple(gpus), (m.group(1) if m else None)


def gpu_names() -> list[str]:
    return [name for name, _ in nvidia()[0]]


@lru_cache(maxsize=1)
def provenance() -> dict[str, Any]:
    """Where a result was made: host, platform, Python, CPU, GPUs and driver, CUDA, the GPUs the process was allowed
    to see (CUDA_VISIBLE_DEVICES; None: unset, all), versions."""
    gpus, cuda = nvidia()
    return {"host": socket.gethostname(), "platform": platform.platform(), "python": platform.python_version(),
            "cpu": cpu_name(), "gpus": [{"name": n, "driver": d} for n, d in gpus], "cuda": cuda,
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"), "versions": versions()}


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None
