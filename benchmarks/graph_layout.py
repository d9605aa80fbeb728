"""Graph layout benchmark: the app's layout and scene building against dagre (Netron's engine).

For each graph (synthetic ResNet-, transformer- and U-Net-like ONNX models at ~1k/10k/50k nodes, plus
every model in the shared models folder) it measures:

- layout_s: ``build_display_graph`` + ``layered_layout`` (the app's own pipeline, default spacing),
  fastest of --repeat runs;
- scene_s: ``GraphView.set_graph`` + ``fit_all`` + one ``grab()`` of a 1600x1000 view (offscreen Qt);
- dagre_s: ``@dagrejs/dagre`` layout time measured inside node with Netron's settings, on the same
  node sizes and edges (see dagre_layout.js);
- crossings of both drawings with the same ``count_crossings``, overlapping node pairs, drawing
  width, and peak memory: tracemalloc peak of a second, separate run of the layout (Python and numpy
  allocations), and node's maxRSS for dagre.

Usage:
    python benchmarks/graph_layout.py [--sizes 1k,10k,50k] [--families resnet,transformer,unet]
        [--models DIR] [--no-dagre] [--dagre-timeout 120] [--repeat 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import asdict, dataclass
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("QT_NO_GUI_THREADPOOL", "1")  # as the application sets it (app.ui.shell.app.qt_environment)

import numpy as np  # noqa: E402
import onnx  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.core.layout.layered import count_crossings, layered_layout, overlapping_pairs  # noqa: E402
from app.core.model.display_graph import build_display_graph  # noqa: E402
from tests.support import synthetic_graphs  # noqa: E402

NODE_DIR = ROOT / "benchmarks" / ".node"
DAGRE_JS = ROOT / "benchmarks" / "dagre_layout.js"
DEFAULT_MODELS = ROOT.parent / "shared" / "models"
SIZES = {"1k": 1_000, "10k": 10_000, "50k": 50_000}


@dataclass
class Record:
    """One benchmark row; None where a value was not measured."""

    graph: str
    nodes: int
    edges: int
    layout_s: float | None = None
    scene_s: float | None = None
    dagre_s: float | None = None
    speedup: float | None = None
    crossings: int | None = None
    dagre_crossings: int | None = None
    overlaps: int | None = None
    dagre_overlaps: int | None = None
    width: float | None = None
    dagre_width: float | None = None
    dummies: int | None = None
    peak_mb: float | None = None
    dagre_peak_mb: float | None = None
    dagre_ranker: str | None = None
    dagre_note: str | None = None
    scene_note: str | None = None


def _ensure_dagre() -> str | None:
    """Install @dagrejs/dagre into benchmarks/.node when missing; returns a reason when unusable."""
    if shutil.which("node") is None:
        return "node not found"
    if (NODE_DIR / "node_modules" / "@dagrejs" / "dagre").is_dir():
        return None
    if shutil.which("npm") is None:
        return "npm not found"
    NODE_DIR.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(
        ["npm", "install", "--prefix", str(NODE_DIR), "@dagrejs/dagre@3.1.3"], capture_output=True, text=True
    )
    if res.returncode != 0:
        return "npm install failed: " + res.stderr.strip()[-200:]
    return None


class _Scene:
    """One offscreen GraphView reused for every graph."""

    def __init__(self) -> None:
        from PySide6.QtWidgets import QApplication

        from app.ui.graph.view import GraphView

        self.app = QApplication.instance() or QApplication([])
        self.view = GraphView()
        self.view.resize(1600, 1000)
        self.view.show()
        self.app.processEvents()

    def time(self, dg: object, layout: object) -> float:
        t0 = time.perf_counter()
        self.view.set_graph(dg, layout)
        self.view.fit_all()
        self.view.grab()
        dt = time.perf_counter() - t0
        self.view.clear()
        self.app.processEvents()
        return dt


def _pipeline(graph: onnx.GraphProto) -> tuple[object, object]:
    dg = build_display_graph(graph)
    layout = layered_layout(dg.node_count, dg.edges, dg.widths, dg.heights)
    return dg, layout


# dagre recurses deeply: node needs a big JS stack (--stack-size, in KiB) and the OS stack under it
# must be larger still, or node dies with SIGSEGV. node runs as a child of a small shell (not exec'd
# from this process) so that its maxRSS is its own: Linux carries the peak RSS across exec.
_NODE_SHELL = 'ulimit -s unlimited 2>/dev/null || ulimit -s 1048576; node --stack-size=65500 "$0" "$1" "$2"; exit $?'


def _dagre(dg: object, timeout: float) -> tuple[dict | None, str | None]:
    """Run dagre on the display graph; (result, note)."""
    with tempfile.TemporaryDirectory() as tmp:
        gin, gout = Path(tmp, "graph.json"), Path(tmp, "layout.json")
        nodes = np.stack([dg.widths, dg.heights], axis=1).tolist()
        gin.write_text(json.dumps({"nodes": nodes, "edges": np.asarray(dg.edges).tolist()}))
        cmd = ["bash", "-c", _NODE_SHELL, str(DAGRE_JS), str(gin), str(gout)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            _, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the shell and node together
            proc.communicate()
            return None, f"timeout after {timeout:g} s"
        if proc.returncode != 0:
            err = stderr.strip().splitlines() or [f"exit code {proc.returncode}"]
            msg = next((ln for ln in err if "Error" in ln), err[-1])
            return None, "crashed: " + msg.strip()[:160]
        return json.loads(gout.read_text()), None


def _dagre_polylines(out: dict, w: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Node y and edge polylines of a dagre result, with ends at node centres like ours.

    dagre's first and last points are border intersections aimed at the next bend; replacing them
    by the bottom/top centre of the nodes makes edges that share a node meet at one point, as in
    our drawing, so count_crossings treats both the same way.
    """
    x = np.asarray(out["x"], dtype=np.float64)
    y = np.asarray(out["y"], dtype=np.float64)
    polys = []
    counts = []
    for s, t, flat in out["edges"]:
        inner = np.asarray(flat, dtype=np.float64).reshape(-1, 2)[1:-1]
        poly = np.vstack([[x[s], y[s] + h[s] / 2], inner, [x[t], y[t] - h[t] / 2]])
        polys.append(poly)
        counts.append(len(poly))
    pts = np.vstack(polys) if polys else np.zeros((0, 2))
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return x, y, pts, offsets


