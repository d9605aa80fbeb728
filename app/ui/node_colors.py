"""What the graph's boxes are coloured by: op category (the default), planned precision, or diagnosis error.

Errors are binned into a few named bands rather than a continuous ramp, so a reader can tell "fine" from
"drifting" from "broken" at a glance and the legend reads as words.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from PySide6.QtGui import QColor

from app.core.display_graph import DisplayGraph
from app.ui.plan_controller import PRECISION_COLORS, PRECISION_LABELS

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


def precision_colors(graph: DisplayGraph, precision_of: Sequence[str | None]) -> tuple[list[QColor], list]:
    """Per display node colours and legend entries (label, colour, count) for the planned precisions."""
    colors, counts = [], {}
    for idx in graph.onnx_index.tolist():
        p = precision_of[idx] if 0 <= idx < len(precision_of) else None
        colors.append(PRECISION_COLORS[p] if p else NOT_AN_OP)
        if p:
            counts[p] = counts.get(p, 0) + 1
    legend = [(PRECISION_LABELS[p], PRECISION_COLORS[p], counts[p]) for p in PRECISION_COLORS if p in counts]
    return colors, legend


def error_band(cosine: float | None, nonfinite: bool) -> int:
    """Index into ERROR_BANDS, len(ERROR_BANDS) for NaN/Inf, -1 for not measured."""
    if nonfinite:
        return len(ERROR_BANDS)
    if cosine is None or not np.isfinite(cosine):
        return -1
    return next(k for k, (lo, _, _) in enumerate(ERROR_BANDS) if cosine >= lo)


def error_colors(graph: DisplayGraph, node_error: dict[int, tuple[float | None, bool]]) -> tuple[list[QColor], list]:
    """Per display node colours for a diagnosis: `node_error` maps an ONNX node index to its worst
    output's (cosine, has new NaN/Inf)."""
    colors, counts = [], {}
    for idx in graph.onnx_index.tolist():
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


def engine_colors(graph: DisplayGraph, ran_of: Sequence[str | None]) -> tuple[list[QColor], list]:
    """Per display node colours for the precision each ONNX node ran in, in a TensorRT engine."""
    colors, counts = [], {}
    for idx in graph.onnx_index.tolist():
        p = ran_of[idx] if 0 <= idx < len(ran_of) else None
        if idx < 0:
            colors.append(NOT_AN_OP)
            continue
        color = PRECISION_COLORS.get(p or "", NOT_MEASURED)
        colors.append(color)
        label = PRECISION_LABELS[p] if p in PRECISION_LABELS and p != "fixed" else "not in the engine / unknown"
        counts[label] = (color, counts.get(label, (color, 0))[1] + 1)
    legend = [(label, c, n) for label, (c, n) in counts.items()]
    return colors, legend
