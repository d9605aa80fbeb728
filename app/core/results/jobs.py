"""The other jobs' results, typed: bench, profile, diagnose, fallback, build, variant, run (docs/cli.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.core.results.common import JobDoc, Placement, RandomOps
from app.core.results.compare import Task
from app.core.results.record import JSONValue, Record, optional


# ----------------------------------------------------------------- bench
@dataclass(frozen=True)
class LatencyStats(Record):
    min: float | None = None
    mean: float | None = None
    median: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None
    max: float | None = None
    std: float | None = None


@dataclass(frozen=True)
class LayerTiming(Record):
    """One TensorRT engine layer's time over the profiled runs after a benchmark, and its share of them all."""

    mean_ms: float = 0.0
    median_ms: float = 0.0
    share: float = 0.0


@dataclass(frozen=True)
class BenchResult(JobDoc):
    """One target's latency: statistics over the timed iterations, stability, where the nodes ran."""

    backend: str = ""
    mode: str = ""
    warmup: JSONValue = None
    iterations: JSONValue = None
    latency_ms: LatencyStats = LatencyStats()
    cov: float | None = None
    throughput_per_s: float | None = None
    batch: int = optional(1)
    unstable: bool = optional(False)
    warning: str = optional("")
    device: str = optional("")
    placement: Placement | None = optional(None)
    notes: tuple[str, ...] = optional(factory=tuple)
    inputs: str = optional("")
    random_data: bool = optional(False)
    random_ops: RandomOps | None = optional(None)
    times_ms: tuple[float, ...] = optional(factory=tuple)
    shapes: Mapping[str, tuple[JSONValue, ...]] = optional(factory=dict)
    layer_times: Mapping[str, LayerTiming] = optional(factory=dict)  # engine layer -> its time (TensorRT only)

    @property
    def median_ms(self) -> float | None:
        return self.latency_ms.median


# ----------------------------------------------------------------- profile
@dataclass(frozen=True)
class ProfiledNode(Record):
    node: str = ""
    op: str = ""
    provider: str = ""
    ms: float = 0.0
    model_node: bool = optional(True)


@dataclass(frozen=True)
class NodeDelta(Record):
    node: str = ""
    op: str = ""
    provider: str = ""
    reference_provider: str = ""
    reference_ms: float = 0.0
    ms: float = 0.0
    delta_ms: float = 0.0
    # Two batches of one target (`trtlab profile --against-batch`): per item, and how the time follows the batch.
    count: int = optional(1)                              # an op type's row: its nodes
    reference_per_item_ms: float | None = optional(None)
    per_item_ms: float | None = optional(None)
    ratio: float | None = optional(None)                  # ms / reference_ms
    bound: str = optional("")                             # "launch", "compute", "between"
    reference_share: float | None = optional(None)        # an op type's row: its share of the node time
    share: float | None = optional(None)


@dataclass(frozen=True)
class OpCount(Record):
    count: int = 0
    ms: float = 0.0


@dataclass(frozen=True)
class ProfileDelta(Record):
    """Two profiles node by node: the totals, each node's change, the ops only the target runs."""

    reference: str = ""
    candidate: str = ""
    reference_ms: float | None = None
    candidate_ms: float | None = None
    delta_ms: float | None = None
    nodes: tuple[NodeDelta, ...] = ()
    added: Mapping[str, OpCount] = optional(factory=dict)
    removed: Mapping[str, OpCount] = optional(factory=dict)
    reference_point: str = optional("")                   # "batch 1": two points of one target
    candidate_point: str = optional("")
    reference_items: int | None = optional(None)
    candidate_items: int | None = optional(None)
    ops: tuple[NodeDelta, ...] = optional(factory=tuple)  # by op type (`node` empty), the target's slowest first
    small_nodes: int | None = optional(None)
    launch_bound_nodes: int | None = optional(None)
    compute_bound_nodes: int | None = optional(None)
    summary: tuple[str, ...] = optional(factory=tuple)


