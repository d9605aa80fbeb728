"""First paint of a big model in the real main window, and the time until its shapes are in.

The graph is the valid 50,000-node BERT-like encoder of tests/support/synthetic_graphs.py (`transformer(50000,
scoped=True)`, nodes named by module): it is checked with ``onnx.checker.check_model(full_check=True)`` first and a
graph that fails is not timed. It is saved to a file, and each run opens that file in a fresh offscreen
``MainWindow`` (1600x1000) through ``open_path``, as File ▸ Open does. From that call (the file's bytes not yet read):

- drawn_s: the window got the drawing (graph read and laid out, no shape inference);
- paint_s: the first paint event of the graph view's viewport with the drawing's items — the first paint;
- shapes_s: the model with its shapes reached the GUI thread (the loader's last progress, just before ``loaded``);
- labels_s: the window is done with it (loader idle, panels filled, the view showing the labelled drawing);
- stall_ms: the longest the GUI thread went without turning its event loop between the first paint and shapes_s
  (shape inference runs meanwhile, in a child process); panels_ms: the window's handler of ``loaded``, one
  stretch on the GUI thread (on a big model it labels the drawing and fills the Summary; the plan, the Precision
  table, the Run panel and the readiness check follow over later turns, partly on worker threads);
- filled_s: ``modelShown``, every panel filled (readiness report in); turn_ms: the longest the GUI thread went
  without turning its event loop from ``loaded`` until then.

Usage:
    QT_QPA_PLATFORM=offscreen python benchmarks/first_paint.py [--nodes 50000] [--runs 3] [--json PATH]
        [--shots DIR]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("QT_NO_GUI_THREADPOOL", "1")  # as the application sets it (app.ui.shell.app.qt_environment)
os.environ.setdefault("TRTLAB_NO_CLOSE_PROMPT", "1")

import onnx  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.shared import write_json  # noqa: E402
from tests.support import synthetic_graphs  # noqa: E402

PAINT_TARGET_S = 1.0


@dataclass
class Run:
    drawn_s: float | None
    paint_s: float
    shapes_s: float
    labels_s: float
    stall_ms: float | None  # None: nothing was painted before the shapes were in
    panels_ms: float
    filled_s: float
    turn_ms: float
    drawn_nodes: int
    labelled_edges: int
    edges: int


def valid_model(nodes: int) -> onnx.ModelProto:
    """The benchmark's graph, refused unless the full ONNX checker passes (strict shape inference)."""
    model = synthetic_graphs.transformer(nodes, scoped=True)
    onnx.checker.check_model(model, full_check=True)
    return model


