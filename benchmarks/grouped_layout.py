"""The drawing by groups against the flat layout and dagre (Netron's engine), in one run.

For each graph — synthetic BERT-like encoders whose nodes are named by module (`/encoder/layer.3/attention/self/…`,
as torch.onnx names them) at ~1k, 10k and 50k nodes, and the shared models g2p_bert_mlm (tf2onnx's scopes) and
u2netp (no scopes; its Resizes' shape arithmetic folds) — it measures:

- load_s: reading the file, inferring shapes and building the flat display graph (what the labelled drawing needs;
  the window draws before shape inference: benchmarks/first_paint.py times that);
- open_s: what the window does after that to show the model as it opens: the groups from the names, the shape
  arithmetic to fold, the groups to open first, the drawing's graph and its nested layout, then `GraphView.set_graph`,
  `show_start` and one `grab()` of a 1600x1000 view (offscreen Qt) — the target is 0.5 s at 50k;
- expand_ms / collapse_ms: opening one closed group on show (and closing it again), as a double-click does, layout and
  painting included (median over up to 5 groups) — the target is 50 ms at 50k;
- flat_s: the flat drawing of every node (`layered_layout` + set_graph + grab), and dagre_s: dagre's layout time of
  the same flat graph inside node (Netron's settings; see graph_layout.py), for comparison;
- shown: boxes the model opens showing, of all its nodes.

Usage:
    python benchmarks/grouped_layout.py [--sizes 1k,10k,50k] [--no-dagre] [--dagre-timeout 120] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import onnx  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from graph_layout import DEFAULT_MODELS, SIZES, _dagre, _ensure_dagre, _Scene  # noqa: E402

from app.core.layout import layered_layout  # noqa: E402
from app.core.model import KIND_GROUP, infer_shapes, regroup  # noqa: E402
from app.core.model.display_graph import build_display_graph  # noqa: E402
from app.core.model.opened import GraphPicture  # noqa: E402
from benchmarks.shared import write_json  # noqa: E402
from tests.support import synthetic_graphs  # noqa: E402

OPEN_TARGET_S = 0.5
EXPAND_TARGET_MS = 50.0


@dataclass
class Row:
    graph: str
    nodes: int
    shown: int
    load_s: float
    open_s: float
    expand_ms: float | None
    collapse_ms: float | None
    flat_s: float
    dagre_s: float | None
    dagre_note: str = ""


class _View(_Scene):
    """graph_layout.py's offscreen 1600x1000 view, shown without clearing (an expansion replaces the drawing)."""

    def show(self, graph: object, layout: object, start: bool = True) -> None:
        self.view.set_graph(graph, layout)
        if start:
            self.view.show_start()
        self.view.grab()


def _open_picture(model: onnx.ModelProto, shapes: object, full: object) -> GraphPicture:
    """lay_out's steps after the display graph (app.core.model.opened.lay_out)."""
    from app.core.model import group_tree, hierarchy, initial_expansion, opens_grouped
    from app.core.model.shape_fold import shape_folds

    tree = group_tree(full, hierarchy(model.graph))
    folds = shape_folds(full, shapes)
    first = GraphPicture(full, None, 0.0, tree=tree, full=full, folds=folds, fold=folds is not None)
    return regroup(first, initial_expansion(tree) if opens_grouped(tree) else None)


