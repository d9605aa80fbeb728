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
# A step waits this long (a timer rather than a zero-timer): the window's other timers and its painting run between
# two steps instead of after all of them.
TURN_MS = 1
NOTES_LINES = 6            # the notes under the plots show this many lines, then scroll
EXPORT_NOTES_LINES = 14   # … in an exported picture (cut beyond: the project keeps them all)
NARROW = 820               # narrower than this, the plots go one above the other
FAILED_SYMBOL = "x"
KNEE_SYMBOL = "star"
STATUS_WORDS = {"oom": "out of memory", "failed": "failed", "skipped": "skipped"}


def log_ticks(lo: float, hi: float) -> list[tuple[float, str]]:
    """Ticks for a log axis spanning `lo`..`hi` (values, not logs), written as plain numbers: 1, 2, 5 × 10^k, or
    every digit where the span is short."""
    if lo <= 0 or hi <= 0:
        return []
    lo, hi = min(lo, hi), max(lo, hi)
    out: list[float] = []
    for steps in ((1, 2, 5), (1, 2, 3, 5), tuple(range(1, 10))):
        out = [m * 10.0 ** k for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
               for m in steps if lo / 1.05 <= m * 10.0 ** k <= hi * 1.05]
        if len(out) >= 3:
            break
    return [(math.log10(v), f"{v:g}" if v < 1e5 else f"{v:.0e}") for v in out]


def _fmt(v: float | None, unit: str = "") -> str:
    if v is None or not math.isfinite(v):
        return "n/a"
    text = f"{v:.3g}" if abs(v) < 100 else f"{v:,.0f}"
    return f"{text} {unit}".strip()


class _Card(PlotCard):
    """A plot card that says whether its plot widget is made yet."""

    @property
    def made(self) -> bool:
        return self._plot is not None


