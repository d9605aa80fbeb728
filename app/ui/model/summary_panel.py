"""The model summary as a readable page (producer, versions, I/O, counts, op histogram)."""

from __future__ import annotations

import html

from PySide6.QtWidgets import QTextBrowser, QWidget

from app.core.model import ModelSummary, ShapeResult, TensorInfo
from app.core.units import human_bytes, human_count


def _io_table(items: list[TensorInfo], shapes: ShapeResult | None, outputs: bool) -> str:
    """Name, dtype and shape of each graph input/output, with the shapes inference worked with: the input
    shapes set, and concrete dims where the file declares exporter-named ones. A note names what differs
    from the file, so that its declarations stay visible."""
    rows, differ = [], []
    for t in items:
        inferred = shapes.get(t.name) if shapes is not None else None
        shown = inferred if inferred is not None and inferred.shape is not None else t
        if shown.shape != t.shape:
            differ.append(t)
        rows.append(f"<tr><td><code>{html.escape(t.name)}</code></td><td>{t.dtype}</td>"
                    f"<td>{html.escape(shown.shape_text())}</td></tr>")
    table = ("<table cellpadding='2'><tr><th align='left'>name</th><th align='left'>dtype</th>"
             "<th align='left'>shape</th></tr>" + "".join(rows) + "</table>")
    if not differ:
        return table
    if outputs:
        note = f"Shapes as inferred; the file declares {len(differ)} of these with symbolic dims."
    else:
        note = "Shapes as set; the file declares " + ", ".join(
            f"'{t.name}' as {t.shape_text()}" for t in differ[:3]) + ("…" if len(differ) > 3 else "") + "."
    return table + f"<p style='color:#7a7f87; margin-top:2px'>{html.escape(note)}</p>"


def summary_html(s: ModelSummary, shapes: ShapeResult | None = None, load_seconds: float | None = None) -> str:
    opsets = ", ".join(f"{html.escape(d)} {v}" for d, v in s.opsets.items())
    top = max(s.ops.values(), default=1)
    ops = "".join(
        f"<tr><td>{html.escape(op)}</td><td align='right'>{n:,}</td>"
        f"<td><div style='background:#3b6fb6; width:{max(2, int(120 * n / top))}px'>&nbsp;</div></td></tr>"
        for op, n in s.ops.items())
    size = human_bytes(s.file_size) + (f" + {human_bytes(s.external_bytes)} external" if s.external_bytes else "")
    parts = [
        f"<h3 style='margin-bottom:2px'>{html.escape(s.model.split('/')[-1])}</h3>",
        "<table cellspacing='0' cellpadding='2'>",
        f"<tr><td><b>Producer</b></td><td>{html.escape(s.producer)}</td></tr>",
        f"<tr><td><b>IR version</b></td><td>{s.ir_version}</td></tr>",
        f"<tr><td><b>Opsets</b></td><td>{opsets}</td></tr>",
        f"<tr><td><b>Nodes</b></td><td>{s.nodes:,}" + (f" ({s.nodes_total:,} with {s.subgraphs} subgraphs)"
                                                       if s.subgraphs else "") + "</td></tr>",
        f"<tr><td><b>Parameters</b></td><td>{human_count(s.params)} ({human_bytes(s.param_bytes)})"
        + (f", {human_count(s.constant_params)} in Constant nodes" if s.constant_params else "") + "</td></tr>",
        f"<tr><td><b>File</b></td><td>{size}</td></tr>",
    ]
    if s.random_ops:
        parts.append(f"<tr><td><b>Random numbers</b></td><td>{html.escape(s.random_text)}</td></tr>")
    if load_seconds is not None:
        parts.append(f"<tr><td><b>Opened in</b></td><td>{load_seconds:.2f} s</td></tr>")
    if shapes is not None:
        color = "#1b1f24" if shapes.ok else "#b3261e"
        parts.append(f"<tr><td><b>Shapes</b></td><td style='color:{color}'>{html.escape(shapes.message)}</td></tr>")
    parts.append("</table>")
    parts.append("<h4 style='margin-bottom:2px'>Inputs</h4>" + _io_table(s.inputs, shapes, outputs=False))
    parts.append("<h4 style='margin-bottom:2px'>Outputs</h4>" + _io_table(s.outputs, shapes, outputs=True))
    parts.append(f"<h4 style='margin-bottom:2px'>Ops ({len(s.ops)} types)</h4>"
                 f"<table cellpadding='1'>{ops}</table>")
    if s.metadata:
        meta = "".join(f"<tr><td><b>{html.escape(k)}</b></td><td>{html.escape(v[:200])}</td></tr>"
                       for k, v in s.metadata.items())
        parts.append(f"<h4 style='margin-bottom:2px'>Metadata</h4><table cellpadding='2'>{meta}</table>")
    return "".join(parts)


class SummaryPanel(QTextBrowser):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenExternalLinks(False)
        self.setPlaceholderText("Open a model to see its summary.")
        self.summary: ModelSummary | None = None

    def show_summary(self, s: ModelSummary | None, shapes: ShapeResult | None = None,
                     load_seconds: float | None = None) -> None:
        self.summary = s
        self.setHtml(summary_html(s, shapes, load_seconds) if s is not None else "")
