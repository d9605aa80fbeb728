"""Everything needed to show a model: load → summary → shapes → display graph → layout.

One plain function with progress and cancel, shared by the GUI's loader thread, the CLI and the
benchmarks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import onnx

from app.core import errors
from app.core.fileio import file_sha256
from app.core.layout import GraphLayout
from app.core.model.display_graph import KIND_OP, DisplayGraph, build_display_graph
from app.core.model.grouping import (
    GROUPED_FROM,
    GroupTree,
    group_tree,
    grouped_layout,
    initial_expansion,
    visible_graph,
)
from app.core.model.hierarchy import hierarchy
from app.core.model.loader import CancelFn, ModelDoc, ProgressFn, load_model
from app.core.model.shape_fold import ShapeFolds, shape_folds
from app.core.model.shapes import ShapeResult, infer_shapes
from app.core.model.summary import ModelSummary, summarize


@dataclass
class GraphPicture:
    """A graph ready to draw: `graph` as laid out now. `full` is the flat display graph of every node (search and
    selection by ONNX node read it); with a group tree the drawing can be by groups (`expanded`: the groups open;
    None: flat), and with shape arithmetic found (`folds`) it can be folded into badges (`fold`), but for the nodes
    in `unfolded` (their chains shown)."""

    graph: DisplayGraph
    layout: GraphLayout
    layout_seconds: float
    tree: GroupTree | None = None
    expanded: set[int] | None = None      # None: drawn flat
    full: DisplayGraph | None = None
    flat_layout: GraphLayout | None = None  # the flat layout of `full` unfolded, once made (switching back is free)
    layout_cache: dict = field(default_factory=dict)  # each expanded group's own layout, for the next expansion
    folds: ShapeFolds | None = None
    fold: bool = False
    unfolded: frozenset[int] = frozenset()

    @property
    def grouped(self) -> bool:
        return self.tree is not None and self.tree.count > 0 and self.expanded is not None

    @property
    def can_group(self) -> bool:
        return self.tree is not None and self.tree.count > 0

    @property
    def folded(self) -> bool:
        return self.fold and self.folds is not None

    @property
    def all_nodes(self) -> DisplayGraph:
        """The flat display graph (every node), whichever way it is drawn."""
        return self.full if self.full is not None else self.graph


FLAT_LIMIT = 20_000  # nodes from which a model opens grouped without name scopes (runs in graph order): its
# flat layout passes a second there (docs/benchmarks.md)


def opens_grouped(tree: GroupTree | None) -> bool:
    """Whether a model opens drawn by groups: name scopes and enough nodes to need them, or too many to draw flat."""
    if tree is None or tree.count == 0:
        return False
    n = int((tree.full.kinds == KIND_OP).sum())
    return (tree.scoped and n >= GROUPED_FROM) or n > FLAT_LIMIT


class _Keep(Enum):
    """`regroup`'s default for `expanded`: the picture's own (None there means flat)."""

    KEEP = "keep"


def regroup(picture: GraphPicture, expanded: set[int] | None | _Keep = _Keep.KEEP, cancel: CancelFn | None = None,
            *, fold: bool | None = None, unfolded: frozenset[int] | None = None) -> GraphPicture:
    """The same graph drawn another way: other groups expanded (None: flat), shape arithmetic folded or not, some
    folded chains shown. Only what shows is laid out; each group's layout and the flat layout are kept for next
    time."""
    from app.core.layout import layered_layout

    full = picture.all_nodes
    started = time.perf_counter()
    exp = picture.expanded if isinstance(expanded, _Keep) else expanded
    fold = picture.fold if fold is None else fold
    unfolded = picture.unfolded if unfolded is None else unfolded
    folds = picture.folds if fold else None
    tree = picture.tree

    def drawn(graph: DisplayGraph, layout: GraphLayout, expanded: set[int] | None,
              flat_layout: GraphLayout | None) -> GraphPicture:
        """The new picture; the tree, the flat graph, the layout cache and the folds carry over."""
        return GraphPicture(graph, layout, time.perf_counter() - started, tree=tree, expanded=expanded, full=full,
                            flat_layout=flat_layout, layout_cache=picture.layout_cache, folds=picture.folds,
                            fold=fold, unfolded=unfolded)

    if exp is not None and tree is not None and tree.count:
        dg = visible_graph(tree, exp, folds, unfolded)
        layout = grouped_layout(tree, dg, picture.layout_cache)
        return drawn(dg, layout, set(exp), picture.flat_layout)
    if folds is None or tree is None:
        layout = picture.flat_layout or layered_layout(full.node_count, full.edges, full.widths, full.heights,
                                                       cancel=cancel)
        return drawn(full, layout, None, layout)
    dg = visible_graph(tree, set(range(tree.count)), folds, unfolded)  # flat, folded
    layout = layered_layout(dg.node_count, dg.edges, dg.widths, dg.heights, cancel=cancel)
    dg.frame_meta = {}
    return drawn(dg, layout, None, picture.flat_layout)


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
            cancel: CancelFn | None = None, *, groups: bool = True) -> GraphPicture:
    """Build the display graph of one (sub)graph and lay it out: by groups where :func:`opens_grouped` says so (only
    what shows is laid out), else flat; shape arithmetic folded into badges where there is some. `groups=False`:
    no groups from names."""
    from app.core.layout import LayoutCancelled

    started = time.perf_counter()
    dg = build_display_graph(graph, shapes)
    tree = group_tree(dg, hierarchy(graph) if groups else [])
    folds = shape_folds(dg, shapes)
    first = GraphPicture(dg, GraphLayout.empty(), 0.0, tree=tree, full=dg, folds=folds,  # laid out by regroup
                         fold=folds is not None)
    try:
        picture = regroup(first, initial_expansion(tree) if opens_grouped(tree) else None,
                          lambda: bool(cancel and cancel()))
    except LayoutCancelled as exc:
        raise errors.LoadCancelled("Loading was cancelled.") from exc
    picture.layout_seconds = time.perf_counter() - started
    return picture


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