class SweepView(QWidget):
    """The latest sweep (`set_sweep`); `tips` holds each drawn point's tooltip text by (plot, target, value)."""

    exported = Signal(str)  # what was written where, for the status bar

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc: SweepResult | None = None
        self._steps: Iterator[None] | None = None  # the drawing still to do (None: drawn)
        self.model = ""
        self.colors: dict[str, str] = {}
        self.tips: dict[tuple[str, str, int], str] = {}
        self.scatters: dict[tuple[str, str], pg.ScatterPlotItem] = {}  # (plot, target) -> its hoverable points
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
        self.latency = _Card("Latency: median line, p50–p99 band", EMPTY_TEXT)
        self.throughput = _Card("Throughput", EMPTY_TEXT)
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
        self.notes_scroll.setWidgetResizable(True)
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
        The plots are drawn over the next turns of the event loop (`drawn` says when), or here with `at_once`."""
        self.doc = doc
        self._steps = None
        self.model = model or (Path(doc.model).name if doc is not None and doc.model else "")
        self.tips, self.scatters = {}, {}
        for card in (self.latency, self.throughput):
            card.clear()
        if doc is None or not doc.points:
            for card in (self.latency, self.throughput):
                card.show_hint(EMPTY_TEXT if doc is None else "The sweep measured nothing.")
            self.caption.setText("")
            self.notes.setText("")
            self.notes_scroll.hide()
            self.legend.setText("")
            self.legend.hide()
            self.export_button.setEnabled(False)
            return
        self.colors = {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(doc.targets)}
        self.caption.setText(self._caption(doc))
        self.title.setText(self.caption.text())
        for card in (self.latency, self.throughput):
            card.show_hint("Drawing the sweep…")
        self._steps = self._draw_steps(doc)
        if at_once:
            for _ in self._steps:
                pass
            self._steps = None
        else:
            QTimer.singleShot(TURN_MS, self._step)
        self.legend.setText("&nbsp;&nbsp;&nbsp;".join(
            f"<span style='color:{c}; font-size:16px'>━━</span>&nbsp;{html.escape(t)}" for t, c in self.colors.items()))
        self.legend.show()
        self.notes.setText(self._notes(doc))
        self.notes_scroll.setVisible(bool(self.notes.text()))
        self._fit_notes()
        self.export_button.setEnabled(True)

    def prepare(self) -> None:
        """Make the two plots ahead of a result (while a sweep runs), one per turn of the event loop: making one
        takes a turn of its own, so the result's arrival does not pay for both."""
        cards = [c for c in (self.latency, self.throughput) if not c.made]

        def make() -> None:
            if cards:
                _ = cards.pop(0).plot
            if cards:
                QTimer.singleShot(TURN_MS, make)

        QTimer.singleShot(TURN_MS, make)

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
        QTimer.singleShot(TURN_MS, self._step)

    def axis_name(self) -> str:
        doc = self.doc
        if doc is None or doc.is_batch:
            return "batch"
        return f"{doc.input or 'every input'} axis {doc.axis}"

    def unit(self) -> str:
        return "items/s" if self.doc is None or self.doc.is_batch else "runs/s"

    def _caption(self, doc: SweepResult) -> str:
        model = self.model
        shapes = ", ".join(f"{k} {'×'.join(str(d) for d in v)}" for k, v in doc.shapes.items())
        parts = [model, f"{len(doc.targets)} target(s) × {len(doc.values)} value(s) of the {self.axis_name()}",
                 f"timed {doc.mode.replace('_', '-')}" if doc.mode else "", doc.device,
                 f"shapes at {doc.values[0]}: {shapes}" if shapes and doc.values else ""]
        return " · ".join(p for p in parts if p)

    # ----------------------------------------------------------------- drawing
    def _draw_steps(self, doc: SweepResult) -> Iterator[None]:
        """The drawing, in steps of a few milliseconds each (`set_sweep` runs one per turn of the event loop, so the
        window never stalls on it): each plot made, each target's items added, each plot shown."""
        for card, ylabel in ((self.latency, "latency (ms)"), (self.throughput, f"throughput ({self.unit()})")):
            item = card.plot.getPlotItem()  # made on first use: a step of its own
            item.setLabel("bottom", self.axis_name(), color=INK)
            item.setLabel("left", ylabel, color=INK)
            # The data are drawn as log10 values; the axes write the powers of ten back as numbers.
            item.getAxis("bottom").setLogMode(True)
            item.getAxis("left").setLogMode(True)
            ticks = [(math.log10(v), str(v)) for v in doc.values if v > 0]
            item.getAxis("bottom").setTicks([ticks, []])
            yield
        lat_ys: list[float] = []
        thr_ys: list[float] = []
        for target in doc.targets:
            series = doc.series(target)
            ok = [p for p in series if p.status == "ok" and p.latency_ms.median and p.value > 0]
            color = self.colors[target]
            xs = np.log10([p.value for p in ok]) if ok else np.zeros(0)
            med = [float(p.latency_ms.median or 0) for p in ok]
            self._line(self.latency, target, xs, np.log10(med) if ok else xs, color, ok, "latency")
            lat_ys += med
            high = [p.latency_ms.p99 for p in ok]
            if ok and all(h is not None and h > 0 for h in high):
                low_curve = pg.PlotCurveItem(xs, np.log10(med))
                high_curve = pg.PlotCurveItem(xs, np.log10([float(h or 0) for h in high]),
                                              pen=pg.mkPen(color, width=1, style=Qt.PenStyle.DotLine))
                fill = QColor(color)
                fill.setAlpha(55)
                band = pg.FillBetweenItem(low_curve, high_curve, brush=pg.mkBrush(fill))
                self.latency.plot.addItem(high_curve)
                self.latency.plot.addItem(band)
                lat_ys += [float(h or 0) for h in high]
            yield
            tp = [p for p in ok if p.throughput_per_s]
            txs = np.log10([p.value for p in tp]) if tp else np.zeros(0)
            tys = np.log10([float(p.throughput_per_s or 0) for p in tp]) if tp else np.zeros(0)
            self._line(self.throughput, target, txs, tys, color, tp, "throughput")
            thr_ys += [float(p.throughput_per_s or 0) for p in tp]
            knee = doc.knees.get(target)
            if knee is not None and knee.value is not None:
                at = next((p for p in tp if p.value == knee.value), None)
                if at is not None:
                    star = pg.ScatterPlotItem([math.log10(at.value)], [math.log10(float(at.throughput_per_s or 0))],
                                              symbol=KNEE_SYMBOL, size=18, brush=pg.mkBrush(color),
                                              pen=pg.mkPen(INK, width=1))
                    star.setToolTip(f"{target}: knee at {self.axis_name()} {knee.value}")
                    self.throughput.plot.addItem(star)
            yield
        for card, ys, key in ((self.latency, lat_ys, "latency"), (self.throughput, thr_ys, "throughput")):
            self._failed(card, doc, ys, key)
            if ys:
                foot = min(ys) / 10 ** 0.1 if any(p.status != "ok" for p in doc.points) else min(ys)
                card.plot.getPlotItem().getAxis("left").setTicks([log_ticks(foot, max(ys)), []])
            card.show_plot()  # painted in a turn of its own
            yield

    def _line(self, card: PlotCard, target: str, xs: np.ndarray, ys: np.ndarray, color: str,
              points: list[SweepPoint], key: str) -> None:
        """A target's line with hoverable points whose tooltips give the exact values."""
        if not len(xs):
            return
        card.plot.addItem(pg.PlotDataItem(xs, ys, pen=pg.mkPen(color, width=2.5)))
        tips = [self.point_tip(p) for p in points]
        for p, tip in zip(points, tips, strict=True):
            self.tips[(key, target, p.value)] = tip
        scatter = pg.ScatterPlotItem(xs, ys, data=tips, symbol="o", size=9, brush=pg.mkBrush(color),
                                     pen=pg.mkPen("w", width=1), hoverable=True, hoverSize=13,
                                     tip=lambda x, y, data: str(data))
        card.plot.addItem(scatter)
        self.scatters[(key, target)] = scatter

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
        if p.unstable:
            lines.append(f"unstable (CoV {_fmt((p.cov or 0) * 100, '%')})")
        return "\n".join(lines)

    def _failed(self, card: PlotCard, doc: SweepResult, ys: list[float], key: str) -> None:
        """Each point without a time: a cross at the foot of the plot, in its target's colour."""
        bad = [p for p in doc.points if p.status != "ok" and p.value > 0]
        if not bad:
            return
        foot = math.log10(min(ys)) - 0.08 if ys else 0.0
        for target in doc.targets:
            mine = [p for p in bad if p.target == target]
            if not mine:
                continue
            tips = [self.point_tip(p) for p in mine]
            for p, tip in zip(mine, tips, strict=True):
                self.tips[(key, target, p.value)] = tip
            cross = pg.ScatterPlotItem([math.log10(p.value) for p in mine], [foot] * len(mine), data=tips,
                                       symbol=FAILED_SYMBOL, size=14, brush=pg.mkBrush(self.colors[target]),
                                       pen=pg.mkPen(self.colors[target], width=1), hoverable=True,
                                       tip=lambda x, y, data: str(data))
            card.plot.addItem(cross)
            self.scatters[(f"{key}-failed", target)] = cross

    def _notes(self, doc: SweepResult) -> str:
        lines: list[str] = ["<i>Line: median (p50); band: p50 to p99. ★ the knee, ✕ a point with no time.</i>"]
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
        self._fit_notes()

    def _fit_notes(self) -> None:
        """As tall as the notes where they are short, up to `notes_lines` lines (then they scroll). Laying out
        rich text takes milliseconds: each width's height is kept until the text changes."""
        if not self.notes_scroll.isVisibleTo(self):
            return
        line = self.notes.fontMetrics().lineSpacing()
        width = max(200, self.notes_scroll.viewport().width())
        key = (self.notes.text(), width)
        if key[0] != self._notes_height[0]:
            self._notes_height = (key[0], {})
        heights = self._notes_height[1]
        if width not in heights:
            heights[width] = self.notes.heightForWidth(width) + 4
        need = heights[width]
        self.notes_scroll.setMaximumHeight(min(need, line * self.notes_lines + 8))
        self.notes_scroll.setMinimumHeight(min(need, line * 3 + 8))

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        if not self._fit_pending:  # in a later turn: a resize (the dock coming forward) stays short
            self._fit_pending = True
            QTimer.singleShot(TURN_MS, self._fit_later)
        want = Qt.Orientation.Vertical if self.width() < NARROW else Qt.Orientation.Horizontal
        if self.splitter.orientation() != want:
            self.splitter.setOrientation(want)

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
            copy.set_sweep(self.doc, self.model, at_once=True)
            copy.title.show()
            copy.outer.activate()
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
