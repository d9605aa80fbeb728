"""The Results' Sweep tab: speed as a dimension grows (Run ▸ Benchmark Sweep…).

Two plots side by side (one above the other in a narrow dock): latency against the swept value, the median as a
line and the p50–p99 range as a band, and throughput against it; both on log axes, one colour per target, a point's
exact numbers in its tooltip. A point that has no time (out of memory, failed, skipped) is a cross at the foot of
the plot, explained under the plots with each target's knee (where doubling stops paying) and why a precision is
not faster than FP32. Export… writes the plots and their notes as one PNG."""

from __future__ import annotations

import html
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor, QResizeEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QScrollArea, QSplitter, QVBoxLayout, QWidget

from app.core.results import SweepPoint, SweepResult
from app.ui.results.plots import INK, PALETTE, PlotCard

EMPTY_TEXT = ("Run ▸ Benchmark Sweep… (Ctrl+Alt+W) to time each precision at several batch sizes (or another "
              "dynamic dimension): latency and throughput as it grows, and where it stops paying.")
EXPORT_SIZE = (1400, 760)  # pixels of an exported sweep: the plots side by side, the notes under them
# The first drawing step waits this long (a timer rather than a zero-timer): the window's other timers and its
# painting run between two steps instead of after all of them.
TURN_MS = 1
# … and each next one (a step is ≈ 2–5 ms of work, then its paint): the event loop is free a few milliseconds
# between two, so no two steps and their paints add up to one long turn.
STEP_MS = 6
PREPARE_MS = 5      # … and a step of `prepare`: the dialog that asked for it answers between its steps,
PREPARE_WAIT_MS = 60  # the first once the dialog has been laid out and painted
NOTES_LINES = 6            # the notes under the plots show this many lines, then scroll
EXPORT_NOTES_LINES = 14   # … in an exported picture (cut beyond: the project keeps them all)
LEFT_AXIS_PX = 62          # the left axes' width: its label and ticks up to "50000"
NARROW = 820               # narrower than this, the plots go one above the other
FAILED_SYMBOL = "x"
KNEE_SYMBOL = "star"
LIVE_NOTE = ("<i>Line: median (p50); band: p50 to p99.</i><br>"
             "Each point is drawn as it is measured; the knees and the notes come with the result.")
WARM_SYMBOLS = "★ ✕ — → µ × ≈"  # what the notes write with a fallback font, laid out while a sweep runs
NOTES_HEAD = "<i>Line: median (p50); band: p50 to p99. ★ the knee, ✕ a point with no time.</i>"
STATUS_WORDS = {"oom": "out of memory", "failed": "failed", "skipped": "skipped"}


def log_ticks(lo: float, hi: float) -> list[tuple[float, str]]:
    """Ticks for a log axis spanning `lo`..`hi` (values, not logs), written short (150k, not 1.5e+05, so they fit the
    axis's fixed width): 1, 2, 5 × 10^k, or every digit where the span is short, or under a decade evenly spaced
    round values."""
    if lo <= 0 or hi <= 0:
        return []
    lo, hi = min(lo, hi), max(lo, hi)
    out: list[float] = []
    for steps in ((1, 2, 5), (1, 2, 3, 5), tuple(range(1, 10))):
        out = [m * 10.0 ** k for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
               for m in steps if lo / 1.05 <= m * 10.0 ** k <= hi * 1.05]
        if len(out) >= 3:
            break
    if len(out) < 3 and hi > lo * 1.001:  # a span well under a decade: evenly spaced round values, 3 to 6 of them
        raw = (hi - lo) / 4
        step = min((m * 10.0 ** math.floor(math.log10(raw)) for m in (1, 2, 5, 10)), key=lambda x: (abs(x - raw), -x))
        out = [k * step for k in range(math.ceil(lo / step), math.floor(hi / step) + 1)] or out
    from app.core.measure import short_number

    return [(math.log10(v), short_number(v)) for v in out]


def _fmt(v: float | None, unit: str = "") -> str:
    if v is None or not math.isfinite(v):
        return "n/a"
    text = f"{v:.3g}" if abs(v) < 100 else f"{v:,.0f}"
    return f"{text} {unit}".strip()


