"""Comparison and latency results: a scorecard anyone can read, and the plots behind it (pyqtgraph).

Results gather over a session (app.core.measure's ResultsState): each comparison or benchmark adds its
candidates, a re-run replaces its own row, "Clear results" empties them, and opening another model starts afresh.
The scorecard sits beside the plots (one plot per tab) so both stay readable in a short, wide dock."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.core.measure import COLUMNS, ResultsState
from app.core.results import BenchResult, CompareResult, EvaluationResult, SweepResult, TuneResult
from app.ui.results.answers_view import AnswersView
from app.ui.results.dataset_view import DatasetView
from app.ui.results.plots import (
    PlotCard,
    draw_abs_diff,
    draw_latency,
    draw_scatter,
    draw_speedup,
    draw_values,
)
from app.ui.results.sweep_view import SweepView
from app.ui.results.tune_view import TuneView

PASS_BG, FAIL_BG = QColor("#e3f4e6"), QColor("#fbe4e2")
NARROW = 760  # below this width the scorecard goes above the plots instead of beside them
COMPARE_HINT = "Compare outputs (Ctrl+R) to see how far each candidate's outputs move from the reference."
BENCH_HINT = "Run a benchmark (Ctrl+B) to see latency."
SPEED_HINT = "Run a benchmark (Ctrl+B) to see each candidate's speed-up over the reference."
EMPTY_HEADLINE = "Run a comparison or a benchmark to see results here."


class ResultsView(QWidget):
    """The gathered comparisons and benchmarks (one per target) of one model."""

    exported = Signal(str)  # what was written where, for the status bar
    kindChangeRequested = Signal(str)  # an output whose kind the user wants to change (the Run panel has the choice)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = ResultsState()
        self.model_path = ""
        self.model_name = ""
        self._split_set = False
        outer = QVBoxLayout(self)
        outer.setContentsMargins(4, 4, 4, 4)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setChildrenCollapsible(False)
        # Small minimum widths: the dock may be narrow (it switches to one above the other), and a wide
        # minimum here would widen the whole window.
        self.summary_pane = self._build_summary()
        for pane, least in ((self.summary_pane, 120), (self._build_plots(), 160)):
            pane.setMinimumWidth(least)
            self.splitter.addWidget(pane)
        self.splitter.setStretchFactor(0, 5)
        self.splitter.setStretchFactor(1, 6)
        outer.addWidget(self.splitter)
        self._refresh()

    def _build_summary(self) -> QWidget:
        left = QWidget()
        lay = QVBoxLayout(left)
        lay.setContentsMargins(0, 0, 0, 0)
        self.caption = QLabel()
        self.caption.setStyleSheet("color:#5f6368;")
        lay.addWidget(self.caption)
        self.headline = QLabel(EMPTY_HEADLINE)
        f = QFont()
        f.setPixelSize(15)
        f.setBold(True)
        self.headline.setFont(f)
        self.headline.setWordWrap(True)
        lay.addWidget(self.headline)
        self.warning = QLabel()
        self.warning.setWordWrap(True)
        self.warning.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.warning.setStyleSheet("background:#fff4e5; color:#663c00; padding:4px; border-radius:4px;")
        self.warning.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        # Caveats scroll within a few lines: the scorecard below them keeps its room.
        self.warning_scroll = _CaveatScroll(self._fit_warning)
        self.warning_scroll.setWidgetResizable(True)
        self.warning_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.warning_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.warning_scroll.setWidget(self.warning)
        self.warning_scroll.hide()
        lay.addWidget(self.warning_scroll)
        self.scorecard = QTableWidget(0, len(COLUMNS))
        self.scorecard.setHorizontalHeaderLabels(COLUMNS)
        self.scorecard.verticalHeader().hide()
        self.scorecard.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.scorecard.horizontalHeader().setStretchLastSection(True)
        self.scorecard.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.scorecard.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.scorecard.setWordWrap(False)
        sf = QFont()
        sf.setPixelSize(13)
        self.scorecard.setFont(sf)
        self.scorecard.verticalHeader().setDefaultSectionSize(QFontMetrics(sf).height() + 10)
        self.scorecard.setMinimumHeight(90)
        lay.addWidget(self.scorecard, 1)
        bar = QHBoxLayout()
        self.clear_button = QPushButton("Clear results")
        self.clear_button.setToolTip("Forget every comparison and benchmark shown here")
        self.clear_button.clicked.connect(self.reset)
        self.export_button = QPushButton("Export plots…")
        self.export_button.setToolTip("Save every plot with data as PNG and SVG into a folder, titled with the "
                                      "model and output")
        self.export_button.clicked.connect(self._export_dialog)
        self.export_label = QLabel()
        self.export_label.setStyleSheet("color:#5f6368;")
        bar.addWidget(self.clear_button)
        bar.addWidget(self.export_button)
        bar.addWidget(self.export_label, 1)
        lay.addLayout(bar)
        return left

    def _build_plots(self) -> QWidget:
        right = QWidget()
        lay = QVBoxLayout(right)
        lay.setContentsMargins(0, 0, 0, 0)
        self.output_bar = QWidget()
        bar = QHBoxLayout(self.output_bar)
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(QLabel("Output:"))
        self.output_combo = QComboBox()
        self.output_combo.setToolTip("The model output the accuracy plots show")
        self.output_combo.currentTextChanged.connect(self._draw_output)
        bar.addWidget(self.output_combo, 1)
        self.kind_label = QLabel("")
        self.kind_label.setStyleSheet("color:#4a4f57;")
        bar.addWidget(self.kind_label)
        self.kind_button = QPushButton("Change…")
        self.kind_button.setToolTip("Choose what this output means (image, classes, detections, yolo, sequence, "
                                    "embedding, tensor) in the Run panel; the next comparison judges it so")
        self.kind_button.clicked.connect(lambda: self.kindChangeRequested.emit(self.output_combo.currentText()))
        bar.addWidget(self.kind_button)
        lay.addWidget(self.output_bar)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.diff_plot = PlotCard("How far outputs moved from the reference", COMPARE_HINT)
        self.values_plot = PlotCard("Output values: reference and candidates", COMPARE_HINT)
        self.scatter_plot = PlotCard("Reference (x) against candidate (y)", COMPARE_HINT, legend_left=True)
        self.latency_plot = PlotCard("Latency per run", BENCH_HINT)
        self.speedup_plot = PlotCard("Speed-up over the reference", SPEED_HINT)
        self.answers_view = AnswersView()
        i = self.tabs.addTab(self.answers_view, "Answers")
        self.tabs.setTabToolTip(i, "What the model answered, as pictures: the reference and each candidate side by "
                                   "side (Alt+Left/Right: samples)")
        self.cards = {"abs_diff": self.diff_plot, "values": self.values_plot, "scatter": self.scatter_plot,
                      "latency": self.latency_plot, "speedup": self.speedup_plot}
        for card, text, tip in (
                (self.diff_plot, "|Difference|", "Histogram of |candidate − reference| per value, log scale"),
                (self.values_plot, "Values", "Distribution of output values, reference and candidates overlaid"),
                (self.scatter_plot, "Scatter", "Each sampled value: reference (x) against candidate (y)"),
                (self.latency_plot, "Latency", "Latency histogram of every benchmarked variant"),
                (self.speedup_plot, "Speed-up", "How many times faster than the reference, by median latency")):
            i = self.tabs.addTab(card, text)
            self.tabs.setTabToolTip(i, tip)
        self.dataset_view = DatasetView()
        self.dataset_view.exported.connect(self.exported)
        i = self.tabs.addTab(self.dataset_view, "Dataset")
        self.tabs.setTabToolTip(i, "Accuracy of each precision on a labelled dataset (Run ▸ Evaluate on Dataset…)")
        self.sweep_view = SweepView()
        self.sweep_view.exported.connect(self.exported)
        i = self.tabs.addTab(self.sweep_view, "Sweep")
        self.tabs.setTabToolTip(i, "Latency and throughput as the batch grows (Run ▸ Benchmark Sweep…)")
        self.tune_view = TuneView()
        i = self.tabs.addTab(self.tune_view, "Tuning")
        self.tabs.setTabToolTip(i, "ONNX Runtime's own settings tried on one target (Run ▸ Tune Runtime Settings…)")
        self.tabs.currentChanged.connect(self._tab_changed)
        lay.addWidget(self.tabs, 1)
        return right

    def _tab_changed(self, _index: int) -> None:
        """The Dataset tab has its own table and several charts: it takes the whole dock (the scorecard and the
        output choice, which it does not use, step aside while it shows)."""
        dataset = self.tabs.currentWidget() in (self.dataset_view, self.sweep_view, self.tune_view)
        self.summary_pane.setVisible(not dataset)
        self.output_bar.setVisible(not dataset)

    # ----------------------------------------------------------------- compatibility views of the state
    @property
    def compare(self) -> CompareResult | None:
        return self.state.compare_doc()

    @property
    def bench(self) -> Mapping[str, BenchResult]:
        return self.state.bench

    # ----------------------------------------------------------------- data in
    def set_model(self, path: str) -> None:
        """The model the results belong to: another model's results would mean nothing, so they go; the
        same model reloaded (new input shapes, say) keeps them."""
        if path != self.model_path:
            self.model_path = path
            self.model_name = Path(path).name if path else ""
            self.reset()
        else:
            self._refresh()

    def set_compare(self, doc: CompareResult, plan_precisions: Iterable[str] = ()) -> list[str]:
        """Adds a comparison; returns the earlier candidates it replaced because their reference differed."""
        dropped = self.state.add_compare(doc, plan_precisions)
        self._fill_outputs()
        if self.tabs.currentWidget() in (self.latency_plot, self.speedup_plot) or not self.diff_plot.has_data:
            self.tabs.setCurrentWidget(self.diff_plot)
        self._prefer_answers()
        self._refresh()
        return dropped

    def set_bench(self, target: str, doc: BenchResult, reference: str | None = None,
                  plan_precisions: Iterable[str] = ()) -> None:
        self.state.add_bench(doc if doc.backend == target else doc.replace(backend=target), reference,
                             plan_precisions)
        if self.tabs.currentWidget() not in (self.latency_plot, self.speedup_plot):
            self.tabs.setCurrentWidget(self.latency_plot)
        self._refresh()

    def set_evaluation(self, doc: EvaluationResult) -> None:
        """The latest evaluation on a labelled dataset: the Dataset tab shows it, the scorecard its main metric."""
        self.state.add_evaluation(doc)
        self.tabs.setCurrentWidget(self.dataset_view)
        self._refresh()

    def set_tune(self, doc: TuneResult) -> None:
        """The latest tune: the Tuning tab shows its combinations and the choice."""
        self.tune_view.set_tune(doc)
        self.tabs.setCurrentWidget(self.tune_view)

    def set_sweep(self, doc: SweepResult) -> None:
        """The latest benchmark sweep: the Sweep tab shows its plots."""
        self.sweep_view.set_sweep(doc, self.model_name)
        self.tabs.setCurrentWidget(self.sweep_view)

    def restore(self, entries: Iterable[CompareResult | BenchResult | EvaluationResult],
                bench_reference: str | None = None,
                plan_precisions: Mapping[str, frozenset[str]] | None = None) -> None:
        """A saved session's comparisons, benchmarks and evaluations, in the order they came."""
        self.state.clear()
        for doc in entries:
            if isinstance(doc, CompareResult):
                self.state.add_compare(doc)
            elif isinstance(doc, EvaluationResult):
                self.state.add_evaluation(doc)
            else:
                self.state.add_bench(doc)
        if bench_reference:
            self.state.bench_reference = bench_reference
        self.state.plan_precisions.update(plan_precisions or {})
        self._fill_outputs()
        self.tabs.setCurrentWidget(self.diff_plot if self.state.candidates else self.latency_plot
                                   if self.state.bench or self.state.evaluation is None else self.dataset_view)
        self._prefer_answers()
        self._refresh()

    def reset(self) -> None:
        self.state.clear()
        self.sweep_view.set_sweep(None)
        self.tune_view.set_tune(None)
        self.export_label.setText("")
        self._fill_outputs()
        self._refresh()

    def _prefer_answers(self) -> None:
        """Answers that can be drawn are what a person looks at first: their tab, on the first drawn output."""
        drawn = list(self.state.answers.outputs) if self.state.answers is not None else []
        if drawn:
            if self.output_combo.currentText() not in drawn:
                self.output_combo.setCurrentText(drawn[0])
            self.tabs.setCurrentWidget(self.answers_view)

    def _fill_outputs(self) -> None:
        current = self.output_combo.currentText()
        names = self.state.outputs()
        self.output_combo.blockSignals(True)
        self.output_combo.clear()
        self.output_combo.addItems(names)
        if current in names:
            self.output_combo.setCurrentText(current)
        self.output_combo.blockSignals(False)

    # ----------------------------------------------------------------- drawing
    def speedups(self) -> dict[str, float]:
        return self.state.speedups()

    def _refresh(self) -> None:
        rows = self.state.rows()
        self.scorecard.setRowCount(len(rows))
        for r, row in enumerate(rows):
            tips = {0: row.label, 2: row.speed_tip, 4: row.worst_tip, 6: row.note}
            for col, text in enumerate(row.cells()):
                item = QTableWidgetItem(text)
                item.setToolTip(tips.get(col) or text)
                if row.passed is not None:
                    item.setBackground(QBrush(PASS_BG if row.passed else FAIL_BG))
                if col == 2 and text.startswith("n/a"):
                    item.setForeground(QBrush(QColor("#5f6368")))
                self.scorecard.setItem(r, col, item)
        # Two rows always show; more where there is room (the table scrolls).
        shown = min(max(len(rows), 1), 2)
        self.scorecard.setMinimumHeight(self.scorecard.horizontalHeader().sizeHint().height() + 22
                                        + shown * self.scorecard.verticalHeader().defaultSectionSize())
        self.headline.setText(self.state.headline())
        warn = self.state.warnings()
        self.warning.setText("\n".join(warn))
        self.warning.setVisible(bool(warn))
        self.warning_scroll.setVisible(bool(warn))
        self._fit_warning()
        inputs = self._inputs_caption()
        self.caption.setText(" · ".join(p for p in (self.model_name, inputs) if p))
        self.caption.setVisible(bool(self.caption.text()))
        self.clear_button.setEnabled(not self.state.empty)
        self.export_button.setEnabled(not self.state.empty)
        self._draw_output(self.output_combo.currentText())
        draw_latency(self.latency_plot, self.state)
        draw_speedup(self.speedup_plot, self.state)
        if self.dataset_view.doc is not self.state.evaluation:
            self.dataset_view.set_evaluation(self.state.evaluation, self.state)

    def _inputs_caption(self) -> str:
        samples = sorted(set(self.state.samples.values()))
        if not samples:
            return ""
        texts = {t for t in self.state.inputs_text.values() if t}
        data = ("random data" if any(self.state.random.values()) else
                "trtlab's sample photos" if any("sample photos" in t for t in texts) else
                "trtlab's speech sample" if any("speech sample" in t for t in texts) else
                next(iter(texts)).split(" (")[0] if len(texts) == 1 else "the chosen input data")
        n = "/".join(str(s) for s in samples)
        return f"compared on {n} sample{'s' if samples != [1] else ''} of {data}"

    def _draw_output(self, output: str) -> None:
        kind = self.state.kinds.get(output)
        self.kind_label.setText(f"kind: {kind.spec or kind.kind}" if kind is not None else "")
        self.kind_label.setToolTip(kind.reason if kind is not None else "")
        self.kind_button.setVisible(bool(output))
        self.answers_view.show_output(self.state, output)
        draw_abs_diff(self.diff_plot, self.state, output)
        draw_values(self.values_plot, self.state, output)
        draw_scatter(self.scatter_plot, self.state, output)

    def _fit_warning(self) -> None:
        """As tall as the caveats where there is room, up to eight lines; at least three (then they scroll)."""
        width = max(100, self.warning_scroll.width() - 4)
        line = self.fontMetrics().lineSpacing()
        need = self.warning.heightForWidth(width) + 2
        self.warning_scroll.fit = min(need, line * 8 + 12)
        self.warning_scroll.setMinimumHeight(min(need, line * 3 + 12))
        self.warning_scroll.setMaximumHeight(self.warning_scroll.fit)
        self.warning_scroll.updateGeometry()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        # Beside each other in a wide dock, one above the other in a narrow one: the plots keep their size.
        want = Qt.Orientation.Vertical if self.width() < NARROW else Qt.Orientation.Horizontal
        if self.splitter.orientation() != want or not self._split_set:
            self.splitter.setOrientation(want)
            # The scorecard's columns would claim most of the width: the plots get a fair share from the start.
            total = self.width() if want == Qt.Orientation.Horizontal else self.height()
            self.splitter.setSizes([int(total * 0.52), int(total * 0.48)])
            self._split_set = self.isVisible()

    # ----------------------------------------------------------------- export
    def export_plots(self, folder: Path) -> list[Path]:
        """Every plot with data as PNG and SVG; titles name the model (and the output, for accuracy plots)."""
        written: list[Path] = []
        output = self.output_combo.currentText()
        model = self.model_name or "model"
        for key, card in self.cards.items():
            if not card.has_data:
                continue
            accuracy = key in ("abs_diff", "values", "scatter")
            head = f"{model} · {output}" if accuracy and output else model
            stem = f"{key}_{_safe(output)}" if accuracy and output else key
            written += card.export(Path(folder), stem, f"{head}<br>{card.title}")
        written += self.dataset_view.export(Path(folder), model if self.model_name else "")
        written += self.sweep_view.export(Path(folder))
        if self.state.answers is not None and self.state.answers.outputs:
            from app.core.fileio import atomic_write_bytes
            from app.core.measure import answer_strips

            for (out_name, sample), img in answer_strips(self.state.answers).items():
                import io

                buf = io.BytesIO()
                img.save(buf, format="PNG")
                path = Path(folder) / f"answers_{_safe(out_name)}_sample{sample + 1}.png"
                atomic_write_bytes(path, buf.getvalue())
                written.append(path)
        return written

    def _export_dialog(self) -> None:
        from PySide6.QtWidgets import QFileDialog

        folder = QFileDialog.getExistingDirectory(self, "Export plots to folder")
        if folder:
            try:
                written = self.export_plots(Path(folder))
            except OSError as exc:
                self.export_label.setText(f"Could not write the plots to {folder}: {exc.strerror or exc}")
                self.exported.emit(f"Could not export the plots to {folder}: choose a folder you can write to.")
                return
            self.export_label.setText(f"Saved {len(written)} file(s) to {folder}")
            self.exported.emit(f"Exported {len(written)} plot files (PNG and SVG) to {folder}")


class _CaveatScroll(QScrollArea):
    """Calls back on every resize: the caveats' height follows their width."""

    def __init__(self, on_resize: Callable[[], None]) -> None:
        super().__init__()
        self._on_resize = on_resize
        self.fit = 0  # the caveats' height at the current width, capped

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return QSize(super().sizeHint().width(), self.fit or super().sizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        if event.oldSize().width() != event.size().width():
            self._on_resize()


def _safe(name: str) -> str:
    """An output name as part of a file name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "output"
