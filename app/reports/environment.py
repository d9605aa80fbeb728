"""Where a report's results were made, when no project recorded it: versions, CPU, GPU, platform."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any


def gpu_name() -> str | None:
    """The NVIDIA GPUs `nvidia-smi` lists ("none found" is said by the report), without loading CUDA here."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=5, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    names = [line.strip() for line in out.splitlines() if line.strip()]
    return ", ".join(names) or None


def current_environment() -> dict[str, Any]:
    from app.core.project import environment

    return environment(gpu=gpu_name())
