"""What the Run panel and the guided comparison ask the run controller for, as typed objects.

The panel reads its widgets once into `JobSettings` (what every job shares) and one request per action; the
controller adds the model, its shapes and the plan, and makes the job's spec (`app.backends.tasks.specs`), which
checks every value. JSON appears only at the process boundary, in the spec."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class JobSettings:
    """The settings every job of a run shares.

    `inputs`: an InputSource's JSON (app.ui.run.inputs), or None for trtlab's sample photos fitted to an image
    model, else seeded random data. `calib_samples` and `output_kinds` left None take the spec's defaults."""

    inputs: dict | None = None
    samples: int = 5
    tf32: bool = False
    calib_method: str = "minmax"
    calib_samples: int | None = None
    output_kinds: dict[str, str] = field(default_factory=dict)

    def with_samples(self, samples: int) -> JobSettings:
        return replace(self, samples=samples)

    def params(self) -> dict[str, Any]:
        """The spec fields these settings fill."""
        out: dict[str, Any] = {"inputs": self.inputs, "samples": self.samples, "options": {"tf32": self.tf32},
                               "calib_method": self.calib_method}
        if self.calib_samples is not None:
            out["calib_samples"] = self.calib_samples
        if self.output_kinds:
            out["output_kinds"] = dict(self.output_kinds)
        return out


@dataclass(frozen=True)
class CompareRequest:
    """Compare each candidate (`backend:precision`) with the reference."""

    settings: JobSettings
    reference: str
    candidates: tuple[str, ...]
    tolerances: tuple[str, ...] = ()

    def params(self) -> dict[str, Any]:
        return {**self.settings.params(), "reference": self.reference, "candidates": list(self.candidates),
                "tolerances": list(self.tolerances)}


@dataclass(frozen=True)
class BenchRequest:
    """Time each target, one job at a time; the first target is the reference of the speed-ups."""

    settings: JobSettings
    targets: tuple[str, ...]
    iterations: str = "100"
    warmup: str = "10"

    def params(self) -> dict[str, Any]:
        return {**self.settings.params(), "targets": list(self.targets), "iterations": self.iterations,
                "warmup": self.warmup}


@dataclass(frozen=True)
class DiagnoseRequest:
    """Measure each layer of the candidate against the reference."""

    settings: JobSettings
    reference: str
    candidate: str

    def params(self) -> dict[str, Any]:
        return {**self.settings.params(), "reference": self.reference, "candidate": self.candidate}
