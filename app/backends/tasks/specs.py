"""What each job is asked to do: one frozen dataclass per job kind (run, compare, bench, diagnose, fallback, variant,
build, eval; sweep, tune and profile in `speed_specs`), made and checked once where the request starts (the CLI, the
GUI's panels), sent to the job's process as JSON and parsed back into the same type there.

A spec checks what it can without the model (targets, tolerances, counts, budgets, a plan, inputs) once, as it is
made, holding the parsed values (`Target`, `Tolerance`, `InputSource`; their text is only in its JSON); an unknown
key is refused, naming the settings it has.

Specs can travel to another machine (a batch on a cluster): each says which of its fields are files it reads
(`input_files`) and writes (`output_files`), its JSON carries `spec_version` (a newer one is refused by name), and
every job's result lists the files it made (`artifacts`) and where it was made (`provenance`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

from app.backends.tasks.spec_fields import SpecError
from app.backends.tasks.spec_fields import count_of as _count
from app.backends.tasks.spec_fields import eval_fields as _eval_fields
from app.backends.tasks.spec_fields import fallback_fields as _fallback_fields
from app.backends.tasks.spec_fields import field_json as _text
from app.backends.tasks.spec_fields import parsed_kinds as _parsed
from app.backends.tasks.spec_fields import shapes_of as _shapes
from app.backends.tasks.spec_fields import source_of as _source
from app.backends.tasks.spec_fields import target_of as _target
from app.backends.tasks.spec_fields import tolerance_of as _tolerance
from app.core.measure import InputSource, OutputKind, Tolerance, default_timing_mode, parse_output_kinds
from app.core.targets import PrecisionNotAvailable, Target, require_plan  # noqa: F401 - the jobs' error, from here

if TYPE_CHECKING:
    from app.core.evaluate import DropTolerance
    from app.core.precision import PrecisionPlan
    from app.jobs import JobSpec

SPEC_VERSION = 1   # raised when a spec's JSON changes meaning; a process refuses specs newer than it knows
CALIB_METHODS = ("minmax", "entropy", "percentile")
TIMING_MODES = ("end_to_end", "device_only")
# Backend options: CUDA's TF32, ONNX Runtime's threads and device, TensorRT's workspace, level, profiles, targets
OPTION_KEYS = ("tf32", "threads", "device_id", "workspace_mb", "opt_level", "profiles", "targets")


@dataclass(frozen=True, kw_only=True)
class JobInputs:
    """What every job reads: the model, its input shapes and samples, the precision plan of `B:plan` targets, INT8
    calibration, and backend options."""

    model: str
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # input -> dims; dynamic dims given here
    inputs: InputSource | None = None          # None: random samples from `seed`
    seed: int = 0
    samples: int = 1
    options: Mapping[str, Any] = field(default_factory=dict)  # OPTION_KEYS
    plan: PrecisionPlan | None = None           # run by `B:plan` targets (its JSON is parsed into one)
    calib: InputSource | None = None            # INT8 calibration data; None: the inputs' source
    calib_samples: int | None = None            # None: 16 random samples, or a folder's files up to 512
    calib_method: str = "minmax"
    cache_dir: str | None = None                # the variant cache; None: TRTLAB_CACHE_DIR or ~/.cache/trtlab
    output_kinds: Mapping[str, OutputKind] = field(default_factory=dict)  # output -> its kind, parsed; else inferred

    kind: ClassVar[str] = ""
    job: ClassVar[str] = ""                     # the job function, "module:function", that runs this spec
    outputs: ClassVar[tuple[str, ...]] = ()     # the fields naming files the job writes
    artifacts: ClassVar[tuple[str, ...]] = ()   # the result keys naming files the job made, to bring back

    def __post_init__(self) -> None:
        if not str(self.model or "").strip():
            raise SpecError(f"The {self.kind} job needs a model.", fix="Open or give an ONNX model.")
        object.__setattr__(self, "model", str(self.model))
        object.__setattr__(self, "shapes", _shapes(self.shapes))
        object.__setattr__(self, "inputs", _source(self.inputs, "inputs"))
        object.__setattr__(self, "calib", _source(self.calib, "calib"))
        _count(self.samples, "samples")
        if self.calib_samples is not None:
            _count(self.calib_samples, "calib_samples")
        if self.calib_method not in CALIB_METHODS:
            raise SpecError(f"Unknown calibration method '{self.calib_method}'.",
                            fix=f"Use one of {', '.join(CALIB_METHODS)}.")
        unknown = sorted(set(self.options) - set(OPTION_KEYS))
        if unknown:
            raise SpecError(f"Unknown backend option(s) {', '.join(unknown)} for the {self.kind} job.",
                            fix=f"Backend options are {', '.join(OPTION_KEYS)}.")
        object.__setattr__(self, "options", dict(self.options))
        if not _parsed(self.output_kinds):  # parsed where the user's text entered, or by from_json
            raise SpecError(f"output_kinds {self.output_kinds!r} are not parsed kinds.",
                            fix="Parse the user's text once (parse_output_kinds), or read the spec with from_json.")
        object.__setattr__(self, "output_kinds", dict(self.output_kinds))
        if self.plan is not None:
            from app.core.precision import PrecisionPlan

            if not isinstance(self.plan, PrecisionPlan):  # its JSON: checked; a plan is a value, shared as it is
                object.__setattr__(self, "plan", PrecisionPlan.from_json(dict(self.plan)))
        require_plan(self.targets(), self.plan)

    def targets(self) -> list[Target]:
        """Every target the job runs, reference first (here: its one `target`, where it has one)."""
        target = getattr(self, "target", None)
        return [target] if isinstance(target, Target) else []

    @property
    def source(self) -> InputSource:
        """The samples' source without the model to choose by (random from `seed`); see tasks.common.default_source."""
        return self.inputs or InputSource(kind="random", seed=self.seed)

    def input_files(self) -> list[str]:
        """The files the job reads: the model (its external data sits beside it), input and calibration data."""
        return [self.model] + [s.path for s in (self.inputs, self.calib) if s is not None and s.path]

    def output_files(self) -> list[str]:  # where it was asked to write (its `artifacts` name what it made)
        return [str(v) for v in (getattr(self, name) for name in self.outputs) if v]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "spec_version": SPEC_VERSION}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = (value.to_json() if isinstance(value, InputSource) else [_text(v) for v in value]
                           if isinstance(value, tuple) else {k: list(v) for k, v in value.items()}
                           if f.name == "shapes" else {k: v.text() for k, v in value.items()}
                           if f.name == "output_kinds" else _text(value))
        return out

    @classmethod
    def from_json(cls: type[S], d: Mapping[str, Any]) -> S:
        """The spec from its JSON (or from a plain dict of settings); unknown keys are refused, by name."""
        d = dict(d)
        kind = d.pop("kind", cls.kind)
        version = d.pop("spec_version", SPEC_VERSION)
        if not isinstance(version, int) or version > SPEC_VERSION:
            raise SpecError(f"This {cls.kind} job's settings are spec version {version}; this trtlab reads versions "
                            f"up to {SPEC_VERSION}.", fix="Install the same trtlab version everywhere the job runs "
                                                         "(pip install -U trtlab).")
        if kind != cls.kind:
            raise SpecError(f"A {kind} job's settings were given to the {cls.kind} job.",
                            fix="Start the job that matches its settings.")
        names = [f.name for f in fields(cls)]
        if unknown := sorted(set(d) - set(names)):
            raise SpecError(f"The {cls.kind} job has no setting {', '.join(repr(k) for k in unknown)}.",
                            fix=f"Its settings are: {', '.join(names)}.")
        if isinstance(kinds := d.get("output_kinds"), Mapping | list) and not _parsed(kinds):  # to_json's text
            d["output_kinds"] = parse_output_kinds(kinds)
        return cls(**d)  # targets, tolerances and input sources are parsed from their text in __post_init__

    def job_spec(self, title: str = "") -> JobSpec:
        """What app.jobs runs: this spec's job function and its JSON."""
        from app.jobs import JobSpec
        return JobSpec(func=self.job, params=self.to_json(), title=title)

    def with_(self: S, **changes: Any) -> S:
        return replace(self, **changes)  # a copy with some settings changed (checked again)