def one_run(path: Path, settings_dir: Path, shots: Path | None, index: int) -> Run:
    from PySide6.QtCore import QEvent, QObject, QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    from app.ui.shell.main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    w = MainWindow(QSettings(str(settings_dir / f"settings{index}.ini"), QSettings.Format.IniFormat))
    w.resize(1600, 1000)
    w.show()
    app.processEvents()
    marks: dict[str, float] = {}
    ticks: list[float] = []

    class _Paints(QObject):
        def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
            if event.type() == QEvent.Type.Paint and w.view.item is not None and "paint" not in marks:
                marks["paint"] = time.perf_counter()
            return False

    paints = _Paints()
    w.view.viewport().installEventFilter(paints)
    drawn = getattr(w.loader, "drawn", None)
    if drawn is not None:
        drawn.connect(lambda _d: marks.setdefault("drawn", time.perf_counter()))
    # The loader thread's last progress ("Done") reaches the GUI thread just before `loaded`, which the window
    # handles before anything connected here hears of it.
    w.loader.progress.connect(lambda f, _m: marks.setdefault("inferred", time.perf_counter()) if f >= 1.0 else None)
    w.loader.loaded.connect(lambda _o: marks.setdefault("loaded", time.perf_counter()))
    w.modelShown.connect(lambda _o: marks.setdefault("shown", time.perf_counter()))
    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    timer.start()
    shot_first = False
    t0 = time.perf_counter()
    w.open_path(path)
    while w.loader.is_busy() or "paint" not in marks or "shown" not in marks:
        app.processEvents()
        if shots is not None and not shot_first and "paint" in marks:
            w.grab().save(str(shots / f"first_paint_{index}.png"))
            shot_first = True
        if time.perf_counter() - t0 > 300:
            raise TimeoutError("the model was not shown within 300 s")
    done = time.perf_counter()
    timer.stop()
    graph = w.view.graph
    assert graph is not None and w.opened is not None, w.banner.text()
    if shots is not None:
        w.grab().save(str(shots / f"with_shapes_{index}.png"))
        w.view.set_scale(1.2)  # close enough to read the edge labels
        w.view.center_on_node(graph.node_count // 2, select=False, zoom_to_read=False)
        app.processEvents()
        w.grab().save(str(shots / f"with_shapes_close_{index}.png"))
    inferred = marks.get("inferred", marks["loaded"])
    window = [t for t in ticks if marks["paint"] <= t <= inferred]
    gaps = [b - a for a, b in zip([marks["paint"], *window], [*window, inferred], strict=True)]
    after = [t for t in ticks if inferred <= t <= marks["shown"]]
    turns = [b - a for a, b in zip([inferred, *after], [*after, marks["shown"]], strict=True)]
    run = Run(
        drawn_s=round(marks["drawn"] - t0, 3) if "drawn" in marks else None,
        paint_s=round(marks["paint"] - t0, 3), shapes_s=round(inferred - t0, 3),
        labels_s=round(done - t0, 3),
        stall_ms=round(1e3 * max(gaps, default=0.0), 1) if marks["paint"] < inferred else None,
        panels_ms=round(1e3 * (marks["loaded"] - inferred), 1),
        filled_s=round(marks["shown"] - t0, 3), turn_ms=round(1e3 * max(turns, default=0.0), 1),
        drawn_nodes=graph.node_count, labelled_edges=sum(bool(s) for s in graph.edge_labels),
        edges=len(graph.edge_labels))
    w.loader.cancel(silent=True)
    w.loader.wait(20_000)
    w.close()
    w.deleteLater()
    app.processEvents()
    return run


def table(runs: list[Run]) -> str:
    head = (f"{'run':>3} {'drawn s':>8} {'paint s':>8} {'shapes s':>9} {'done s':>7} {'stall ms':>9} "
            f"{'panels ms':>10} {'filled s':>9} {'turn ms':>8} {'boxes':>6} {'labelled':>9}")
    lines = [head, "-" * len(head)]
    for i, r in enumerate(runs, 1):
        drawn = "—" if r.drawn_s is None else f"{r.drawn_s:.3f}"
        stall = "—" if r.stall_ms is None else f"{r.stall_ms:.1f}"
        lines.append(f"{i:>3} {drawn:>8} {r.paint_s:>8.3f} {r.shapes_s:>9.3f} {r.labels_s:>7.3f} "
                     f"{stall:>9} {r.panels_ms:>10.1f} {r.filled_s:>9.3f} {r.turn_ms:>8.1f} {r.drawn_nodes:>6,} "
                     f"{r.labelled_edges:>4}/{r.edges:<4}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=50_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "first_paint.json")
    ap.add_argument("--shots", type=Path, default=None, help="save window grabs (first paint, with shapes) here")
    args = ap.parse_args(argv)
    try:
        model = valid_model(args.nodes)
    except onnx.checker.ValidationError as exc:
        print(f"refusing to time an invalid graph: {exc}")
        return 2
    if args.shots is not None:
        args.shots.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, f"transformer-{args.nodes}.onnx")
        onnx.save(model, str(path))
        size = path.stat().st_size
        print(f"{path.name}: {len(model.graph.node):,} nodes, {size / 2**20:.1f} MB, "
              "onnx.checker.check_model(full_check=True) passed")
        runs = [one_run(path, Path(tmp), args.shots, i) for i in range(1, args.runs + 1)]
    print(table(runs))
    paints = [r.paint_s for r in runs]
    shapes = [r.shapes_s for r in runs]
    print(f"first paint: median {statistics.median(paints):.3f} s (min {min(paints):.3f}, max {max(paints):.3f}); "
          f"target {PAINT_TARGET_S:.1f} s: {'met' if max(paints) <= PAINT_TARGET_S else 'MISSED'}")
    print(f"shapes in:   median {statistics.median(shapes):.3f} s (min {min(shapes):.3f}, max {max(shapes):.3f})")
    turns = [r.turn_ms for r in runs]
    print(f"after shapes: longest GUI turn median {statistics.median(turns):.0f} ms (max {max(turns):.0f}); "
          f"panels filled {statistics.median(r.filled_s - r.shapes_s for r in runs):.3f} s after the shapes")
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = None
    write_json({"machine": platform.platform(), "cpus": os.cpu_count(), "load_average_1min": load,
                "date": time.strftime("%Y-%m-%d %H:%M"), "graph": f"transformer({args.nodes}, scoped=True)",
                "nodes": len(model.graph.node), "file_bytes": size, "full_check": True,
                "paint_target_s": PAINT_TARGET_S, "runs": [asdict(r) for r in runs]}, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
