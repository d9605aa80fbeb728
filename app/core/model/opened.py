"""Everything needed to show a model: load → summary → shapes → display graph → layout.

:func:`open_model` does it all in one call (the CLI, comparisons). The window opens in two steps so that a big model
is drawn before its shapes are known: :func:`draw_model` reads the file and lays out its graph with no shape
inference (edge labels blank), and :func:`finish_open` then infers the shapes, summarises the model and labels the
same drawing (:func:`with_shapes`), off the GUI thread.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path

import numpy as np
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
from app.core.model.loader import CancelFn, ModelDoc, ProgressFn, load_model, verify_model
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


@dataclass
class ModelDrawing:
    """A model read and laid out, before shape inference: what the window draws first (edge labels blank).
    :func:`finish_open` makes the :class:`OpenedModel` of it."""

    doc: ModelDoc
    picture: GraphPicture
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return self.doc.path


def draw_model(path: str | Path, progress: ProgressFn | None = None,
               cancel: CancelFn | None = None) -> ModelDrawing:
    """Read a model and lay out its graph, with no shape inference: the first half of :func:`open_model`."""
    report = progress or (lambda _f, _m: None)
    t0 = time.perf_counter()
    doc = load_model(path, progress=lambda f, m: report(None if f is None else 0.3 * f, m), cancel=cancel,
                     verify=False)  # the drawing reads no tensor data: finish_open checks it first
    t1 = time.perf_counter()
    _check_cancel(cancel)
    report(0.35, "Laying out the graph…")
    picture = lay_out(doc.model.graph, None, cancel)
    t2 = time.perf_counter()
    return ModelDrawing(doc, picture, {"load": t1 - t0, "layout": t2 - t1})


def _same_folds(a: ShapeFolds | None, b: ShapeFolds | None) -> bool:
    if a is None or b is None:
        return a is b
    return bool(np.array_equal(a.into, b.into))


def with_shapes(picture: GraphPicture, shapes: ShapeResult, cancel: CancelFn | None = None) -> GraphPicture:
    """The picture of a graph laid out without shapes, now with them: edge labels from `shapes` (the flat graph's
    are set in place, a cheap swap for a view showing it), and the shape arithmetic they reveal folded. The same
    boxes keep their layout; only when the shapes fold other nodes is the graph laid out again."""
    from app.core.layout import LayoutCancelled

    full = picture.all_nodes
    full.label_edges(shapes)
    tree = picture.tree
    folds = shape_folds(full, shapes)
    fold = folds is not None and (picture.fold or picture.folds is None)
    if tree is None or (_same_folds(picture.folds, folds) and fold == picture.fold):
        if picture.graph is full:  # flat, nothing folded: the same graph, its labels set above
            return replace(picture, folds=folds, fold=fold)
        if tree is None:
            return replace(picture, graph=full)
        if picture.expanded is not None:
            dg = visible_graph(tree, picture.expanded, folds if fold else None, picture.unfolded)
        else:  # flat, folded
            dg = visible_graph(tree, set(range(tree.count)), folds, picture.unfolded)
            dg.frame_meta = {}
        return replace(picture, graph=dg, folds=folds, fold=fold)
    moved = replace(picture, folds=folds, fold=fold, unfolded=frozenset(), layout_cache={})
    try:
        return regroup(moved, picture.expanded, lambda: bool(cancel and cancel()))
    except LayoutCancelled as exc:
        raise errors.LoadCancelled("Loading was cancelled.") from exc


def finish_open(drawing: ModelDrawing, input_shapes: dict[str, tuple[int, ...]] | None = None,
                progress: ProgressFn | None = None, cancel: CancelFn | None = None, *,
                isolated: bool = False) -> OpenedModel:
    """The second half of :func:`open_model`: shape inference, the summary, the drawing's edge labels, the hash.
    `isolated`: ONNX's shape inference in a child process, so that a GUI thread sharing this process is not held up
    (see :func:`infer_shapes`)."""
    report = progress or (lambda _f, _m: None)
    doc = drawing.doc
    t0 = time.perf_counter()
    if not doc.verified:  # read without its checks by draw_model
        verify_model(doc, cancel=cancel)
    checked = time.perf_counter() - t0
    doc.load_seconds += checked
    report(0.5, "Inferring shapes…")
    t0 = time.perf_counter()
    shapes = infer_shapes(doc.model, input_shapes, isolated=isolated, cancel=cancel)
    t1 = time.perf_counter()
    _check_cancel(cancel)
    report(0.85, "Summarising…")
    summary = summarize(doc)
    _check_cancel(cancel)
    report(0.9, "Labelling the edges…")
    picture = with_shapes(drawing.picture, shapes, cancel)
    t2 = time.perf_counter()
    report(1.0, "Done")
    try:
        st = doc.path.stat()
        digest, hashed = file_sha256(doc.path), (st.st_size, st.st_mtime_ns)
    except OSError:
        digest, hashed = "", (0, 0)  # gone since it was read: a project saved now records no hash
    t3 = time.perf_counter()
    timings = dict(drawing.timings)
    timings["load"] = timings.get("load", 0.0) + checked
    timings["layout"] = timings.get("layout", 0.0) + (t2 - t1)
    timings.update(shapes=t1 - t0, hash=t3 - t2)
    timings["total"] = sum(timings[k] for k in ("load", "shapes", "layout", "hash"))
    return OpenedModel(doc=doc, summary=summary, shapes=shapes, picture=picture,
                       input_shapes=dict(input_shapes or {}), sha256=digest, sha256_of=hashed, timings=timings)


def _check_cancel(cancel: CancelFn | None) -> None:
    if cancel is not None and cancel():
        raise errors.LoadCancelled("Loading was cancelled.")


def open_model(path: str | Path, input_shapes: dict[str, tuple[int, ...]] | None = None,
               progress: ProgressFn | None = None, cancel: CancelFn | None = None) -> OpenedModel:
    """Load a model and prepare its picture (:func:`draw_model`, then :func:`finish_open`); raises typed errors for
    bad files."""
    return finish_open(draw_model(path, progress, cancel), input_shapes, progress, cancel)
