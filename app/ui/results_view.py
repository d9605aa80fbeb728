"""Comparison and latency results: a scorecard anyone can read, and the plots behind it (pyqtgraph)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

# pyqtgraph's exit clean-up walks every live graphics object at interpreter exit; with windows already
# destroyed by Qt that walk can free Python objects twice and abort the process (seen with PySide6 6.12).
pg.setConfigOptions(exitCleanup=False)

PALETTE = ["#3b6fb6", "#d9822b", "#3f8a5a", "#b5473a", "#7a5aa8", "#2e8a8a", "#8a7a3a"]
PASS_BG, FAIL_BG = QColor("#e3f4e6"), QColor("#fbe4e2")


def _color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _fmt(v: object, digits: int = 3) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        if math.isinf(v):
            return "∞"
        return f"{v:.{digits}g}"
    return str(v)


class PlotCard(QWidget):
    """One titled plot with its own export, so each can be saved as PNG or SVG."""

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        self.plot = pg.PlotWidget(background="w")
        self.plot.setTitle(title, color="#1b1f24", size="11pt")
        self.plot.showGrid(x=True, y=True, alpha=0.25)
        self.legend = self.plot.addLegend(offset=(-10, 10), labelTextColor="#1b1f24")
        lay.addWidget(self.plot)
        self.title = title

    def clear(self) -> None:
        self.plot.clear()
        self.legend.clear()

    def export(self, folder: Path, stem: str) -> list[Path]:
        from pyqtgraph.exporters import ImageExporter
        from PySide6.QtCore import QRectF, QSize
        from PySide6.QtGui import QPainter
        from PySide6.QtSvg import QSvgGenerator

        folder.mkdir(parents=True, exist_ok=True)
        png, svg = folder / f"{stem}.png", folder / f"{stem}.svg"
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
        gen.setTitle(self.title)
        painter = QPainter(gen)
        self.plot.scene().render(painter, QRectF(0, 0, source.width(), source.height()), source)
        painter.end()
        return [png, svg]


class ResultsView(QWidget):
    """Shows the latest comparison (the `compare` JSON) and benchmark (one `bench` JSON per target)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.compare: dict | None = None
        self.bench: dict[str, dict] = {}
        lay = QVBoxLayout(self)
        self.headline = QLabel("Run a comparison or a benchmark to see results here.")
        f = QFont()
        f.setPixelSize(16)
        f.setBold(True)
        self.headline.setFont(f)
        self.headline.setWordWrap(True)
        lay.addWidget(self.headline)
        self.warning = QLabel()
        self.warning.setWordWrap(True)
        self.warning.setStyleSheet("background:#fff4e5; color:#663c00; padding:4px; border-radius:4px;")
        self.warning.hide()
        lay.addWidget(self.warning)
        self.scorecard = QTableWidget(0, 6)
        self.scorecard.setHorizontalHeaderLabels(
            ["Variant", "Verdict", "Speed-up", "Median latency", "Worst error", "NaN / Inf"])
        self.scorecard.verticalHeader().hide()
        self.scorecard.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.scorecard.horizontalHeader().setStretchLastSection(True)
        self.scorecard.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        sf = QFont()
        sf.setPixelSize(14)
        self.scorecard.setFont(sf)
        lay.addWidget(self.scorecard)
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Output:"))
        self.output_combo = QComboBox()
        self.output_combo.currentTextChanged.connect(self._draw_output)
        bar.addWidget(self.output_combo, 1)
        self.export_button = QPushButton("Export plots…")
        self.export_button.setToolTip("Save every plot as PNG and SVG into a folder")
        self.export_button.clicked.connect(self._export_dialog)
        bar.addWidget(self.export_button)
        lay.addLayout(bar)
        self._plots_box = QVBoxLayout()
        lay.addLayout(self._plots_box, 4)
        self.cards: dict[str, PlotCard] = {}

    def _ensure_plots(self) -> None:
        """Plots are built with the first result: a window that never compares carries no plot widgets."""
        if self.cards:
            return
        grid = QHBoxLayout()
        self.diff_plot = PlotCard("How far outputs moved: |candidate − reference| (log scale)")
        self.values_plot = PlotCard("Output values: reference and candidates")
        self.scatter_plot = PlotCard("Reference (x) against candidate (y)")
        for card in (self.diff_plot, self.values_plot, self.scatter_plot):
            grid.addWidget(card)
        self._plots_box.addLayout(grid, 1)
        grid2 = QHBoxLayout()
        self.latency_plot = PlotCard("Latency per run (ms)")
        self.speedup_plot = PlotCard("Speed-up over the reference (× faster)")
        grid2.addWidget(self.latency_plot, 2)
        grid2.addWidget(self.speedup_plot, 1)
        self._plots_box.addLayout(grid2, 1)
        self.cards = {"abs_diff": self.diff_plot, "values": self.values_plot, "scatter": self.scatter_plot,
                      "latency": self.latency_plot, "speedup": self.speedup_plot}

    # ----------------------------------------------------------------- data in
    def set_compare(self, doc: dict) -> None:
        self._ensure_plots()
        self.compare = doc
        outputs = [o["name"] for o in doc["candidates"][0]["outputs"]] if doc.get("candidates") else []
        self.output_combo.blockSignals(True)
        self.output_combo.clear()
        self.output_combo.addItems(outputs)
        self.output_combo.blockSignals(False)
        self._refresh()

    def set_bench(self, target: str, doc: dict) -> None:
        self._ensure_plots()
        self.bench[target] = doc
        self._refresh()

    def reset(self) -> None:
        self.compare, self.bench = None, {}
        self.output_combo.clear()
        for card in self.cards.values():
            card.clear()
        self._refresh()

    # ----------------------------------------------------------------- drawing
    def _reference(self) -> str:
        if self.compare:
            return self.compare["reference"]
        return next(iter(self.bench), "")

    def speedups(self) -> dict[str, float]:
        ref = self.bench.get(self._reference())
        if not ref:
            return {}
        base = ref["latency_ms"]["median"]
        return {t: base / d["latency_ms"]["median"] for t, d in self.bench.items() if d["latency_ms"]["median"] > 0}

    def _rows(self) -> list[dict]:
        """One row per variant: the reference first; a candidate equal to the reference gets its own row."""
        rows: dict[str, dict] = {}
        ref = self._reference()
        if ref:
            rows[ref] = {"label": f"{ref} (reference)", "target": ref, "verdict": "reference", "passed": None}
        for c in (self.compare or {}).get("candidates", []):
            worst = min(c["outputs"], key=lambda o: o["cosine"] if o["cosine"] is not None else -2)
            cos = "—" if worst["cosine"] is None else f"{worst['cosine']:.6f}"
            key = c["name"] if c["name"] != ref else f"{c['name']} (candidate)"
            rows[key] = {
                "label": key, "target": c["name"], "passed": c["passed"],
                "verdict": "✓ Same answers" if c["passed"] else "✗ Answers differ",
                "worst": f"cos {cos}, max |Δ| {_fmt(worst['max_abs'])} ({worst['name']})",
                "nan": f"{sum(o['nan'] for o in c['outputs'])} / {sum(o['inf'] for o in c['outputs'])}",
            }
        for t in self.bench:
            rows.setdefault(t, {"label": t, "target": t, "verdict": "", "passed": None})
        return list(rows.values())

    def _refresh(self) -> None:
        rows = self._rows()
        speed = self.speedups()
        ref = self._reference()
        self.scorecard.setRowCount(len(rows))
        # As tall as its rows, so the plots below get the room.
        row_h = self.scorecard.verticalHeader().defaultSectionSize()
        self.scorecard.setFixedHeight(self.scorecard.horizontalHeader().height() + row_h * max(1, len(rows)) + 6)
        for r, row in enumerate(rows):
            t = row["target"]
            lat = self.bench.get(t, {}).get("latency_ms", {}).get("median")
            if t not in speed:
                sp = "—"
            elif row["verdict"] == "reference" or (t == ref and len(self.bench) == 1):
                sp = "1.00× (reference)"
            else:
                sp = f"{speed[t]:.2f}× {'faster' if speed[t] >= 1 else 'slower'}"
            cells = [row["label"], row.get("verdict", ""), sp, f"{lat:.3f} ms" if lat is not None else "—",
                     row.get("worst", "—"), row.get("nan", "—")]
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if row.get("passed") is not None:
                    item.setBackground(QBrush(PASS_BG if row["passed"] else FAIL_BG))
                self.scorecard.setItem(r, col, item)
        self._headline()
        if self.cards:
            self._draw_output(self.output_combo.currentText())
            self._draw_latency()

    def _headline(self) -> None:
        parts = []
        if self.compare:
            cands = self.compare["candidates"]
            ok = sum(c["passed"] for c in cands)
            parts.append(f"{ok} of {len(cands)} variant(s) give the same answers as {self.compare['reference']}")
        speed = {t: s for t, s in self.speedups().items() if t != self._reference()}
        if speed:
            best = max(speed, key=speed.get)
            parts.append(f"fastest: {best}, {speed[best]:.2f}× the reference's speed")
        self.headline.setText("; ".join(parts) if parts else "Run a comparison or a benchmark to see results here.")
        warn = []
        if self.compare and self.compare.get("random_data"):
            warn.append("These results come from random input data, not real inputs: accuracy on real data may "
                        "differ. Choose an input folder for a real measure.")
        notes = dict((self.compare or {}).get("notes") or {})
        notes.update({t: d.get("notes") or [] for t, d in self.bench.items()})
        for t, ns in notes.items():
            if any("CALIBRATED ON RANDOM DATA" in n for n in ns):
                warn.append(f"{t}: INT8 calibrated on random data — its scales, errors and speed say little about "
                            "real inputs. Choose an input folder (used for calibration too) for a real measure.")
        for t, d in self.bench.items():
            if d.get("warning"):
                warn.append(f"{t}: {d['warning']}")
        self.warning.setText("\n".join(warn))
        self.warning.setVisible(bool(warn))

    def _draw_output(self, output: str) -> None:
        if not self.cards:
            return
        for key in ("abs_diff", "values", "scatter"):
            self.cards[key].clear()
        if not self.compare or not output:
            return
        plots = self.compare.get("plots", {})
        self.diff_plot.plot.setLogMode(x=True, y=False)
        any_diff = False
        for i, (cand, per_output) in enumerate(plots.items()):
            data = per_output.get(output, {})
            pen = pg.mkPen(_color(i), width=2)
            if "abs_diff" in data:
                edges, counts = (np.asarray(a, dtype=np.float64) for a in data["abs_diff"])
                pos = edges > 0
                if pos.sum() >= 2 and len(counts) == len(edges) - 1:
                    keep = pos[:-1] & pos[1:]
                    e, c = edges[:-1][keep], counts[keep]
                    centres = np.sqrt(e * edges[1:][keep])
                    any_diff = any_diff or bool(c.sum() > 0)
                    self.diff_plot.plot.plot(centres, c, pen=pen, name=cand, symbol="o", symbolSize=4,
                                             symbolBrush=_color(i))
            if "values" in data:
                if i == 0 and "ref" in data["values"]:
                    e, c = (np.asarray(a) for a in data["values"]["ref"])
                    self.values_plot.plot.plot(e, c, stepMode="center", pen=pg.mkPen("#1b1f24", width=2),
                                               name=f"{self.compare['reference']} (reference)")
                if "cand" in data["values"]:
                    e, c = (np.asarray(a) for a in data["values"]["cand"])
                    self.values_plot.plot.plot(e, c, stepMode="center", pen=pg.mkPen(_color(i), width=1.5,
                                                                                      style=Qt.PenStyle.DashLine),
                                               name=cand)
            if "scatter" in data:
                x, y = (np.asarray(a) for a in data["scatter"])
                if len(x):
                    self.scatter_plot.plot.plot(x, y, pen=None, symbol="o", symbolSize=3,
                                                symbolBrush=pg.mkColor(_color(i)), symbolPen=None, name=cand)
                    lo, hi = float(min(x.min(), y.min())), float(max(x.max(), y.max()))
                    if i == 0:
                        diag = pg.mkPen("#9aa0a6", style=Qt.PenStyle.DotLine)
                        self.scatter_plot.plot.plot([lo, hi], [lo, hi], pen=diag)
        if not any_diff:
            note = pg.TextItem("No difference: every value is identical to the reference", color="#3f8a5a",
                               anchor=(0.5, 0.5))
            self.diff_plot.plot.addItem(note)
            note.setPos(0.5, 0.5)
            self.diff_plot.plot.setLogMode(x=False, y=False)
            self.diff_plot.plot.setXRange(0, 1)
            self.diff_plot.plot.setYRange(0, 1)
        self.diff_plot.plot.setLabel("bottom", "absolute difference")
        self.diff_plot.plot.setLabel("left", "values")

    def _draw_latency(self) -> None:
        self.latency_plot.clear()
        self.speedup_plot.clear()
        if not self.bench:
            return
        all_t = np.concatenate([np.asarray(d.get("times_ms") or [d["latency_ms"]["median"]])
                                for d in self.bench.values()])
        lo, hi = float(all_t.min()), float(all_t.max())
        edges = np.linspace(lo * 0.95, hi * 1.05 + 1e-9, 60)
        for i, (t, d) in enumerate(self.bench.items()):
            times = np.asarray(d.get("times_ms") or [d["latency_ms"]["median"]])
            counts, _ = np.histogram(times, bins=edges)
            self.latency_plot.plot.plot(edges, counts, stepMode="center", fillLevel=0,
                                        brush=pg.mkBrush(_color(i) + "55"),
                                        pen=pg.mkPen(_color(i), width=2),
                                        name=f"{t}: median {d['latency_ms']['median']:.3f} ms ({d['mode']})")
        self.latency_plot.plot.setLabel("bottom", "milliseconds")
        self.latency_plot.plot.setLabel("left", "runs")
        speed = self.speedups()
        if speed:
            names = list(speed)
            bars = pg.BarGraphItem(x=np.arange(len(names)), height=[speed[n] for n in names], width=0.6,
                                   brushes=[pg.mkBrush(_color(i)) for i in range(len(names))])
            self.speedup_plot.plot.addItem(bars)
            self.speedup_plot.plot.getAxis("bottom").setTicks([list(enumerate(names))])
            self.speedup_plot.plot.addLine(y=1.0, pen=pg.mkPen("#9aa0a6", style=Qt.PenStyle.DashLine))

    # ----------------------------------------------------------------- export
    def export_plots(self, folder: Path) -> list[Path]:
        written = []
        for key, card in self.cards.items():
            written += card.export(folder, key)
        return written

    def _export_dialog(self) -> None:
        from PySide6.QtWidgets import QFileDialog

        folder = QFileDialog.getExistingDirectory(self, "Export plots to folder")
        if folder:
            self.export_plots(Path(folder))