def run(name: str, path: Path, view: _View, dagre: bool, dagre_timeout: float) -> Row:
    t0 = time.perf_counter()
    model = onnx.load(str(path))
    shapes = infer_shapes(model)
    full = build_display_graph(model.graph, shapes)
    t1 = time.perf_counter()
    pic = _open_picture(model, shapes, full)
    view.show(pic.graph, pic.layout)
    t2 = time.perf_counter()
    expand, collapse = [], []
    if pic.grouped:
        boxes = [v for v in range(pic.graph.node_count) if pic.graph.kinds[v] == KIND_GROUP]
        for v in boxes[len(boxes) // 2:][:5]:  # groups in the middle of the model
            g = pic.graph.group_of[v]
            s = time.perf_counter()
            opened = regroup(pic, pic.expanded | {g})
            view.show(opened.graph, opened.layout, start=False)
            expand.append((time.perf_counter() - s) * 1e3)
            s = time.perf_counter()
            back = regroup(opened, pic.expanded)
            view.show(back.graph, back.layout, start=False)
            collapse.append((time.perf_counter() - s) * 1e3)
    s = time.perf_counter()
    flat = layered_layout(full.node_count, full.edges, full.widths, full.heights)
    view.show(full, flat)
    flat_s = time.perf_counter() - s
    dagre_s, note = None, ""
    if dagre:
        out, note_ = _dagre(full, dagre_timeout)
        dagre_s = out.get("seconds") if out else None
        note = note_ or ""
    return Row(name, int(full.node_count), int(pic.graph.node_count), round(t1 - t0, 3), round(t2 - t1, 3),
               round(float(np.median(expand)), 1) if expand else None,
               round(float(np.median(collapse)), 1) if collapse else None, round(flat_s, 3),
               None if dagre_s is None else round(float(dagre_s), 3), note)


def table(rows: list[Row]) -> str:
    head = (f"{'graph':<24} {'nodes':>7} {'shown':>6} {'load s':>7} {'open s':>7} {'expand ms':>10} "
            f"{'collapse ms':>12} {'flat s':>7} {'dagre s':>8}")
    lines = [head, "-" * len(head)]
    for r in rows:
        def f(v: object, spec: str) -> str:
            return "—" if v is None else format(v, spec)
        lines.append(f"{r.graph:<24} {r.nodes:>7,} {r.shown:>6,} {r.load_s:>7.3f} {r.open_s:>7.3f} "
                     f"{f(r.expand_ms, '.1f'):>10} {f(r.collapse_ms, '.1f'):>12} {r.flat_s:>7.3f} "
                     f"{f(r.dagre_s, '.2f'):>8}" + (f"  ({r.dagre_note})" if r.dagre_note else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1k,10k,50k")
    ap.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    ap.add_argument("--no-dagre", action="store_true")
    ap.add_argument("--dagre-timeout", type=float, default=120.0)
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "grouped_layout.json")
    args = ap.parse_args(argv)
    dagre = not args.no_dagre
    if dagre and (why := _ensure_dagre()):
        print(f"dagre not measured: {why}")
        dagre = False
    view = _View()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        graphs = []
        for size in [s for s in args.sizes.split(",") if s]:
            p = Path(tmp, f"transformer-{size}.onnx")
            # Valid ONNX only (the full checker): an invalid graph is refused, not timed.
            onnx.save(synthetic_graphs.checked(synthetic_graphs.transformer(SIZES[size], scoped=True)), str(p))
            graphs.append((f"transformer-{size} (named)", p))
        for stem in ("g2p_bert_mlm", "u2netp"):
            if (args.models / f"{stem}.onnx").is_file():
                graphs.append((stem, args.models / f"{stem}.onnx"))
        for name, p in graphs:
            rows.append(run(name, p, view, dagre, args.dagre_timeout))
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    print()
    print(table(rows))
    big = [r for r in rows if r.nodes >= 40_000]
    for r in big:
        print(f"{r.graph}: opens in {r.open_s:.3f} s after load (target {OPEN_TARGET_S} s: "
              f"{'met' if r.open_s <= OPEN_TARGET_S else 'MISSED'}); expand {r.expand_ms} ms, collapse "
              f"{r.collapse_ms} ms (target {EXPAND_TARGET_MS:.0f} ms: "
              f"{'met' if max(r.expand_ms or 0, r.collapse_ms or 0) <= EXPAND_TARGET_MS else 'MISSED'})")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    write_json({"machine": platform.platform(), "date": time.strftime("%Y-%m-%d"), "rows": [asdict(r) for r in rows]},
               args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