def _layout(doc: SweepResult) -> tuple[tuple[str, ...], tuple[int, ...], str, int]:
    """What the plots are set up for: the targets (a colour each), the values (the ticks), the dimension."""
    return tuple(doc.targets), tuple(doc.values), doc.input, doc.axis


class SweepView(QWidget):
    """The latest sweep (`set_sweep`); `tips` holds each drawn point's tooltip text by (plot, target, value)."""

    exported = Signal(str)  # what was written where, for the status bar
    _fonts_warm = False  # the notes' symbols were laid out once in this process (`_warm_fonts`)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc: SweepResult | None = None
        self._steps: Iterator[None] | None = None  # the drawing still to do (None: drawn)
        self.model = ""
        self.colors: dict[str, str] = {}
        self.tips: dict[tuple[str, str, int], str] = {}
        self.scatters: dict[tuple[str, str], pg.ScatterPlotItem] = {}  # (plot, target) -> its hoverable points
        self.lines: dict[tuple[str, str], pg.PlotDataItem] = {}  # (plot, target) -> its line
        self.bands: dict[str, tuple[pg.PlotCurveItem, pg.PlotCurveItem]] = {}  # target -> its p50 and p99 curves
        self._stars: list[pg.ScatterPlotItem] = []  # the knees
        self._key: tuple[tuple[str, ...], tuple[int, ...], str, int] | None = None  # the sweep the plots are for
        self._made: set[str] = set()  # the set-up steps done for it: each plot's axes, each target's items
        self._update_due = False
        self._preparing = False  # `prepare` is making the plot widgets
        self._drawing: SweepResult | None = None  # the points the latency plot took last
        self._ticks: dict[str, list[list[tuple[float, str]]]] = {}  # each plot's left ticks now
        self.running = False  # the plots show a sweep's points as they come (`begin`) until its result or its end
        self.stopped = ""     # how a sweep shown as it ran ended without a result ("cancelled after 2 of 6 points")
        self.outer = outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        bar = QHBoxLayout()
        self.caption = QLabel()
        self.caption.setStyleSheet("color:#5f6368;")
        self.caption.setWordWrap(True)
        bar.addWidget(self.caption, 1)
        self.export_button = QPushButton("Export…")
        self.export_button.setToolTip("Save both plots and the notes under them as one PNG")
        self.export_button.clicked.connect(self._export_dialog)
        bar.addWidget(self.export_button, 0, Qt.AlignmentFlag.AlignTop)
        outer.addLayout(bar)
        self.body = QWidget()  # what Export… writes: the plots and the notes
        body = QVBoxLayout(self.body)
        body.setContentsMargins(0, 0, 6, 0)
        self.title = QLabel()  # the model and what was swept: shown in an exported picture only (the bar has it)
        self.title.setWordWrap(True)
        self.title.setStyleSheet("QLabel { color:#1b1f24; font-weight:bold; padding:4px; }")
        self.title.hide()
        body.addWidget(self.title)
        # One legend for both plots, above them: inside a plot it would cover a line or a failed point.
        self.legend = QLabel()
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setWordWrap(True)
        self.legend.setStyleSheet("QLabel { color:#1b1f24; padding:2px 4px; }")
        body.addWidget(self.legend)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setChildrenCollapsible(False)
        self.latency = PlotCard("Latency: median line, p50–p99 band", EMPTY_TEXT)
        self.throughput = PlotCard("Throughput", EMPTY_TEXT)
        for card in (self.latency, self.throughput):
            card.setMinimumSize(220, 160)
            self.splitter.addWidget(card)
        body.addWidget(self.splitter, 1)
        self.notes = QLabel()
        self.notes.setWordWrap(True)
        self.notes.setTextFormat(Qt.TextFormat.RichText)
        self.notes.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.notes.setStyleSheet("QLabel { color:#1b1f24; padding:2px 4px; }")
        self.notes.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        # The notes scroll within a few lines: however many the job wrote, the plots keep their room and the
        # window its size.
        self.notes_scroll = QScrollArea()
        self.notes_scroll.setWidgetResizable(False)  # `_fit_notes` sizes the notes
        self.notes_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.notes_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.notes_scroll.setWidget(self.notes)
        self.notes_lines = NOTES_LINES
        self._notes_height: tuple[str, dict[int, int]] = ("", {})  # the notes' text, and its height by width
        self._fit_pending = False
        body.addWidget(self.notes_scroll)
        outer.addWidget(self.body, 1)
        self.export_label = QLabel()
        self.export_label.setStyleSheet("color:#5f6368;")
        self.export_label.hide()
        outer.addWidget(self.export_label)
        self.set_sweep(None)

    # ----------------------------------------------------------------- data in
    def set_sweep(self, doc: SweepResult | None, model: str = "", at_once: bool = False) -> None:
        """The sweep to show (None: none); `model`, the model's file name, where the result does not carry it.
        The plots are drawn over the next turns of the event loop (`drawn` says when), or here with `at_once`.
        The result of the sweep the plots already show (`begin`, then its points as they came) replaces those
        points where they are: what is drawn stays, the rest (the knees, the notes) comes in short steps."""
        self.running = False
        self.stopped = ""
        if doc is not None and doc.points and not at_once and self._key == _layout(doc):
            self.doc = doc
            self.model = model or self.model
            self.caption.setText(self._caption(doc))
            self.title.setText(self.caption.text())
            self.export_button.setEnabled(True)
            self._run(self._final_steps(doc), at_once)
            return
        self._reset(doc, model)
        if doc is None or not doc.points:
            for card in (self.latency, self.throughput):
                card.show_hint(EMPTY_TEXT if doc is None else "The sweep measured nothing.")
            return
        self.caption.setText(self._caption(doc))
        self.title.setText(self.caption.text())
        for card in (self.latency, self.throughput):
            card.show_hint("Drawing the sweep…")
        self._show_legend()
        self.export_button.setEnabled(True)
        self._run(self._final_steps(doc), at_once)

    def begin(self, doc: SweepResult, model: str = "", wait: bool = False) -> None:
        """A sweep starts (`doc`: its targets and values, no points yet): the tab says what is measured first, its
        empty axes are made over the next turns (with `wait`, from `resume` on: the window has other turns to take
        first), and each `show_partial` adds the points measured so far."""
        self._reset(doc, model)
        self.running = True
        self.caption.setText(self._live_caption(doc))
        self.title.setText(self.caption.text())
        for card in (self.latency, self.throughput):
            card.show_hint("Setting up the plots…")
        self._show_legend()
        # The notes' room kept while it runs: the result's notes then take it without the plots being laid out
        # and painted again at another size.
        self.notes.setText(LIVE_NOTE)
        self.notes_scroll.show()
        self._fit_notes()
        if wait:
            self._steps = self._setup_steps(doc)
        else:
            self._run(self._setup_steps(doc), False)

    def prepare(self) -> None:
        """A sweep may start soon (its dialog is open): the plot widgets are made now, a short step per turn of the
        event loop (≈ 2–5 ms each), so that Run has only to set them up."""
        if self._preparing or all(card.has_plot for card in (self.latency, self.throughput)):
            return
        self._preparing = True
        QTimer.singleShot(PREPARE_WAIT_MS, self._prepare_step)

    def _prepare_step(self) -> None:
        card = next((c for c in (self.latency, self.throughput) if not c.has_plot), None)
        if card is None or self.running:  # done, or a sweep began: its own steps make the rest
            self._preparing = False
            return
        card.make_step()
        QTimer.singleShot(PREPARE_MS, self._prepare_step)

    def resume(self) -> None:
        """The drawing steps `begin` left waiting, one per turn from the next."""
        if self._steps is not None:
            QTimer.singleShot(TURN_MS, self._step)

    def show_partial(self, doc: SweepResult) -> None:
        """The points measured so far of the sweep `begin` started: drawn in a later turn (several that come
        together are drawn once), with cheap updates of the items already there."""
        if not self.running or self._key != _layout(doc):
            return
        self.doc = doc
        self.caption.setText(self._live_caption(doc))
        self.title.setText(self.caption.text())
        self.export_button.setEnabled(bool(doc.points))
        if self._steps is None and not self._update_due:  # else the set-up draws the latest when it is done
            self._update_due = True
            QTimer.singleShot(TURN_MS, self._update_later)

    def stop(self, how: str) -> None:
        """The sweep `begin` started ended without its result (`how`: "cancelled", "failed"): the points measured
        so far stay, with a note of how many of them there are."""
        doc = self.doc
        if not self.running or doc is None:
            return
        self.running = False
        done, total = len(doc.points), len(doc.targets) * len(doc.values)
        self.stopped = f"{how} after {done} of {total} points"
        self.caption.setText(" · ".join(p for p in (self._caption(doc), self.stopped) if p))
        self.title.setText(self.caption.text())
        if not doc.points:
            self._steps = None
            for card in (self.latency, self.throughput):
                card.show_hint(f"The sweep was {how} before its first point was measured.")
            return

        def notes() -> Iterator[None]:
            yield from self._setup_steps(doc)
            self._update(doc)
            yield
            self._set_notes(doc)
            yield

        self._run(notes(), False)

    def _reset(self, doc: SweepResult | None, model: str) -> None:
        """Nothing drawn: the plots emptied, the notes, the legend and the caption gone."""
        self.doc = doc
        self._steps = None
        self.stopped = ""
        self._key = _layout(doc) if doc is not None else None
        self._made = set()
        self.model = model or (Path(doc.model).name if doc is not None and doc.model else "")
        self.tips, self.scatters, self.lines, self.bands = {}, {}, {}, {}
        self._stars, self._ticks = [], {}
        for card in (self.latency, self.throughput):
            card.clear()
        self.caption.setText("")
        self.notes.setText("")
        self.notes_scroll.hide()
        self.legend.setText("")
        self.legend.hide()
        self.export_button.setEnabled(False)
        self.colors = {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(doc.targets)} if doc is not None else {}

    def _show_legend(self) -> None:
        self.legend.setText("&nbsp;&nbsp;&nbsp;".join(
            f"<span style='color:{c}; font-size:16px'>━━</span>&nbsp;{html.escape(t)}" for t, c in self.colors.items()))
        self.legend.show()

    def _run(self, steps: Iterator[None], at_once: bool) -> None:
        """The steps now (`at_once`) or one per turn of the event loop."""
        self._steps = steps
        if at_once:
            for _ in steps:
                pass
            self._steps = None
        else:
            QTimer.singleShot(TURN_MS, self._step)

    def _update_later(self, plots: tuple[str, ...] = ("latency",)) -> None:
        """The latest points in, one plot per turn (each is painted in a turn of its own)."""
        doc = self.doc
        if not self.running or self._steps is not None or doc is None:
            self._update_due = False
            return
        self._update(doc, plots)
        if plots == ("latency",):
            self._drawing = doc
            QTimer.singleShot(STEP_MS, lambda: self._update_later(("throughput",)))
        elif doc is not self._drawing:  # more points came meanwhile: the latency plot takes them too
            QTimer.singleShot(STEP_MS, self._update_later)
        else:
            self._update_due = False

    @property
    def drawn(self) -> bool:
        """Whether the plots show the latest sweep (its drawing steps are done)."""
        return self._steps is None

    def _step(self) -> None:
        steps = self._steps
        if steps is None:
            return
        try:
            next(steps)
        except StopIteration:
            if self._steps is steps:
                self._steps = None
            return
        QTimer.singleShot(STEP_MS, self._step)

    def axis_name(self) -> str:
        doc = self.doc
        if doc is None or doc.is_batch:
            return "batch"
        return f"{doc.input or 'every input'} axis {doc.axis}"

    def unit(self) -> str:
        from app.core.measure import rate_unit

        return rate_unit(self.doc is None or self.doc.is_batch)

    def _caption(self, doc: SweepResult) -> str:
        model = self.model
        shapes = ", ".join(f"{k} {'×'.join(str(d) for d in v)}" for k, v in doc.shapes.items())
        parts = [model, f"{len(doc.targets)} target(s) × {len(doc.values)} value(s) of the {self.axis_name()}",
                 f"timed {doc.mode.replace('_', '-')}" if doc.mode else "", doc.device,
                 f"shapes at {doc.values[0]}: {shapes}" if shapes and doc.values else ""]
        return " · ".join(p for p in parts if p)

    def _live_caption(self, doc: SweepResult) -> str:
        """What is being measured now, and how many points are in."""
        total = len(doc.targets) * len(doc.values)
        measured = {(p.target, p.value) for p in doc.points}
        nxt = next(((t, v) for t in doc.targets for v in doc.values if (t, v) not in measured), None)
        where = "" if nxt is None else (f"{self.axis_name()} {nxt[1]}" if doc.is_batch
                                        else f"{self.axis_name()} = {nxt[1]}")
        parts = [self.model, f"Measuring {nxt[0]} at {where}…" if nxt is not None else "Finishing…",
                 f"{len(doc.points)} of {total} points"]
        return " · ".join(p for p in parts if p)

    # ----------------------------------------------------------------- drawing
    def _setup_steps(self, doc: SweepResult) -> Iterator[None]:
        """The empty plots, in steps of a few milliseconds each (one per turn of the event loop, so the window
        never stalls on them): each plot made with its axes, each target's items added empty, each plot shown; then
        the points in so far. A step done already (`_made`) is not done again."""
        for card in (self.latency, self.throughput):  # made already where the dialog was open a while (`prepare`)
            while card.make_step():
                yield
        for card, ylabel in ((self.latency, "latency (ms)"), (self.throughput, f"throughput ({self.unit()})")):
            if f"axes {card.title}" in self._made:
                continue
            item = card.plot.getPlotItem()
            item.setLabel("bottom", self.axis_name(), color=INK)
            item.setLabel("left", ylabel, color=INK)
            # The data are drawn as log10 values; the axes write the powers of ten back as numbers.
            item.getAxis("bottom").setLogMode(True)
            item.getAxis("left").setLogMode(True)
            # A fixed width: new tick labels as points come do not lay the plot out (and paint it) again.
            item.getAxis("left").setWidth(LEFT_AXIS_PX)
            ticks = [(math.log10(v), str(v)) for v in doc.values if v > 0]
            item.getAxis("bottom").setTicks([ticks, []])
            if ticks:  # the ranges are set, not found by the plot from its data on every change
                lo, hi = ticks[0][0], ticks[-1][0]
                pad = max(0.1, (hi - lo) * 0.05)
                item.getViewBox().setXRange(lo - pad, hi + pad, padding=0)
            item.getViewBox().disableAutoRange()
            self._made.add(f"axes {card.title}")
            yield
        for target in doc.targets:
            if f"items {target}" not in self._made:
                self._items(target)
                self._made.add(f"items {target}")
                yield
        if not SweepView._fonts_warm and self.running:
            self._warm_fonts()
            yield
        if self.doc is not None and self.doc.points:
            for plot in ("latency", "throughput"):
                self._update(self.doc, (plot,))
                yield
        for card in (self.latency, self.throughput):
            if not card.has_data:
                card.show_plot()  # painted in a turn of its own
                yield

    def _final_steps(self, doc: SweepResult) -> Iterator[None]:
        """A sweep's result over what is drawn: the plots set up where they are not, every point, the knees and
        the notes, a step each."""
        yield from self._setup_steps(doc)
        for plot in ("latency", "throughput"):
            self._update(doc, (plot,))
            yield
        self._knees(doc)
        yield
        self._set_notes(doc)

    def _warm_fonts(self) -> None:
        """The notes' usual symbols laid out once off screen while a sweep runs: a symbol from a fallback font
        (★ ✕ → µ …) is found the first time it is laid out, ≈ 10–15 ms, which the result's notes then do not pay."""
        from PySide6.QtGui import QTextDocument

        doc = QTextDocument()
        doc.setDefaultFont(self.notes.font())
        doc.setHtml(f"{NOTES_HEAD}<br><b>{WARM_SYMBOLS}</b> {WARM_SYMBOLS}")
        doc.setTextWidth(400)
        doc.size()
        SweepView._fonts_warm = True

    def _set_notes(self, doc: SweepResult) -> None:
        self.notes.setText(self._notes(doc))
        self.notes_scroll.setVisible(bool(self.notes.text()))
        self._fit_notes()

    def _items(self, target: str) -> None:
        """A target's items on both plots, empty (`_update` gives them their data): its lines with hoverable
        points, the latency's p99 line and the band up to it, and the crosses of its points without a time."""
        color = self.colors[target]
        for card, key in ((self.latency, "latency"), (self.throughput, "throughput")):
            line = pg.PlotDataItem(np.zeros(0), np.zeros(0), pen=pg.mkPen(color, width=2.5))
            card.plot.addItem(line)
            self.lines[(key, target)] = line
            if card is self.latency:
                low = pg.PlotCurveItem(np.zeros(0), np.zeros(0))
                high = pg.PlotCurveItem(np.zeros(0), np.zeros(0),
                                        pen=pg.mkPen(color, width=1, style=Qt.PenStyle.DotLine))
                fill = QColor(color)
                fill.setAlpha(55)
                band = pg.FillBetweenItem(low, high, brush=pg.mkBrush(fill))
                card.plot.addItem(high)
                card.plot.addItem(band)
                self.bands[target] = (low, high)
            scatter = pg.ScatterPlotItem([], [], symbol="o", size=9, brush=pg.mkBrush(color),
                                         pen=pg.mkPen("w", width=1), hoverable=True, hoverSize=13,
                                         tip=lambda x, y, data: str(data))
            card.plot.addItem(scatter)
            self.scatters[(key, target)] = scatter
            cross = pg.ScatterPlotItem([], [], symbol=FAILED_SYMBOL, size=14, brush=pg.mkBrush(color),
                                       pen=pg.mkPen(color, width=1), hoverable=True, tip=lambda x, y, data: str(data))
            card.plot.addItem(cross)
            self.scatters[(f"{key}-failed", target)] = cross

    def _update(self, doc: SweepResult, plots: tuple[str, ...] = ("latency", "throughput")) -> None:
        """Every point of `doc` on the items made for it in `plots` (setData: nothing made, nothing removed), the
        left axes' ticks and the ranges spanning them (set here: no plot works out its own range as it paints)."""
        self.tips = {k: v for k, v in self.tips.items() if k[0] not in plots}
        failed = any(p.status != "ok" for p in doc.points)
        for key in plots:
            card = self.latency if key == "latency" else self.throughput
            ys: list[float] = []
            for target in doc.targets:
                if (key, target) not in self.lines:
                    continue
                ok = [p for p in doc.series(target) if p.status == "ok" and p.latency_ms.median and p.value > 0]
                if key == "throughput":
                    ok = [p for p in ok if p.throughput_per_s]
                xs = np.log10([p.value for p in ok]) if ok else np.zeros(0)
                heights = [float((p.latency_ms.median if key == "latency" else p.throughput_per_s) or 0) for p in ok]
                self._line(key, target, xs, np.log10(heights) if ok else xs, ok)
                ys += heights
                if key != "latency":
                    continue
                high = [p.latency_ms.p99 for p in ok]
                low_curve, high_curve = self.bands[target]
                if ok and all(h is not None and h > 0 for h in high):
                    low_curve.setData(xs, np.log10(heights))
                    high_curve.setData(xs, np.log10([float(h or 0) for h in high]))
                    ys += [float(h or 0) for h in high]
                else:
                    low_curve.setData(np.zeros(0), np.zeros(0))
                    high_curve.setData(np.zeros(0), np.zeros(0))
            self._failed(doc, ys, key)
            if ys:
                foot = min(ys) / 10 ** 0.1 if failed else min(ys)
                ticks = [log_ticks(foot, max(ys)), []]
                axis = card.plot.getPlotItem().getAxis("left")
                if self._ticks.get(key) != ticks:  # the same ticks: the axis is not laid out again
                    self._ticks[key] = ticks
                    axis.setTicks(ticks)
                lo, hi = math.log10(foot), math.log10(max(ys))
                pad = max(0.05, (hi - lo) * 0.06)
                view = card.plot.getPlotItem().getViewBox()
                view.setYRange(lo - pad, hi + pad, padding=0)
                # The view's transform now, not as the plot prepares to paint (it would then be painted twice).
                view.updateMatrix()

    def _line(self, key: str, target: str, xs: np.ndarray, ys: np.ndarray, points: list[SweepPoint]) -> None:
        """A target's line and its hoverable points, whose tooltips give the exact values."""
        tips = [self.point_tip(p) for p in points]
        for p, tip in zip(points, tips, strict=True):
            self.tips[(key, target, p.value)] = tip
        self.lines[(key, target)].setData(xs, ys)
        self.scatters[(key, target)].setData(xs, ys, data=tips)

    def _knees(self, doc: SweepResult) -> None:
        """A star on each target's knee (where doubling stops paying), in its throughput plot."""
        for star in self._stars:
            self.throughput.plot.removeItem(star)
        self._stars = []
        for target in doc.targets:
            knee = doc.knees.get(target)
            if knee is None or knee.value is None:
                continue
            at = doc.point(target, knee.value)
            if at is None or at.status != "ok" or not at.throughput_per_s or at.value <= 0:
                continue
            star = pg.ScatterPlotItem([math.log10(at.value)], [math.log10(float(at.throughput_per_s))],
                                      symbol=KNEE_SYMBOL, size=18, brush=pg.mkBrush(self.colors[target]),
                                      pen=pg.mkPen(INK, width=1))
            star.setToolTip(f"{target}: knee at {self.axis_name()} {knee.value}")
            self.throughput.plot.addItem(star)
            self._stars.append(star)

    def point_tip(self, p: SweepPoint) -> str:
        if p.status != "ok":
            word = STATUS_WORDS.get(p.status, p.status)
            return f"{p.target}\n{self.axis_name()} {p.value}: {word}" + (f"\n{p.message}" if p.message else "")
        lat = p.latency_ms
        lines = [p.target, f"{self.axis_name()} {p.value}",
                 f"latency p50 {_fmt(lat.median, 'ms')}, p99 {_fmt(lat.p99, 'ms')}",
                 f"min {_fmt(lat.min, 'ms')}, max {_fmt(lat.max, 'ms')}",
                 f"throughput {_fmt(p.throughput_per_s, self.unit())}"]
        if p.peak_memory_mb is not None:
            lines.append(f"peak memory {_fmt(p.peak_memory_mb, 'MB')}")
        spread = p.spread()
        if spread is not None:
            medians = ", ".join(f"{m:.3g}" for m in p.sessions_ms)
            lines.append(f"{len(p.sessions_ms)} sessions' medians {medians} ms (spread {spread:.0%}): "
                         "the median one shown")
        if p.unstable:
            lines.append(f"unstable (CoV {_fmt((p.cov or 0) * 100, '%')})")
        return "\n".join(lines)

    def _failed(self, doc: SweepResult, ys: list[float], key: str) -> None:
        """Each point without a time: a cross at the foot of the plot, in its target's colour."""
        bad = [p for p in doc.points if p.status != "ok" and p.value > 0]
        foot = math.log10(min(ys)) - 0.08 if ys else 0.0
        for target in doc.targets:
            cross = self.scatters.get((f"{key}-failed", target))
            if cross is None:
                continue
            mine = [p for p in bad if p.target == target]
            tips = [self.point_tip(p) for p in mine]
            for p, tip in zip(mine, tips, strict=True):
                self.tips[(key, target, p.value)] = tip
            cross.setData([math.log10(p.value) for p in mine], [foot] * len(mine), data=tips)

    def _notes(self, doc: SweepResult) -> str:
        from app.core.measure import RATE_NOTE

        lines: list[str] = [NOTES_HEAD + ("" if doc.is_batch else f" <i>{html.escape(RATE_NOTE)}.</i>")]
        for target in doc.targets:
            color = self.colors[target]
            knee = doc.knees.get(target)
            name = f"<b style='color:{color}'>{html.escape(target)}</b>"
            if knee is not None and (knee.value is not None or knee.best_value is not None):
                best = (f"best {_fmt(knee.best_throughput_per_s, self.unit())} at {knee.best_value}"
                        if knee.best_value is not None else "")
                at = f"knee at {self.axis_name()} {knee.value}" if knee.value is not None else "no knee"
                lines.append(f"{name}: {at}" + (f", {best}" if best else "")
                             + (f" — {html.escape(knee.reason)}" if knee.reason else ""))
            for p in doc.series(target):
                if p.status != "ok":
                    word = STATUS_WORDS.get(p.status, p.status)
                    lines.append(f"{name} at {self.axis_name()} {p.value}: {word}"
                                 + (f" — {html.escape(p.message)}" if p.message else ""))
            if why := doc.why.get(target):
                lines.append(f"{name} is not faster than FP32: {html.escape(why)}")
        if doc.notes:  # how each variant was made: the details, quieter
            lines.append("<span style='color:#5f6368'>" + "<br>".join(html.escape(n) for n in doc.notes) + "</span>")
        return "<br>".join(lines)

    def _fit_later(self) -> None:
        self._fit_pending = False
        want = Qt.Orientation.Vertical if self.width() < NARROW else Qt.Orientation.Horizontal
        if self.splitter.orientation() != want:
            self.splitter.setOrientation(want)
        self._fit_notes()

    def _fit_notes(self) -> None:
        """As tall as the notes where they are short, `notes_lines` lines where longer (they scroll). The notes are
        sized here, not by their scroll area (it would ask them for their size hints again on each change, each a
        layout of the rich text of a few milliseconds), and each width's height is kept until the text changes."""
        if not self.notes_scroll.isVisibleTo(self):
            return
        line = self.notes.fontMetrics().lineSpacing()
        room = line * self.notes_lines + 8
        width = max(200, self.notes_scroll.width())
        if self.running:  # a line or two (LIVE_NOTE), in the room the result's notes will have
            self.notes.resize(width, room)
            self.notes_scroll.setFixedHeight(room)
            return
        bar = self.notes_scroll.verticalScrollBarPolicy() != Qt.ScrollBarPolicy.ScrollBarAlwaysOff
        narrow = max(200, width - self.notes_scroll.verticalScrollBar().sizeHint().width())
        # More lines than the room holds: it scrolls, and the scroll bar takes its width (laid out at that width
        # only). Fewer: at the whole width, then at the narrower one where wrapping makes them too many.
        long = bar and self.notes.text().count("<br>") + 1 > self.notes_lines
        need = self._notes_need(narrow if long else width)
        if long:
            width = narrow
        elif need > room and bar:
            width, need = narrow, self._notes_need(narrow)
        self.notes.resize(width, need)
        # The same room as while the sweep ran, where the notes fill it: the plots are not laid out and painted
        # again at another height.
        self.notes_scroll.setFixedHeight(min(need, room))

    def _notes_need(self, width: int) -> int:
        """The notes' height at `width`, kept until their text changes."""
        text = self.notes.text()
        if text != self._notes_height[0]:
            self._notes_height = (text, {})
        heights = self._notes_height[1]
        if width not in heights:
            heights[width] = self.notes.heightForWidth(width) + 4
        return heights[width]

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        # The plots' orientation and the notes' height in a later turn: a resize (the dock coming forward) stays
        # short, and the sizes a dock passes through as it is laid out the first time turn nothing over.
        if not self._fit_pending:
            self._fit_pending = True
            QTimer.singleShot(TURN_MS, self._fit_later)

    # ----------------------------------------------------------------- export
    def export_png(self, path: Path) -> Path:
        """The plots, the legend and the notes into one PNG of EXPORT_SIZE, whatever room the dock gives them now:
        drawn by a copy of this view laid out off screen at that size."""
        from PySide6.QtCore import QBuffer, QIODevice

        from app.core.fileio import atomic_write_bytes

        copy = SweepView()
        copy.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen)
        copy.resize(*EXPORT_SIZE)
        copy.show()
        try:
            copy.notes_lines = EXPORT_NOTES_LINES
            copy.notes_scroll.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # a picture: no bar
            copy.set_sweep(self.doc, self.model, at_once=True)
            copy.title.show()
            copy.outer.activate()
            copy._fit_notes()  # at the width they have in the picture
            pixmap = copy.body.grab()
        finally:
            copy.close()
            copy.deleteLater()
        buf = QBuffer()
        buf.open(QIODevice.OpenModeFlag.WriteOnly)
        if pixmap.isNull() or not pixmap.save(buf, "PNG"):
            raise OSError(f"the sweep's plots could not be drawn into {path.name}")
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, bytes(buf.data().data()))
        return path

    def export(self, folder: Path) -> list[Path]:
        """The Results' Export plots…: the sweep as sweep.png, where there is one."""
        if self.doc is None or not self.doc.points:
            return []
        return [self.export_png(Path(folder) / "sweep.png")]

    def _export_dialog(self) -> None:
        from PySide6.QtWidgets import QFileDialog

        stem = Path(self.model).stem if self.model else "model"
        path, _ = QFileDialog.getSaveFileName(self, "Export the sweep as PNG", f"{stem}_sweep.png", "PNG (*.png)")
        if path:
            self.save_to(path)

    def save_to(self, path: str) -> Path | None:
        out = Path(path if path.lower().endswith(".png") else f"{path}.png")
        try:
            written = self.export_png(out)
        except OSError as exc:
            self.export_label.setText(f"Could not write {out}: {getattr(exc, 'strerror', None) or exc}")
            self.export_label.show()
            return None
        self.export_label.setText(f"Saved {written}")
        self.export_label.show()
        self.exported.emit(f"Exported the sweep's plots to {written}")
        return written
