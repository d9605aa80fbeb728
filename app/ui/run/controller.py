"""Turns the Run panel's requests into jobs and the jobs' results into the Results view."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from PySide6.QtCore import QObject, Signal

from app.backends import Availability
from app.backends.tasks.specs import (
    BenchSpec,
    BuildSpec,
    CompareSpec,
    DiagnoseSpec,
    FallbackSpec,
    JobInputs,
    ProfileSpec,
    VariantSpec,
)
from app.core.errors import TrtlabError
from app.core.targets import Target
from app.jobs import JobResult
from app.ui.run.host import RunHost
from app.ui.run.requests import BenchRequest, CompareRequest, DiagnoseRequest

if TYPE_CHECKING:
    from app.core.readiness import Report

log = logging.getLogger(__name__)

_Spec = TypeVar("_Spec", bound=JobInputs)


@dataclass(frozen=True)
class RunningJob:
    """A job this controller started, and what its result needs to be shown."""

    kind: str                  # "compare" | "bench" | "diagnose" | "fallback" | "variant" | "build" | "profile"
    model: str                 # the model it ran on: a result for another model is not shown
    title: str
    spec_json: dict            # recorded with the result in the project
    plan_precisions: frozenset[str] = frozenset()  # precisions its `B:plan` targets ran (verdicts)
    bench_reference: str | None = None             # a benchmark's speed-up is relative to this target


class RunController(QObject):
    """Comparisons run as one job; benchmarks one target at a time, so they never compete for the machine.

    Every result leaves as `resultReady` (the project records it); the results other features show leave as
    signals too (`diagnosed`, `built`, `profiled`, `fallbackFound`, `layerTimes`); the window connects them.
    `check_readiness(trt_version)` is the readiness check a build runs first."""

    diagnosed = Signal(dict)
    built = Signal(dict)
    profiled = Signal(dict)
    fallbackFound = Signal(dict)
    layerTimes = Signal(str, dict)        # benchmark target, its per-layer times
    resultReady = Signal(str, dict, dict, str)  # kind, spec JSON, result JSON, title: every finished job's result
    _trt_checked = Signal(str, object)   # backend, availability: from a worker thread, delivered on the GUI thread

    def __init__(self, window: RunHost, check_readiness: Callable[[str | None], Report | None],
                 parent: QObject | None = None) -> None:
        """`window`: the panels it reads and fills; `parent`: the Qt object it lives and dies with (the window)."""
        super().__init__(parent)
        self.w = window
        self.check_readiness = check_readiness
        self.running: dict[str, RunningJob] = {}
        self.bench_queue: list[tuple[BenchSpec, str]] = []  # each target's spec, and the reference of its speed-up
        self.last_refusal = ""  # why the last action did not start ("" once one has)
        self.availability: dict[str, Availability] | None = None  # None until the backends were asked
        window.run_panel.compareRequested.connect(self.start_compare)
        window.run_panel.benchRequested.connect(self.start_bench)
        window.run_panel.diagnoseRequested.connect(self.start_diagnose)
        window.run_panel.refused.connect(lambda text: self._refuse("Not started", text))
        window.plan.changed.connect(lambda: window.run_panel.set_plan_trivial(window.plan.is_trivial()))
        window.jobs.finished.connect(self._finished)
        self._trt_checked.connect(self._on_trt_checked)
        self._done = {"diagnose": self._diagnosed, "build": self._built, "fallback": self._fallback_found,
                      "variant": self._variant_saved, "profile": self._profiled, "compare": self._compared,
                      "bench": self._benched}

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
        self.w.run_panel.set_availability(table)

    def _on_trt_checked(self, name: str, availability: Availability) -> None:
        table = dict(self.availability or {})
        table[name] = availability
        self.availability = table
        checked = {n for n, cb in self.w.run_panel.checks.items() if cb.isChecked()}
        self.w.run_panel.set_availability(table)
        for n, cb in self.w.run_panel.checks.items():  # keep what the user ticked meanwhile
            cb.setChecked(cb.isEnabled() and (n in checked or (n == name and availability.available)))

    REFUSAL_TITLES = ("Not started", "Input shapes needed", "Build not started")

    def _refuse(self, title: str, message: str, fix: str = "") -> None:
        """Why an action did not start: next to the Run panel's buttons and as the banner over the graph, so
        it is seen wherever the action came from (a button, a shortcut, a menu)."""
        self.last_refusal = f"{message} {fix}".strip()
        self.w.run_panel.show_message(self.last_refusal)
        self.w.banner.show_message(title, message, fix, level="warning")

    def _started(self) -> None:
        """A job started: an earlier refusal no longer applies."""
        self.last_refusal = ""
        self.w.run_panel.show_message("")
        if self.w.banner.isVisible() and self.w.banner.title in self.REFUSAL_TITLES:
            self.w.banner.hide()

    def _plan_precisions(self) -> frozenset[str]:
        return frozenset(r.precision for r in self.w.plan.rows) - {"fixed"}

    def _base_params(self, params: dict, shapes: dict | None = None) -> dict | None:
        opened = self.w.opened
        if opened is None:
            self._refuse("Not started", "Open a model first.")
            return None
        from app.core.measure import resolve_input_shapes

        try:
            shapes = resolve_input_shapes(opened.summary.inputs, {**(opened.input_shapes or {}), **(shapes or {})})
        except TrtlabError as exc:
            # Caught here, before any job starts: the message names the input and its dynamic dim.
            self._refuse("Input shapes needed", exc.message, exc.fix)
            self.w.summary_dock.show()
            self.w.summary_dock.raise_()
            return None
        full = {**params, "model": str(opened.path), "shapes": {k: list(v) for k, v in shapes.items()}}
        targets = [*full.get("candidates", []), full.get("candidate", ""), *full.get("targets", []),
                   full.get("target", ""), full.get("against") or ""]
        if any(Target.read(t).builds_engine for t in targets if t):
            # TensorRT builds dims sharing a dim_param at one size; ONNX Runtime does not care.
            from app.core.engine import ProfileError, check_engine_shapes

            try:
                check_engine_shapes(opened.doc.model.graph, shapes)
            except ProfileError as exc:
                self._refuse("Input shapes needed", exc.message, exc.fix)
                return None
        if any(str(t).endswith(":plan") for t in targets):
            if self.w.plan.is_trivial():
                # An all-FP32 plan is the model itself: say so in the results rather than "B:plan".
                full = _rename_targets(full, lambda t: t.replace(":plan", ":fp32"))
            else:
                full["plan"] = self.w.plan.plan  # the spec keeps its own copy
        return full

    def _spec(self, spec_type: type[_Spec], params: dict, title: str = "Not started") -> _Spec | None:
        """The job's typed spec from the panels' settings, checked once here; a setting it refuses is shown."""
        try:
            return spec_type.from_json(params)
        except TrtlabError as exc:
            self._refuse(title, exc.message, exc.fix)
            return None

    def _start(self, spec: JobInputs, title: str, bench_reference: str | None = None) -> str:
        job = self.w.jobs.start(spec.job_spec(title))
        self.running[job] = RunningJob(spec.kind, spec.model, title, spec.to_json(),
                                       self._plan_precisions() if spec.plan is not None else frozenset(),
                                       bench_reference)
        self._started()
        self.w.show_jobs()
        self.w.status_label.setText(f"Started: {title}")
        return job

    def start_diagnose(self, request: DiagnoseRequest) -> str | None:
        full = self._base_params(request.params())
        spec = self._spec(DiagnoseSpec, full) if full is not None else None
        if spec is None:
            return None
        return self._start(spec, f"Diagnose {spec.candidate} against {spec.reference}")

    def start_fallback(self) -> str | None:
        """Search for nodes to keep in FP32 so the first checked candidate meets the Run panel's cosine."""
        panel = self.w.run_panel
        settings = panel.job_settings()
        if settings is None:
            return None
        candidate = panel.diagnose_candidate()
        if candidate is None:
            self._refuse("Not started", "Tick a backend and a precision under Candidates to search a fallback for.")
            self.w.run_dock.show()
            self.w.run_dock.raise_()
            return None
        full = self._base_params({**settings.params(), "reference": panel.reference.currentText(),
                                  "candidate": candidate, "target": f"cos:{panel.min_cos.value():g}"})
        if full is None:
            return None
        if full["candidate"].endswith(":fp32"):
            self.w.banner.show_message("Nothing to fall back from",
                                       f"{full['candidate']} runs every node in FP32.",
                                       "Plan some nodes FP16/BF16/INT8 (or pick a precision in the Run panel) first.",
                                       level="warning")
            return None
        spec = self._spec(FallbackSpec, full)
        if spec is None:
            return None
        return self._start(spec, f"Fallback search for {spec.candidate} ({spec.target})")

    def start_profile(self) -> str | None:
        """Profile the first ticked candidate against the Run panel's reference (or the reference alone)."""
        panel = self.w.run_panel
        settings = panel.job_settings()
        if settings is None:
            return None
        reference, candidate = panel.reference.currentText(), panel.diagnose_candidate()
        full = self._base_params({**settings.params(), "target": candidate or reference,
                                  "against": reference if candidate and candidate != reference else None})
        spec = self._spec(ProfileSpec, full) if full is not None else None
        if spec is None:
            return None
        return self._start(spec, f"Profile {spec.target}" + (f" against {spec.against}" if spec.against else ""))

    def start_build(self, force: bool = False) -> str | None:
        """Build the plan's variant into a TensorRT engine (in a job: progress, Cancel, the engine cache).
        The profile is checked first (it names the input and axis), then the readiness check (errors ask
        before building), then whether TensorRT is here."""
        from app.backends import get_backend
        from app.core.engine import named_dims, parse_profile_args

        panel = self.w.run_panel
        opened = self.w.opened
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
            self.w.run_dock.show()
            self.w.run_dock.raise_()
            return None
        backend, a = engine_backend(self.availability)
        targets: list[str] = []
        if backend == "trt-rtx":
            try:
                targets = panel.rtx_target_list()
            except TrtlabError as exc:
                self._refuse("Build not started", exc.message, exc.fix)
                return None
        # A profile alone is enough: its opt shapes are the run's shapes.
        full = self._base_params({**settings.params(), "target": f"{backend}:plan"},
                                 {k: p.opt for k, p in profile.inputs.items()})
        if full is None:
            return None
        # Checked against the TensorRT that will build (RTX with its targets), whatever the Readiness dock shows.
        report = self.check_readiness("rtx" if backend == "trt-rtx" else None)
        if report is not None and report.errors and not force and not self._confirm_build(report):
            self.w.readiness_dock.show()
            self.w.readiness_dock.raise_()
            self.w.status_label.setText(f"Build not started: the readiness check found {report.errors} error(s).")
            return None
        if not _can_build(a):
            rtx = get_backend("trt-rtx").availability()
            self.w.banner.show_message(
                "TensorRT is not available here", f"trt: {a.reason} trt-rtx: {rtx.build_reason or rtx.reason}",
                'Install TensorRT for RTX, which builds without a GPU: pip install "trtlab[tensorrt-rtx]"; or '
                "TensorRT: " + (a.install_hint or 'pip install "trtlab[tensorrt]"'), level="warning")
            return None
        full["options"] = {**full.get("options", {}), "profiles": [profile.to_json()]}
        if targets:
            full["options"]["targets"] = targets
        spec = self._spec(BuildSpec, full, "Build not started")
        if spec is None:
            return None
        return self._start(spec, f"Build TensorRT engine ({spec.target})")

    def _confirm_build(self, report: Report) -> bool:
        """Errors mean the build is expected to fail: ask before spending minutes on it."""
        from PySide6.QtWidgets import QMessageBox

        first = report.by_severity()["error"][0]
        answer = QMessageBox.warning(
            self.w.window(), "The build is expected to fail",
            f"The readiness check found {report.errors} error(s), e.g.:\n\n{first.message}\n\nFix: {first.fix}\n\n"
            "Build anyway?", QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes

    def save_variant(self, out: str) -> str | None:
        """Build the plan's variant (or take it from the cache) with the Run panel's settings and save it as `out`."""
        settings = self.w.run_panel.job_settings()
        if settings is None:
            return None
        full = self._base_params({**settings.params(), "target": "ort-cpu:plan", "out": out})
        spec = self._spec(VariantSpec, full) if full is not None else None
        if spec is None:
            return None
        return self._start(spec, f"Save variant as {out}")

    def start_compare(self, request: CompareRequest) -> str | None:
        full = self._base_params(request.params())
        if full is None:
            return None
        full["candidates"] = list(dict.fromkeys(full["candidates"]))  # a trivial plan and FP32 are one candidate
        spec = self._spec(CompareSpec, full)
        if spec is None:
            return None
        return self._start(spec, f"Compare {', '.join(c.name for c in spec.candidates)} with {spec.reference}")

    def start_bench(self, request: BenchRequest) -> str | None:
        """The first target's job id (the others wait their turn); None, with the refusal shown, if none starts."""
        full = self._base_params(request.params())
        if full is None:
            return None
        targets = list(dict.fromkeys(full.pop("targets")))  # a trivial plan and FP32 are one target
        specs = [self._spec(BenchSpec, {**full, "target": t}) for t in targets]  # each timed as its backend is
        if None in specs:
            return None
        # Earlier results stay: each target's benchmark replaces its own row only.
        self.bench_queue = [(spec, targets[0]) for spec in specs if spec is not None]
        return self._next_bench()

    def _next_bench(self) -> str | None:
        if not self.bench_queue:
            return None
        spec, reference = self.bench_queue.pop(0)
        return self._start(spec, f"Benchmark {spec.target}", reference)

    def cancel_all(self) -> None:
        self.bench_queue = []
        for job in list(self.running):
            self.w.jobs.cancel(job)

    def _finished(self, job: str, result: JobResult) -> None:
        run = self.running.pop(job, None)
        if run is None:
            return
        status = result.status
        opened = str(self.w.opened.path) if self.w.opened is not None else ""
        if status == "done" and run.kind != "variant" and run.model != opened:
            self.bench_queue = []
            self.w.status_label.setText(f"A {run.kind} job for {Path(run.model).name} finished after that model was "
                                        "closed; its results are in the Jobs panel's log only.")
            return
        if status == "done":
            data = result.data or {}
            self.resultReady.emit(run.kind, run.spec_json, data, run.title)
            self._done[run.kind](run, data)
        elif status == "cancelled":
            self.bench_queue = []
            self.w.status_label.setText("Job cancelled.")
        else:
            self.bench_queue = []
            reason = result.exit_reason
            self.w.banner.show_message("Job failed", result.error or "The job failed.",
                                       f"Exit: {reason}. The Jobs panel has its log." if reason else
                                       "The Jobs panel has its log.")
            self.w.show_jobs()

    # ----------------------------------------------------------------- each kind's result
    def _diagnosed(self, run: RunningJob, data: dict) -> None:
        self.diagnosed.emit(data)
        self.w.status_label.setText(f"Diagnosis of {data.get('candidate', '')} finished.")

    def _built(self, run: RunningJob, data: dict) -> None:
        self.built.emit(data)
        self.w.status_label.setText(f"TensorRT engine ready ({len(data.get('layers', []))} layers).")

    def _fallback_found(self, run: RunningJob, data: dict) -> None:
        self.fallbackFound.emit(data)
        self.w.status_label.setText(f"Fallback search finished: {len(data.get('keep_high_precision', []))} "
                                    f"node(s) to keep in FP32{'' if data.get('met') else ' (target not met)'}.")

    def _variant_saved(self, run: RunningJob, data: dict) -> None:
        self.w.status_label.setText(f"Variant saved to {data.get('out', '')}.")

    def _profiled(self, run: RunningJob, data: dict) -> None:
        self.profiled.emit(data)
        self.w.status_label.setText(f"Profile of {data.get('backend', '')} finished: "
                                    f"{data.get('total_ms') or 0:.3f} ms per run.")

    def _compared(self, run: RunningJob, data: dict) -> None:
        self.w.results_view.set_model(run.model)
        dropped = self.w.results_view.set_compare(data, run.plan_precisions)
        self.w.status_label.setText("Comparison finished." + (
            f" Earlier results against another reference were replaced ({', '.join(dropped)})." if dropped else ""))
        self.w.show_results()

    def _benched(self, run: RunningJob, data: dict) -> None:
        self.w.results_view.set_model(run.model)
        self.w.results_view.set_bench(data["backend"], data, run.bench_reference, run.plan_precisions)
        if data.get("layer_times"):
            self.layerTimes.emit(str(data["backend"]), data["layer_times"])
        self.w.status_label.setText(f"Benchmark of {data['backend']} finished.")
        self.w.show_results()
        self._next_bench()


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


def _rename_targets(params: dict, fn: Callable[[str], str]) -> dict:
    out = dict(params)
    for key in ("candidates", "targets"):
        if key in out:
            out[key] = [fn(t) for t in out[key]]
    for key in ("candidate", "target"):
        if key in out:
            out[key] = fn(out[key])
    return out
