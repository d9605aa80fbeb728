"""The full-window scorecard of the guided comparison: one card per precision, in words a non-programmer reads
at a glance (how much faster than FP32, whether the answers changed) and the histogram of the differences.

The verdicts come from the compare and bench results exactly as the jobs returned them (app.core.measure's
`card_facts`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QColor, QFont, QKeySequence, QPalette, QShortcut
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from app.core.measure import (
    BAD,
    FAIR,
    GOOD,
    NEUTRAL,
    PRECISION_WORDS,
    CardFacts,
    ResultsState,
    card_facts,
    caveats,
    target_emulations,
)
from app.core.results import BenchResult, CompareResult, EvaluationResult
from app.core.targets import Target
from app.ui.results.answers_view import PictureLabel, pixmap_from_uri
from app.ui.results.plots import PlotCard, draw_abs_diff
from app.ui.results.scorecard_answers import PendingCard, ReferenceCard

PRECISION_BLURB = {"fp16": "16-bit numbers: half the memory of FP32",
                   "bf16": "16-bit numbers with FP32's range",
                   "int8": "8-bit integers: a quarter of the memory of FP32"}

# Text colour on a light background of the same hue: the verdicts read by colour and by word alike.
TONES = {GOOD: ("#1e6b34", "#e6f4ea"), FAIR: ("#7a4f00", "#fef3d6"), BAD: ("#a3221b", "#fdecea"),
         NEUTRAL: ("#4a4f57", "#f1f3f4")}


PAGE_BACKGROUND = "#f7f7f5"
COMING_STYLE = "color:#174ea6; background:#e8f0fe; border-radius:6px; padding:6px 10px;"
MEASURING = "Measuring speed…"


def paint_background(widget: QWidget, color: str) -> None:
    """A page's background by palette: a style sheet would stop font changes (presentation mode) below it."""
    pal = widget.palette()
    pal.setColor(QPalette.ColorRole.Window, QColor(color))
    widget.setPalette(pal)
    widget.setAutoFillBackground(True)


def _tone_style(tone: str) -> str:
    fg, bg = TONES[tone]
    return f"QLabel {{ color:{fg}; background:{bg}; border-radius:6px; padding:6px 10px; }}"


def decade_ticks(edges: list[float]) -> list[tuple[float, str]]:
    """Log-axis ticks at powers of ten (and 2, 5 between them over a short range), written as plain numbers:
    pyqtgraph labels every minor tick of a narrow log range, and the labels then run into each other."""
    import math

    positive = [e for e in edges if e > 0]
    if not positive:
        return []
    lo, hi = math.floor(math.log10(min(positive))), math.ceil(math.log10(max(positive)))
    steps = (1, 2, 5) if hi - lo <= 2 else (1,)
    ticks = []
    for k in range(lo, hi + 1):
        for m in steps:
            v = m * 10.0 ** k
            ticks.append((math.log10(v), f"{v:.{max(0, -k)}f}" if k >= -4 else f"{m}e{k}"))
    return ticks


def measuring(facts: CardFacts) -> CardFacts:
    """A card's facts while its benchmark is still to come: the speed says so (a precision this computer only
    imitates keeps its "n/a here", which needs no benchmark)."""
    if target_emulations(facts.target):
        return facts
    return replace(facts, speed=MEASURING, speed_tone=NEUTRAL, ratio=None,
                   speed_detail="Each precision is timed once every answer is in, one at a time (they must not "
                                "compete for the processor).")