def run_one(name: str, model: onnx.ModelProto, args: argparse.Namespace, scene: _Scene | None) -> Record:
    """Measure one graph."""
    graph = model.graph
    layout_s = float("inf")
    for _ in range(max(1, args.repeat)):
        # Best of a few runs: the machine is shared, and the minimum is the least disturbed one.
        gc.collect()
        t0 = time.perf_counter()
        dg, layout = _pipeline(graph)
        layout_s = min(layout_s, time.perf_counter() - t0)
    rec = Record(graph=name, nodes=int(dg.node_count), edges=int(len(dg.edges)), layout_s=round(layout_s, 3))
    rec.crossings = count_crossings(layout.y, layout.points, layout.edge_offsets)
    rec.overlaps = overlapping_pairs(layout.x, layout.y, dg.widths, dg.heights)
    rec.width = round(float(layout.width), 1)
    rec.dummies = layout.stats.dummies if layout.stats else None
    # Peak memory in a separate run: tracemalloc slows Python code down, so it is not timed.
    gc.collect()
    tracemalloc.start()
    _pipeline(graph)
    rec.peak_mb = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
    tracemalloc.stop()
    if scene is not None:
        rec.scene_s = round(scene.time(dg, layout), 3)
    else:
        rec.scene_note = args.scene_note
    if not args.no_dagre:
        if args.dagre_reason:
            rec.dagre_note = args.dagre_reason
        else:
            out, note = _dagre(dg, args.dagre_timeout)
            rec.dagre_note = note
            if out is not None:
                rec.dagre_s = round(float(out["seconds"]), 3)
                rec.dagre_ranker = out.get("ranker")
                rec.dagre_peak_mb = out.get("max_rss_mb")
                x, y, pts, offs = _dagre_polylines(out, dg.widths, dg.heights)
                rec.dagre_crossings = count_crossings(y, pts, offs)
                rec.dagre_overlaps = overlapping_pairs(x, y, dg.widths, dg.heights)
                rec.dagre_width = round(float((x + dg.widths / 2).max() - (x - dg.widths / 2).min()), 1)
                rec.speedup = round(rec.dagre_s / max(layout_s, 1e-6), 1)
    return rec


