"""The Results' Dataset tab: the latest evaluation on a labelled dataset (Run ▸ Evaluate on Dataset…).

What was evaluated and how (the dataset line, the preprocessing line), the task's metrics per precision with each
candidate's difference from the reference and its 95 % interval, PASS/FAIL coloured like the scorecard; then, for
the candidate picked: the per-class drop (every candidate, one colour each, worst first), the confusion matrix
(classification, segmentation), each image's metric against the reference's, and the images it lost most on."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QPixmap, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QScrollArea,
    QSplitter,
    QStackedLayout,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.core.measure import ResultsState, metric_change, metric_name, shown_metrics
from app.core.results import EvalCandidate, EvaluationResult
from app.ui.results.answers_view import pixmap_from_uri
from app.ui.results.plots import HINT_STYLE, INK, PALETTE, PlotCard

PASS_BG, FAIL_BG = QColor("#e3f4e6"), QColor("#fbe4e2")   # as the Results scorecard colours its rows
EMPTY_TEXT = ("Run ▸ Evaluate on Dataset… (Ctrl+Alt+D) to score FP32 and each precision on a labelled dataset: "
              "their accuracy, the classes and images a precision loses on, and the confusion matrix show here.")
# The per-class value that goes with each main metric (app.core.evaluate's per_class keys).
PER_CLASS_KEY = {"map50": "ap50", "map": "ap", "top1": "accuracy", "top5": "accuracy", "miou": "iou",
                 "dice": "dice"}
COUNT_KEYS = ("images", "truths")   # per-class counts, not scores
MOST_CLASSES = 25                    # the per-class chart shows the worst ones
CELL_TEXT_UP_TO = 20                 # counts written in the confusion matrix's cells up to this many classes
NARROW = 900                         # narrower than this, the metrics go above the charts
WORST_WIDTH = 900                    # widest a worst image's picture is shown


class DatasetView(QWidget):
    """The latest evaluation (`set_evaluation`); the candidate combo picks whose charts show."""

    exported = Signal(str)  # what was written where, for the status bar

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc: EvaluationResult | None = None
        self.state: ResultsState | None = None
        self.stack = QStackedLayout(self)
        self.hint = QLabel(EMPTY_TEXT)
        self.hint.setWordWrap(True)
        self.hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.hint.setStyleSheet(HINT_STYLE)
        self.stack.addWidget(self.hint)
        self.content = QWidget()
        self.stack.addWidget(self.content)
        col = QVBoxLayout(self.content)
        col.setContentsMargins(2, 2, 2, 2)
        col.setSpacing(4)
        self.dataset_label = QLabel()
        self.dataset_label.setWordWrap(True)
        f = QFont()
        f.setBold(True)
        self.dataset_label.setFont(f)
        self.dataset_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        col.addWidget(self.dataset_label)
        self.preset_label = QLabel()
        self.preset_label.setWordWrap(True)
        self.preset_label.setStyleSheet("color:#4a4f57;")
        self.preset_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        col.addWidget(self.preset_label)
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Candidate:"))
        self.candidate_combo = QComboBox()
        self.candidate_combo.setToolTip("The candidate whose confusion matrix, per-image scatter and worst images "
                                        "show")
        self.candidate_combo.currentTextChanged.connect(self._draw_candidate)
        self.candidate_combo.setMinimumContentsLength(18)
        bar.addWidget(self.candidate_combo)
        bar.addStretch(1)
        self.export_button = QPushButton("Export…")
        self.export_button.setToolTip("Save each chart (PNG and SVG) and the worst images (PNG) into a folder")
        self.export_button.clicked.connect(self._export_dialog)
        bar.addWidget(self.export_button)
        col.addLayout(bar)
        self.export_label = QLabel()
        self.export_label.setStyleSheet("color:#5f6368;")
        self.export_label.hide()
        col.addWidget(self.export_label)
        # The metrics beside the charts in a wide dock, above them in a narrow one (resizeEvent).
        self.split = QSplitter(Qt.Orientation.Horizontal)
        self.split.setChildrenCollapsible(False)
        self.table = QTableWidget(0, 0)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setWordWrap(False)
        self.table.setMinimumHeight(70)
        self.table.setMinimumWidth(200)
        self.split.addWidget(self.table)
        self.charts = QTabWidget()
        self.charts.setDocumentMode(True)
        self.charts.setMinimumWidth(260)
        self.per_class = PlotCard("Per-class change against the reference (points; worst first)",
                                  "No per-class values in this evaluation.")
        self.confusion = PlotCard("Confusion matrix (rows: truth, columns: prediction)",
                                  "A confusion matrix is drawn for classification and segmentation.")
        self.scatter = PlotCard("Each image: reference (x) against candidate (y)",
                                "The evaluation kept no per-image values.", legend_left=True)
        self.worst = QScrollArea()
        self.worst.setWidgetResizable(True)
        self.worst_holder = QWidget()
        self.worst_list = QVBoxLayout(self.worst_holder)
        self.worst_list.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.worst.setWidget(self.worst_holder)
        self.worst.viewport().installEventFilter(self)  # its pictures follow its width
        for widget, text, tip in (
                (self.per_class, "Per class", "Each class's score, candidate − reference, for every candidate"),
                (self.confusion, "Confusion", "Truth (rows) against the candidate's prediction (columns)"),
                (self.scatter, "Per image", "Each image's metric: points below the diagonal are images the "
                                            "candidate does worse on"),
                (self.worst, "Worst images", "The images the candidate loses most on: truth | reference | "
                                             "candidate")):
            i = self.charts.addTab(widget, text)
            self.charts.setTabToolTip(i, tip)
        self.split.addWidget(self.charts)
        self.split.setStretchFactor(0, 4)
        self.split.setStretchFactor(1, 5)
        col.addWidget(self.split, 1)
        self._split_set = False
        self.worst_pictures: list[QLabel] = []
        self._worst_pix: list[QPixmap] = []   # the worst images as drawn, scaled to the list's width when shown
        self.stack.setCurrentWidget(self.hint)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if watched is self.worst.viewport() and event.type() == QEvent.Type.Resize:
            self._fit_worst()
        return super().eventFilter(watched, event)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        want = Qt.Orientation.Vertical if self.width() < NARROW else Qt.Orientation.Horizontal
        if self.split.orientation() != want or not self._split_set:
            self.split.setOrientation(want)
            total = self.width() if want == Qt.Orientation.Horizontal else self.height()
            self.split.setSizes([int(total * 0.47), int(total * 0.53)] if want == Qt.Orientation.Horizontal
                                else [int(total * 0.3), int(total * 0.7)])
            self._split_set = self.isVisible()

    # ----------------------------------------------------------------- data in
    def set_evaluation(self, doc: EvaluationResult | None, state: ResultsState | None = None) -> None:
        """Show an evaluation (None: the empty state); `state` gives each candidate its colour in every plot."""
        same_data = self.doc is not None and doc is not None and self.doc.dataset.path == doc.dataset.path
        self.doc, self.state = doc, state
        self.export_label.hide()
        if doc is None:
            self.stack.setCurrentWidget(self.hint)
            self.candidate_combo.clear()
            return
        ds, preset = doc.dataset, doc.preset
        self.dataset_label.setText(f"Dataset {ds.path}: {ds.summary} · {ds.task}, {ds.images} image"
                                   f"{'s' if ds.images != 1 else ''} evaluated"
                                   + (f" · classes mapped {ds.class_map.how}" if ds.class_map is not None else ""))
        self.preset_label.setText(f"Preprocessing: {preset.describe or preset.name}")
        self.preset_label.setToolTip(f"Why: {preset.reason}" if preset.reason else "")
        self._fill_table(doc)
        current = self.candidate_combo.currentText()
        names = [c.name for c in doc.candidates]
        self.candidate_combo.blockSignals(True)
        self.candidate_combo.clear()
        self.candidate_combo.addItems(names)
        if same_data and current in names:  # the same dataset again: the candidate the user was looking at
            self.candidate_combo.setCurrentText(current)
        elif names:  # another dataset opens on the candidate that loses most: its pictures are the story
            self.candidate_combo.setCurrentText(most_lost(doc))
        self.candidate_combo.blockSignals(False)
        self.stack.setCurrentWidget(self.content)
        self._draw_per_class(doc)
        self._draw_candidate(self.candidate_combo.currentText())

    def color(self, target: str) -> str:
        if self.state is not None:
            return PALETTE[self.state.color_index(target) % len(PALETTE)]
        names = [c.name for c in self.doc.candidates] if self.doc is not None else []
        return PALETTE[(names.index(target) if target in names else 0) % len(PALETTE)]

    def candidate(self, name: str) -> EvalCandidate | None:
        return next((c for c in self.doc.candidates if c.name == name), None) if self.doc is not None else None

    # ----------------------------------------------------------------- the metrics table
    def _fill_table(self, doc: EvaluationResult) -> None:
        metrics = shown_metrics(doc)
        headers = ["Target", *(metric_name(m) for m in metrics), "Verdict"]
        self.table.clear()
        self.table.setColumnCount(len(headers))
        self.table.setHorizontalHeaderLabels(headers)
        self.table.setRowCount(1 + len(doc.candidates))
        ref = doc.reference
        cells = [[f"{ref.name} (reference)", *(_value(ref.metrics.get(m)) for m in metrics), "reference"]]
        for c in doc.candidates:
            verdict = "PASS" if c.passed else "FAIL: " + "; ".join(c.failures)
            cells.append([c.name, *(metric_change(doc, c, m) for m in metrics), verdict])
        for r, row in enumerate(cells):
            passed = doc.candidates[r - 1].passed if r else None
            for col, text in enumerate(row):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                if passed is not None:
                    item.setBackground(QBrush(PASS_BG if passed else FAIL_BG))
                if col == 0 and r:
                    item.setForeground(QBrush(QColor(self.color(text))))
                self.table.setItem(r, col, item)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)

    # ----------------------------------------------------------------- charts
    def _per_class_key(self, doc: EvaluationResult) -> str:
        metric = shown_metrics(doc)[0] if shown_metrics(doc) else ""
        key = PER_CLASS_KEY.get(metric, "")
        for values in doc.reference.per_class.values():
            if key in values:
                return key
            return next((k for k in values if k not in COUNT_KEYS), "")
        return ""

    def _draw_per_class(self, doc: EvaluationResult) -> None:
        card = self.per_class
        card.clear()
        key = self._per_class_key(doc)
        ref = doc.reference.per_class
        drops: dict[str, dict[str, float]] = {}   # candidate -> class -> points
        for c in doc.candidates:
            for cls, values in c.per_class.items():
                a, b = ref.get(cls, {}).get(key), values.get(key)
                if a is not None and b is not None:
                    drops.setdefault(c.name, {})[cls] = (float(b) - float(a)) * 100
        classes = sorted({cls for d in drops.values() for cls in d},
                         key=lambda cls: min(d.get(cls, 0.0) for d in drops.values()))[:MOST_CLASSES]
        if not key or not classes:
            card.show_hint("No per-class values in this evaluation." if doc.dataset.task != "recognition" else
                           "Text recognition has no classes: see the per-image scatter and the worst images.")
            return
        plot = card.plot
        n = max(1, len(drops))
        height = 0.8 / n
        for k, (name, d) in enumerate(drops.items()):
            ys = np.arange(len(classes)) - 0.4 + height * (k + 0.5)
            widths = np.array([d.get(cls, 0.0) for cls in classes])
            # A candidate that changed no class draws no bar: its legend entry says so.
            label = name if widths.any() else f"{name} (no class changed)"
            bars = pg.BarGraphItem(x0=np.minimum(widths, 0.0), y=ys, width=np.abs(widths), height=height * 0.9,
                                   brush=pg.mkBrush(self.color(name)), pen=pg.mkPen(None), name=label)
            plot.addItem(bars)
        plot.getAxis("left").setTicks([[(i, cls) for i, cls in enumerate(classes)]])
        plot.getViewBox().invertY(True)
        plot.addItem(pg.InfiniteLine(pos=0, angle=90, pen=pg.mkPen("#5f6368")))
        plot.setLabel("bottom", f"{key}: candidate − reference (points)")
        plot.setLabel("left", "class")
        plot.enableAutoRange()
        card.show_plot()

    def _draw_candidate(self, name: str) -> None:
        if self.doc is None:
            return
        cand = self.candidate(name)
        self._draw_confusion(cand)
        self._draw_scatter(cand)
        self._fill_worst(cand)

    def _class_names(self, size: int) -> list[str]:
        """The confusion matrix's axis names: the per-class names where they cover every class, else indices."""
        names = list(self.doc.reference.per_class) if self.doc is not None else []
        return names if len(names) == size else [str(k) for k in range(size)]

    def _draw_confusion(self, cand: EvalCandidate | None) -> None:
        card = self.confusion
        card.clear()
        matrix = cand.confusion if cand is not None else None
        if not matrix:
            card.show_hint("A confusion matrix is drawn for classification and segmentation; this evaluation has "
                           "none." if cand is not None else "Pick a candidate.")
            return
        conf = np.asarray(matrix, dtype=np.float64)
        size = conf.shape[0]
        plot = card.plot
        image = pg.ImageItem(conf.T)   # ImageItem's first axis is x: the prediction
        cmap = pg.ColorMap(pos=[0.0, 1.0], color=[(255, 255, 255), (59, 111, 182)])
        image.setLookupTable(cmap.getLookupTable(0.0, 1.0, 256))
        image.setLevels((0.0, max(1.0, float(conf.max()))))
        plot.addItem(image)
        names = self._class_names(size)
        ticks = [(k + 0.5, names[k]) for k in range(size)]
        plot.getAxis("bottom").setTicks([ticks])
        plot.getAxis("left").setTicks([ticks])
        plot.getViewBox().invertY(True)
        if size <= CELL_TEXT_UP_TO:
            top = float(conf.max()) or 1.0
            for r in range(size):
                for c in range(size):
                    v = conf[r, c]
                    text = pg.TextItem(f"{int(v)}", color="white" if v > top * 0.7 else INK, anchor=(0.5, 0.5))
                    text.setPos(c + 0.5, r + 0.5)
                    plot.addItem(text)
        plot.setLabel("bottom", f"predicted by {cand.name}" if cand is not None else "predicted")
        plot.setLabel("left", "truth")
        plot.showGrid(x=False, y=False)
        plot.enableAutoRange()
        card.show_plot()

    def _draw_scatter(self, cand: EvalCandidate | None) -> None:
        card = self.scatter
        card.clear()
        doc = self.doc
        if doc is None or cand is None or not cand.values or not doc.reference.values:
            card.show_hint("The evaluation kept no per-image values for this candidate.")
            return
        pairs = [(a, b) for a, b in zip(doc.reference.values, cand.values, strict=False)
                 if a is not None and b is not None]
        if not pairs:
            card.show_hint("No image has a value for both the reference and this candidate.")
            return
        x, y = (np.asarray(v, dtype=np.float64) for v in zip(*pairs, strict=True))
        plot = card.plot
        lo, hi = float(min(x.min(), y.min())), float(max(x.max(), y.max()))
        if hi <= lo:
            hi = lo + 1.0
        higher_better = doc.per_image_metric not in ("cer", "wer")
        lost = y < x if higher_better else y > x
        plot.plot(x[~lost], y[~lost], pen=None, symbol="o", symbolSize=7, symbolPen=None,
                  symbolBrush=pg.mkBrush(self.color(cand.name) + "b0"), name=f"{cand.name}: as good or better")
        if lost.any():
            plot.plot(x[lost], y[lost], pen=None, symbol="x", symbolSize=9, symbolPen=pg.mkPen("#b5473a", width=2),
                      name=f"{cand.name}: worse ({int(lost.sum())} image{'s' if lost.sum() != 1 else ''})")
        plot.plot([lo, hi], [lo, hi], pen=pg.mkPen("#9aa0a6", style=Qt.PenStyle.DashLine))
        # Scores of 0 or 1 (a label right or wrong) fall on a few points: each says how many images it holds.
        counts: dict[tuple[float, float], int] = {}
        for a, b in pairs:
            counts[(float(a), float(b))] = counts.get((float(a), float(b)), 0) + 1
        if len(counts) <= 30 and len(counts) < len(pairs):
            middle = (lo + hi) / 2
            for (a, b), n in counts.items():
                # Counts face the plot's inside: away from the edges and from the legend at the top left.
                note = pg.TextItem(f"{n} image{'s' if n != 1 else ''}", color=INK,
                                   anchor=(-0.1 if a <= middle else 1.1, -0.1 if b > middle else 1.1))
                note.setPos(a, b)
                plot.addItem(note)
        metric = metric_name(doc.per_image_metric) if doc.per_image_metric else "per-image metric"
        plot.setLabel("bottom", f"{metric}, reference ({doc.reference.name})")
        plot.setLabel("left", f"{metric}, {cand.name}")
        span = hi - lo
        # Room at the top for the legend (top-left), and around the points for their counts.
        plot.setXRange(lo - 0.08 * span, hi + 0.08 * span, padding=0)
        plot.setYRange(lo - 0.08 * span, hi + 0.6 * span, padding=0)
        card.show_plot()

    def _fill_worst(self, cand: EvalCandidate | None) -> None:
        while self.worst_list.count():
            item = self.worst_list.takeAt(0)
            old = item.widget() if item is not None else None
            if old is not None:
                old.hide()  # gone at once, not when the event loop next deletes it
                old.deleteLater()
        self.worst_pictures = []
        self._worst_pix = []
        worst = cand.worst if cand is not None else ()
        if not worst:
            doc = self.doc
            lost = doc is not None and cand is not None and self._loses_somewhere(doc, cand)
            empty = QLabel("Pick a candidate." if cand is None else
                           "The evaluation kept no pictures of the images this candidate does worse on." if lost else
                           "This candidate does no worse than the reference on any image.")
            empty.setWordWrap(True)
            empty.setStyleSheet(HINT_STYLE)
            self.worst_list.addWidget(empty)
            return
        for k, w in enumerate(worst):
            caption = QLabel(f"{k + 1}. {Path(w.image).name} — reference {_value(w.reference)}, "
                             f"{cand.name if cand else 'candidate'} {_value(w.candidate)}   (truth | reference | "
                             "candidate)")
            caption.setToolTip(w.image)
            caption.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.worst_list.addWidget(caption)
            pix = pixmap_from_uri(w.picture)
            picture = QLabel()
            if pix.isNull():
                picture.setText("(no picture drawn)")
                picture.setStyleSheet("color:#5f6368;")
            picture.setAlignment(Qt.AlignmentFlag.AlignLeft)
            self.worst_list.addWidget(picture)
            self.worst_pictures.append(picture)
            self._worst_pix.append(pix)
        self._fit_worst()

    def _fit_worst(self) -> None:
        """Each worst image as wide as the list has room for (never wider than drawn, nor than WORST_WIDTH)."""
        room = max(160, self.worst.viewport().width() - 24)
        for label, pix in zip(self.worst_pictures, self._worst_pix, strict=True):
            if pix.isNull():
                continue
            width = min(room, pix.width(), WORST_WIDTH)
            label.setPixmap(pix if width == pix.width() else
                            pix.scaledToWidth(width, Qt.TransformationMode.SmoothTransformation))

    @staticmethod
    def _loses_somewhere(doc: EvaluationResult, cand: EvalCandidate) -> bool:
        """Whether the per-image values show an image the candidate does worse on (True where none were kept:
        it may)."""
        if not cand.values or not doc.reference.values:
            return True
        lower_better = doc.per_image_metric in ("cer", "wer")
        return any(a is not None and b is not None and (b > a if lower_better else b < a)
                   for a, b in zip(doc.reference.values, cand.values, strict=False))

    # ----------------------------------------------------------------- export
    def export(self, folder: Path, model: str = "") -> list[Path]:
        """Each chart with data (PNG and SVG) and the worst images (PNG), titled with the model and candidate."""
        written: list[Path] = []
        doc = self.doc
        if doc is None:
            return written
        name = self.candidate_combo.currentText()
        head = " · ".join(p for p in (model, Path(doc.dataset.path).name) if p)
        folder.mkdir(parents=True, exist_ok=True)
        if self.per_class.has_data:
            written += self.per_class.export(folder, "dataset_per_class", f"{head}<br>{self.per_class.title}")
        for card, stem in ((self.confusion, "dataset_confusion"), (self.scatter, "dataset_per_image")):
            if card.has_data:
                written += card.export(folder, f"{stem}_{_safe(name)}", f"{head} · {name}<br>{card.title}")
        from app.core.fileio import atomic_write_bytes

        cand = self.candidate(name)
        for k, w in enumerate(cand.worst if cand is not None else ()):
            pix = pixmap_from_uri(w.picture)
            if pix.isNull():
                continue
            from PySide6.QtCore import QBuffer, QIODevice

            buf = QBuffer()
            buf.open(QIODevice.OpenModeFlag.WriteOnly)
            pix.save(buf, "PNG")
            path = folder / f"dataset_worst_{_safe(name)}_{k + 1}_{_safe(Path(w.image).stem)}.png"
            atomic_write_bytes(path, bytes(buf.data().data()))
            written.append(path)
        return written

    def _export_dialog(self) -> None:
        from PySide6.QtWidgets import QFileDialog

        folder = QFileDialog.getExistingDirectory(self, "Export the dataset charts to folder")
        if not folder:
            return
        try:
            written = self.export(Path(folder))
        except OSError as exc:
            self.export_label.setText(f"Could not write to {folder}: {exc.strerror or exc}")
            self.export_label.show()
            self.exported.emit(f"Could not export the dataset charts to {folder}: choose a folder you can write to.")
            return
        self.export_label.setText(f"Saved {len(written)} file(s) to {folder}")
        self.export_label.show()
        self.exported.emit(f"Exported {len(written)} dataset chart and picture files to {folder}")


def most_lost(doc: EvaluationResult) -> str:
    """The candidate whose main metric drops most against the reference (CER and WER: rises most); the first one
    where none is known."""
    sign = 1.0 if doc.main_metric in ("cer", "wer") else -1.0

    def loss(cand: EvalCandidate) -> float:
        delta = cand.delta.get(doc.main_metric)
        return sign * delta if delta is not None else float("-inf")

    return max(doc.candidates, key=loss).name


def _value(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "candidate"
