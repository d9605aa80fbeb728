"""`trtlab import`: a TensorRT engine built and run elsewhere (a run kit's folder, or trtexec's bare files), read
back onto the ONNX graph (docs/cli.md, `trtlab import`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.core.results.common import JobDoc
from app.core.results.compare import CompareResult
from app.core.results.jobs import LatencyStats
from app.core.results.record import Record, optional


@dataclass(frozen=True)
class ImportedLayer(Record):
    """One engine layer as trtexec reported it: what it ran, which ONNX nodes it fused, how long it took.

    ``kind`` is "compute", "reformat" (a copy between formats or precisions), "qdq" (a Quantize/Dequantize layer
    TensorRT kept on its own), "noop" or "sync"; a reformat or Q/DQ layer lists in ``serves`` the ONNX nodes of the
    layers that read its output, so its time can be charged to them."""

    name: str = ""
    type: str = ""
    kind: str = "compute"
    precision: str = ""                      # what ran (the layer's tensors' types, app.core.engine.layer_precision)
    inputs: tuple[str, ...] = ()             # the input tensors' precisions, in order
    outputs: tuple[str, ...] = ()            # the output tensors' precisions, in order
    tactic: str = ""
    onnx_nodes: tuple[str, ...] = ()         # node keys (with a model), else TensorRT's names
    serves: tuple[str, ...] = optional(factory=tuple)
    ms: float | None = None                  # average time per inference (the profile's averageMs)
    median_ms: float | None = optional(None)
    share: float | None = None               # ms / total_ms
    order: int = 0                           # position in the engine (the profile's order, else the layer info's)
    profiled: bool = True                    # named in the profile (False: in the layer info only)


@dataclass(frozen=True)
class ImportResult(JobDoc):
    """An imported engine: its layers (slowest first when a profile was read), the ONNX nodes no layer claims,
    the latency of its timed inferences, where it ran, and its outputs judged against ONNX Runtime FP32."""

    imported_from: str = ""                   # the folder imported
    kit: bool = False                         # a trtlab run kit's folder (its kit.json named the model)
    variant: str = optional("")               # the graph the engine was built from (a kit's variant ONNX)
    precision: str = optional("")             # the kit's precision or plan summary
    tool: str = optional("")                  # "trtexec" | "tensorrt_rtx"
    trt_version: str = optional("")
    gpu: str = optional("")
    compute_capability: str = optional("")
    layer_source: str = optional("")          # "exportLayerInfo" | "profile only" | ""
    layers: tuple[ImportedLayer, ...] = ()
    total_ms: float | None = None             # sum of the layers' average times: the profile's own total
    profile_runs: int | None = optional(None)
    ran: Mapping[str, str] = optional(factory=dict)          # ONNX node -> precision that ran
    node_ms: Mapping[str, float] = optional(factory=dict)    # ONNX node -> time (fused layers split evenly)
    unclaimed: tuple[str, ...] = optional(factory=tuple)     # ONNX nodes no engine layer claims
    unmapped: tuple[str, ...] = optional(factory=tuple)      # engine layers of no ONNX node (names not in the graph)
    latency_ms: LatencyStats | None = optional(None)         # from --exportTimes
    timed_runs: int = optional(0)
    throughput_per_s: float | None = optional(None)
    files: Mapping[str, str] = optional(factory=dict)        # artefact -> file read ("layers", "profile", …)
    notes: tuple[str, ...] = optional(factory=tuple)
    answers: CompareResult | None = optional(None)           # the engine's outputs against ORT FP32, as `compare`

    def slowest(self, n: int = 10) -> tuple[ImportedLayer, ...]:
        """The n slowest timed layers."""
        timed = [layer for layer in self.layers if layer.ms is not None]
        return tuple(sorted(timed, key=lambda layer: -(layer.ms or 0.0))[:n])


@dataclass(frozen=True)
class ImportedNodeChange(Record):
    """One ONNX node in two imported engines (A, B): its time in each and the change, the precision that ran in
    each, and the layer it ran in with the nodes fused into it. ``gained``/``lost``: the nodes it is fused with in B
    and not in A, and in A and not in B (among the nodes both engines run)."""

    node: str = ""
    ms_a: float | None = None                # the node's time per inference (app: ImportResult.node_ms)
    ms_b: float | None = None
    delta_ms: float | None = None            # ms_b − ms_a (None where one engine has no time for it)
    precision_a: str = ""
    precision_b: str = ""
    layer_a: str = ""                        # the engine layer that ran it ("" where that engine does not)
    layer_b: str = ""
    fused_a: tuple[str, ...] = ()            # the other ONNX nodes of that layer
    fused_b: tuple[str, ...] = ()
    gained: tuple[str, ...] = ()
    lost: tuple[str, ...] = ()
    precision_changed: bool = False
    fusion_changed: bool = False             # partners gained or lost, or alone in one engine and fused in the other
    only_in: str = ""                        # "a" | "b": the node runs in that engine only; "" in both


@dataclass(frozen=True)
class ImportComparison(JobDoc):
    """Two imported engines (FP16 against INT8, TensorRT 10 against 11, two GPUs) compared on the ONNX graph: per
    node the time in each and the change (largest change first, then the nodes one engine runs alone), the
    precisions and fusions that changed, and the totals and latency side by side."""

    label_a: str = ""
    label_b: str = ""
    engine_a: ImportResult | None = None
    engine_b: ImportResult | None = None
    nodes: tuple[ImportedNodeChange, ...] = ()
    total_ms_a: float | None = None
    total_ms_b: float | None = None
    total_delta_ms: float | None = None       # total_ms_b − total_ms_a
    median_ms_a: float | None = None          # the timed inferences' median latency (--exportTimes)
    median_ms_b: float | None = None
    precision_changes: int = 0
    fusion_changes: int = 0
    only_a: tuple[str, ...] = ()              # ONNX nodes engine A runs and B does not
    only_b: tuple[str, ...] = ()
    notes: tuple[str, ...] = optional(factory=tuple)

    def changed(self) -> tuple[ImportedNodeChange, ...]:
        """The nodes whose time, precision or fusion changed, or that one engine runs alone, in the table's order."""
        return tuple(n for n in self.nodes if n.only_in or n.precision_changed or n.fusion_changed
                     or (n.delta_ms is not None and n.delta_ms != 0.0))


@dataclass(frozen=True)
class KitResult(JobDoc):
    """A run kit written (`trtlab kit`): where, the graph TensorRT will build, the samples it carries."""

    out: str = ""                             # the kit's folder
    variant: str = ""                         # the graph file in it
    precision: str = ""
    plan_summary: str = ""
    samples: int = 0
    inputs: str = ""                          # where the samples came from, in words
    random_data: bool = False
    shapes: Mapping[str, tuple[int, ...]] = optional(factory=dict)
    profile_shapes: Mapping[str, Mapping[str, tuple[int, ...]]] = optional(factory=dict)  # input -> min/opt/max
    files: tuple[str, ...] = ()               # the kit's files
    notes: tuple[str, ...] = optional(factory=tuple)
