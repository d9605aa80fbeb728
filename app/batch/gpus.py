"""Which GPUs a batch places its jobs on, one job per GPU at a time: the matrix's `gpus:` entry (`all`, a list of
device indices, a count; parsed in app.batch.matrix) among the GPUs this process sees (CUDA_VISIBLE_DEVICES, else
nvidia-smi), which jobs are placed, and the environment a placed job's process starts with (CUDA_VISIBLE_DEVICES of
its one GPU, so that inside it the GPU is device 0). Nothing here loads CUDA."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from app.batch.matrix import BatchJob, GpuChoice, MatrixError

GPU_BACKENDS = ("ort-cuda", "ort-trt", "trt", "trt-rtx")  # the backends whose jobs run on a GPU


def visible_gpus(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The GPUs this process sees, as CUDA_VISIBLE_DEVICES names them (indices or UUIDs), in CUDA's order: that
    variable's entries when it is set (CUDA stops at the first invalid one, -1 hides all), else one index per GPU
    nvidia-smi lists (none without it)."""
    env = os.environ if environ is None else environ
    given = env.get("CUDA_VISIBLE_DEVICES")
    if given is not None:
        out: list[str] = []
        for entry in (e.strip() for e in given.split(",")):
            if not entry or entry.startswith("-"):
                break
            out.append(entry)
        return tuple(out)
    from app.core.machine import gpu_names

    return tuple(str(i) for i in range(len(gpu_names())))


def uses_gpu(job: BatchJob) -> bool:
    """Whether a job runs on a GPU: a GPU backend's, except a TensorRT for RTX build for no GPU kind (its builder
    runs on the CPU)."""
    if job.kind == "build" and job.backend == "trt-rtx":
        return bool(job.gpu)
    return job.backend.partition("@")[0] in GPU_BACKENDS  # ort-cuda@cuda_graph=1 is ort-cuda with settings


@dataclass(frozen=True)
class Placement:
    """Where a batch's jobs go on this machine: `devices` are positions among the visible GPUs (0 is the first
    visible), `names` their CUDA_VISIBLE_DEVICES entries; `every` places every job (an explicit `gpus:` entry),
    else only the GPU backends' jobs."""

    devices: tuple[int, ...] = ()
    names: tuple[str, ...] = ()
    every: bool = False

    def placed(self, job: BatchJob) -> bool:
        return bool(self.devices) and (self.every or uses_gpu(job))

    def cpu_share(self) -> int | None:
        """Each placed job's share of this machine's cores (`share_of`); None on one GPU."""
        return share_of(len(os.sched_getaffinity(0)), len(self.devices))

    def environment(self, device: int) -> dict[str, str]:
        """A placed job's process environment: only its GPU visible (device 0 inside), numbered as nvidia-smi does."""
        return {"CUDA_VISIBLE_DEVICES": self.names[self.devices.index(device)], "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}


def share_of(cores: float, gpus: float) -> int | None:
    """A job's share of a machine's cores when its GPUs run jobs side by side: ONNX Runtime's sessions otherwise each
    start a thread per core, and two of them (a comparison's CPU reference, a loop of small ops launched from the CPU)
    spin against each other: SLANet's benchmark took 96 s beside another on a 32-core machine with two H200s, against
    50 s in an earlier run. None under two GPUs (a job has every core)."""
    if gpus < 2:
        return None
    return max(1, int(cores) // int(gpus))


def with_threads(params: dict, share: int | None) -> dict:
    """A job spec's JSON with `share` as its ONNX Runtime threads, unless its options have their own or there is no
    share (a target's own `threads` setting, `ort-cpu@threads=8`, wins over both). Threads change no answer: the
    answer cache ignores them."""
    options = dict(params.get("options") or {})
    if share is None or "threads" in options:
        return params
    return {**params, "options": {**options, "threads": share}}


def place(choice: GpuChoice, visible: tuple[str, ...]) -> Placement:
    """The placement of a `gpus:` choice among the visible GPUs; MatrixError (exit 2) for a GPU that is not visible
    or more GPUs than are. Without an entry: the GPU jobs on every visible GPU when there are several, else none."""
    seen = f"{len(visible)} visible ({_where(visible)})" if visible else "none visible (no CUDA_VISIBLE_DEVICES " \
                                                                          "entry and no GPU that nvidia-smi lists)"
    if not choice.given:
        if len(visible) < 2:
            return Placement()
        return Placement(tuple(range(len(visible))), visible)
    if not visible:
        raise MatrixError(f"The matrix asks for gpus: {choice.text}, and this machine has {seen}.",
                          fix="Remove the gpus: entry to run the matrix without GPU placement, or run it where "
                              "GPUs are visible.")
    if choice.indices:
        missing = [i for i in choice.indices if i >= len(visible)]
        if missing:
            raise MatrixError(f"gpus: {choice.text} names GPU {', '.join(map(str, missing))}, and this machine has "
                              f"{seen}.", fix=f"Use indices 0 to {len(visible) - 1}, or gpus: all.")
        devices = choice.indices
    elif choice.count is not None:
        if choice.count > len(visible):
            raise MatrixError(f"gpus: {choice.count} asks for more GPUs than this machine has ({seen}).",
                              fix=f"Write gpus: {len(visible)} or less, or gpus: all.")
        devices = tuple(range(choice.count))
    else:
        devices = tuple(range(len(visible)))
    return Placement(devices, tuple(visible[i] for i in devices), every=True)


def gpu_failure(error: str, device: int) -> str:
    """A placed job's error, saying which GPU it failed on: "failed on GPU 1: CUDA out of memory …"."""
    return error if error.startswith("failed on GPU ") else f"failed on GPU {device}: {error}"


def _where(visible: tuple[str, ...]) -> str:
    return ", ".join(f"{i} = {name}" if name != str(i) else str(i) for i, name in enumerate(visible))
