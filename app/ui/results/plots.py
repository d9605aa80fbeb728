"""The Results view's plots (pyqtgraph): one card per plot, each with a hint when it has nothing to show and
its own PNG/SVG export. Every candidate keeps one colour in every plot."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QLabel, QStackedLayout, QWidget

from app.core.measure import ResultsState

# pyqtgraph's exit clean-up walks every live graphics object at interpreter exit; with windows already
# destroyed by Qt that walk can free Python objects twice and abort the process (seen with PySide6 6.12).
pg.setConfigOptions(exitCleanup=False)

PALETTE = ["#3b6fb6", "#d9822b", "#3f8a5a", "#b5473a", "#7a5aa8", "#2e8a8a", "#8a7a3a", "#c2577f"]
REFERENCE_COLOR = "#3c4043"
INK = "#1b1f24"
HINT_STYLE = ("QLabel { background:white; color:#5f6368; border:1px solid #dadce0; border-radius:4px; "
              "font-size:14px; padding:16px; }")


def color_of(state: ResultsState, target: str) -> str:
    """The reference is dark grey; each candidate keeps the palette colour of its first appearance."""
    if target == state.display_reference():
        return REFERENCE_COLOR
    return PALETTE[state.color_index(target) % len(PALETTE)]


class PlotCard(QWidget):
    """One titled plot; a hint in its place while it has no data."""

    def __init__(self, title: str, hint: str, parent: QWidget | None = None, legend_left: bool = False) -> None:
        super().__init__(parent)
        self.legend_left = legend_left  # where the data leaves room: a scatter's top-left is empty
        self.stack = QStackedLayout(self)
        self.stack.setContentsMargins(2, 2, 2, 2)
        self.hint = QLabel(hint)
        self.hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.hint.setWordWrap(True)
        self.hint.setStyleSheet(HINT_STYLE)
        self.title = title
        self.default_hint = hint
        self._plot: pg.PlotWidget | None = None
        self._parts: list[pg.ViewBox | pg.PlotItem] = []  # what `make_step` made of the plot so far
        self.stack.addWidget(self.hint)
        self.has_data = False
        self.notes: list[pg.TextItem] = []
        self.show_hint()

    @property
    def plot(self) -> pg.PlotWidget:
        """The plot widget, made with the first data: a window that never compares carries none."""
        while self._plot is None:
            self.make_step()
        return self._plot

    @property
    def has_plot(self) -> bool:
        """Whether the plot widget is made (`plot` makes it on first use)."""
        return self._plot is not None

    def make_step(self) -> bool:
        """One step of making the plot widget (its view box, its plot item, then the widget: ≈ 2–5 ms each, the
        whole ≈ 10–20 ms): a view that knows its plot will be wanted spreads them over turns of the event loop.
        True while a step remains."""
        if self._plot is not None:
            return False
        if not self._parts:
            self._parts.append(pg.ViewBox())
            return True
        view = self._parts[-1]
        if isinstance(view, pg.ViewBox):
            self._parts.append(pg.PlotItem(viewBox=view))
            return True
        self._parts = []
        self._plot = plot = pg.PlotWidget(background="w", plotItem=view)
        plot.setTitle(self.title, color=INK, size="11pt")
        plot.showGrid(x=True, y=True, alpha=0.25)
        for name in ("left", "bottom", "right", "top"):
            axis = view.getAxis(name)
            # SI rescaling shows tiny errors as "(x0.001)" beside rescaled ticks: real values read better.
            axis.enableAutoSIPrefix(False)
            axis.setTextPen(INK)
            axis.setPen("#80868b")
        self.legend = plot.addLegend(offset=(10 if self.legend_left else -10, 10), labelTextColor=INK,
                                     brush=pg.mkBrush(255, 255, 255, 215), pen=pg.mkPen("#dadce0"))
        self.stack.addWidget(plot)
        return False

    def clear(self) -> None:
        if self._plot is None:
            return
        self.plot.clear()
        self.legend.clear()
        for note in self.notes:  # pinned to the view box, not items of the plot: removed by hand
            note.setParentItem(None)
            if note.scene() is not None:
                note.scene().removeItem(note)
        self.notes = []
        self.plot.getAxis("left").setTicks(None)
        self.plot.getAxis("bottom").setTicks(None)

    def show_hint(self, text: str | None = None) -> None:
        self.has_data = False
        self.hint.setText(text or self.default_hint)
        self.stack.setCurrentWidget(self.hint)

    def show_plot(self) -> None:
        self.has_data = True
        self.legend.setVisible(bool(self.legend.items))  # an empty legend draws as a stray white box
        self.stack.setCurrentWidget(self.plot)

    def export(self, folder: Path, stem: str, title: str) -> list[Path]:
        """PNG and SVG of the plot, titled ``title`` (the model and output named) while it is written."""
        from pyqtgraph.exporters import ImageExporter
        from PySide6.QtCore import QRectF, QSize
        from PySide6.QtGui import QPainter
        from PySide6.QtSvg import QSvgGenerator
        from PySide6.QtWidgets import QApplication

        folder.mkdir(parents=True, exist_ok=True)
        png, svg = folder / f"{stem}.png", folder / f"{stem}.svg"
        shown = self.stack.currentWidget()
        self.stack.setCurrentWidget(self.plot)
        self.plot.setTitle(title, color=INK, size="11pt")
        QApplication.processEvents()  # lay the new title out before the scene is drawn
        try:
            item = self.plot.getPlotItem()
            exp = ImageExporter(item)
            exp.parameters()["width"] = max(800, int(item.width()))
            exp.export(str(png))
            # Qt's own SVG writer: pyqtgraph's SVG exporter cannot parse the path syntax of current Qt releases.
            source = self.plot.sceneRect() if not self.plot.sceneRect().isEmpty() else QRectF(self.plot.rect())
            gen = QSvgGenerator()
            gen.setFileName(str(svg))
            gen.setSize(QSize(int(source.width()), int(source.height())))
            gen.setViewBox(QRectF(0, 0, source.width(), source.height()))
            gen.setTitle(title.replace("<br>", " — "))
            painter = QPainter(gen)
            self.plot.scene().render(painter, QRectF(0, 0, source.width(), source.height()), source)
            painter.end()
        finally:
            self.plot.setTitle(self.title, color=INK, size="11pt")
            if shown is not None:
                self.stack.setCurrentWidget(shown)
        return [png, svg]


def _corner_note(card: PlotCard, text: str, color: str = "#3f8a5a") -> None:
    """A note pinned to the plot's top-left corner (pixels, not data: it stays put while zooming)."""
    note = pg.TextItem(text, color=color, anchor=(0, 0))
    note.setParentItem(card.plot.getPlotItem().getViewBox())
    note.setPos(6, 4)
    card.notes.append(note)


