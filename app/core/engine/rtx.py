"""TensorRT for RTX: the compute capabilities a plan is built for, and which GPUs can run it.

TensorRT for RTX compiles a plan ahead of time, without a GPU, for a set of GPU architectures (its
``ComputeCapability`` enum: SM75, SM80, SM86, SM89, SM120, SM121). With none chosen the builder makes its
portable default (8.0, 8.6, 8.9 and 12.x); 7.5 (Turing) only when asked for. A plan runs on a GPU whose compute
capability it was built for; data-centre GPUs such as the H100/H200 (9.0) are not RTX targets at all, and the
runtime says so ("The engine cannot run on this GPU, which has compute capability 9.0").

Pure logic: nothing here imports TensorRT for RTX; the backend turns :func:`enum_names` into enum values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from app.core.errors import TrtlabError

RTX_TARGETS = ("7.5", "8.0", "8.6", "8.9", "12.0", "12.1")     # ComputeCapability SM75 … SM121
DEFAULT_RUNS_ON = ("8.0", "8.6", "8.9", "12.0", "12.1")        # what the builder's default set runs on
DEFAULT_LABEL = "RTX's portable default: 8.0, 8.6, 8.9, 12.x"
FP8_MIN = (8, 9)    # FP8 builds only for Ada (8.9) and later
TURING = "7.5"      # refuses BF16 and FP32 GEMM


class TargetError(TrtlabError):
    """A compute-capability target that TensorRT for RTX cannot build for."""

    title = "Invalid compute capability"


def _cc_text(value: object) -> str:
    """'8.6' from '8.6', 'sm86', 'SM_86', '86', 8.6 or (8, 6)."""
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return f"{int(value[0])}.{int(value[1])}"
    if isinstance(value, float):
        return f"{value:.1f}"
    text = str(value).strip().lower()
    if m := re.fullmatch(r"(\d+)\.(\d+)", text):
        return f"{int(m.group(1))}.{int(m.group(2))}"
    if m := re.fullmatch(r"(?:sm_?)?(\d+)(\d)", text):
        return f"{int(m.group(1))}.{int(m.group(2))}"
    raise TargetError(f"'{value}' is not a compute capability.",
                      fix=f"Write targets as MAJOR.MINOR separated by commas, e.g. --target-cc 8.6,8.9 "
                          f"(TensorRT for RTX builds for {', '.join(RTX_TARGETS)}).")


def _key(cc: str) -> tuple[int, int]:
    major, minor = cc.split(".")
    return int(major), int(minor)


def parse_targets(spec: str | Iterable[object] | None) -> tuple[str, ...]:
    """The targets of ``--target-cc 8.6,8.9`` (or a list), checked, unique and sorted; () is the default set."""
    if spec is None:
        return ()
    if isinstance(spec, str):
        if not spec.strip():
            return ()
        items: list[object] = [s.strip() for s in spec.split(",")]
    else:
        items = list(spec)
    out: list[str] = []
    for item in items:
        if isinstance(item, str) and not item.strip():
            raise TargetError(f"The compute capability list '{spec}' has an empty entry.",
                              fix="Separate targets with single commas, e.g. --target-cc 8.6,8.9.")
        if isinstance(item, str) and item.strip().lower() == "current":
            raise TargetError("'current' (the GPU of this machine) needs a GPU at build time, which is what TensorRT "
                              "for RTX's ahead-of-time build avoids.",
                              fix=f"Name the compute capabilities instead, from {', '.join(RTX_TARGETS)}.")
        cc = _cc_text(item)
        if cc not in RTX_TARGETS:
            why = (" Data-centre GPUs such as the H100 and H200 (9.0) are not TensorRT for RTX targets."
                   if cc.startswith("9.") else "")
            raise TargetError(f"TensorRT for RTX cannot build for compute capability {cc}.{why}",
                              fix=f"Choose from {', '.join(RTX_TARGETS)} (e.g. --target-cc 8.6,8.9), or leave "
                                  f"--target-cc out for {DEFAULT_LABEL}.")
        if cc not in out:
            out.append(cc)
    return tuple(sorted(out, key=_key))


def enum_names(targets: Iterable[str]) -> list[str]:
    """``ComputeCapability`` member names: '8.6' -> 'SM86', '12.0' -> 'SM120'."""
    return ["SM" + cc.replace(".", "") for cc in targets]


def describe_targets(targets: Iterable[str]) -> str:
    chosen = tuple(targets)
    return ", ".join(chosen) if chosen else DEFAULT_LABEL


def runs_on(targets: Iterable[str]) -> tuple[str, ...]:
    """The compute capabilities a plan built for ``targets`` runs on (the default set when empty)."""
    chosen = tuple(targets)
    return chosen if chosen else DEFAULT_RUNS_ON


def run_problem(targets: Iterable[str], gpu_cc: object | None, gpu_name: str = "") -> str:
    """Why a GPU of compute capability ``gpu_cc`` cannot run a plan built for ``targets`` ('' when it can)."""
    on = f" ({gpu_name})" if gpu_name else ""
    if gpu_cc is None or str(gpu_cc).strip() == "":
        return "no NVIDIA GPU found here: TensorRT for RTX engines build without one but need one to run."
    try:
        cc = _cc_text(gpu_cc)
    except TargetError:
        return f"the GPU's compute capability '{gpu_cc}' is not understood."
    if cc not in RTX_TARGETS:
        return (f"RTX engines do not run on compute capability {cc}{on}: TensorRT for RTX runs on RTX-class GPUs of "
                f"compute capability {', '.join(c for c in RTX_TARGETS if c != TURING)} (7.5 when built for it).")
    allowed = runs_on(targets)
    if cc not in allowed:
        return (f"the plan was built for compute capability {', '.join(allowed)}, and this GPU{on} has {cc}.")
    return ""


def lacks_fp8(targets: Iterable[str]) -> list[str]:
    """Targets that cannot build FP8 (before 8.9); the default set includes 8.0 and 8.6."""
    return [cc for cc in runs_on(targets) if _key(cc) < FP8_MIN]


def has_turing(targets: Iterable[str]) -> bool:
    return TURING in tuple(targets)