S = TypeVar("S", bound=JobInputs)


@dataclass(frozen=True, kw_only=True)
class RunSpec(JobInputs):
    """`trtlab run`: one target on the input samples, its outputs saved."""

    target: Target
    kind: ClassVar[str] = "run"
    job: ClassVar[str] = "app.backends.tasks.run:run_task"
    artifacts: ClassVar[tuple[str, ...]] = ("npz",)

    def __post_init__(self) -> None:
        object.__setattr__(self, "target", _target(self.target))
        super().__post_init__()


@dataclass(frozen=True, kw_only=True)
class CompareSpec(JobInputs):
    """`trtlab compare`: the reference and each candidate on the same samples, every metric."""

    reference: Target = Target("ort-cpu")
    candidates: tuple[Target, ...]
    tolerances: tuple[Tolerance, ...] = ()    # METRIC:VALUE each
    kind: ClassVar[str] = "compare"
    job: ClassVar[str] = "app.backends.tasks.compare:compare_task"

    def __post_init__(self) -> None:
        object.__setattr__(self, "reference", _target(self.reference))
        if isinstance(self.candidates, str) or not self.candidates:
            raise SpecError("A comparison needs at least one candidate.", fix="Add a candidate such as ort-cpu:fp16.")
        object.__setattr__(self, "candidates", tuple(_target(c) for c in self.candidates))
        if isinstance(self.tolerances, str):
            raise SpecError(f"Tolerances are a list, not '{self.tolerances}'.", fix="Give e.g. ['cos:0.999'].")
        object.__setattr__(self, "tolerances", tuple(_tolerance(t) for t in self.tolerances))
        super().__post_init__()

    def targets(self) -> list[Target]:
        return [self.reference, *self.candidates]


