"""Everything needed to show a model: load → summary → shapes → display graph → layout.

One plain function with progress and cancel, shared by the GUI's loader thread, the CLI and the
benchmarks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import onnx

from app.core import errors
from app.core.fileio import file_sha256
from app.core.model.display_graph import DisplayGraph, build_display_graph
from app.core.model.loader import CancelFn, ModelDoc, ProgressFn, load_model
from app.core.model.shapes import ShapeResult, infer_shapes
from app.core.model.summary import ModelSummary, summarize


@dataclass
class GraphPicture:
    """A graph ready to draw."""

    graph: DisplayGraph
    layout: object  # app.core.layout.layered.GraphLayout
    layout_seconds: float


@dataclass
class OpenedModel:
    doc: ModelDoc
    summary: ModelSummary
    shapes: ShapeResult
    picture: GraphPicture
    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    sha256: str = ""  # of the model file, hashed here in the loader's thread (projects record it; never the GUI's)
    sha256_of: tuple[int, int] = (0, 0)  # the file's (size, mtime_ns) when it was hashed

    @property
    def path(self) -> Path:
        return self.doc.path


def lay_out(graph: onnx.GraphProto, shapes: ShapeResult | None,
            cancel: CancelFn | None = None) -> GraphPicture:
    """Build the display graph of one (sub)graph and lay it out."""
    from app.core.layout import LayoutCancelled, layered_layout

    started = time.perf_counter()
    dg = build_display_graph(graph, shapes)
    try:
        layout = layered_layout(dg.node_count, dg.edges, dg.widths, dg.heights, cancel=cancel)
    except LayoutCancelled as exc:
        raise errors.LoadCancelled("Loading was cancelled.") from exc
    return GraphPicture(graph=dg, layout=layout, layout_seconds=time.perf_counter() - started)


def open_model(path: str | Path, input_shapes: dict[str, tuple[int, ...]] | None = None,
               progress: ProgressFn | None = None, cancel: CancelFn | None = None) -> OpenedModel:
    """Load a model and prepare its picture; raises typed errors for bad files."""
    report = progress or (lambda _f, _m: None)

    def check_cancel() -> None:
        if cancel is not None and cancel():
            raise errors.LoadCancelled("Loading was cancelled.")

    t0 = time.perf_counter()
    doc = load_model(path, progress=lambda f, m: report(None if f is None else 0.6 * f, m), cancel=cancel)
    t1 = time.perf_counter()
    check_cancel()
    report(0.65, "Summarising…")
    summary = summarize(doc)
    report(0.7, "Inferring shapes…")
    shapes = infer_shapes(doc.model, input_shapes)
    t2 = time.perf_counter()
    check_cancel()
    report(0.8, f"Laying out {summary.nodes:,} nodes…")
    picture = lay_out(doc.model.graph, shapes, cancel)
    t3 = time.perf_counter()
    report(1.0, "Done")
    try:
        st = doc.path.stat()
        digest, hashed = file_sha256(doc.path), (st.st_size, st.st_mtime_ns)
    except OSError:
        digest, hashed = "", (0, 0)  # gone since it was read: a project saved now records no hash
    t4 = time.perf_counter()
    return OpenedModel(doc=doc, summary=summary, shapes=shapes, picture=picture,
                       input_shapes=dict(input_shapes or {}), sha256=digest, sha256_of=hashed,
                       timings={"load": t1 - t0, "shapes": t2 - t1, "layout": t3 - t2, "hash": t4 - t3,
                                "total": t4 - t0})
