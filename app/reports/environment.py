"""Where a report's results were made, when no project recorded it: versions, CPU, GPU, platform."""

from __future__ import annotations

from typing import Any


def gpu_name() -> str | None:
    """The NVIDIA GPUs `nvidia-smi` lists ("none found" is said by the report), without loading CUDA here."""
    from app.core.machine import gpu_names

    return ", ".join(gpu_names()) or None


def current_environment() -> dict[str, Any]:
    from app.core.project import environment

    return environment(gpu=gpu_name())
