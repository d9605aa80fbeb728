"""Turns the Run panel's requests into jobs and the jobs' results into the Results view."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from PySide6.QtCore import QObject, QTimer, Signal

from app.backends import Availability
from app.backends.tasks.specs import (
    BenchSpec,
    BuildSpec,
    FallbackSpec,
    JobInputs,
    VariantSpec,
)
from app.backends.tasks.speed_specs import ProfileSpec, SweepSpec
from app.core.errors import TrtlabError
from app.core.measure import Tolerance
from app.core.results import (
    BenchResult,
    BuildResult,
    CompareResult,
    DiagnoseResult,
    EvaluationResult,
    FallbackResult,
    KitResult,
    ProfileResult,
    ResultFormatError,
    SweepResult,
    TuneResult,
    VariantResult,
    read_job_result,
)
from app.core.targets import PLAN, Target, plan_needed
from app.jobs import JobResult
from app.ui.common.messages import Messages
from app.ui.results.view import ResultsView
from app.ui.run.host import JobModel
from app.ui.run.job_bridge import JobBridge
from app.ui.run.panel import RunPanel
from app.ui.run.requests import BenchRequest, CompareRequest, DiagnoseRequest, EvalRequest, ModelInputs

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMessageBox

    from app.core.engine import OptimizationProfile
    from app.core.model import OpenedModel, TensorInfo
    from app.core.readiness import Report
    from app.ui.common.task_thread import Task
    from app.ui.run.eval_dialog import EvalDialog
    from app.ui.run.kit_dialog import KitDialog
    from app.ui.run.sweep_dialog import SweepDialog, SweepRequest
    from app.ui.run.tune_dialog import TuneDialog, TuneRequest

log = logging.getLogger(__name__)

_Spec = TypeVar("_Spec", bound=JobInputs)
_Dialog = TypeVar("_Dialog", "SweepDialog", "TuneDialog")  # the speed dialogs: set_model(opened, availability)


def _at_value(opened: OpenedModel, inputs: Iterable[TensorInfo], axis: int, value: int) -> dict[str, tuple[int, ...]]:
    """The shapes of `inputs` with dimension `axis` at `value` (a sweep's first point, a tune's batch), their other
    dims the Shapes panel's or the model's metadata's; an input whose other dims are still open is left out (the
    usual refusal then names it)."""
    given = {**metadata_shapes(opened, opened.input_shapes or {}), **(opened.input_shapes or {})}
    shapes: dict[str, tuple[int, ...]] = {}
    for info in inputs:
        dims = list(given.get(info.name) or info.shape or ())
        if axis < len(dims):
            dims[axis] = value
            if all(isinstance(d, int) and d > 0 for d in dims):
                shapes[info.name] = tuple(int(d) for d in dims)
    return shapes


class RequestDialog(Protocol):
    """A dialog whose Run asks for a job (kit, evaluation, tune, sweep): it shows why it was refused, or closes."""

    def show_refusal(self, text: str) -> None: ...

    def accept(self) -> None: ...


@dataclass(frozen=True)
class RunningJob:
    """A job this controller started, and what its result needs to be shown."""

    kind: str                  # compare | bench | diagnose | fallback | variant | build | profile | eval | sweep
    model: str                 # the model it ran on: a result for another model is not shown
    title: str
    spec_json: dict            # recorded with the result in the project
    plan_precisions: frozenset[str] = frozenset()  # precisions its `B:plan` targets ran (verdicts)
    bench_reference: str | None = None             # a benchmark's speed-up is relative to this target


class RunController(QObject):
    """Comparisons run as one job; benchmarks one target at a time, so they never compete for the machine.

    Every result leaves as `resultReady` (the project records it); the results other features show leave as
    signals too (`diagnosed`, `built`, `profiled`, `fallbackFound`, `layerTimes`); the window connects them.
    `model.readiness(trt_version)` is the readiness check a build runs first."""

    diagnosed = Signal(object)            # DiagnoseResult
    built = Signal(object)                # BuildResult
    profiled = Signal(object)             # ProfileResult
    fallbackFound = Signal(object)        # FallbackResult
    layerTimes = Signal(str, object)      # benchmark target, its per-layer times (Mapping[str, LayerTiming])
    resultReady = Signal(str, dict, dict, str)  # kind, spec JSON, result JSON, title: every finished job's result
    _trt_checked = Signal(str, object)   # backend, availability: from a worker thread, delivered on the GUI thread

    def __init__(self, panel: RunPanel, jobs: JobBridge, model: JobModel, results: ResultsView, messages: Messages,
                 parent: QObject | None = None) -> None:
        """`panel`: the Run panel it reads; `jobs`: where jobs start; `model`: the model on show, its plan and its
        readiness check (what the jobs run); `results`: the Results view it fills; `messages`: where it says things
        and which dock it points to; `parent`: the Qt object it lives and dies with (the window)."""
        super().__init__(parent)
        self.panel = panel
        self.jobs = jobs
        self.model = model
        self.results = results
        self.messages = messages
        self.running: dict[str, RunningJob] = {}
        self.bench_queue: list[tuple[BenchSpec, str]] = []  # each target's spec, and the reference of its speed-up
        self.last_refusal = ""  # why the last action did not start ("" once one has)
        self.availability: dict[str, Availability] | None = None  # None until the backends were asked
        self.eval_dialog: EvalDialog | None = None  # Run ▸ Evaluate on Dataset…, made on first use
        self.kit_dialog: KitDialog | None = None    # File ▸ Export Run Kit…, made on first use
        self.sweep_dialog: SweepDialog | None = None  # Run ▸ Benchmark Sweep…, made on first use
        self.tune_dialog: TuneDialog | None = None    # Run ▸ Tune Runtime Settings…, made on first use
        self.sweep_run: RunningJob | None = None  # the sweep the Sweep tab shows as it runs
        self.kits: dict[str, tuple[VariantSpec, OptimizationProfile | None]] = {}  # variant path -> its kit's spec
        self._kit_task: Task | None = None
        self.kit_message: QMessageBox | None = None  # the last "Run kit written" message
        panel.compareRequested.connect(self.start_compare)
        panel.benchRequested.connect(self.start_bench)
        panel.diagnoseRequested.connect(self.start_diagnose)
        panel.refused.connect(lambda text: self._refuse("Not started", text))
        model.plan.changed.connect(lambda: panel.set_plan_trivial(model.plan.is_trivial()))
        jobs.finished.connect(self._finished)
        jobs.partial.connect(self._partial)
        self._trt_checked.connect(self._on_trt_checked)
        # Each job kind's typed result (read_job_result reads the JSON as the type its kind names) and its handler.
        self._done: dict[str, Callable[[RunningJob, Any], None]] = {
            "diagnose": self._diagnosed, "build": self._built, "fallback": self._fallback_found,
            "variant": self._variant_saved, "profile": self._profiled, "compare": self._compared,
            "bench": self._benched, "eval": self._evaluated, "sweep": self._swept, "tune": self._tuned}
        results.tune_view.useSettings.connect(self.use_tuned)

    def refresh_availability(self) -> None:
        """Which backends can run. TensorRT's checks may start a child process to ask the GPU through
        cuda-python: they run on worker threads, and `trt` / `trt-rtx` say "checking…" meanwhile."""
        import functools
        import threading

        from app.backends import BACKEND_NAMES, get_backend
        from app.backends.trt_env import RtxEnvironment, TrtEnvironment, environment, rtx_environment

        # Cached: `cache_info().currsize` says whether the GPU was asked already.
        probes: dict[str, functools._lru_cache_wrapper[TrtEnvironment | RtxEnvironment]] = {
            "trt": environment, "trt-rtx": rtx_environment}
        table = {name: get_backend(name).availability() for name in BACKEND_NAMES if name not in probes}
        for name, probe in probes.items():
            if probe.cache_info().currsize:
                table[name] = probe().availability()
                continue
            table[name] = Availability(False, "checking for TensorRT and the GPU…")
            threading.Thread(target=lambda n=name, p=probe: self._trt_checked.emit(n, p().availability()),
                             name=f"trtlab-{name}-check", daemon=True).start()
        self.availability = table
        self.panel.set_availability(table)

    def _on_trt_checked(self, name: str, availability: Availability) -> None:
        table = dict(self.availability or {})
        table[name] = availability
        self.availability = table
        checked = {n for n, cb in self.panel.checks.items() if cb.isChecked()}
        self.panel.set_availability(table)
        for n, cb in self.panel.checks.items():  # keep what the user ticked meanwhile
            cb.setChecked(cb.isEnabled() and (n in checked or (n == name and availability.available)))

    REFUSAL_TITLES = ("Not started", "Input shapes needed", "Build not started")

    def _refuse(self, title: str, message: str, fix: str = "") -> None:
        """Why an action did not start: next to the Run panel's buttons and as the banner over the graph, so
        it is seen wherever the action came from (a button, a shortcut, a menu)."""
        self.last_refusal = f"{message} {fix}".strip()
        self.panel.show_message(self.last_refusal)
        self.messages.show_message(title, message, fix, level="warning")

    def _started(self) -> None:
        """A job started: an earlier refusal no longer applies."""
        self.last_refusal = ""
        self.panel.show_message("")
        self.messages.clear(self.REFUSAL_TITLES)

    def _plan_precisions(self) -> frozenset[str]:
        return self.model.plan_precisions()

    def _model_inputs(self, targets: Iterable[str | Target], shapes: Mapping[str, tuple[int, ...]] | None = None
                      ) -> ModelInputs | None:
        """What every job adds to its request: the model on show, its input shapes (`shapes` over the Shapes
        panel's) and the plan its `B:plan` targets run; None, with the refusal shown, without a model or with input
        shapes a target cannot take."""
        opened = self.model.opened()
        if opened is None:
            self._refuse("Not started", "Open a model first.")
            return None
        from app.core.measure import resolve_input_shapes

        given = {**(opened.input_shapes or {}), **(shapes or {})}
        try:
            resolved = resolve_input_shapes(opened.summary.inputs, {**metadata_shapes(opened, given), **given})
        except TrtlabError as exc:
            # Caught here, before any job starts: the message names the input and its dynamic dim.
            self._refuse("Input shapes needed", exc.message, exc.fix)
            self.messages.raise_dock("summary")
            return None
        chosen = [Target.read(t) for t in targets if t]
        if any(t.builds_engine for t in chosen):
            # TensorRT builds dims sharing a dim_param at one size; ONNX Runtime does not care.
            from app.core.engine import ProfileError, check_engine_shapes

            try:
                check_engine_shapes(opened.doc.model.graph, resolved)
            except ProfileError as exc:
                self._refuse("Input shapes needed", exc.message, exc.fix)
                return None
        base = ModelInputs(str(opened.path), {k: tuple(v) for k, v in resolved.items()})
        if plan_needed(chosen) is not None:
            # An all-FP32 plan is the model itself: said so in the results rather than "B:plan".
            trivial = self.model.plan.is_trivial()
            base = replace(base, plan=None if trivial else self.model.plan.plan, trivial_plan=trivial)
        return base

    def _start(self, spec: JobInputs, title: str, bench_reference: str | None = None, show_jobs: bool = True) -> str:
        job = self.jobs.start(spec.job_spec(title))
        self.running[job] = RunningJob(spec.kind, spec.model, title, spec.to_json(),
                                       self._plan_precisions() if spec.plan is not None else frozenset(),
                                       bench_reference)
        self._started()
        if show_jobs:
            self.messages.show_jobs()
        self.messages.say(f"Started: {title}")
        return job

    def _launch(self, make: Callable[[ModelInputs], _Spec | None], targets: Iterable[str | Target],
                title: Callable[[_Spec], str], *, shapes: Mapping[str, tuple[int, ...]] | None = None,
                refusal: str = "Not started", show_jobs: bool = True) -> str | None:
        """The one path every job but a benchmark starts by: the model, its input shapes (`shapes` over the Shapes
        panel's) and the plan `targets` need are added (`_model_inputs`), `make` makes the typed spec from them
        (None: refused, having said why; a value it refuses is shown), and the job starts, titled `title(spec)`.
        Returns the job's id, or None when it did not start; `show_jobs`: the Jobs dock comes forward (a sweep brings
        its docks forward itself)."""
        base = self._model_inputs(targets, shapes)
        if base is None:
            return None
        try:
            spec = make(base)
        except TrtlabError as exc:
            self._refuse(refusal, exc.message, exc.fix)
            return None
        return self._start(spec, title(spec), show_jobs=show_jobs) if spec is not None else None

    def start_diagnose(self, request: DiagnoseRequest) -> str | None:
        return self._launch(request.spec, request.targets(),
                            lambda s: f"Diagnose {s.candidate} against {s.reference}")

    def start_fallback(self) -> str | None:
        """Search for nodes to keep in FP32 so the first checked candidate meets the Run panel's cosine."""
        panel = self.panel
        settings = panel.job_settings()
        if settings is None:
            return None
        candidate = panel.diagnose_candidate()
        if candidate is None:
            self._refuse("Not started", "Tick a backend and a precision under Candidates to search a fallback for.")
            self.messages.raise_dock("run")
            return None
        reference, target = panel.reference.currentText(), f"cos:{panel.min_cos.value():g}"

        def make(base: ModelInputs) -> FallbackSpec | None:
            cand = base.target(candidate)
            if cand.runs_fp32:  # a fallback keeps nodes in FP32: a candidate running every node in FP32 has none
                self.messages.show_message(
                    "Nothing to fall back from", f"{cand.name} runs every node in FP32.",
                    "Plan some nodes FP16/BF16/INT8 (or pick a precision in the Run panel) first.", level="warning")
                return None
            return FallbackSpec(**settings.spec_fields(base), reference=Target.parse(reference), candidate=cand,
                                target=Tolerance.parse(target))

        return self._launch(make, [reference, candidate], lambda s: f"Fallback search for {s.candidate} ({s.target})")

    def start_profile(self, batch: int | None = None, against_batch: int | None = None) -> str | None:
        """Profile the first ticked candidate against the Run panel's reference (or the reference alone); with
        `against_batch`, that target at `batch` against itself at `against_batch` (dim 0 of every input)."""
        settings = self.panel.job_settings()
        if settings is None:
            return None
        reference, candidate = self.panel.reference.currentText(), self.panel.diagnose_candidate()
        target, against = candidate or reference, reference if candidate and candidate != reference else None
        shapes = None
        if against_batch is not None and (opened := self.model.opened()) is not None:
            from app.core.measure import batch_shapes  # a fixed batch is refused here, before any job

            against = None
            try:
                shapes = batch_shapes(opened.summary.inputs, opened.input_shapes or {}, batch or 1)
                batch_shapes(opened.summary.inputs, opened.input_shapes or {}, against_batch)
            except TrtlabError as exc:
                self._refuse("Not started", exc.message, exc.fix)
                return None

        def make(base: ModelInputs) -> ProfileSpec:
            return ProfileSpec(**settings.spec_fields(base), target=base.target(target),
                               against=Target.parse(against) if against else None,
                               batch=(batch or 1) if against_batch is not None else batch, against_batch=against_batch)

        return self._launch(make, [target, against or ""],
                            lambda s: f"Profile {s.target}" + (f" against {s.against}" if s.against else "")
                            + (f" at batch {s.batch} against batch {s.against_batch}" if s.against_batch else ""),
                            shapes=shapes)

    def start_build(self, force: bool = False) -> str | None:
        """Build the plan's variant into a TensorRT engine (in a job: progress, Cancel, the engine cache).
        The profile is checked first (it names the input and axis), then the readiness check (errors ask
        before building), then whether TensorRT is here."""
        from app.core.engine import named_dims, parse_profile_args

        panel = self.panel
        opened = self.model.opened()
        if opened is None:
            self._refuse("Not started", "Open a model first.")
            return None
        settings = panel.job_settings()
        if settings is None:
            return None
        try:
            profile = parse_profile_args(panel.profile_args(), opened.summary.inputs, opened.input_shapes or None,
                                         dim_names=named_dims(opened.doc.model.graph))
        except TrtlabError as exc:
            self._refuse("Build not started", exc.message, exc.fix)
            self.messages.raise_dock("run")
            return None
        backend, a = engine_backend(self.availability)
        targets: list[str] = []
        if backend == "trt-rtx":
            try:
                targets = panel.rtx_target_list()
            except TrtlabError as exc:
                self._refuse("Build not started", exc.message, exc.fix)
                return None
        engine = Target(backend, PLAN)

        def make(base: ModelInputs) -> BuildSpec | None:
            if not self._build_ready(backend, a, force):
                return None
            options: dict[str, object] = {"profiles": [profile.to_json()], **({"targets": targets} if targets else {})}
            return BuildSpec(**settings.spec_fields(base, **options), target=base.target(engine))

        # A profile alone is enough: its opt shapes are the run's shapes.
        return self._launch(make, [engine], lambda s: f"Build TensorRT engine ({s.target})",
                            shapes={k: tuple(p.opt) for k, p in profile.inputs.items()}, refusal="Build not started")

    def _build_ready(self, backend: str, a: Availability, force: bool) -> bool:
        """Whether a build goes ahead: not where the readiness check's errors stop it (unless `force`, or the user
        builds anyway), nor where no TensorRT here can build (each said)."""
        from app.backends import get_backend

        # Checked against the TensorRT that will build (RTX with its targets), whatever the Readiness dock shows.
        report = self.model.readiness("rtx" if backend == "trt-rtx" else None)
        if report is not None and report.errors and not force and not self._confirm_build(report):
            self.messages.raise_dock("readiness")
            self.messages.say(f"Build not started: the readiness check found {report.errors} error(s).")
            return False
        if not _can_build(a):
            rtx = get_backend("trt-rtx").availability()
            self.messages.show_message(
                "TensorRT is not available here", f"trt: {a.reason} trt-rtx: {rtx.build_reason or rtx.reason}",
                'Install TensorRT for RTX, which builds without a GPU: pip install "trtlab[tensorrt-rtx]"; or '
                "TensorRT: " + (a.install_hint or 'pip install "trtlab[tensorrt]"'), level="warning")
            return False
        return True

    def _confirm_build(self, report: Report) -> bool:
        """Errors mean the build is expected to fail: ask before spending minutes on it."""
        from PySide6.QtWidgets import QMessageBox

        first = report.by_severity()["error"][0]
        answer = QMessageBox.warning(
            self.messages.parent, "The build is expected to fail",
            f"The readiness check found {report.errors} error(s), e.g.:\n\n{first.message}\n\nFix: {first.fix}\n\n"
            "Build anyway?", QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes

    def save_variant(self, out: str) -> str | None:
        """Build the plan's variant (or take it from the cache) with the Run panel's settings and save it as `out`."""
        settings = self.panel.job_settings()
        if settings is None:
            return None
        target = Target("ort-cpu", PLAN)

        def make(base: ModelInputs) -> VariantSpec:
            return VariantSpec(**settings.spec_fields(base), target=base.target(target), out=out)

        return self._launch(make, [target], lambda _s: f"Save variant as {out}")

    def open_kit_dialog(self) -> KitDialog | None:
        """File ▸ Export Run Kit…: the dialog that picks the kit's folder and precision (None, with the refusal
        shown, without a model)."""
        from app.ui.run.kit_dialog import KitDialog

        opened = self.model.opened()
        if opened is None:
            self._refuse("Not started", "Open a model to write a run kit for it.")
            return None
        self.jobs.warm()
        if self.kit_dialog is None:
            self.kit_dialog = KitDialog(self.messages.parent)
            self.kit_dialog.kitRequested.connect(self._kit_requested)
        self.kit_dialog.setWindowTitle(f"Export Run Kit for {opened.path.name}")
        self.kit_dialog.set_model(opened.path, self.model.plan.is_trivial())
        self.kit_dialog.show()
        self.kit_dialog.raise_()
        return self.kit_dialog

    def _answer(self, dialog: RequestDialog | None, job: str | None, later: bool = False) -> None:
        """A dialog's Run answered: the refusal shown in it, or the dialog closed once its job started (`later`: in
        the next turn)."""
        if dialog is None:
            return
        if job is None:
            dialog.show_refusal(self.last_refusal)
        elif later:
            QTimer.singleShot(0, dialog.accept)
        else:
            dialog.accept()

    def _kit_requested(self, folder: str, precision: str) -> None:
        dialog = self.kit_dialog
        job = self.start_kit(folder, precision)
        self._answer(dialog, job)

    def start_kit(self, folder: str, precision: str = "") -> str | None:
        """Write a run kit into `folder` (new or empty): the variant job for `precision` ("": the plan) with the Run
        panel's settings, then `finish_kit` (the samples, the manifest, run_kit.py, the README) when it ends."""
        from app.core.engine import named_dims, parse_profile_args

        opened = self.model.opened()
        if opened is None:
            self._refuse("Not started", "Open a model first.")
            return None
        out = Path(folder).expanduser()
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            self._refuse("Not started", f"{out} is {'not empty' if out.is_dir() else 'a file'}.",
                         "Give a new or empty folder: the kit's results are read back from it.")
            return None
        settings = self.panel.job_settings()
        if settings is None:
            return None
        try:
            profile = parse_profile_args(self.panel.profile_args(), opened.summary.inputs,
                                         opened.input_shapes or None, dim_names=named_dims(opened.doc.model.graph))
        except TrtlabError as exc:
            self._refuse("Not started", exc.message, exc.fix)
            self.messages.raise_dock("run")
            return None
        target = Target("ort-cpu", precision or PLAN)

        def make(base: ModelInputs) -> VariantSpec:
            out.mkdir(parents=True, exist_ok=True)
            name = f"{Path(base.model).stem}.{precision or 'plan'}.onnx"
            spec = VariantSpec(**settings.spec_fields(base), target=base.target(target),
                               out=str((out / name).resolve()))
            self.kits[spec.out] = (spec, profile if profile.inputs else None)
            return spec

        return self._launch(make, [target], lambda _s: f"Export run kit to {out}",
                            shapes={k: tuple(p.opt) for k, p in profile.inputs.items()})

    def _finish_kit(self, spec: VariantSpec, data: VariantResult, profile: OptimizationProfile | None) -> None:
        """The kit around its variant, off the GUI thread (the samples are read and written there)."""
        from app.ui.common.task_thread import run_task

        def work() -> KitResult | TrtlabError:
            from app.backends.kit_files import finish_kit

            try:
                return finish_kit(spec, data, profile, tf32=bool(spec.options.get("tf32")))
            except TrtlabError as exc:
                return exc

        def done(r: KitResult | TrtlabError) -> None:
            self._kit_task = None
            if isinstance(r, TrtlabError):
                self.messages.show_error(r)
                return
            from PySide6.QtWidgets import QMessageBox

            self.kit_message = box = QMessageBox(QMessageBox.Icon.Information, "Run kit written", (
                f"The run kit is in {r.out}: {r.variant} ({r.plan_summary or r.precision}), {r.samples} sample(s), "
                "run_kit.py and README.md.\n\nOn a machine with TensorRT (Linux or Windows), in that folder:\n"
                "    python run_kit.py        (TensorRT for RTX: python run_kit.py --rtx)\n\nThen bring the whole "
                "folder back and use File ▸ Import TensorRT Results…."), QMessageBox.StandardButton.Ok,
                self.messages.parent)
            box.open()  # not modal to the event loop: the window goes on
            self.messages.say(f"Run kit written to {r.out}")

        def failed(message: str) -> None:
            self._kit_task = None
            self.messages.show_message("Run kit not finished", message, "The variant is written; the Jobs panel has "
                                       "its log.")

        self.messages.say("Writing the run kit's samples and script…")
        self._kit_task = run_task(self.messages.parent, work, done, failed)

    def start_compare(self, request: CompareRequest) -> str | None:
        return self._launch(request.spec, request.targets(),
                            lambda s: f"Compare {', '.join(c.name for c in s.candidates)} with {s.reference}")

    def open_eval_dialog(self) -> EvalDialog | None:
        """Run ▸ Evaluate on Dataset…: the dialog that picks a labelled dataset and the candidates to score on it
        (None, with the refusal shown, without a model)."""
        from app.ui.run.eval_dialog import EvalDialog

        opened = self.model.opened()
        if opened is None:
            self._refuse("Not started", "Open a model to evaluate it on a dataset.")
            return None
        self.jobs.warm()
        if self.availability is None:
            self.refresh_availability()
        if self.eval_dialog is None:
            from app.ui.common.screen_fit import fit_window

            self.eval_dialog = EvalDialog(self.messages.parent)
            self.eval_dialog.evalRequested.connect(self._eval_requested)
            fit_window(self.eval_dialog, (1100, 700), near=self.messages.parent)
        self.eval_dialog.set_model(opened, self.availability or {})
        self.eval_dialog.show()
        self.eval_dialog.raise_()
        self.eval_dialog.activateWindow()
        return self.eval_dialog

    def _eval_requested(self, request: EvalRequest) -> None:
        dialog = self.eval_dialog
        job = self.start_eval(request)
        self._answer(dialog, job)

    def start_eval(self, request: EvalRequest) -> str | None:
        """Score the reference and each candidate on a labelled dataset; its progress and Cancel in the Jobs panel."""
        return self._launch(request.spec, request.targets(),
                            lambda s: f"Evaluate {', '.join(c.name for c in s.candidates)} on "
                                      f"{Path(s.dataset).name or s.dataset}")

    def open_sweep_dialog(self) -> SweepDialog | None:
        """Run ▸ Benchmark Sweep…: the dialog that picks the targets, the dimension and its values (None, with the
        refusal shown, without a model)."""
        from app.ui.run.sweep_dialog import SweepDialog

        def make() -> SweepDialog:
            dialog = SweepDialog(self.messages.parent)
            dialog.sweepRequested.connect(self._sweep_requested)
            return dialog
        self.sweep_dialog = self._speed_dialog(self.sweep_dialog, make, (600, 440), "Open a model to sweep it.")
        if self.sweep_dialog is not None:
            self.results.sweep_view.prepare()  # the plot widgets made while the dialog is open: Run only sets them up
        return self.sweep_dialog

    def open_tune_dialog(self) -> TuneDialog | None:
        """Run ▸ Tune Runtime Settings…: the dialog that picks the target, the settings to try and the sessions."""
        from app.ui.run.tune_dialog import TuneDialog

        def make() -> TuneDialog:
            dialog = TuneDialog(self.messages.parent)
            dialog.tuneRequested.connect(self._tune_requested)
            return dialog
        self.tune_dialog = self._speed_dialog(self.tune_dialog, make, (560, 520), "Open a model to tune it.")
        return self.tune_dialog

    def _speed_dialog(self, dialog: _Dialog | None, make: Callable[[], _Dialog], size: tuple[int, int],
                      no_model: str) -> _Dialog | None:
        """A speed dialog (made on first use) shown for the open model and the backends that run here."""
        self.jobs.warm()
        opened = self.model.opened()
        if opened is None:
            self._refuse("Not started", no_model)
            return None
        if self.availability is None:
            self.refresh_availability()
        if dialog is None:
            from app.ui.common.screen_fit import fit_window

            dialog = make()
            fit_window(dialog, size, near=self.messages.parent)
        dialog.set_model(opened, self.availability or {})
        dialog.show()
        dialog.raise_()
        dialog.activateWindow()
        return dialog

    def _tune_requested(self, request: TuneRequest) -> None:
        dialog, opened = self.tune_dialog, self.model.opened()
        shapes = _at_value(opened, opened.summary.inputs, 0, request.batch) if opened and request.batch else None
        job = self._launch(request.spec, [request.target], lambda s: f"Tune {s.target}"
                           + (f" at batch {request.batch}" if request.batch else ""), shapes=shapes)
        self._answer(dialog, job)

    def _tuned(self, run: RunningJob, data: TuneResult) -> None:
        self.results.set_model(run.model)
        self.results.set_tune(data)
        self.messages.say(f"Tune of {data.target} finished: " + (
            f"best {data.best}, {data.best_speedup:.2f}× its own settings." if data.best != data.default.target
            and data.best_speedup else "no setting beat its own settings."))
        self.messages.show_results()

    def use_tuned(self, base: str, tuned: str) -> None:
        """The Run panel's `base` (B:P) candidate runs as `tuned` (B:P@…) from now on (kept in the project)."""
        self.panel.set_tuned({**self.panel.tuned, base: tuned})
        self.messages.say(f"{base} now runs as {tuned} in comparisons and benchmarks (Run panel ▸ Clear to undo).")

    def _sweep_requested(self, request: SweepRequest) -> None:
        dialog = self.sweep_dialog
        job = self.start_sweep(request)
        # Closed just after the click's turn, before the window's paint (`_show_sweep`): the window, active again, is
        # painted once.
        self._answer(dialog, job, later=True)

    def start_sweep(self, request: SweepRequest) -> str | None:
        """Time each target at each value of one dimension (one job: progress and Cancel in the Jobs panel). The swept
        inputs start at the first value; their other dims are the Shapes panel's (or the model's)."""
        opened = self.model.opened()
        if opened is None:
            self._refuse("Not started", "Open a model first.")
            return None
        shapes = _at_value(opened, request.swept(opened.summary.inputs), request.axis, request.values[0])
        what = f"{request.input} axis {request.axis}" if request.input else "batch"
        made: list[SweepSpec] = []

        def title(s: SweepSpec) -> str:
            made.append(s)
            return f"Sweep {', '.join(t.name for t in s.sweep_targets)} over {what} {','.join(map(str, s.values))}"

        job = self._launch(request.spec, request.targets, title, shapes=shapes, show_jobs=False)
        if job is not None and made:
            self._show_sweep(job, made[-1])
        return job

    def _show_sweep(self, job: str, spec: SweepSpec) -> None:
        """A sweep just started: the Sweep tab shows it at once (what is measured, the empty plots, then each point
        as the job sends it: `_partial`), and the Results dock comes forward over the next turns, so no turn of the
        window's is long."""
        self.sweep_run = self.running[job]
        if self.results.model_path != spec.model:
            self.results.set_model(spec.model)
        view = self.results.sweep_view
        view.begin(SweepResult(input=spec.input, axis=spec.axis, values=tuple(spec.values), is_batch=spec.axis == 0,
                               targets=tuple(t.name for t in spec.targets()), mode=spec.mode),
                   self.results.model_name, wait=True)
        self.results.tabs.setCurrentWidget(view)
        window = self.messages.parent

        def show() -> None:
            try:
                self.messages.raise_dock("results", at_least=0.5, share=0.6)  # two plots side by side: room
                self.messages.show_results()  # after: its own resize is then not needed
            finally:
                QTimer.singleShot(1, window, paint)

        def paint() -> None:
            window.setUpdatesEnabled(True)
            window.repaint()  # now: what changed while updates were off was not marked for a paint
            QTimer.singleShot(1, view.resume)  # the empty plots set up in the turns after the dock's paint

        # Three turns of ≈ 10 ms rather than two of ≈ 25: the click's (the job started, the window laid out with the
        # Jobs dock grown to the room the Results will take), the Results dock brought forward over the Jobs at
        # that height, then the window painted, once for both.
        QTimer.singleShot(1, window, show)  # a timer, not a zero-timer: other events are handled between the turns
        window.setUpdatesEnabled(False)
        self.messages.raise_dock("jobs", at_least=0.5, share=0.6)

    def _partial(self, job: str, data: dict) -> None:
        """A job's result so far: a sweep's points measured so far go on the Sweep tab as they come."""
        run = self.running.get(job)
        if run is None or run is not self.sweep_run or run.model != self.results.model_path:
            return
        try:
            doc = SweepResult.from_json(data)
        except ResultFormatError:
            return  # the final result says what went wrong, if anything did
        self.results.sweep_view.show_partial(doc)

    def start_bench(self, request: BenchRequest) -> str | None:
        """The first target's job id (the others wait their turn); None, with the refusal shown, if none starts."""
        base = self._model_inputs(request.targets)
        if base is None:
            return None
        try:
            specs = request.specs(base)  # a trivial plan and FP32 are one target
        except TrtlabError as exc:
            self._refuse("Not started", exc.message, exc.fix)
            return None
        # Earlier results stay: each target's benchmark replaces its own row only.
        self.bench_queue = [(spec, specs[0].target.name) for spec in specs]
        return self._next_bench()

    def _next_bench(self) -> str | None:
        if not self.bench_queue:
            return None
        spec, reference = self.bench_queue.pop(0)
        return self._start(spec, f"Benchmark {spec.target}", reference)

    def cancel_all(self) -> None:
        self.bench_queue = []
        for job in list(self.running):
            self.jobs.cancel(job)

    def _finished(self, job: str, result: JobResult) -> None:
        run = self.running.pop(job, None)
        if run is None:
            return
        status = result.status
        shown = self.model.opened()
        opened = str(shown.path) if shown is not None else ""
        if status == "done" and run.kind != "variant" and run.model != opened:
            self.bench_queue = []
            self.messages.say(f"A {run.kind} job for {Path(run.model).name} finished after that model was closed; "
                              "its results are in the Jobs panel's log only.")
            return
        if status == "done":
            data = result.data or {}
            self.resultReady.emit(run.kind, run.spec_json, data, run.title)  # the project keeps the JSON
            try:
                typed = read_job_result(run.kind, data)  # read once: the views take typed results
            except ResultFormatError as exc:
                self.messages.show_message("Result not readable", f"The {run.kind} job's result could not be read: "
                                           f"{exc}", "This is a fault of trtlab's: the Jobs panel has the job's log.")
                return
            self._done[run.kind](run, typed)
        elif status == "cancelled":
            self.bench_queue = []
            self._sweep_ended(run, "cancelled")
            self.messages.say("Job cancelled.")
        else:
            self.bench_queue = []
            self._sweep_ended(run, "failed")
            reason = result.exit_reason
            self.messages.show_message("Job failed", result.error or "The job failed.",
                                       f"Exit: {reason}. The Jobs panel has its log." if reason else
                                       "The Jobs panel has its log.")
            self.messages.show_jobs()

    def _sweep_ended(self, run: RunningJob, how: str) -> None:
        """The sweep on show ended without a result: the points it measured stay on the Sweep tab, with a note."""
        if run is self.sweep_run:
            self.sweep_run = None
            self.results.sweep_view.stop(how)

    # ----------------------------------------------------------------- each kind's result
    def _diagnosed(self, run: RunningJob, data: DiagnoseResult) -> None:
        self.diagnosed.emit(data)
        self.messages.say(f"Diagnosis of {data.candidate} finished.")

    def _built(self, run: RunningJob, data: BuildResult) -> None:
        self.built.emit(data)
        self.messages.say(f"TensorRT engine ready ({len(data.layers)} layers).")

    def _fallback_found(self, run: RunningJob, data: FallbackResult) -> None:
        self.fallbackFound.emit(data)
        self.messages.say(f"Fallback search finished: {len(data.keep_high_precision)} "
                          f"node(s) to keep in FP32{'' if data.met else ' (target not met)'}.")

    def _variant_saved(self, run: RunningJob, data: VariantResult) -> None:
        kit = self.kits.pop(str(run.spec_json.get("out", "")), None)
        if kit is not None:
            self._finish_kit(kit[0], data, kit[1])
            return
        self.messages.say(f"Variant saved to {data.out}.")

    def _profiled(self, run: RunningJob, data: ProfileResult) -> None:
        self.profiled.emit(data)
        self.messages.say(f"Profile of {data.backend} finished: {data.total_ms or 0:.3f} ms per run.")

    def _compared(self, run: RunningJob, data: CompareResult) -> None:
        self.results.set_model(run.model)
        dropped = self.results.set_compare(data, run.plan_precisions)
        self.messages.say("Comparison finished." + (
            f" Earlier results against another reference were replaced ({', '.join(dropped)})." if dropped else ""))
        self.messages.show_results()

    def _evaluated(self, run: RunningJob, data: EvaluationResult) -> None:
        self.results.set_model(run.model)
        self.results.set_evaluation(data)
        ok = sum(c.passed for c in data.candidates)
        self.messages.say(f"Evaluation on {Path(data.dataset.path).name or 'the dataset'} finished: {ok} of "
                          f"{len(data.candidates)} candidate(s) within tolerance.")
        self.messages.show_results()
        self.messages.raise_dock("results", at_least=0.5, share=0.6)  # a table and charts side by side: room

    def _swept(self, run: RunningJob, data: SweepResult) -> None:
        failed = sum(p.status != "ok" for p in data.points)
        said = (f"{len(data.targets)} target(s) at {len(data.values)} value(s)"
                + (f", {failed} point(s) without a time." if failed else "."))
        if self.sweep_run is not None and run is not self.sweep_run:
            self.messages.say(f"An earlier sweep finished ({said[:-1]}); the Sweep tab shows the latest.")
            return
        self.sweep_run = None
        if self.results.model_path != run.model:
            self.results.set_model(run.model)
        # The Results dock came forward when the sweep started: the result replaces its points where they are.
        self.results.set_sweep(data)
        self.messages.say(f"Sweep finished: {said}")

    def _benched(self, run: RunningJob, data: BenchResult) -> None:
        self.results.set_model(run.model)
        self.results.set_bench(data.backend, data, run.bench_reference, run.plan_precisions)
        if data.layer_times:
            self.layerTimes.emit(data.backend, data.layer_times)
        self.messages.say(f"Benchmark of {data.backend} finished.")
        self.messages.show_results()
        self._next_bench()


def metadata_shapes(opened: OpenedModel, given: Mapping[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """Each dynamic image input the Shapes panel leaves open, at the size the model's metadata gives (Ultralytics'
    ``imgsz``, PaddleOCR's line height: app.core.evaluate.default_input_shape), as the command line fills it."""
    from app.core.evaluate import default_input_shape
    from app.core.model import dynamic_dims

    out: dict[str, tuple[int, ...]] = {}
    for info in opened.summary.inputs:
        if info.name not in given and info.shape is not None and dynamic_dims(info):
            shape = default_input_shape(opened.doc.model, info)
            if shape is not None:
                out[info.name] = shape
    return out


def _can_build(a: Availability) -> bool:
    return a.available if a.can_build is None else a.can_build


def engine_backend(known: Mapping[str, Availability] | None = None) -> tuple[str, Availability]:
    """The engine backend a build uses: TensorRT where it can build, else TensorRT for RTX (which builds without
    a GPU); with neither, `trt` and its availability, for the message. `known` is the Run panel's table: an
    answer already there is used rather than probing the GPU again on the GUI thread."""
    from app.backends import get_backend

    first: tuple[str, Availability] | None = None
    for name in ("trt", "trt-rtx"):
        a = (known or {}).get(name)
        if a is None or "checking" in a.reason:
            a = get_backend(name).availability()
        first = first or (name, a)
        if _can_build(a):
            return name, a
    assert first is not None  # the loop ran at least once
    return first
