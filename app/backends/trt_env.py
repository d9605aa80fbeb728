"""What the native TensorRT backends need, found without importing TensorRT or touching the GPU.

The GUI asks this to grey out `trt` with a reason; it must not load CUDA into the GUI process (TensorRT and
GPU work run in job processes only). So the packages are read from their installed metadata, and the GPU
(name, compute capability, memory) through cuda-python in a short child process
(`app.backends.cuda_rt.gpu_info`), or from `nvidia-smi` when cuda-python is not installed.

TensorRT for RTX (`rtx_environment`) says "can build" and "can run" separately: its builder needs only the two
wheels (bindings and libs); running needs cuda-python and a GPU of an RTX compute capability (8.0, 8.6, 8.9,
12.x; 7.5 for plans built for it), which the H100/H200 (9.0) are not.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import shutil
import subprocess
from dataclasses import dataclass, field

from app.backends.base import Availability

INSTALL_HINT = 'pip install "trtlab[tensorrt]"'
RTX_INSTALL_HINT = 'pip install "trtlab[tensorrt-rtx]"'
SUPPORTED_MAJORS = (10, 11)
RTX_BINDINGS = ("tensorrt-rtx-cu13-bindings", "tensorrt-rtx-cu12-bindings", "tensorrt-rtx")
RTX_LIBS = ("tensorrt-rtx-cu13-libs", "tensorrt-rtx-cu12-libs", "tensorrt-rtx")


@dataclass(frozen=True)
class GpuListing:
    name: str
    compute_capability: str
    memory_mib: int


@dataclass(frozen=True)
class TrtEnvironment:
    tensorrt: str | None                 # version, None when not installed
    cuda_python: str | None
    gpus: list[GpuListing] = field(default_factory=list)
    gpu_error: str = ""

    def availability(self) -> Availability:
        details = {"tensorrt": self.tensorrt or "not installed", "cuda-python": self.cuda_python or "not installed"}
        if self.gpus:
            g = self.gpus[0]
            details.update({"gpu": g.name, "compute_capability": g.compute_capability,
                            "gpu_memory": f"{g.memory_mib / 1024:.0f} GiB"})
        if self.tensorrt is None:
            return Availability(False, "tensorrt is not installed.", INSTALL_HINT, details, can_build=False,
                                build_reason="tensorrt is not installed.")
        # TensorRT 10/11 builds for the GPU it runs on: it can build exactly where it can run.
        a = self._run_availability(details)
        return Availability(a.available, a.reason, a.install_hint, details, can_build=a.available,
                            build_reason=a.reason)

    def _run_availability(self, details: dict[str, str]) -> Availability:
        major = trt_major(self.tensorrt or "")
        if major not in SUPPORTED_MAJORS and self.tensorrt != "unknown":
            return Availability(False, f"TensorRT {self.tensorrt} is installed; trtlab supports TensorRT 10.x and "
                                       "11.x.", 'pip install "tensorrt>=10,<12"', details)
        if self.cuda_python is None:
            return Availability(False, "cuda-python is not installed (trtlab moves TensorRT's buffers with it).",
                                INSTALL_HINT, details)
        if not self.gpus:
            return Availability(False, f"no NVIDIA GPU found{': ' + self.gpu_error if self.gpu_error else ''}.",
                                "Run on a machine with an NVIDIA GPU and driver (nvidia-smi must list it).", details)
        return Availability(True, "", "", details)


@dataclass(frozen=True)
class RtxEnvironment:
    bindings: str | None                 # version of the bindings wheel, None when not installed
    libs: str | None                     # version of the libs wheel
    cuda_python: str | None
    gpus: list[GpuListing] = field(default_factory=list)
    gpu_error: str = ""

    def availability(self) -> Availability:
        from app.core.engine import run_problem

        details = {"tensorrt-rtx": self.bindings or "not installed", "tensorrt-rtx libs": self.libs or "not installed",
                   "cuda-python": self.cuda_python or "not installed"}
        if self.gpus:
            g = self.gpus[0]
            details.update({"gpu": g.name, "compute_capability": g.compute_capability})
        build = ""
        if self.bindings is None:
            build = "TensorRT for RTX is not installed."
        elif self.libs is None:
            build = ("TensorRT for RTX's bindings are installed without its libraries (tensorrt-rtx-cu13-libs), so "
                     "the import fails.")
        elif trt_major(self.bindings) != 1:
            build = f"TensorRT for RTX {self.bindings} is installed; trtlab drives 1.x (tested with 1.7.1.116)."
        if build:
            details["can_build"] = "no"
            return Availability(False, build, RTX_INSTALL_HINT, details, can_build=False, build_reason=build)
        details["can_build"] = "yes"
        # Not an install problem when no RTX-class GPU is here: building still works, so no install hint.
        hint = ""
        if not self.gpus:
            gpu = f" ({self.gpu_error})" if self.gpu_error else ""
            run = (f"builds engines here (trtlab build --backend trt-rtx), but running one needs an RTX-class NVIDIA "
                   f"GPU and none was found{gpu}.")
        else:
            g = self.gpus[0]
            problem = run_problem((), g.compute_capability, g.name)
            if problem and g.compute_capability.strip() == "7.5":
                problem = ""  # Turing runs plans built for it (--target-cc 7.5)
            run = f"builds engines here, but cannot run them: {problem}" if problem else ""
            if not problem and self.cuda_python is None:
                run = "builds engines here; running them needs cuda-python (trtlab moves buffers with it)."
                hint = 'pip install "cuda-python>=12"'
        details["can_run"] = "no" if run else "yes"
        if run:
            return Availability(False, run, hint, details, can_build=True)
        return Availability(True, "", "", details, can_build=True)


def trt_major(version: str) -> int | None:
    try:
        return int(version.split(".")[0])
    except ValueError:
        return None


def _dist_version(*names: str) -> str | None:
    for n in names:
        try:
            return importlib.metadata.version(n)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def parse_nvidia_smi(text: str) -> list[GpuListing]:
    """`nvidia-smi --query-gpu=name,compute_cap,memory.total --format=csv,noheader,nounits` lines."""
    out = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 3 or not parts[0]:
            continue
        try:
            mem = int(float(parts[2]))
        except ValueError:
            mem = 0
        out.append(GpuListing(parts[0], parts[1], mem))
    return out


def _trt_version_by_import() -> str:
    """`tensorrt.__version__`, read in a child process (a package installed without metadata)."""
    import sys

    try:
        r = subprocess.run([sys.executable, "-c", "import tensorrt; print(tensorrt.__version__)"],
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() else "unknown"


def _gpus_by_cuda_python() -> tuple[list[GpuListing], str]:
    """GPU 0 through cuda-python, asked in a child process so that this one never initialises CUDA."""
    import json
    import sys

    code = ("import json; from app.backends.cuda_rt import gpu_info; i = gpu_info(); "
            "print(json.dumps([i.name, i.compute_capability, i.total_memory]))")
    try:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [], f"the GPU query failed ({exc})"
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or [""])[-1]
        return [], last.split(": ", 1)[-1][:200]
    try:
        name, cc, total = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return [], ""
    return [GpuListing(str(name), str(cc), int(total) // (1 << 20))], ""


@functools.cache
def rtx_environment() -> RtxEnvironment:
    """TensorRT for RTX's wheels (read from their metadata: importing them costs 150 MB) and the GPU."""
    env = environment()
    return RtxEnvironment(_dist_version(*RTX_BINDINGS), _dist_version(*RTX_LIBS), env.cuda_python, list(env.gpus),
                          env.gpu_error)