@dataclass(frozen=True, kw_only=True)
class BenchSpec(JobInputs):
    """`trtlab bench`: latency statistics of one target."""

    target: Target
    warmup: str = "10"                        # iterations, or a time such as 2s
    iterations: str = "100"
    mode: str = ""                            # TIMING_MODES; "": the target's default (default_timing_mode)
    kind: ClassVar[str] = "bench"
    job: ClassVar[str] = "app.backends.tasks.bench:bench_task"

    def __post_init__(self) -> None:
        from app.core.measure import Budget

        object.__setattr__(self, "target", _target(self.target))
        object.__setattr__(self, "warmup", str(self.warmup))
        object.__setattr__(self, "iterations", str(self.iterations))
        Budget.parse(self.warmup)
        Budget.parse(self.iterations)
        if not self.mode:
            object.__setattr__(self, "mode", default_timing_mode(self.target.backend))
        if self.mode not in TIMING_MODES:
            raise SpecError(f"Unknown timing mode '{self.mode}'.", fix=f"Use one of {', '.join(TIMING_MODES)}.")
        super().__post_init__()


@dataclass(frozen=True, kw_only=True)
class DiagnoseSpec(JobInputs):
    """`trtlab diagnose`: every float intermediate tensor of the FP32 reference and the candidate, compared."""

    reference: Target = Target("ort-cpu")
    candidate: Target
    kind: ClassVar[str] = "diagnose"
    job: ClassVar[str] = "app.backends.tasks.diagnose:diagnose_task"

    def __post_init__(self) -> None:
        object.__setattr__(self, "reference", _target(self.reference))
        object.__setattr__(self, "candidate", _target(self.candidate))
        super().__post_init__()

    def targets(self) -> list[Target]:
        return [self.reference, self.candidate]