def _fmt(v: object, digits: int = 2) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def table(records: list[Record]) -> str:
    """Markdown table of the records."""
    head = (
        "| graph | nodes | edges | layout_s | scene_s | dagre_s | speed-up × | crossings | dagre crossings "
        "| overlaps (ours/dagre) | width (ours/dagre) | dummies | peak MB (ours/dagre) |"
    )
    lines = [head, "|" + "---|" * 13]
    for r in records:
        dg_s = _fmt(r.dagre_s) if r.dagre_s is not None else (r.dagre_note or "—")
        lines.append(
            f"| {r.graph} | {r.nodes:,} | {r.edges:,} | {_fmt(r.layout_s)} | {_fmt(r.scene_s)} | {dg_s} "
            f"| {_fmt(r.speedup, 0)} | {_fmt(r.crossings)} | {_fmt(r.dagre_crossings)} "
            f"| {_fmt(r.overlaps)} / {_fmt(r.dagre_overlaps)} | {_fmt(r.width, 0)} / {_fmt(r.dagre_width, 0)} "
            f"| {_fmt(r.dummies)} | {_fmt(r.peak_mb, 0)} / {_fmt(r.dagre_peak_mb, 0)} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1k,10k,50k", help="synthetic sizes: any of 1k,10k,50k (empty: none)")
    p.add_argument("--families", default=",".join(synthetic_graphs.FAMILIES))
    p.add_argument("--models", default=str(DEFAULT_MODELS), help="folder of .onnx models (skipped if absent)")
    p.add_argument("--no-dagre", action="store_true", help="skip the dagre comparison")
    p.add_argument("--dagre-timeout", type=float, default=120.0, help="seconds per graph")
    p.add_argument("--repeat", type=int, default=3, help="layout runs per graph; the fastest is reported")
    p.add_argument("--json", help="write the records to this JSON file")
    args = p.parse_args(argv)
    args.dagre_reason = None if args.no_dagre else _ensure_dagre()
    scene: _Scene | None = None
    args.scene_note = None
    try:
        scene = _Scene()
    except Exception as exc:  # noqa: BLE001 - any Qt start-up problem means "not measured"
        args.scene_note = f"GraphView unavailable: {exc}"
    jobs: list[tuple[str, object]] = []
    for size in [s for s in args.sizes.split(",") if s]:
        for fam in [f for f in args.families.split(",") if f]:
            # Valid ONNX only (the full checker, strict shape inference): an invalid graph is refused, not timed.
            jobs.append((f"{fam}-{size}",
                         lambda f=fam, s=size: synthetic_graphs.checked(synthetic_graphs.make(f, SIZES[s]))))
    models = Path(args.models)
    if models.is_dir():
        for path in sorted(models.glob("*.onnx")):
            jobs.append((path.stem, lambda p=path: onnx.load(str(p))))
    else:
        print(f"models folder {models} not found: real models skipped", file=sys.stderr)
    records = []
    for name, make in jobs:
        rec = run_one(name, make(), args, scene)
        records.append(rec)
        print(json.dumps(asdict(rec)), file=sys.stderr, flush=True)
    print(table(records))
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in records], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