@dataclass(frozen=True)
class ProfileResult(JobDoc):
    """Per-node times of one target (the median run), where each node ran, and optionally another target's profile
    beside it with the difference."""

    backend: str = ""
    runs: int | None = None
    total_ms: float | None = None
    kernels_ms: float | None = None
    outside_kernels_share: float | None = None
    nodes: tuple[ProfiledNode, ...] = ()
    node_count: int | None = None
    by_op: Mapping[str, float] = optional(factory=dict)
    placement: Mapping[str, int] = optional(factory=dict)
    fallback_nodes: tuple[str, ...] = optional(factory=tuple)
    cast_ms: float | None = optional(None)
    casts: int = optional(0)
    copy_ms: float | None = optional(None)
    copies: int = optional(0)
    notes: tuple[str, ...] = optional(factory=tuple)
    random_ops: RandomOps | None = optional(None)
    against: ProfileResult | None = optional(None)
    delta: ProfileDelta | None = optional(None)
    slower_because: tuple[str, ...] = optional(factory=tuple)
    inputs: str = optional("")
    random_data: bool = optional(False)
    batch: int | None = optional(None)                    # dim 0 of every input, where a batch was asked for
    shapes: Mapping[str, tuple[int, ...]] = optional(factory=dict)


# ----------------------------------------------------------------- diagnose
@dataclass(frozen=True)
class LayerError(Record):
    """One intermediate tensor of the candidate against the reference's."""

    node: str = ""
    op: str = ""
    tensor: str = ""
    max_abs: float | None = None
    cosine: float | None = None
    snr_db: float | None = None
    nan: int = 0
    inf: int = 0
    ref_nan: int = 0
    ref_inf: int = 0
    floor_cosine: float | None = optional(None)
    floor_max_abs: float | None = optional(None)
    within_floor: bool | None = optional(None)


@dataclass(frozen=True)
class DiagnosedOutput(Record):
    name: str = ""
    kind: str = ""
    task: Task | None = None
    passed: bool = True
    failures: tuple[str, ...] = ()
    cosine: float | None = None


@dataclass(frozen=True)
class DiagnoseResult(JobDoc):
    """Per-layer error of a candidate against the FP32 reference, in the graph's order."""

    candidate: str = ""
    reference: str = ""
    first_nonfinite: str | None = None
    worst: str | None = None
    layers: tuple[LayerError, ...] = ()
    tensors_compared: int = 0
    tensors_missing_in_candidate: int = 0
    inputs: str = optional("")
    random_data: bool = optional(False)
    notes: tuple[str, ...] = optional(factory=tuple)
    answers_changed: bool = optional(False)
    random_ops: RandomOps | None = optional(None)
    outputs: tuple[DiagnosedOutput, ...] = optional(factory=tuple)


# ----------------------------------------------------------------- fallback
@dataclass(frozen=True)
class FallbackStep(Record):
    size: int = 0
    value: float | None = None
    met: bool = False
    phase: str = ""


@dataclass(frozen=True)
class FallbackResult(JobDoc):
    """The few nodes kept in high precision so a candidate meets a target, and the plan that keeps them."""

    candidate: str = ""
    reference: str = ""
    target: str = ""
    met: bool = False
    keep_high_precision: tuple[str, ...] = ()
    before: Mapping[str, float | None] = optional(factory=dict)
    after: Mapping[str, float | None] = optional(factory=dict)
    evaluations: int = 0
    seconds: float = 0.0
    history: tuple[FallbackStep, ...] = optional(factory=tuple)
    stopped: str | None = optional(None)
    plan: Mapping[str, JSONValue] = optional(factory=dict)
    first_nonfinite: str | None = optional(None)
    ranked: tuple[JSONValue, ...] = optional(factory=tuple)
    samples: int = optional(0)
    inputs: str = optional("")
    random_data: bool = optional(False)
    random_ops: RandomOps | None = optional(None)
    notes: Mapping[str, tuple[str, ...]] = optional(factory=dict)
    plan_file: str = optional("")
    # Against a dataset's truth (--dataset): the search's subset and the found plan's change on it (candidate −
    # reference, a fraction, with its 95 % bootstrap interval), then the same on the whole set (`confirmed`: whether
    # it met the target there; null where the confirmation did not run).
    dataset: str = optional("")
    dataset_images: int = optional(0)
    subset: int = optional(0)
    subset_delta: float | None = optional(None)
    subset_ci: tuple[float | None, ...] = optional(factory=tuple)
    confirmed: bool | None = optional(None)
    confirmed_delta: float | None = optional(None)
    confirmed_ci: tuple[float | None, ...] = optional(factory=tuple)

    @property
    def metric(self) -> str:
        """The metric of the target (`cos` of `cos:0.999`)."""
        return self.target.partition(":")[0]