@dataclass(frozen=True, kw_only=True)
class FallbackSpec(JobInputs):
    """`trtlab fallback`: the nodes to keep in FP32 (or unquantized) so the candidate meets `target`."""

    reference: Target = Target("ort-cpu")
    candidate: Target
    target: Tolerance | DropTolerance         # cos:0.999 (agreement); with a dataset, its metric's drop: map50:-0.5
    budget_s: float | None = None             # stop searching after this long
    dataset: str | None = None                # a labelled dataset's folder: the search scores its ground truth
    labels: str | None = None                 # its labels file; None: found
    format: str | None = None                 # its format; None: detected
    subset: int = 200                         # images the search evaluates on (the first after a shuffle from `seed`)
    kind: ClassVar[str] = "fallback"
    job: ClassVar[str] = "app.backends.tasks.fallback:fallback_task"

    def __post_init__(self) -> None:
        object.__setattr__(self, "reference", _target(self.reference))
        object.__setattr__(self, "candidate", _target(self.candidate))
        target, budget = _fallback_fields(self.target, self.dataset, self.subset, self.budget_s)
        object.__setattr__(self, "target", target)
        object.__setattr__(self, "budget_s", budget)
        super().__post_init__()

    def targets(self) -> list[Target]:
        return [self.reference, self.candidate]

    def input_files(self) -> list[str]:
        return [*super().input_files(), *(f for f in (self.dataset, self.labels) if f)]


@dataclass(frozen=True, kw_only=True)
class VariantSpec(JobInputs):
    """`trtlab variant`: the variant graph of a precision or plan (optionally at a raised opset), saved as `out`."""

    target: Target                            # B:P; only its precision (or plan) matters
    out: str
    opset: int | None = None
    kind: ClassVar[str] = "variant"
    job: ClassVar[str] = "app.backends.tasks.variant:variant_task"
    outputs: ClassVar[tuple[str, ...]] = ("out",)
    artifacts: ClassVar[tuple[str, ...]] = ("out",)

    def __post_init__(self) -> None:
        object.__setattr__(self, "target", _target(self.target))
        if not str(self.out or "").strip():
            raise SpecError("The variant job needs a path to save the variant as.", fix="Give -o OUT.onnx.")
        object.__setattr__(self, "out", str(self.out))
        if self.opset is not None:
            object.__setattr__(self, "opset", _count(self.opset, "opset"))
        super().__post_init__()


@dataclass(frozen=True, kw_only=True)
class BuildSpec(JobInputs):
    """`trtlab build`: a TensorRT engine or TensorRT for RTX plan of the variant graph, saved as `out` if given."""

    target: Target                            # trt:P or trt-rtx:P
    out: str | None = None
    kind: ClassVar[str] = "build"
    job: ClassVar[str] = "app.backends.tasks.build:build_task"
    outputs: ClassVar[tuple[str, ...]] = ("out",)
    artifacts: ClassVar[tuple[str, ...]] = ("engine", "out")

    def __post_init__(self) -> None:
        object.__setattr__(self, "target", _target(self.target))
        super().__post_init__()


