"""Per-layer times of a TensorRT engine (``IProfiler`` reports) and their attribution to ONNX nodes.

Pure logic: the backend's ``trt.IProfiler`` subclass forwards to :class:`TimingRecorder`, nothing here imports
tensorrt. **Time of a fused layer** (:func:`onnx_node_times`): its mean time is split evenly among the ONNX nodes
it ran, so node times add up to the engine's total; every such node is flagged ``fused`` and also carries the
whole time of its layers, because the even split is an estimate, not a measurement.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from app.core.engine.onnx_map import OnnxMapping

__all__ = ["LayerTime", "NodeTime", "NodeTimes", "TimingRecorder", "onnx_node_times", "per_layer_times"]


@dataclass(frozen=True)
class LayerTime:
    mean_ms: float
    median_ms: float
    count: int
    share: float          # this layer's share of the summed time of all layers (0..1)
    total_ms: float = 0.0
    min_ms: float = 0.0
    max_ms: float = 0.0


class TimingRecorder:
    """Collects ``report_layer_time(layer_name, ms)`` calls; the backend's ``trt.IProfiler`` subclass forwards here."""

    def __init__(self) -> None:
        self.records: list[tuple[str, float]] = []

    def report_layer_time(self, layer_name: str, ms: float) -> None:
        self.records.append((str(layer_name), float(ms)))

    def clear(self) -> None:
        self.records.clear()

    def times(self) -> dict[str, LayerTime]:
        return per_layer_times(self.records)


def per_layer_times(records: Iterable[tuple[str, float]]) -> dict[str, LayerTime]:
    """Per engine layer: mean, median, number of reports and share of the total, over every run reported.

    ``records`` are ``(layer_name, ms)`` pairs in the order IProfiler reported them, over any number of runs.
    Layers keep the order of their first report (the engine's execution order).
    """
    samples: dict[str, list[float]] = {}
    for name, ms in records:
        samples.setdefault(str(name), []).append(float(ms))
    grand = sum(sum(v) for v in samples.values())
    return {name: LayerTime(mean_ms=statistics.fmean(v), median_ms=statistics.median(v), count=len(v),
                            share=(sum(v) / grand) if grand > 0 else 0.0, total_ms=sum(v), min_ms=min(v),
                            max_ms=max(v))
            for name, v in samples.items()}


@dataclass(frozen=True)
class NodeTime:
    ms: float                    # mean time attributed to the node (fused layers split evenly)
    share: float                 # ms / mean time of all layers
    layers: tuple[str, ...]      # the engine layers that ran it
    fused: bool                  # one of its layers also ran other ONNX nodes: ``ms`` is an even split
    layer_ms: float              # whole mean time of those layers


@dataclass
class NodeTimes:
    nodes: dict[str, NodeTime] = field(default_factory=dict)
    unattributed: dict[str, float] = field(default_factory=dict)   # layer -> mean ms (reformats, unknown names)
    total_ms: float = 0.0                                          # summed mean time of all layers


def onnx_node_times(times: Mapping[str, LayerTime], mapping: OnnxMapping) -> NodeTimes:
    """Layer times attributed to ONNX nodes: a layer that ran n nodes gives each mean/n and flags them ``fused``."""
    out = NodeTimes(total_ms=sum(t.mean_ms for t in times.values()))
    acc: dict[str, list] = {}
    for layer, t in times.items():
        keys = mapping.keys_for_name(layer)
        if not keys:
            out.unattributed[layer] = t.mean_ms
            continue
        for key in keys:
            entry = acc.setdefault(key, [0.0, [], False, 0.0])
            entry[0] += t.mean_ms / len(keys)
            entry[1].append(layer)
            entry[2] = entry[2] or len(keys) > 1
            entry[3] += t.mean_ms
    for key, (ms, layers, fused, layer_ms) in acc.items():
        out.nodes[key] = NodeTime(ms=ms, share=(ms / out.total_ms) if out.total_ms > 0 else 0.0,
                                  layers=tuple(layers), fused=fused, layer_ms=layer_ms)
    return out