def draw_abs_diff(card: PlotCard, state: ResultsState, output: str) -> None:
    """|candidate − reference| histograms on a log x axis, one outline per candidate."""
    card.clear()
    if not state.plots:
        card.show_hint()
        return
    plot = card.plot
    plot.setLogMode(x=True, y=False)
    identical, drawn = [], 0
    for cand, per_output in state.plots.items():
        drawn_data = per_output.get(output)
        data = drawn_data.abs_diff if drawn_data is not None else None
        if not data:
            continue
        edges, counts = (np.asarray(a, dtype=np.float64) for a in data)
        if len(counts) != len(edges) - 1:
            continue
        zeros = int(counts[0]) if edges[0] == 0 else 0
        keep = edges[:-1] > 0
        e, c = np.concatenate([edges[:-1][keep], edges[-1:]]), counts[keep]
        if c.sum() == 0 or len(e) < 2:
            identical.append(cand)
            continue
        color = color_of(state, cand)
        total = zeros + int(c.sum())
        name = f"{cand}" + (f" ({zeros / total:.0%} identical)" if zeros else "")
        plot.plot(e, c, stepMode="center", fillLevel=0, brush=pg.mkBrush(color + "30"),
                  pen=pg.mkPen(color, width=2), name=name)
        drawn += 1
    if not drawn:
        plot.setLogMode(x=False, y=False)
        card.show_hint("No difference: every value of " + (output or "the outputs") + " is identical to the "
                       "reference for " + ", ".join(identical) + ".")
        return
    if identical:
        _corner_note(card, "identical to the reference: " + ", ".join(identical))
    plot.setLabel("bottom", "|candidate − reference| (log scale)")
    plot.setLabel("left", "values")
    plot.enableAutoRange()
    card.show_plot()


def draw_values(card: PlotCard, state: ResultsState, output: str) -> None:
    """The reference's value distribution (solid, dark) and each candidate's (dashed, its colour)."""
    card.clear()
    if not state.plots:
        card.show_hint()
        return
    plot = card.plot
    ref_drawn = False
    for cand, per_output in state.plots.items():
        drawn_data = per_output.get(output)
        data = drawn_data.values if drawn_data is not None else None
        ref, mine = (data.ref, data.cand) if data is not None else (None, None)
        if not ref_drawn and ref is not None:
            e, c = (np.asarray(a, dtype=np.float64) for a in ref)
            plot.plot(e, c, stepMode="center", pen=pg.mkPen(REFERENCE_COLOR, width=2.5),
                      name=f"{state.reference} (reference)")
            ref_drawn = True
        if mine is not None:
            e, c = (np.asarray(a, dtype=np.float64) for a in mine)
            plot.plot(e, c, stepMode="center", name=cand,
                      pen=pg.mkPen(color_of(state, cand), width=1.5, style=Qt.PenStyle.DashLine))
    if not ref_drawn:
        card.show_hint()
        return
    plot.setLabel("bottom", f"value of {output}")
    plot.setLabel("left", "values")
    plot.enableAutoRange()
    card.show_plot()