@dataclass(frozen=True, kw_only=True)
class EvalSpec(JobInputs):
    """`trtlab eval`: the reference and each candidate over a labelled dataset, scored by its task's metric."""

    dataset: str                              # the dataset's folder
    labels: str | None = None                 # its labels file (COCO JSON, data.yaml, CSV, text lines); None: found
    format: str | None = None                 # app.core.dataset's format name; None: detected
    class_names: str | None = None            # the model's class names, a line each in its index order; None: its own
    reference: Target = Target("ort-cpu")
    candidates: tuple[Target, ...]
    tolerances: tuple[str, ...] = ()          # drops allowed against the reference, e.g. map50:-0.5
    limit: int | None = None                  # the first N images (after shuffling)
    shuffle: bool = False                     # images in an order drawn from `seed`
    preset: Mapping[str, Any] | None = None   # the preprocessing (app.core.evaluate.Preset's JSON); None: chosen
    cache: bool = True                        # answers kept per image and target, a second run computes what changed
    per_image: str | None = None              # where each image's values go as JSON lines; None: only in the result
    shard: tuple[int, int] | None = None      # (index, count): a batch's shard, its slice of the images into the cache
    kind: ClassVar[str] = "eval"
    job: ClassVar[str] = "app.backends.tasks.eval:eval_task"
    outputs: ClassVar[tuple[str, ...]] = ("per_image",)
    artifacts: ClassVar[tuple[str, ...]] = ("per_image",)

    def __post_init__(self) -> None:
        from app.core.evaluate import DropTolerance

        if not str(self.dataset or "").strip():
            raise SpecError("The eval job needs a dataset.", fix="Give --dataset DIR.")
        object.__setattr__(self, "reference", _target(self.reference))
        if isinstance(self.candidates, str) or not self.candidates:
            raise SpecError("An evaluation needs at least one candidate.", fix="Add a candidate such as ort-cpu:fp16.")
        object.__setattr__(self, "candidates", tuple(_target(c) for c in self.candidates))
        object.__setattr__(self, "tolerances", tuple(str(DropTolerance.parse(str(t))) for t in self.tolerances))
        _eval_fields(self)  # limit, cache, per_image and shard
        super().__post_init__()

    def targets(self) -> list[Target]:
        return [self.reference, *self.candidates]

    def input_files(self) -> list[str]:
        return [*super().input_files(), self.dataset, *(f for f in (self.labels, self.class_names) if f)]


SPECS: dict[str, type[JobInputs]] = {c.kind: c for c in (RunSpec, CompareSpec, BenchSpec, DiagnoseSpec, FallbackSpec,
                                                         VariantSpec, BuildSpec, EvalSpec)}


def spec_from_json(d: Mapping[str, Any]) -> JobInputs:
    """Any job's spec from its JSON (its "kind" names the type: one of SPECS, or a spec type of another module that
    is loaded, such as `speed_specs`' sweep, tune and profile)."""
    kinds, todo = dict(SPECS), list(JobInputs.__subclasses__())
    while todo:
        cls = todo.pop()
        kinds.setdefault(cls.kind, cls)
        todo += cls.__subclasses__()
    if (found := kinds.get(str(d.get("kind", "")))) is None:
        raise SpecError(f"Unknown job kind '{d.get('kind')}'.", fix=f"Use one of {', '.join(kinds)}.")
    return found.from_json(d)


def takes(spec_type: type[S]) -> Callable[[Callable[[S, Any], dict]], Callable[[Any, Any], dict]]:
    """Marks `fn(spec, ctx) -> dict` as the job of `spec_type`: the JSON params its process receives are parsed
    back into `spec_type` before it runs (a spec passed in, in this process, is used as it is). Its result gets
    `artifacts` (the files it made, e.g. an engine) and `provenance` (where it ran: app.core.machine)."""
    def wrap(fn: Callable[[S, Any], dict]) -> Callable[[Any, Any], dict]:
        @functools.wraps(fn)
        def job(spec: S | Mapping[str, Any], ctx: Any) -> dict:
            from app.core.machine import provenance

            typed = spec if isinstance(spec, spec_type) else spec_type.from_json(cast("Mapping[str, Any]", spec))
            result = fn(typed, ctx)
            result.setdefault("artifacts", [str(result[k]) for k in spec_type.artifacts if result.get(k)])
            result.setdefault("provenance", provenance())
            return result
        job.spec_type = spec_type  # type: ignore[attr-defined]  # a marker on the function, read by the tests
        return job
    return wrap