class PrecisionCard(QFrame):
    """One precision: its name, the speed and answer verdicts in large coloured words, the differences."""

    def __init__(self, facts: CardFacts, compare: CompareResult, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.facts = facts
        self.setObjectName("precisionCard")
        self.setStyleSheet("#precisionCard { background:white; border:1px solid #dadce0; border-radius:10px; }")
        col = QVBoxLayout(self)
        col.setContentsMargins(14, 12, 14, 12)
        col.setSpacing(6)
        self.title = QLabel(PRECISION_WORDS.get(facts.precision, facts.precision.upper()))
        self.title.setStyleSheet("color:#1b1f24;")
        self.blurb = QLabel(PRECISION_BLURB.get(facts.precision, facts.target))
        self.blurb.setStyleSheet("color:#5f6368;")
        self.blurb.setWordWrap(True)
        self.speed = QLabel(facts.speed)
        self.speed.setStyleSheet(_tone_style(facts.speed_tone))
        self.speed.setToolTip(facts.speed_detail)
        self.speed_detail = QLabel(facts.speed_detail)
        self.answers = QLabel(facts.answers)
        self.answers.setStyleSheet(_tone_style(facts.answers_tone))
        self.answers_detail = QLabel(facts.answers_detail)
        for detail in (self.speed_detail, self.answers_detail):
            detail.setWordWrap(True)
            detail.setStyleSheet("color:#4a4f57;")
        # Its main metric on a labelled dataset (Run ▸ Evaluate on Dataset…), where it was evaluated.
        self.dataset = QLabel(f"On the dataset: {facts.dataset}")
        self.dataset.setStyleSheet(_tone_style(facts.dataset_tone))
        self.dataset.setWordWrap(True)
        self.dataset.setToolTip("The candidate's main metric on the labelled dataset: the reference → this precision")
        self.dataset.setVisible(bool(facts.dataset))
        for w in (self.title, self.blurb, self.speed, self.speed_detail, self.answers, self.answers_detail,
                  self.dataset):
            col.addWidget(w)
        self.picture = PictureLabel()
        self.picture.setMinimumSize(120, 120)
        self.picture.setToolTip("This precision's answer on the sample shown (◀ ▶ at the top step through them)")
        col.addWidget(self.picture, 2)
        self.plot = PlotCard("How far each output value moved from FP32",
                             "No difference data for this precision.")
        self.plot.setMinimumHeight(170)
        col.addWidget(self.plot, 1)
        self.pictures = compare.answers
        self._draw(compare)
        self.set_sample(0)

    def set_sample(self, sample: int) -> None:
        """The candidate's picture of the first drawn output on one sample; the histogram where there is none."""
        entry = next(iter(self.pictures.outputs.values()), None) if self.pictures is not None else None
        mine = entry.candidates.get(self.facts.target) if entry is not None else None
        pics = mine.cand if mine is not None else ()
        self.picture.set_picture(pixmap_from_uri(pics[sample] if sample < len(pics) else None))
        self.picture.setVisible(self.picture.has_picture())
        self.plot.setVisible(not self.picture.has_picture())

    def _draw(self, compare: CompareResult) -> None:
        """The candidate's |difference| histogram, drawn as the Results view draws it (one state per card)."""
        mine = tuple(c for c in compare.candidates if c.name == self.facts.target)
        plots = compare.plots.get(self.facts.target, {})
        state = ResultsState()
        state.add_compare(compare.replace(candidates=mine, plots={self.facts.target: plots}))
        draw_abs_diff(self.plot, state, self.facts.output)
        if not self.plot.has_data:
            return
        self.plot.legend.setVisible(False)  # the card names its precision: a legend would only repeat it
        plot = self.plot.plot
        plot.setLabel("bottom", "how much each output value changed (log scale)")
        plot.setLabel("left", "values")
        drawn = plots.get(self.facts.output)
        data = drawn.abs_diff if drawn is not None else None
        if data:
            plot.getAxis("bottom").setTicks([decade_ticks(list(data[0]))])
            # Counts are whole numbers: no "0.5 values" ticks on a histogram of a few dozen values.
            most = max([float(c) for c in data[1]] or [1.0])
            step = next(m * 10 ** k for k in range(12) for m in (1, 2, 5) if m * 10 ** k >= most / 5)
            plot.getAxis("left").setTickSpacing(step, step)

    def apply_fonts(self, base: QFont) -> None:
        """Sizes relative to the page's font, so presentation mode's larger font scales the whole card."""
        size = base.pointSizeF() if base.pointSizeF() > 0 else 10.0
        for w, factor, bold in ((self.title, 2.0, True), (self.blurb, 1.0, False), (self.speed, 1.7, True),
                                (self.answers, 1.7, True), (self.speed_detail, 1.0, False),
                                (self.answers_detail, 1.0, False), (self.dataset, 1.1, True)):
            f = QFont(base)
            f.setPointSizeF(size * factor)
            f.setBold(bold)
            w.setFont(f)
        if self.plot.has_data:
            tick = QFont(base)
            tick.setPointSizeF(size * 0.9)
            item = self.plot.plot.getPlotItem()
            for name in ("left", "bottom"):
                item.getAxis(name).setStyle(tickFont=tick)
                item.getAxis(name).label.setFont(tick)
            self.plot.plot.setTitle(self.plot.title, color="#1b1f24", size=f"{size:.0f}pt")


class ScorecardPage(QWidget):
    """The scorecard, filling the window; Esc (or its button) leaves to the full window."""

    leaveRequested = Signal()
    againRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.facts: list[CardFacts] = []
        self.cards: list[PrecisionCard] = []
        self.pending: list[PendingCard] = []   # the precisions not compared yet
        paint_background(self, PAGE_BACKGROUND)
        # A page of the window's stack: its size must not raise the window's minimum when another page shows.
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(24, 16, 24, 16)
        outer.setSpacing(8)
        top = QHBoxLayout()
        self.heading = QLabel("")
        self.heading.setWordWrap(True)
        self.heading.setStyleSheet("color:#1b1f24;")
        top.addWidget(self.heading, 1)
        self.again_button = QPushButton("Compare again")
        self.again_button.setToolTip("Back to the choice of precisions")
        self.again_button.clicked.connect(self.againRequested)
        self.leave_button = QPushButton("Open the full window (Esc)")
        self.leave_button.setToolTip("The graph, the Run panel and every result in detail")
        self.leave_button.clicked.connect(self.leaveRequested)
        top.addWidget(self.again_button, 0, Qt.AlignmentFlag.AlignTop)
        top.addWidget(self.leave_button, 0, Qt.AlignmentFlag.AlignTop)
        outer.addLayout(top)
        self.subheading = QLabel("")
        self.subheading.setWordWrap(True)
        self.subheading.setStyleSheet("color:#4a4f57;")
        steps = QHBoxLayout()
        steps.addWidget(self.subheading, 1)
        self.prev_button, self.next_button = QPushButton("◀"), QPushButton("▶")
        self.sample_label = QLabel("")
        for b, d, tip in ((self.prev_button, -1, "Previous photo (Left)"), (self.next_button, 1, "Next photo (Right)")):
            b.setFixedWidth(36)
            b.setToolTip(tip)
            b.clicked.connect(lambda _=False, d=d: self.step(d))
        steps.addWidget(self.prev_button)
        steps.addWidget(self.sample_label)
        steps.addWidget(self.next_button)
        outer.addLayout(steps)
        # What is still coming while the jobs run ("Still coming: INT8's answers, then the speed"): a page that is
        # filled in as answers arrive must not look finished before it is.
        self.coming = QLabel("")
        self.coming.setWordWrap(True)
        self.coming.setStyleSheet(COMING_STYLE)
        self.coming.hide()
        outer.addWidget(self.coming)
        self.sample = 0
        self.samples = 0
        self.reference_card: ReferenceCard | None = None
        for key, d in ((Qt.Key.Key_Left, -1), (Qt.Key.Key_Right, 1)):
            sc = QShortcut(QKeySequence(key), self)
            sc.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            sc.activated.connect(lambda d=d: self.step(d))
        self.row_holder = QWidget()
        self.row = QHBoxLayout(self.row_holder)
        self.row.setContentsMargins(0, 4, 0, 4)
        self.row.setSpacing(14)
        # At most three precisions (FP16, BF16, INT8): their cards fit side by side from 1024 pixels wide.
        outer.addWidget(self.row_holder, 1)
        self.caveat = QLabel("")
        self.caveat.setWordWrap(True)
        self.caveat.setStyleSheet("color:#663c00; background:#fff4e5; border-radius:6px; padding:6px 10px;")
        outer.addWidget(self.caveat)
        esc = QShortcut(QKeySequence(Qt.Key.Key_Escape), self)
        esc.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        esc.activated.connect(self.leaveRequested)

    def show_results(self, model: str, compare: CompareResult | None, bench: Mapping[str, BenchResult],
                     reference: str, evaluation: EvaluationResult | None = None, *, waiting: Sequence[str] = (),
                     timing: bool = False) -> None:
        """Fills the cards from the jobs' results: the comparison, each target's benchmark and, where there is one,
        the evaluation on a labelled dataset. While the jobs still run: `waiting`, the targets not compared yet
        (a card that says so each); `timing`, the speed is still being measured (the speed rows say so)."""
        for old in self.all_cards():
            self.row.removeWidget(old)
            old.deleteLater()
        facts = card_facts(compare, bench, reference, evaluation)
        self.facts = [measuring(f) if timing and f.target not in bench else f for f in facts]
        self.cards = [PrecisionCard(f, compare) for f in self.facts] if compare is not None else []
        self.pending = [PendingCard(t, PRECISION_BLURB.get(Target.read(t).precision, t)) for t in waiting]
        answers = compare.answers if compare is not None else None
        drawn = next(iter(answers.outputs.values()), None) if answers is not None else None
        self.reference_card = ReferenceCard(answers, reference) if answers is not None and drawn else None
        self.sample = 0
        self.samples = max([len(drawn.ref or ())] + [len(c.cand) for c in drawn.candidates.values()]) if drawn else 0
        for card in self.all_cards():
            card.setMinimumWidth(240 if self.reference_card else 300)
            self.row.addWidget(card, 1)
        self._show_sample()
        backend = Target.read(reference).backend
        samples = compare.samples if compare is not None else 0
        shown = [f.precision for f in self.facts] + [Target.read(t).precision for t in waiting]
        names = ", ".join(PRECISION_WORDS.get(p, p) for p in shown)
        self.heading.setText(f"{Path(model).name}: {names} against FP32")
        data = "random inputs" if compare is not None and compare.random_data else \
            (compare.inputs if compare is not None and compare.inputs else "your inputs")
        self.subheading.setText(f"Measured on this computer ({backend}): {samples} sample{'s' if samples != 1 else ''}"
                                f" of {data}; speed from the median of each benchmark.")
        coming = [f"{PRECISION_WORDS.get(p, p)}'s answers" for p in (Target.read(t).precision for t in waiting)]
        if timing:
            coming.append("the speed of each precision (measured last, one at a time)")
        self.coming.setText(f"Still coming: {', then '.join(coming)}." if coming else "")
        self.coming.setVisible(bool(coming))
        notes = caveats(compare, bench)
        self.caveat.setText("\n".join(notes))
        self.caveat.setVisible(bool(notes))
        self._apply_fonts()

    def all_cards(self) -> list[ReferenceCard | PrecisionCard | PendingCard]:
        """The cards in their order on the page: FP32's, each compared precision's, each still being compared."""
        return [*([self.reference_card] if self.reference_card else []), *self.cards, *self.pending]

    def step(self, delta: int) -> None:
        if self.samples > 1:
            self.sample = (self.sample + delta) % self.samples
            self._show_sample()

    def _show_sample(self) -> None:
        for w in (self.prev_button, self.next_button, self.sample_label):
            w.setVisible(self.samples > 1)
        self.sample_label.setText(f"Sample {self.sample + 1} of {self.samples}")
        if self.reference_card is not None:
            self.reference_card.set_sample(self.sample)
        for card in self.cards:
            card.set_sample(self.sample)

    def _apply_fonts(self) -> None:
        base = self.font()
        size = base.pointSizeF() if base.pointSizeF() > 0 else 10.0
        head = QFont(base)
        head.setPointSizeF(size * 1.8)
        head.setBold(True)
        self.heading.setFont(head)
        sub = QFont(base)
        sub.setPointSizeF(size * 1.1)
        self.subheading.setFont(sub)
        for card in self.all_cards():
            card.apply_fonts(base)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt's name
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._apply_fonts()
