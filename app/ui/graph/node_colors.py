"""What the graph's boxes are coloured by: op category (the default), planned precision, or diagnosis error.

Errors are binned into a few named bands rather than a continuous ramp, so a reader can tell "fine" from
"drifting" from "broken" at a glance and the legend reads as words.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from PySide6.QtGui import QColor

from app.core.model import DisplayGraph
from app.core.results import EngineLayer, LayerTiming
from app.ui.common.style import PRECISION_COLORS, PRECISION_LABELS

NOT_AN_OP = QColor("#eef0f3")       # graph inputs/outputs: no precision of their own
NOT_MEASURED = QColor("#e3e5e8")
# (lowest cosine in the band, label, colour), best first
ERROR_BANDS = (
    (0.99999, "cos ≥ 0.99999", QColor("#2b8a3e")),
    (0.9999, "cos ≥ 0.9999", QColor("#74b816")),
    (0.999, "cos ≥ 0.999", QColor("#fab005")),
    (0.99, "cos ≥ 0.99", QColor("#f76707")),
    (-math.inf, "cos < 0.99", QColor("#e03131")),
)
NONFINITE = QColor("#5f0f40")


def precision_colors(graph: DisplayGraph, precision_of: Sequence[str | None], counts: dict[str, int] | None = None,
                     label_of: Callable[[str], str] | None = None, mix: dict | None = None
                     ) -> tuple[list[QColor], list]:
    """Per display node colours and legend entries (label, colour, count) for the precisions the nodes run.

    `counts` (the plan's, over every node) replaces the count of drawn boxes, so the legend says what the
    Precision table and its summary say (a Constant drawn as a weight chip is a node there too); `label_of`
    names a precision in the legend (e.g. 'FP32 (12 kept)'). A group box takes its nodes' most common precision;
    `mix`, when given, receives each group's precisions by share (drawn as a strip).
    """
    colors: list[QColor] = []
    drawn: dict[str, int] = {}
    for i, idx in enumerate(graph.onnx_index.tolist()):
        inside = graph.members.get(i) if idx < 0 else None
        if inside is not None:  # a group: its most common precision, and the mix as a strip
            hist = Counter(p for m in inside.tolist() if 0 <= m < len(precision_of) and (p := precision_of[m]))
            colors.append(PRECISION_COLORS[hist.most_common(1)[0][0]] if hist else NOT_AN_OP)
            _mix(mix, i, [(PRECISION_COLORS[p], hist[p]) for p in PRECISION_COLORS if hist.get(p)])
            for p, n in hist.items():
                drawn[p] = drawn.get(p, 0) + n
            continue
        p = precision_of[idx] if 0 <= idx < len(precision_of) else None
        colors.append(PRECISION_COLORS[p] if p else NOT_AN_OP)
        if p:
            drawn[p] = drawn.get(p, 0) + 1
    counts = drawn if counts is None else counts
    label_of = label_of or PRECISION_LABELS.__getitem__
    legend = [(label_of(p), PRECISION_COLORS[p], counts[p]) for p in PRECISION_COLORS if counts.get(p)]
    return colors, legend


def _mix(out: dict | None, node: int, parts: list[tuple[QColor, int]]) -> None:
    """A group box's colours by share, for the strip under it (only where the caller asked for them)."""
    total = sum(n for _c, n in parts)
    if out is not None and total:
        out[node] = [(c, n / total) for c, n in parts]


def error_band(cosine: float | None, nonfinite: bool) -> int:
    """Index into ERROR_BANDS, len(ERROR_BANDS) for NaN/Inf, -1 for not measured."""
    if nonfinite:
        return len(ERROR_BANDS)
    if cosine is None or not np.isfinite(cosine):
        return -1
    return next(k for k, (lo, _, _) in enumerate(ERROR_BANDS) if cosine >= lo)


def error_colors(graph: DisplayGraph, node_error: dict[int, tuple[float | None, bool]], mix: dict | None = None,
                 notes: dict | None = None) -> tuple[list[QColor], list]:
    """Per display node colours for a diagnosis: `node_error` maps an ONNX node index to its worst
    output's (cosine, has new NaN/Inf). A group box shows its worst node (the legend counts nodes); `notes`, when
    given, gets each group's words for it ('worst cos 0.998712')."""
    colors: list[QColor] = []
    counts: dict[int, int] = {}
    for i, idx in enumerate(graph.onnx_index.tolist()):
        inside = graph.members.get(i) if idx < 0 else None
        if inside is not None:  # a group: its worst node (NaN/Inf worst of all)
            bands = [error_band(*node_error[m]) for m in inside.tolist() if m in node_error]
            for b in bands:
                counts[b] = counts.get(b, 0) + 1
            worst = max((b for b in bands if b >= 0), default=-1)
            colors.append(NONFINITE if worst == len(ERROR_BANDS) else NOT_MEASURED if worst < 0
                          else ERROR_BANDS[worst][2])
            errs = [node_error[m] for m in inside.tolist() if m in node_error]
            if notes is not None and errs:  # the card's line: the worst inside
                cos = [c for c, _nan in errs if c is not None and np.isfinite(c)]
                notes[i] = ("NaN/Inf inside" if any(nan for _c, nan in errs) else
                            f"worst cos {min(cos):.6f}" if cos else "")
            _mix(mix, i, [(NONFINITE if b == len(ERROR_BANDS) else ERROR_BANDS[b][2], n)
                          for b, n in sorted(Counter(b for b in bands if b >= 0).items())])
            continue
        if idx not in node_error:
            colors.append(NOT_AN_OP if idx < 0 else NOT_MEASURED)
            continue
        band = error_band(*node_error[idx])
        colors.append(NONFINITE if band == len(ERROR_BANDS) else NOT_MEASURED if band < 0 else ERROR_BANDS[band][2])
        counts[band] = counts.get(band, 0) + 1
    legend = [(label, color, counts[k]) for k, (_, label, color) in enumerate(ERROR_BANDS) if k in counts]
    if len(ERROR_BANDS) in counts:
        legend.append(("NaN / Inf", NONFINITE, counts[len(ERROR_BANDS)]))
    if -1 in counts:
        legend.append(("no float output", NOT_MEASURED, counts[-1]))
    return colors, legend


def engine_colors(graph: DisplayGraph, ran_of: Sequence[str | None], mix: dict | None = None
                  ) -> tuple[list[QColor], list]:
    """Per display node colours for the precision each ONNX node ran in, in a TensorRT engine."""
    colors: list[QColor] = []
    counts: dict[str, tuple[QColor, int]] = {}

    def one(p: str | None) -> tuple[QColor, str]:
        return PRECISION_COLORS.get(p or "", NOT_MEASURED), (
            PRECISION_LABELS[p] if p in PRECISION_LABELS and p != "fixed" else "not in the engine / unknown")

    for i, idx in enumerate(graph.onnx_index.tolist()):
        inside = graph.members.get(i) if idx < 0 else None
        if inside is not None:  # a group: the precision most of its nodes ran in
            hist = Counter(one(ran_of[m] if m < len(ran_of) else None) for m in inside.tolist())
            for (color, label), n in hist.items():
                counts[label] = (color, counts.get(label, (color, 0))[1] + n)
            colors.append(hist.most_common(1)[0][0][0] if hist else NOT_AN_OP)
            _mix(mix, i, [(c, n) for (c, _label), n in hist.items()])
            continue
        p = ran_of[idx] if 0 <= idx < len(ran_of) else None
        if idx < 0:
            colors.append(NOT_AN_OP)
            continue
        color, label = one(p)
        colors.append(color)
        counts[label] = (color, counts.get(label, (color, 0))[1] + 1)
    legend = [(label, c, n) for label, (c, n) in counts.items()]
    return colors, legend


TIME_BANDS = (  # (lowest share of the time, label, colour), slowest first
    (0.10, "≥ 10 % of the time", QColor("#b2182b")),
    (0.05, "5–10 %", QColor("#ef8a62")),
    (0.02, "2–5 %", QColor("#fddbc7")),
    (0.005, "0.5–2 %", QColor("#d1e5f0")),
    (0.0, "< 0.5 %", QColor("#67a9cf")),
)


def node_time_shares(layers: Sequence[EngineLayer], times: Mapping[str, LayerTiming]) -> dict[str, float]:
    """Each ONNX node's share of the engine's time: a fused layer's share split evenly among its nodes."""
    out: dict[str, float] = {}
    for layer in layers:
        t = times.get(layer.name)
        nodes = layer.onnx_nodes
        if t is None or not nodes:
            continue
        for key in nodes:
            out[key] = out.get(key, 0.0) + float(t.share) / len(nodes)
    return out


def time_colors(graph: DisplayGraph, share_of: Sequence[float | None],
                untimed: str = "not timed (fused away or not in the engine)", notes: dict | None = None
                ) -> tuple[list[QColor], list]:
    """Per display node colours for the share of the time a node took (a TensorRT engine's layers, split among
    their nodes, or a profile's nodes); `untimed` names the nodes without a time in the legend. A group box shows
    its nodes' summed share (and `notes`, when given, its words: '12.3 % of the time')."""
    colors: list[QColor] = []
    counts: dict[int, int] = {}
    for i, idx in enumerate(graph.onnx_index.tolist()):
        inside = graph.members.get(i) if idx < 0 else None
        if inside is not None:  # a group: the time of all its nodes together
            shares = [sh for m in inside.tolist() if m < len(share_of) and (sh := share_of[m]) is not None]
            share = sum(shares) if shares else None
            if share is not None and notes is not None:
                notes[i] = f"{100 * share:.1f} % of the time"
            if shares:
                counts[-2] = counts.get(-2, 0) + 1
        else:
            share = share_of[idx] if 0 <= idx < len(share_of) else None
        if share is None:
            colors.append(NOT_AN_OP if idx < 0 else NOT_MEASURED)
            if idx >= 0:
                counts[-1] = counts.get(-1, 0) + 1
            continue
        k = next(k for k, (lo, _, _) in enumerate(TIME_BANDS) if share >= lo)
        colors.append(TIME_BANDS[k][2])
        counts[k] = counts.get(k, 0) + 1
    counts.pop(-2, None)
    legend = [(label, color, counts[k]) for k, (_, label, color) in enumerate(TIME_BANDS) if k in counts]
    if -1 in counts:
        legend.append((untimed, NOT_MEASURED, counts[-1]))
    return colors, legend


DEVICE_COLORS = (  # (label, colour): where a node ran, from a profile
    ("CUDA (GPU)", QColor("#2f9e44")),
    ("TensorRT (GPU)", QColor("#1971c2")),
    ("CPU", QColor("#74c0fc")),
    ("CPU: shape arithmetic (by design)", QColor("#ffe8cc")),
    ("CPU: fell back from the GPU", QColor("#e03131")),
    ("other provider", QColor("#9c36b5")),
)
_DEVICE = dict(DEVICE_COLORS)


def device_label(provider: str, gpu_session: bool, fallback: bool) -> str:
    """The legend's words for where a node ran: a CPU node in a GPU session is a fallback unless it only does shape
    arithmetic (ONNX Runtime keeps that on the CPU on purpose)."""
    if provider.startswith("CUDA"):
        return "CUDA (GPU)"
    if provider.startswith("Tensorrt") or provider.startswith("TensorRT") or provider.startswith("NvTensorRT"):
        return "TensorRT (GPU)"
    if provider.startswith("CPU"):
        if not gpu_session:
            return "CPU"
        return "CPU: fell back from the GPU" if fallback else "CPU: shape arithmetic (by design)"
    return "other provider"


def device_colors(graph: DisplayGraph, provider_of: Sequence[str | None], fallback_of: Sequence[bool],
                  gpu_session: bool, mix: dict | None = None) -> tuple[list[QColor], list]:
    """Per display node colours for the execution provider that ran each ONNX node (a profile's placement)."""
    colors: list[QColor] = []
    counts: dict[str, tuple[QColor, int]] = {}

    def one(m: int) -> str:
        p = provider_of[m] if 0 <= m < len(provider_of) else None
        return device_label(p, gpu_session, fallback_of[m]) if p else "not run (folded or fused away)"

    for i, idx in enumerate(graph.onnx_index.tolist()):
        inside = graph.members.get(i) if idx < 0 else None
        if inside is not None:  # a group: a fallback inside shows; else where most of it ran
            hist = Counter(one(m) for m in inside.tolist())
            for label, n in hist.items():
                color = _DEVICE.get(label, NOT_MEASURED)
                counts[label] = (color, counts.get(label, (color, 0))[1] + n)
            worst = "CPU: fell back from the GPU" if hist.get("CPU: fell back from the GPU") else (
                hist.most_common(1)[0][0] if hist else None)
            colors.append(_DEVICE.get(worst, NOT_MEASURED) if worst else NOT_AN_OP)
            _mix(mix, i, [(_DEVICE.get(label, NOT_MEASURED), n) for label, n in hist.items()])
            continue
        if idx < 0:
            colors.append(NOT_AN_OP)
            continue
        label = one(idx)
        color = _DEVICE.get(label, NOT_MEASURED)
        colors.append(color)
        counts[label] = (color, counts.get(label, (color, 0))[1] + 1)
    order = [label for label, _ in DEVICE_COLORS] + ["not run (folded or fused away)"]
    legend = [(label, *counts[label]) for label in order if label in counts]
    return colors, legend


DELTA_BANDS = (  # (lowest change B − A over A's time, label, colour): slower red, faster green
    (0.5, "≥ 50 % slower", QColor("#b2182b")),
    (0.1, "10–50 % slower", QColor("#ef8a62")),
    (-0.1, "within ±10 %", QColor("#f7f7f7")),
    (-0.5, "10–50 % faster", QColor("#7fbf7b")),
    (-math.inf, "≥ 50 % faster", QColor("#1b7837")),
)
ONLY_A = QColor("#c2a5cf")      # the node runs in engine A only
ONLY_B = QColor("#fdb863")      # in engine B only


def delta_band(ms_a: float, delta: float) -> int:
    """Index into DELTA_BANDS for a node (or group) whose time went from `ms_a` by `delta` (B − A)."""
    change = delta / ms_a if ms_a > 0 else (math.inf if delta > 0 else -math.inf if delta < 0 else 0.0)
    return next(k for k, (lo, _, _) in enumerate(DELTA_BANDS) if change >= lo)


def delta_colors(graph: DisplayGraph, change_of: Sequence[tuple[float | None, float | None] | None],
                 notes: dict | None = None) -> tuple[list[QColor], list]:
    """Per display node colours for how a node's time changed from engine A to engine B: `change_of` gives each ONNX
    node's (A's ms, B's ms) in two imported engines (None where neither runs it; one side None: one engine runs it
    alone). A group box shows its nodes' summed change (`notes`: '+0.120 ms (+35 %)')."""
    colors: list[QColor] = []
    counts: dict[int, int] = {}   # -1 not timed, -3 only A, -4 only B

    def one(pair: tuple[float | None, float | None] | None) -> int:
        if pair is None or pair == (None, None):
            return -1
        a, b = pair
        if b is None:
            return -3
        if a is None:
            return -4
        return delta_band(a, b - a)

    for i, idx in enumerate(graph.onnx_index.tolist()):
        inside = graph.members.get(i) if idx < 0 else None
        if inside is not None:  # a group: its nodes' times summed (the ones both engines time)
            pairs = [p for m in inside.tolist() if 0 <= m < len(change_of) and (p := change_of[m]) is not None
                     and p[0] is not None and p[1] is not None]
            if not pairs:
                colors.append(NOT_AN_OP)
                continue
            a = math.fsum(p[0] or 0.0 for p in pairs)
            delta = math.fsum((p[1] or 0.0) - (p[0] or 0.0) for p in pairs)
            if notes is not None:
                notes[i] = f"{delta:+.3f} ms" + (f" ({delta / a:+.0%})" if a > 0 else "")
            colors.append(DELTA_BANDS[delta_band(a, delta)][2])
            continue
        if idx < 0:
            colors.append(NOT_AN_OP)
            continue
        k = one(change_of[idx] if idx < len(change_of) else None)
        counts[k] = counts.get(k, 0) + 1
        colors.append(ONLY_A if k == -3 else ONLY_B if k == -4 else NOT_MEASURED if k == -1 else DELTA_BANDS[k][2])
    legend = [(label, color, counts[k]) for k, (_, label, color) in enumerate(DELTA_BANDS) if k in counts]
    for k, label, color in ((-3, "only in engine A", ONLY_A), (-4, "only in engine B", ONLY_B),
                            (-1, "not timed in both", NOT_MEASURED)):
        if k in counts:
            legend.append((label, color, counts[k]))
    return colors, legend


FUSION_PALETTE = tuple(QColor(c) for c in (  # neighbouring layers take neighbouring entries: each far from the next
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#edc948", "#76b7b2", "#ff9da7", "#9c755f", "#86bcb6",
    "#d37295", "#a0cbe8"))


def fusion_layers(layers: Sequence[EngineLayer]) -> dict[str, int]:
    """Each ONNX node's engine layer, as an index in engine order: the first compute layer that claims it (a
    reformat or Q/DQ layer only where no compute layer does). One pass over the layers."""
    out: dict[str, int] = {}
    weak: dict[str, int] = {}
    for k, layer in enumerate(layers):
        into = weak if layer.kind and layer.kind != "compute" else out
        for node in layer.onnx_nodes:
            into.setdefault(node, k)
    for node, k in weak.items():
        out.setdefault(node, k)
    return out


def fusion_colors(graph: DisplayGraph, layer_of: Sequence[int | None], sizes: Mapping[int, int],
                  notes: dict | None = None, names: Mapping[int, str] | None = None, shown: int = 6
                  ) -> tuple[list[QColor], list]:
    """Per display node colours for the engine layer each ONNX node ran in: `layer_of` gives each ONNX node's layer
    as a colour slot (None: no layer claims it, grey), `sizes` each slot's count of nodes, `names` its layer's name.
    A slot takes the palette's entry of its number, so slots numbered one after the other differ. A group box takes
    its most common layer (`notes`: 'in 3 engine layers'). The legend names the `shown` largest fusions."""
    colors: list[QColor] = []
    single = unclaimed = 0
    first_single: int | None = None
    n = len(FUSION_PALETTE)
    for i, idx in enumerate(graph.onnx_index.tolist()):
        inside = graph.members.get(i) if idx < 0 else None
        if inside is not None:
            hist = Counter(k for m in inside.tolist() if 0 <= m < len(layer_of) and (k := layer_of[m]) is not None)
            colors.append(FUSION_PALETTE[hist.most_common(1)[0][0] % n] if hist else NOT_MEASURED)
            if notes is not None and hist:
                notes[i] = f"in {len(hist)} engine layer{'s' if len(hist) != 1 else ''}"
            continue
        if idx < 0:
            colors.append(NOT_AN_OP)
            continue
        k = layer_of[idx] if idx < len(layer_of) else None
        if k is None:
            colors.append(NOT_MEASURED)
            unclaimed += 1
            continue
        colors.append(FUSION_PALETTE[k % n])
        if sizes.get(k, 1) <= 1:
            single += 1
            first_single = k if first_single is None else first_single
    fused = sorted((k for k, size in sizes.items() if size > 1), key=lambda k: (-sizes[k], k))
    legend = []
    for k in fused[:shown]:
        name = (names or {}).get(k, f"layer {k + 1}")
        legend.append((f"{name if len(name) <= 36 else name[:35] + '…'}", FUSION_PALETTE[k % n], sizes[k]))
    if len(fused) > shown:
        rest = fused[shown:]
        legend.append((f"{len(rest)} more fused layers (a colour each)", FUSION_PALETTE[rest[0] % n],
                       sum(sizes[k] for k in rest)))
    if single:
        legend.append(("a layer of its own (a colour each)", FUSION_PALETTE[(first_single or 0) % n], single))
    if unclaimed:
        legend.append(("in no engine layer", NOT_MEASURED, unclaimed))
    return colors, legend