def draw_scatter(card: PlotCard, state: ResultsState, output: str) -> None:
    """Reference value (x) against candidate value (y): on the dotted diagonal when equal."""
    card.clear()
    if not state.plots:
        card.show_hint()
        return
    plot = card.plot
    lo, hi, drawn = np.inf, -np.inf, 0
    for cand, per_output in state.plots.items():
        drawn_data = per_output.get(output)
        data = drawn_data.scatter if drawn_data is not None else None
        if not data:
            continue
        x, y = (np.asarray(a, dtype=np.float64) for a in data)
        if not len(x):
            continue
        plot.plot(x, y, pen=None, symbol="o", symbolSize=4, symbolBrush=pg.mkBrush(color_of(state, cand) + "b0"),
                  symbolPen=None, name=cand)
        lo, hi, drawn = min(lo, float(x.min()), float(y.min())), max(hi, float(x.max()), float(y.max())), drawn + 1
    if not drawn:
        card.show_hint(f"No sampled values of {output} to draw.")
        return
    plot.plot([lo, hi], [lo, hi], pen=pg.mkPen("#9aa0a6", style=Qt.PenStyle.DotLine))
    plot.setLabel("bottom", f"reference ({state.reference})")
    plot.setLabel("left", "candidate")
    plot.enableAutoRange()
    card.show_plot()


def draw_latency(card: PlotCard, state: ResultsState) -> None:
    """Latency histograms of every benchmarked target on shared bins, one colour each."""
    card.clear()
    if not state.bench:
        card.show_hint()
        return
    plot = card.plot
    times = {t: np.asarray(d.times_ms or [d.latency_ms.median], dtype=np.float64) for t, d in state.bench.items()}
    every = np.concatenate(list(times.values()))
    lo, hi = float(every.min()), float(every.max())
    edges = np.linspace(lo * 0.97, hi * 1.03 + 1e-9, 50)
    for t, d in state.bench.items():
        counts, _ = np.histogram(times[t], bins=edges)
        color = color_of(state, t)
        label = f"{t} · median {d.latency_ms.median:.3f} ms"
        plot.plot(edges, counts, stepMode="center", fillLevel=0, brush=pg.mkBrush(color + "40"),
                  pen=pg.mkPen(color, width=2), name=label)
    modes = sorted({d.mode.replace("_", "-") for d in state.bench.values()})
    plot.setLabel("bottom", f"latency per run (ms, {' / '.join(modes)})")
    plot.setLabel("left", "runs")
    plot.enableAutoRange()
    card.show_plot()


def draw_speedup(card: PlotCard, state: ResultsState) -> None:
    """Horizontal bars: how many times faster than the reference; n/a where the backend emulates the precision."""
    card.clear()
    speed = state.speedups()
    ref = state.speed_reference()
    if not state.bench:
        card.show_hint()
        return
    if not speed:
        card.show_hint(f"No speed-up yet: benchmark the reference ({ref}) too (Ctrl+B benchmarks it with the "
                       "candidates).")
        return
    plot = card.plot
    names = list(speed)
    rows = list(range(len(names)))[::-1]  # the first target at the top
    values = [0.0 if state.emulations(n) else speed[n] for n in names]
    brushes = [pg.mkBrush(color_of(state, n)) for n in names]
    plot.addItem(pg.BarGraphItem(x0=0, y=rows, width=values, height=0.6, brushes=brushes, pen=None))
    top = max([*values, 1.0])
    for n, y, v in zip(names, rows, values, strict=True):
        e = state.emulations(n)
        text = f"n/a ({e[0].short})" if e else ("reference" if n == ref else f"{v:.2f}×")
        label = pg.TextItem(text, color=INK, anchor=(0, 0.5))
        plot.addItem(label)
        label.setPos(v + top * 0.01, y)
    plot.addLine(x=1.0, pen=pg.mkPen("#9aa0a6", style=Qt.PenStyle.DashLine))
    left = plot.getAxis("left")
    left.setTicks([[(y, n) for n, y in zip(names, rows, strict=True)]])
    font = QFont()
    left.setWidth(max(QFontMetrics(font).horizontalAdvance(n) for n in names) + 16)
    plot.setLabel("bottom", f"× the speed of {ref} (by median latency)")
    plot.setLogMode(x=False, y=False)
    plot.setXRange(0, top * 1.3, padding=0)
    plot.setYRange(-0.6, len(names) - 0.4, padding=0)
    card.show_plot()
