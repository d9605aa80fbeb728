"""What the Run panel and the guided comparison ask the run controller for, as typed objects.

The panel reads its widgets once into `JobSettings` (what every job shares) and one request per action; the
controller adds the model, its shapes and the plan (`ModelInputs`), and the request makes the job's spec
(`app.backends.tasks.specs`) from them, parsed values all the way: no dict of parameters in between, and JSON only
at the process boundary, in the spec."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from app.backends.tasks.specs import BenchSpec, CompareSpec, DiagnoseSpec, EvalSpec
from app.core.measure import InputSource, OutputKind, Tolerance
from app.core.precision import PrecisionPlan
from app.core.targets import Target


@dataclass(frozen=True)
class ModelInputs:
    """What the run controller adds to every request: the model on show, its input shapes (dynamic dims given), and
    the plan `B:plan` targets run (None where none does). An all-FP32 plan is the model itself: its `B:plan` targets
    then run as `B:fp32` (`trivial_plan`), so the results say FP32 rather than "plan"."""

    model: str
    shapes: Mapping[str, tuple[int, ...]]
    plan: PrecisionPlan | None = None
    trivial_plan: bool = False

    def target(self, text: str | Target) -> Target:
        """A target the user chose, checked (`Target.parse` refuses what does not exist), as the job runs it."""
        return Target.parse(text).plan_as_fp32(self.trivial_plan)

    def distinct(self, targets: Iterable[str | Target]) -> tuple[Target, ...]:
        """Targets as the job runs them, each once (a trivial plan and FP32 are one target)."""
        return tuple(dict.fromkeys(self.target(t) for t in targets))


@dataclass(frozen=True)
class JobSettings:
    """The settings every job of a run shares.

    `inputs`: the input data's source, or None for trtlab's sample photos fitted to an image model, else seeded
    random data. `calib_samples` left None takes the spec's default; `output_kinds` are the kinds the user chose,
    parsed (outputs not listed are inferred)."""

    inputs: InputSource | None = None
    samples: int = 5
    tf32: bool = False
    calib_method: str = "minmax"
    calib_samples: int | None = None
    output_kinds: Mapping[str, OutputKind] = field(default_factory=dict)

    def with_samples(self, samples: int) -> JobSettings:
        return replace(self, samples=samples)

    def spec_fields(self, base: ModelInputs, **options: Any) -> dict[str, Any]:
        """The fields every job spec takes, from these settings and the model (`options`: backend options beyond
        TF32, e.g. a build's profiles), as the spec's constructor takes them."""
        return {"model": base.model, "shapes": base.shapes, "plan": base.plan, "inputs": self.inputs,
                "samples": self.samples, "options": {"tf32": self.tf32, **options},
                "calib_method": self.calib_method, "calib_samples": self.calib_samples,
                "output_kinds": self.output_kinds}


@dataclass(frozen=True)
class CompareRequest:
    """Compare each candidate (`backend:precision`) with the reference."""

    settings: JobSettings
    reference: str
    candidates: tuple[str, ...]
    tolerances: tuple[str, ...] = ()

    def targets(self) -> list[str]:
        return [self.reference, *self.candidates]

    def spec(self, base: ModelInputs) -> CompareSpec:
        return CompareSpec(**self.settings.spec_fields(base), reference=Target.parse(self.reference),
                           candidates=base.distinct(self.candidates),
                           tolerances=tuple(Tolerance.parse(t) for t in self.tolerances))


@dataclass(frozen=True)
class BenchRequest:
    """Time each target, one job at a time; the first target is the reference of the speed-ups."""

    settings: JobSettings
    targets: tuple[str, ...]
    iterations: str = "100"
    warmup: str = "10"

    def specs(self, base: ModelInputs) -> list[BenchSpec]:
        """One spec per target, each timed as its backend is (a trivial plan and FP32 are one target)."""
        return [BenchSpec(**self.settings.spec_fields(base), target=t, iterations=self.iterations,
                          warmup=self.warmup) for t in base.distinct(self.targets)]


@dataclass(frozen=True)
class DiagnoseRequest:
    """Measure each layer of the candidate against the reference."""

    settings: JobSettings
    reference: str
    candidate: str

    def targets(self) -> list[str]:
        return [self.reference, self.candidate]

    def spec(self, base: ModelInputs) -> DiagnoseSpec:
        return DiagnoseSpec(**self.settings.spec_fields(base), reference=Target.parse(self.reference),
                            candidate=base.target(self.candidate))


@dataclass(frozen=True)
class EvalRequest:
    """Score the reference and each candidate on a labelled dataset (Run ▸ Evaluate on Dataset…).

    `format` None: the format is detected; `limit` None: every image; `tolerances` as the user typed them
    (`map50:-0.5`, `top1:-1`), parsed by the spec."""

    dataset: str
    candidates: tuple[str, ...]
    reference: str = "ort-cpu:fp32"
    labels: str | None = None
    format: str | None = None
    class_names: str | None = None  # the model's class names file; None: its own
    preset: Mapping[str, Any] | None = None  # the preprocessing (Preset JSON) where the user changed it; None: chosen
    limit: int | None = 200
    shuffle: bool = True
    seed: int = 0
    tolerances: tuple[str, ...] = ()
    tf32: bool = False

    def targets(self) -> list[str]:
        return [self.reference, *self.candidates]

    def spec(self, base: ModelInputs) -> EvalSpec:
        return EvalSpec(model=base.model, shapes=base.shapes, plan=base.plan, seed=self.seed,
                        options={"tf32": self.tf32}, dataset=self.dataset, labels=self.labels, format=self.format,
                        class_names=self.class_names, preset=self.preset,
                        reference=Target.parse(self.reference), candidates=base.distinct(self.candidates),
                        tolerances=self.tolerances, limit=self.limit, shuffle=self.shuffle)
