"""The start page's "Compare precisions": a guided flow for someone who has never seen the tool.

Model → input shapes → precisions → one Run (a comparison of every precision against FP32 on ONNX Runtime's CPU,
then a benchmark of each, the answers shown as they come) → the full-window scorecard. It is a page of the window's
central stack, not a chain of dialogs; every step can leave to the full window. The jobs go through the window's
RunController, so they are the same typed specs and jobs as the Run panel's, and their results fill the Results view
as well."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from PySide6.QtCore import QEvent, QSettings, Signal, SignalInstance
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from app.core.errors import TrtlabError
from app.core.measure import InputSource
from app.core.model import OpenedModel
from app.core.results import BenchResult, CompareResult, ResultFormatError
from app.core.targets import Target
from app.jobs import JobResult
from app.ui.common.style import pass_font
from app.ui.graph.view import GraphView
from app.ui.guided.steps import ModelStep, PrecisionsStep, ShapesStep, show_error
from app.ui.guided.words import InputWords, demo_words, input_words, job_source, model_words
from app.ui.results.scorecard import PAGE_BACKGROUND, ScorecardPage, paint_background
from app.ui.results.view import ResultsView
from app.ui.run.controller import RunController
from app.ui.run.job_bridge import JobBridge
from app.ui.run.requests import BenchRequest, CompareRequest, JobSettings

BACKEND = "ort-cpu"  # runs everywhere: the flow never asks for a GPU
REFERENCE = f"{BACKEND}:fp32"
# The budgets of one Run, chosen so that the whole scorecard of the demo (u2netp, FP16 + INT8) is in within a minute
# on a 2-core computer with no GPU (docs/benchmarks.md, "Guided demo"): the five sample photos compared, INT8
# calibrated on the same five (the calibration and the comparison take two thirds of the minute), then each precision
# timed for one second after one warm-up run: the median of a few runs, enough to tell "2× faster" from "about as
# fast", not 5 % apart (the Run panel's Benchmark times as long as asked).
SAMPLES = 5
ITERATIONS = "1s"
WARMUP = "1"
STEP_TITLES = ("1  Model", "2  Input shapes", "3  Precisions")
FLOW_FONT = 1.15


class StepCard(QFrame):
    """The steps, one on show: as tall as that step. (A QStackedWidget takes the height its tallest page needs
    for word-wrapped text, whatever the pages' size policies.)"""

    def __init__(self) -> None:
        super().__init__()
        self._col = QVBoxLayout(self)
        self._col.setContentsMargins(0, 0, 0, 0)
        self._steps: list[QWidget] = []
        self._current = -1

    def addWidget(self, step: QWidget) -> None:  # noqa: N802 - the name QStackedWidget gives it
        self._steps.append(step)
        self._col.addWidget(step)
        step.setVisible(len(self._steps) - 1 == self._current)

    def setCurrentIndex(self, index: int) -> None:  # noqa: N802
        self._current = index
        for k, step in enumerate(self._steps):
            step.setVisible(k == index)

    def currentIndex(self) -> int:  # noqa: N802
        return self._current

    def currentWidget(self) -> QWidget | None:  # noqa: N802
        return self._steps[self._current] if 0 <= self._current < len(self._steps) else None


class GuidedHost(Protocol):
    """The window the flow fills: its central stack and pages, its run controller and jobs, and the signals it
    sends once it has shown a model (`modelShown`) or could not (`openFailed`, None when cancelled)."""

    opened: OpenedModel | None
    settings: QSettings
    stack: QStackedWidget
    view: GraphView
    results_view: ResultsView
    run_controller: RunController
    jobs: JobBridge
    modelShown: SignalInstance
    openFailed: SignalInstance
    compareRequested: SignalInstance   # the start page's "Compare precisions"

    @property
    def start_page(self) -> QWidget: ...

    @property
    def graph_page(self) -> QWidget: ...

    def open_path(self, path: str | Path, shapes: dict | None = None) -> None: ...

    def open_demo(self) -> None: ...

    def model_docks(self) -> Sequence[QWidget]: ...

    def show_model_layout(self) -> None: ...

    def show_results(self) -> None: ...


class GuidedFlow(QWidget):
    """The flow's page (steps 1–3) and its scorecard page, both in ``window.stack``.

    A Run shows its answers as they come, on this page below the step (`live`): FP32's answer first, each
    precision's as soon as it is compared, the speed last; then the complete scorecard page. `partShown` names
    each part once it is on show: "FP32", each compared target ("ort-cpu:int8"), "speed", "complete".

    ``iterations`` / ``warmup`` / ``samples``: the benchmark's budget per precision (a count or a time such as
    "2s") and the comparison's samples (tests make them small)."""

    partShown = Signal(str)

    def __init__(self, window: GuidedHost) -> None:
        super().__init__()
        self.w = window
        self.iterations = ITERATIONS
        self.warmup = WARMUP
        self.samples = SAMPLES
        self.running = False
        self.cancelling = False                  # Cancel was asked: nothing more starts, whatever finishes
        self.covered = False                     # the flow or its scorecard fills the window
        self._await: str | None = None          # "model" | "shapes": a load the flow started and waits for
        self.mine: set[str] = set()              # ids of the jobs this run started
        self.compare: CompareResult | None = None
        self.bench: dict[str, BenchResult] = {}
        self.targets: list[str] = []
        self.done = 0                            # jobs of this run finished
        self.shown: list[str] = []               # the parts of this run's answers on show (partShown)
        paint_background(self, PAGE_BACKGROUND)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)  # never widens the window
        outer = QVBoxLayout(self)
        outer.setContentsMargins(24, 16, 24, 16)
        top = QHBoxLayout()
        self.step_labels = [QLabel(t) for t in STEP_TITLES]
        for label in self.step_labels:
            top.addWidget(label)
            top.addSpacing(14)
        top.addStretch(1)
        self.leave_button = QPushButton("Open the full window")
        self.leave_button.setToolTip("Leave the guided comparison: the graph, the Run panel and every setting")
        self.leave_button.clicked.connect(self.leave)
        top.addWidget(self.leave_button)
        outer.addLayout(top)
        holder = QHBoxLayout()
        self.steps = StepCard()
        # Colours by palette, not style sheet: Qt passes no font change on below a style sheet (presentation mode).
        paint_background(self.steps, "#ffffff")
        self.steps.setFrameShape(QFrame.Shape.StyledPanel)
        self.steps.setMaximumWidth(820)
        self.model_step, self.shapes_step, self.precisions_step = ModelStep(), ShapesStep(), PrecisionsStep()
        for step in (self.model_step, self.shapes_step, self.precisions_step):
            self.steps.addWidget(step)
        holder.addStretch(1)
        holder.addWidget(self.steps, 4)
        holder.addStretch(1)
        # A little above the middle, where the eye goes first; the card is as tall as its step needs.
        outer.addStretch(1)
        outer.addLayout(holder)
        outer.addStretch(2)
        # The answers so far, under the step (then only its progress and Cancel), while the jobs run.
        self.live = ScorecardPage()
        live_layout = self.live.layout()
        assert live_layout is not None
        live_layout.setContentsMargins(0, 8, 0, 0)
        for button in (self.live.again_button, self.live.leave_button):
            button.hide()
        self.live.hide()
        outer.addWidget(self.live)
        self._outer = outer

        self._scale_steps()

        self.scorecard = ScorecardPage()
        window.stack.addWidget(self)
        window.stack.addWidget(self.scorecard)
        window.compareRequested.connect(self.begin)
        self.model_step.demoChosen.connect(self.use_demo)
        self.model_step.fileChosen.connect(self.use_file)
        self.model_step.openChosen.connect(self.use_open)
        self.model_step.set_demo_words(demo_words())
        self.shapes_step.nextRequested.connect(self.shapes_done)
        self.shapes_step.backRequested.connect(lambda: self.go(0))
        self.precisions_step.backRequested.connect(lambda: self.go(1))
        self.precisions_step.runRequested.connect(self.run)
        self.precisions_step.cancelRequested.connect(self.cancel)
        self.precisions_step.folder.textChanged.connect(self._say_inputs)
        self.scorecard.leaveRequested.connect(self.leave)
        self.live.leaveRequested.connect(self.leave)
        self.scorecard.againRequested.connect(self.again)
        # Sent once the window has shown the model (or said why it could not): the flow then takes its place back.
        window.modelShown.connect(self._on_loaded)
        window.openFailed.connect(self._on_failed)
        window.jobs.started.connect(self._on_started)
        window.jobs.progress.connect(self._on_progress)
        window.jobs.partial.connect(self._on_partial)
        window.jobs.finished.connect(self._on_finished)
        self.go(0)

    def _scale_steps(self) -> None:
        """The steps are read by people new to the tool, often on a projector: larger than the panels."""
        font = QFont(self.font())
        font.setPointSizeF((font.pointSizeF() if font.pointSizeF() > 0 else 10.0) * FLOW_FONT)
        self.steps.setFont(font)
        pass_font(self.steps)  # the buttons' and notes' style sheets would keep them at the old size

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt's name
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._scale_steps()

    # ----------------------------------------------------------------- moving between steps
    def begin(self) -> None:
        """From the start page: step 1, the flow filling the window."""
        self.model_step.start_dir = str(self.w.settings.value("paths/last_dir", str(Path.home())))
        self.model_step.set_busy("")
        self.model_step.set_demo_words(demo_words())  # the file "Use the demo model" opens now
        show_error(self.model_step.error, "")
        opened = self.w.opened
        self.model_step.set_open_model(opened.path.name if opened is not None else None)
        self.go(0)
        self._cover()

    def go(self, index: int) -> None:
        self.steps.setCurrentIndex(index)
        for k, label in enumerate(self.step_labels):
            color = "#1a73e8" if k == index else ("#1b1f24" if k < index else "#9aa0a6")
            label.setStyleSheet(f"color:{color}; font-weight:{'700' if k == index else '400'};")
        first = self.model_step.open_button if self.model_step.open_button.isVisibleTo(self) else \
            self.model_step.demo_button
        (first, self.shapes_step.next_button, self.precisions_step.run_button)[index].setFocus()

    def _cover(self) -> None:
        """The flow fills the window: the model's panels wait until it is left."""
        self.w.stack.setCurrentWidget(self)
        self.covered = True
        for dock in self.w.model_docks():
            dock.hide()

    def covering(self) -> bool:
        return self.w.stack.currentWidget() in (self, self.scorecard)

    def leave(self) -> None:
        """To the full window: the graph with the model's panels (and the results so far), or the start page."""
        if self.running:
            self.cancel()
        self._await = None
        self.covered = False
        if self.w.opened is None:
            self.w.stack.setCurrentWidget(self.w.start_page)
            return
        self.w.stack.setCurrentWidget(self.w.graph_page)
        self.w.show_model_layout()
        if not self.w.results_view.state.empty:
            self.w.show_results()
        self.w.view.setFocus()

    def again(self) -> None:
        self.go(2)
        self._cover()

    # ----------------------------------------------------------------- step 1 and 2: the model and its shapes
    def use_open(self) -> None:
        opened = self.w.opened
        if opened is None:
            self.begin()
            return
        self.shapes_step.set_inputs(opened.path.name, opened.summary.inputs, opened.input_shapes or {},
                                    model_words(opened))
        self.go(1)

    def use_demo(self) -> None:
        self._await = "model"
        self.model_step.set_busy("Reading the demo model…")
        show_error(self.model_step.error, "")
        self.w.open_demo()

    def use_file(self, path: str) -> None:
        self._await = "model"
        self.model_step.set_busy(f"Reading {Path(path).name}…")
        show_error(self.model_step.error, "")
        self.w.open_path(path)

    def _on_loaded(self, opened: OpenedModel) -> None:
        waited, self._await = self._await, None
        if waited is None:
            if self.covered:  # a model opened some other way (File ▸ Open): the window showed it, with its panels
                self.covered = False
                if self.running:
                    self.cancel()
                self.w.show_model_layout()
            return
        self._cover()
        self.model_step.set_busy("")
        if waited == "model":
            self.shapes_step.set_inputs(opened.path.name, opened.summary.inputs, opened.input_shapes or {},
                                    model_words(opened))
            self.go(1)
        else:
            self._ready_to_run(opened)

    def _on_failed(self, error: TrtlabError | None) -> None:
        waited, self._await = self._await, None
        if waited is None:
            return
        self._cover()
        self.model_step.set_busy("")
        text = "Reading the model was cancelled." if error is None else f"{error.message} {error.fix}".strip()
        if waited == "model":
            show_error(self.model_step.error, text)
            self.go(0)
        else:
            show_error(self.shapes_step.error, text)

    def shapes_done(self) -> None:
        """Checked here, before any job: a wrong size names the input and its fix."""
        from app.core.measure import resolve_input_shapes

        opened = self.w.opened
        if opened is None:
            self.go(0)
            return
        try:
            shapes = resolve_input_shapes(opened.summary.inputs, self.shapes_step.values())
        except TrtlabError as exc:
            show_error(self.shapes_step.error, f"{exc.message} {exc.fix}".strip())
            return
        show_error(self.shapes_step.error, "")
        if {k: tuple(v) for k, v in (opened.input_shapes or {}).items()} == shapes:
            self._ready_to_run(opened)
            return
        # The jobs take the window's input shapes: the model is read again with these (shape inference too).
        self._await = "shapes"
        self.w.open_path(opened.path, shapes)

    def _ready_to_run(self, opened: OpenedModel) -> None:
        images = [i for i in opened.summary.inputs if i.shape is not None and len(i.shape) == 4]
        # Images make sense for one image-shaped input only; other models run on random data.
        self.precisions_step.set_images_wanted(len(opened.summary.inputs) == 1 and bool(images))
        self.precisions_step.status.setText("")
        self._say_inputs()
        self.go(2)

    # ----------------------------------------------------------------- what the run will use, in words
    def folder(self) -> str:
        """The chosen folder of images, or "" (none, or the model takes no images)."""
        step = self.precisions_step
        return step.folder.text().strip() if step.images_wanted else ""

    def input_words(self, folder: str | None = None) -> InputWords | None:
        """What the comparison will run on, from the job's own choice for this model and these shapes (None
        before a model is open). ``folder``: the chosen one (None: as the step says now; "": none)."""
        opened = self.w.opened
        if opened is None:
            return None
        source = job_source(opened, self.folder() if folder is None else folder)
        return input_words(opened, source, self.samples)

    def _say_inputs(self) -> None:
        words, default = self.input_words(), self.input_words("")
        if words is None or default is None:
            return
        self.precisions_step.set_inputs_words(words.runs_on, words.calibration, words.int8, default.short)

    # ----------------------------------------------------------------- step 3: the run
    def _settings(self) -> JobSettings:
        folder, opened = self.folder(), self.w.opened
        if folder and opened is not None:
            # Prepared as the sample photos would be for this input: the source the step's words describe.
            inputs: InputSource | None = job_source(opened, folder)
        else:
            inputs = None  # the job's own choice: trtlab's sample photos for an image model, else random data
        return JobSettings(inputs=inputs, samples=self.samples, tf32=False, calib_method="minmax")

    def run(self) -> None:
        """The comparison first, then each benchmark (one at a time: they must not compete for the CPU)."""
        step = self.precisions_step
        precisions = step.precisions()
        folder = self.folder()
        if folder and not Path(folder).is_dir():
            default = self.input_words("")
            show_error(step.error, f"The image folder {folder} does not exist. Choose a folder of images, or clear "
                                   f"the field to run on {default.short if default else 'the default inputs'}.")
            return
        if not precisions:
            show_error(step.error, "Tick at least one precision to compare with FP32.")
            return
        self.targets = [Target(BACKEND, p).name for p in precisions]
        self.compare, self.bench, self.mine, self.done = None, {}, set(), 0
        self.shown = []
        self.running, self.cancelling = True, False
        step.set_running(True)
        self._say(f"Comparing {', '.join(p.upper() for p in precisions)} with FP32…")
        # No tolerance: each output is judged by what it means (masks, boxes, labels, text), the rest by cosine.
        request = CompareRequest(self._settings(), REFERENCE, tuple(self.targets))
        if self.w.run_controller.start_compare(request) is None:
            self._stop(self.w.run_controller.last_refusal or "The comparison did not start.")

    def _start_bench(self) -> None:
        self._say("Timing FP32…")
        request = BenchRequest(self._settings().with_samples(1), (REFERENCE, *self.targets), self.iterations,
                               self.warmup)
        if self.w.run_controller.start_bench(request) is None:
            self._stop(self.w.run_controller.last_refusal or "The benchmark did not start.")

    def cancel(self) -> None:
        if not self.running:
            return
        self.cancelling = True
        self._say("Cancelling…")
        self.w.run_controller.cancel_all()

    def total(self) -> int:
        return 2 + len(self.targets)  # the comparison, FP32's benchmark, one benchmark per precision

    def _say(self, text: str) -> None:
        self.precisions_step.status.setText(text)

    def _on_started(self, job: str, title: str) -> None:
        if self.running:
            self.mine.add(job)

    def _on_progress(self, job: str, fraction: float, message: str) -> None:
        if job not in self.mine or not self.running or fraction < 0:
            return  # an indeterminate step ("Comparing…") leaves the bar where it was, not back at the start
        part = max(0.0, min(1.0, fraction))
        self.precisions_step.progress.setValue(int(1000 * (self.done + part) / self.total()))

    def _on_partial(self, job: str, data: dict) -> None:
        """The comparison's answers so far (FP32's, then each precision's as it is compared): shown at once."""
        if job not in self.mine or not self.running or self.cancelling or self.compare is not None:
            return
        try:
            partial = CompareResult.from_json(data)
        except ResultFormatError:
            return  # the final result says what went wrong, if anything did
        self._show_live(partial)

    def _show_live(self, compare: CompareResult) -> None:
        """The answers in so far on the live scorecard; what is not in yet is said on it."""
        compared = [c.name for c in compare.candidates]
        model = str(self.w.opened.path) if self.w.opened is not None else ""
        self.live.show_results(model, compare, {}, REFERENCE, self.w.results_view.state.evaluation,
                               waiting=[t for t in self.targets if t not in compared], timing=True)
        if not self.live.isVisible():
            self.precisions_step.set_compact(True)
            self._outer.setStretch(1, 0)
            self._outer.setStretch(3, 0)
            self._outer.setStretch(4, 1)
            self.live.show()
        # Laid out now, from the step up, not on later turns: the first frame shows the answers in place.
        for widget in (self.precisions_step, self.steps, self.live, self):
            if (layout := widget.layout()) is not None:
                layout.activate()
        for part in ["FP32", *compared]:
            if part not in self.shown:
                self.shown.append(part)
                self.partShown.emit(part)

    def _hide_live(self) -> None:
        self.live.hide()
        self.precisions_step.set_compact(False)
        self._outer.setStretch(1, 1)
        self._outer.setStretch(3, 2)
        self._outer.setStretch(4, 0)

    def _on_finished(self, job: str, result: JobResult) -> None:
        if job not in self.mine or not self.running:
            return
        self.done += 1
        self.precisions_step.progress.setValue(int(1000 * self.done / self.total()))
        status = result.status
        if status == "cancelled" or self.cancelling:
            self.w.run_controller.cancel_all()  # a job that ended as Cancel was asked: the rest never starts
            self._stop("Cancelled: nothing is running any more. Run starts again.")
            return
        if status != "done":
            error = result.error or "The job failed."
            self._stop(f"{error} {result.fix} (Open the full window: the Jobs panel has the log.)")
            return
        try:  # the comparison comes first; the benchmarks start once it is in
            if self.compare is None:
                self.compare = CompareResult.from_json(result.data or {})
                self._show_live(self.compare)
                self._start_bench()
                return
            bench = BenchResult.from_json(result.data or {})
        except ResultFormatError as exc:
            self._stop(f"The job's result could not be read ({exc}). (Open the full window: the Jobs panel has the "
                       "log.)")
            return
        self.bench[bench.backend] = bench
        remaining = [t for t in [REFERENCE, *self.targets] if t not in self.bench]
        if remaining:
            self._say(f"Timing {remaining[0].partition(':')[2].upper()}…")
            return
        self._finish()

    def _stop(self, message: str) -> None:
        self.running = False
        self._hide_live()
        self.precisions_step.set_running(False)
        self._say("")
        show_error(self.precisions_step.error, message)

    def _finish(self) -> None:
        self.running = False
        self._hide_live()
        self.precisions_step.set_running(False)
        self._say("")
        model = str(self.w.opened.path) if self.w.opened is not None else ""
        self.scorecard.show_results(model, self.compare, self.bench, REFERENCE, self.w.results_view.state.evaluation)
        self.w.stack.setCurrentWidget(self.scorecard)
        self.covered = True
        for dock in self.w.model_docks():
            dock.hide()
        self.scorecard.leave_button.setFocus()
        for part in ("speed", "complete"):
            self.partShown.emit(part)
