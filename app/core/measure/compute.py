"""Which precisions a backend really computes in, and which it only emulates; where it computes (CPU or GPU).

A variant graph carries its precision as data types (Casts around FP16/BF16 nodes, Q/DQ pairs around INT8
ones). Whether the backend then *computes* in that precision is the backend's business: ONNX Runtime's CPU
provider has no FP16/BF16 kernels for most ops, inserts Casts and computes FP32 between them
(PRECISION_NOTES.md), and its CUDA provider runs Q/DQ pairs as float (fake quantization) with no integer
kernels. Such a run measures the rounding, not the arithmetic: its accuracy is indicative and its speed
says nothing about the precision.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from app.core.targets import CPU_BACKENDS, Target

PRECISION_WORDS = {"fp32": "FP32", "fp16": "FP16", "bf16": "BF16", "int8": "INT8"}


@dataclass(frozen=True)
class Emulation:
    """A precision a backend runs without computing in it."""

    backend: str
    precision: str
    how: str  # what the backend does instead, as a clause: "computes FP16 as FP32 between Casts"

    @property
    def short(self) -> str:
        """A few words for a table cell: "CPU emulates FP16"."""
        where = "CPU" if self.backend in CPU_BACKENDS else self.backend
        return f"{where} emulates {PRECISION_WORDS.get(self.precision, self.precision.upper())}"

    @property
    def sentence(self) -> str:
        """The verdict's caveat in plain words."""
        return f"{self.backend} {self.how}: accuracy is indicative, speed is not"


_EMULATED = {
    ("ort-cpu", "fp16"): "computes FP16 as FP32 between Casts",
    ("ort-cpu", "bf16"): "computes BF16 as FP32 between Casts",
    ("ort-cuda", "int8"): "runs INT8 Q/DQ pairs as float (no integer kernels)",
}


def emulation(backend: str, precision: str) -> Emulation | None:
    """How ``backend`` fakes ``precision``, or None where it computes in it (or the precision is FP32)."""
    how = _EMULATED.get((backend, precision))
    return Emulation(backend, precision, how) if how else None


def target_emulations(target: str, plan_precisions: Iterable[str] = ()) -> list[Emulation]:
    """The emulated precisions of a `B:P` target; for `B:plan`, of the precisions the plan uses."""
    t = Target.read(target)
    wanted = sorted(set(plan_precisions)) if t.needs_plan else [t.precision]
    found = (emulation(t.backend, p) for p in wanted)
    return [e for e in found if e is not None]


def computes_in(backend: str, precision: str) -> bool:
    """True when ``backend`` does its arithmetic in ``precision`` (so its speed in it means something)."""
    return emulation(backend, precision) is None


def device_of(backend: str) -> str:
    """Where a backend computes: "cpu" or "gpu" (timing advice differs between the two)."""
    return "cpu" if Target.read(backend).on_cpu else "gpu"