@functools.cache
def environment() -> TrtEnvironment:
    """Installed TensorRT and cuda-python versions and the GPUs nvidia-smi lists (cached for the process)."""
    trt_version = _dist_version("tensorrt", "tensorrt-cu13", "tensorrt-cu12", "tensorrt_cu13", "tensorrt_cu12")
    if trt_version is None and importlib.util.find_spec("tensorrt") is not None:
        trt_version = _trt_version_by_import()
    cuda_version = _dist_version("cuda-python", "cuda-bindings")
    if cuda_version is None and importlib.util.find_spec("cuda") is not None:
        cuda_version = "unknown"
    if cuda_version is not None:
        gpus, error = _gpus_by_cuda_python()
        if gpus or error:
            return TrtEnvironment(trt_version, cuda_version, gpus, error)
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return TrtEnvironment(trt_version, cuda_version, [], "nvidia-smi is not on the PATH")
    try:
        r = subprocess.run([smi, "--query-gpu=name,compute_cap,memory.total", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return TrtEnvironment(trt_version, cuda_version, [], f"nvidia-smi failed ({exc})")
    if r.returncode != 0:
        return TrtEnvironment(trt_version, cuda_version, [], (r.stderr or r.stdout).strip()[:200])
    return TrtEnvironment(trt_version, cuda_version, parse_nvidia_smi(r.stdout))