# ----------------------------------------------------------------- build
@dataclass(frozen=True)
class EngineLayer(Record):
    name: str = ""
    type: str = ""
    precision: str = ""
    tactic: str = ""
    onnx_nodes: tuple[str, ...] = ()
    kind: str = optional("")
    inputs: tuple[tuple[JSONValue, ...], ...] = optional(factory=tuple)
    outputs: tuple[tuple[JSONValue, ...], ...] = optional(factory=tuple)


@dataclass(frozen=True)
class PlanMismatch(Record):
    node: str = ""
    planned: str = ""
    ran: str = ""
    severity: str = ""
    message: str = ""
    layers: tuple[str, ...] = ()


@dataclass(frozen=True)
class ParseError(Record):
    """A node TensorRT's ONNX parser refused, in words, with what to do about it."""

    node: str = ""
    op: str = ""
    code: str = ""
    message: str = ""
    fix: str = ""


@dataclass(frozen=True)
class BuildResult(JobDoc):
    """A TensorRT engine built: where it is, what built it, its layers mapped to ONNX nodes, what differs from the
    plan."""

    target: str = ""
    ok: bool = False
    engine: str = optional("")  # absent when the parser refused the graph
    out: str = optional("")
    cached: bool = optional(False)
    key: str = optional("")
    trt_version: str = optional("")
    gpu: str = optional("")
    compute_capability: str = optional("")
    backend: str = optional("")
    flavour: str = optional("")
    targets: tuple[JSONValue, ...] = optional(factory=tuple)
    layer_source: str = optional("")
    config: Mapping[str, JSONValue] = optional(factory=dict)
    warnings: tuple[str, ...] = optional(factory=tuple)
    notes: tuple[str, ...] = optional(factory=tuple)
    layers: tuple[EngineLayer, ...] = optional(factory=tuple)
    ran: Mapping[str, str] = optional(factory=dict)
    mismatches: tuple[PlanMismatch, ...] = optional(factory=tuple)
    parse_errors: tuple[ParseError, ...] = optional(factory=tuple)  # `ok` false: the parser refused the graph


# ----------------------------------------------------------------- variant and run
@dataclass(frozen=True)
class VariantResult(JobDoc):
    out: str = ""
    plan: Mapping[str, JSONValue] = optional(factory=dict)
    plan_summary: str = ""
    key: str = optional("")
    cached: bool = optional(False)
    identity: bool = optional(False)
    notes: tuple[str, ...] = optional(factory=tuple)
    report: Mapping[str, JSONValue] = optional(factory=dict)


@dataclass(frozen=True)
class RunOutput(Record):
    name: str = ""
    shape: tuple[JSONValue, ...] = ()
    dtype: str = ""


@dataclass(frozen=True)
class RunResult(JobDoc):
    backend: str = ""
    samples: int = 0
    inputs: str = optional("")
    random_data: bool = optional(False)
    notes: tuple[str, ...] = optional(factory=tuple)
    npz: str = ""
    outputs: tuple[RunOutput, ...] = ()
