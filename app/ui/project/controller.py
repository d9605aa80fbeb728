"""Projects: the whole workspace saved as one `.trtlab` file and opened back into the same state (model, shapes,
plan, Run settings, every result, dock layout); its autosave, crash recovery and the question on closing.

The one autosave (autosave.py) writes a model's work a moment after each plan edit or result; opening that model
again restores it, and after a crash the window offers to restore the work of the session that was lost.

A controller the window assembles: it reaches the window through `ProjectHost`."""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from pathlib import Path
from typing import Protocol, TypeVar

from PySide6.QtCore import QObject, QSettings, Signal
from PySide6.QtWidgets import QFileDialog, QLabel, QMessageBox, QWidget

from app.core.errors import TrtlabError
from app.core.model import OpenedModel
from app.core.project import (
    IMPORTS_SUFFIX,
    PROJECT_SUFFIX,
    Project,
    ProjectError,
    ProjectResult,
    cli_command,
    environment,
    keep_import_files,
    save_project,
)
from app.core.results import (
    BenchResult,
    BuildResult,
    CompareResult,
    DiagnoseResult,
    EvaluationResult,
    FallbackResult,
    ImportComparison,
    ImportResult,
    ProfileResult,
    Record,
    ResultFormatError,
    SweepResult,
    TuneResult,
)
from app.ui.precision.colors import GraphColors
from app.ui.precision.engine_results import EngineResults
from app.ui.precision.panel import PrecisionPanel
from app.ui.precision.plan_controller import PlanController
from app.ui.precision.work import PrecisionWork
from app.ui.project.autosave import ProjectAutosave
from app.ui.project.banner import ProjectBanner
from app.ui.project.reading import read_project
from app.ui.results.engine_panel import EnginePanel
from app.ui.results.view import ResultsView
from app.ui.run.imports import EngineImports
from app.ui.run.panel import RunPanel
from app.ui.run.settings import apply_settings, panel_inputs, panel_settings

log = logging.getLogger(__name__)

PROJECT_FILTER = "trtlab projects (*.trtlab);;All files (*)"

R = TypeVar("R", bound=Record)


class ProjectHost(Protocol):
    """The window's parts a project saves and restores."""

    opened: OpenedModel | None
    settings: QSettings
    plan: PlanController
    precision: PrecisionWork
    colors: GraphColors
    engine_results: EngineResults
    precision_panel: PrecisionPanel
    engine_panel: EnginePanel
    run_panel: RunPanel
    results_view: ResultsView
    imports: EngineImports
    status_label: QLabel

    def window(self) -> QWidget: ...

    def open_path(self, path: str | Path, shapes: dict | None = None) -> None: ...

    def add_recent(self, path: Path) -> None: ...

    def dock_state(self) -> str: ...

    def restore_dock_state(self, state: str) -> None: ...

    def show_results(self) -> None: ...

    def show_error(self, error: TrtlabError) -> None: ...


class ProjectController(QObject):
    """Save / open / autosave / recover the workspace (see the module's doc). `changed` fires when the project's
    file or its saved state changes (the window's title shows both)."""

    changed = Signal()

    def __init__(self, host: ProjectHost) -> None:
        super().__init__(host.window())
        self.w = host
        self.project_path: Path | None = None
        self.session_results: list[ProjectResult] = []
        self.project_dirty = False
        # Closing with unsaved results asks Save / Discard / Cancel; TRTLAB_NO_CLOSE_PROMPT=1 (tests, scripts) skips it.
        self.ask_before_close = os.environ.get("TRTLAB_NO_CLOSE_PROMPT") != "1"
        self._pending_project: Project | None = None
        self._relocated_sha = ""  # the SHA-256 a relocated model should have (checked once the loader hashed it)
        self._pending_project_path: Path | None = None
        self._reading_project = False
        self._recovered = False
        self._recovery: dict = {}
        self._kept: dict[tuple[str, str], str] = {}  # (imported folder, project file) -> its copy in PROJECT.imports/
        self.project_banner = ProjectBanner()  # the window places it under its error banner
        self.autosave = ProjectAutosave(host.settings, self._autosave_work, self)
        self.w.results_view.clear_button.clicked.connect(self._results_cleared)
        host.plan.changed.connect(self._on_plan_changed)

    def start(self) -> None:
        """Once the window is up: offer the work of a trtlab that did not close cleanly."""
        self._offer_recovery()

    @property
    def unsaved(self) -> bool:
        return self.project_dirty or self.w.plan.dirty

    def title_name(self) -> str | None:
        """What the title names: the project's file, else the model's; None with no model open."""
        if self.w.opened is None:
            return None
        return self.project_path.name if self.project_path else self.w.opened.path.name

    # ----------------------------------------------------------------- recording
    def record_result(self, kind: str, spec_json: dict, data: dict, title: str = "") -> None:
        """A job finished: its result joins the project (and the autosave, a moment later)."""
        try:
            self.session_results.append(ProjectResult.make(kind, spec_json, data, title))
        except ProjectError as exc:  # a kind no command reproduces: kept without its command line
            log.warning("result kept without a command line: %s", exc.message)
            self.session_results.append(ProjectResult(kind, dict(spec_json), dict(data), title))
        self._mark_changed()

    def _results_cleared(self) -> None:
        """Clear results forgets the comparisons, benchmarks and evaluations: the project forgets them too."""
        self.session_results = [r for r in self.session_results if r.kind not in ("compare", "bench", "eval")]
        self._mark_changed()

    def _mark_changed(self) -> None:
        self.project_dirty = True
        self.changed.emit()
        self.autosave.soon()

    def flush_autosave(self) -> None:
        """Write a pending autosave now: the model is about to close or give way to another (its work would be
        lost in the moment before the autosave's timer fired)."""
        if self.autosave.pending():
            self.autosave.write()

    def _on_plan_changed(self) -> None:
        """A plan edit is work: autosaved a moment later, with everything else (the one autosave)."""
        if self.w.opened is not None and self.w.plan.undo_stack.count():
            self.autosave.soon()

    # ----------------------------------------------------------------- gathering
    def gather_project(self) -> Project:
        """Everything the window holds of this model's work, as a Project. Its model's SHA-256 is the one the
        loader's thread made as the model opened: the model the results were made with, even if the file has
        changed since (opening the project then says so). Nothing is hashed on the GUI thread."""
        opened = self.w.opened
        assert opened is not None
        state = self.w.results_view.state
        settings = {**panel_settings(self.w.run_panel), "color_mode": self.w.colors.color_mode,
                    "bench_reference": state.bench_reference,
                    "plan_precisions": {t: sorted(p) for t, p in state.plan_precisions.items()}}
        engine = self.w.engine_results.engine
        gpu = (engine.gpu or None) if engine is not None else None  # None: not known
        return Project(model=str(opened.path.resolve()), model_sha256=opened.sha256,
                       shapes={k: list(v) for k, v in (opened.input_shapes or {}).items()},
                       profiles=self.w.run_panel.profile_args(), plan=self.w.plan.plan.to_json(),
                       inputs=panel_inputs(self.w.run_panel), calib=None, settings=settings,
                       results=list(self.session_results),
                       layout=self.w.dock_state(),
                       environment=environment(gpu))

    # ----------------------------------------------------------------- saving
    def save_project_action(self) -> bool:
        if self.project_path is not None:
            return self.save_project_to(self.project_path)
        return self.save_project_as_dialog()

    def save_project_as_dialog(self) -> bool:
        if self.w.opened is None:
            self.w.status_label.setText("Open a model first: a project saves the work on a model.")
            return False
        folder = self.w.settings.value("paths/project_dir", str(self.w.opened.path.parent))
        start = str(self.project_path or Path(str(folder)) / f"{self.w.opened.path.stem}{PROJECT_SUFFIX}")
        path, _ = QFileDialog.getSaveFileName(self.w.window(), "Save project", start, PROJECT_FILTER)
        return bool(path) and self.save_project_to(Path(path))

    def save_project_to(self, path: Path) -> bool:
        if self.w.opened is None:
            return False
        try:
            self._keep_imports(path)
            written = save_project(self.gather_project(), path)
        except ProjectError as exc:
            self.w.show_error(exc)
            return False
        self.project_path = written
        self.project_dirty = False
        self.w.plan.undo_stack.setClean()  # the plan is saved in the project
        self.w.settings.setValue("paths/project_dir", str(written.parent))
        self.w.add_recent(written)
        self.autosave.write()  # the autosave now matches the saved project
        self.w.status_label.setText(f"Project saved to {written} ({len(self.session_results)} result(s))")
        self.changed.emit()
        return True

    def _keep_imports(self, path: Path) -> None:
        """The imported folders' files copied into PROJECT.imports/ (once per folder and project: a copy already
        there is the project's own), and the imports' results made to point at the copies. JSON, logs and a kit's
        graph: quick enough for the save itself (serialized engines are left out)."""
        project = path if path.suffix.lower() == PROJECT_SUFFIX else path.with_name(path.name + PROJECT_SUFFIX)
        kept_root = project.with_name(project.name[:-len(PROJECT_SUFFIX)] + IMPORTS_SUFFIX).resolve()
        for i, r in enumerate(self.session_results):
            if r.kind not in ("import", "import_compare"):
                continue
            spec = dict(r.spec)
            for key in ("folder", "against"):
                folder = spec.get(key)
                if not folder or not Path(folder).is_dir() or Path(folder).resolve().is_relative_to(kept_root):
                    continue
                memo = (str(Path(folder).resolve()), str(project.resolve()))
                if memo not in self._kept or not Path(self._kept[memo]).is_dir():
                    self._kept[memo] = str(keep_import_files(folder, project))
                spec[key] = self._kept[memo]
            if spec != r.spec:
                self.session_results[i] = replace(r, spec=spec, command=cli_command(spec))
        imports = self.w.imports
        if imports.folder and Path(imports.folder).is_dir():
            memo = (str(Path(imports.folder).resolve()), str(project.resolve()))
            imports.folder = self._kept.get(memo, imports.folder)

    # ----------------------------------------------------------------- opening
    def open_project_dialog(self) -> None:
        start = self.w.settings.value("paths/project_dir", str(Path.home()))
        path, _ = QFileDialog.getOpenFileName(self.w.window(), "Open project", str(start), PROJECT_FILTER)
        if path:
            self.open_project(Path(path))

    def read_project(self, path: Path) -> tuple[Project, bool]:
        """The project at `path` and whether its model changed since it was saved, read off the GUI thread while
        the status bar says how long it has been reading. ProjectError as load_project raises it."""
        return read_project(path, self.w.status_label.setText)

    def open_project(self, path: str | Path, project_path: Path | None = None) -> bool:
        """Open a project: its model (with its shapes), then everything else once the model is shown.
        `project_path`: the file the work belongs to when `path` is its autosave."""
        p = Path(path)
        if self._reading_project:
            self.w.status_label.setText(f"Still reading a project; open {p.name} once it is open")
            return False
        self._reading_project = True
        try:
            project, changed = self.read_project(p)
        except ProjectError as exc:
            self.w.show_error(exc)
            self.w.status_label.setText(f"Could not open the project {p.name}")
            return False
        finally:
            self._reading_project = False
        self._pending_project_path = project_path if project_path is not None else p
        if not Path(project.model).is_file():
            self._pending_project = project
            self.project_banner.offer(
                "model", "The project's model is missing",
                f"{project.model} is not there any more. Locate it to open the project.",
                [("Locate model…", self._locate_model)])
            self.w.status_label.setText(f"The model of {p.name} is missing.")
            return False
        self._start_project(project)
        if changed:
            self.project_banner.offer(
                "model", "The model changed since the project was saved",
                f"{Path(project.model).name} is not the file the results were made with; they may not match it. "
                "Run the jobs again, or locate the model the project was saved with.",
                [("Locate model…", self._locate_model)])
        return True

    def open_unsaved(self, project: Project) -> None:
        """Open work that no project file holds yet (a batch's results for one model): saving asks where."""
        self._pending_project_path = None
        self._start_project(project)

    def _start_project(self, project: Project) -> None:
        self._pending_project = project
        shapes = {k: tuple(v) for k, v in project.shapes.items()}
        self.w.open_path(project.model, shapes or None)

    def _locate_model(self) -> None:
        project = self._pending_project or (self.gather_project() if self.w.opened is not None else None)
        if project is None:
            return
        start = str(Path(project.model).parent if Path(project.model).parent.is_dir() else Path.home())
        path, _ = QFileDialog.getOpenFileName(self.w.window(), f"Locate {Path(project.model).name}", start,
                                              "ONNX models (*.onnx *.pb);;All files (*)")
        if path:
            self.relocate_model(Path(path))

    def relocate_model(self, path: Path) -> None:
        """Open the pending project on another copy of its model."""
        project = self._pending_project or (self.gather_project() if self.w.opened is not None else None)
        if project is None:
            return
        self._relocated_sha = project.model_sha256  # compared with the hash the loader's thread makes of it
        project.model = str(path.resolve())
        self.project_banner.hide()
        self._start_project(project)

    def model_opened(self, same: bool) -> None:
        """Called once a model is shown: a pending project is applied; another model starts a new project
        (with that model's autosaved work, if there is some)."""
        opened = self.w.opened
        if opened is None:
            return
        pending = self._pending_project
        if pending is not None and _same_file(pending.model, opened.path):
            self._pending_project = None
            self._apply_project(pending, opened)
            expected, self._relocated_sha = self._relocated_sha, ""
            if expected and opened.sha256 and opened.sha256 != expected:  # a relocated model, hashed off this thread
                self.project_banner.offer("model", "This is not the model the project was saved with",
                                          f"{opened.path.name} differs from the file the results were made with.",
                                          [("Locate model…", self._locate_model)])
            self.project_path = self._pending_project_path
            if self._recovered:
                self._recovered, self.project_dirty = False, True
            if self.project_path is not None and self.project_path.suffix == PROJECT_SUFFIX \
                    and self.project_path.parent != self.autosave.folder:
                self.w.add_recent(self.project_path)
        elif not same:
            self._pending_project = None
            self.project_path, self.session_results, self.project_dirty = None, [], False
            if self.project_banner.kind == "model":
                self.project_banner.hide()
            self._restore_autosaved_project(opened)
        self.changed.emit()

    def _restore_autosaved_project(self, opened: OpenedModel) -> None:
        model_path = opened.path
        auto = self.autosave.path(model_path)
        if not auto.is_file():
            return
        try:
            project, changed = self.read_project(auto)
        except ProjectError as exc:
            log.warning("ignoring a damaged autosaved project %s: %s", auto, exc.message)
            return
        if not _same_file(project.model, model_path) or changed:
            return  # work on another version of the file: it would not match this one
        shapes = {k: tuple(v) for k, v in project.shapes.items()}
        if shapes and shapes != dict(opened.input_shapes or {}):
            self._pending_project, self._pending_project_path = project, None
            self.w.open_path(model_path, shapes)  # the rest once the model is shown at these shapes
            return
        self._apply_project(project, opened)
        self.project_path = None

    def _apply_project(self, project: Project, opened: OpenedModel) -> None:
        """Everything but the model and shapes (already open: `opened`): plan, settings, results, docks."""
        from app.core.precision import PlanError, PrecisionPlan

        if project.plan:
            try:
                plan = PrecisionPlan.from_json(project.plan)
                if plan != self.w.plan.plan:
                    self.w.plan.load(plan, "the project's plan")
            except PlanError as exc:
                self.w.show_error(exc)
        s = project.settings or {}
        apply_settings(self.w.run_panel, s, project.profiles)
        self.session_results = list(project.results)
        latest = {r.kind: r for r in project.results}
        work = self.w.precision
        work.set_diagnosis(read_result(latest.get("diagnose"), DiagnoseResult))
        self.w.precision_panel.show_fallback(read_result(latest.get("fallback"), FallbackResult))
        engine_results = self.w.engine_results
        engine_results.set_engine(read_result(latest.get("build"), BuildResult))
        engine_results.set_profile(read_result(latest.get("profile"), ProfileResult))
        sweep, tune = read_result(latest.get("sweep"), SweepResult), read_result(latest.get("tune"), TuneResult)
        entries: list[CompareResult | BenchResult | EvaluationResult] = []
        for r in project.results:
            doc = read_result(r, CompareResult) if r.kind == "compare" else \
                read_result(r, BenchResult) if r.kind == "bench" else \
                read_result(r, EvaluationResult) if r.kind == "eval" else None
            if doc is not None:
                entries.append(doc)
        self.w.results_view.set_model(str(opened.path))
        self.w.results_view.restore(entries, s.get("bench_reference"),
                                  {t: frozenset(p) for t, p in (s.get("plan_precisions") or {}).items()})
        if sweep is not None:  # the latest sweep and tune, in their tabs (the tab on show stays the restored one)
            self.w.results_view.sweep_view.set_sweep(sweep, Path(project.model).name)
        if tune is not None:
            self.w.results_view.tune_view.set_tune(tune)
        kinds = [r.kind for r in project.results]
        shown = [r for r in project.results if r.kind in ("import", "import_compare")]
        if shown and "build" not in kinds[kinds.index(shown[-1].kind, project.results.index(shown[-1])):]:
            last = shown[-1]  # the last import (or two compared), newer than any build: from the project's copy
            imported = read_result(last, ImportComparison) if last.kind == "import_compare" else \
                read_result(last, ImportResult)
            if imported is not None:
                self.w.imports.restore(imported, str(last.spec.get("against" if last.kind == "import_compare"
                                                              else "folder") or ""))
        engine = engine_results.engine
        timed = [d for d in entries if isinstance(d, BenchResult) and d.layer_times
                 and engine is not None and d.backend == engine.target]
        if timed:
            self.w.engine_panel.set_times(timed[-1].layer_times)
        if project.layout:
            self.w.restore_dock_state(project.layout)
        if entries:
            self.w.show_results()
        if s.get("color_mode") in self.w.colors.color_actions:
            self.w.colors.set_color_mode(s["color_mode"])
        self.w.plan.undo_stack.setClean()
        self.project_dirty = False
        n = len(project.results)
        self.w.status_label.setText(f"Restored {n} result{'s' if n != 1 else ''} of {Path(project.model).name}"
                                  f" (saved {project.saved_at}).")


    # ----------------------------------------------------------------- autosave and recovery
    def _autosave_work(self) -> tuple[Project, Path, Path | None] | None:
        """What the autosave writes: this model's work, when there is some (a result or a plan edit)."""
        if self.w.opened is None or (not self.session_results and not self.w.plan.undo_stack.count()):
            return None
        return self.gather_project(), self.w.opened.path, self.project_path

    def _offer_recovery(self) -> None:
        """A session marker whose process is gone: that trtlab was killed or crashed; offer its autosave."""
        info = self.autosave.recovery()
        if info is None:
            return
        self._recovery = info
        self.project_banner.offer(
            "recovery", "trtlab did not close cleanly",
            f"Your work on {Path(str(info.get('model') or info['autosave'])).name} was autosaved. Restore it?",
            [("Restore", self.restore_recovered), ("Discard", self.discard_recovered)])

    def restore_recovered(self) -> None:
        info = self._recovery
        self.project_banner.hide()
        if info:
            Path(info["marker"]).unlink(missing_ok=True)
            self._recovered = True  # the work is back but in no saved project: the title says unsaved
            self.open_project(Path(info["autosave"]), Path(info["project"]) if info.get("project") else None)

    def discard_recovered(self) -> None:
        info = self._recovery
        self.project_banner.hide()
        if info.get("marker"):
            Path(info["marker"]).unlink(missing_ok=True)
        if info.get("autosave"):
            Path(info["autosave"]).unlink(missing_ok=True)
        self.w.status_label.setText("Discarded the autosaved work.")

    def confirm_close(self) -> bool:
        """Before the window closes: unsaved results ask Save / Discard / Cancel. False: stay open."""
        unsaved = self.w.opened is not None and self.project_dirty and bool(self.session_results)
        discard = False
        if unsaved and self.ask_before_close:
            buttons = QMessageBox.StandardButton
            answer = QMessageBox.question(
                self.w.window(), "Save the project?",
                f"This session has {len(self.session_results)} result(s) not saved in a project. Save them?",
                buttons.Save | buttons.Discard | buttons.Cancel, buttons.Save)
            if answer == buttons.Cancel or (answer == buttons.Save and not self.save_project_action()):
                return False
            discard = answer == buttons.Discard
        if discard and self.w.opened is not None:
            self.autosave.cancel()
            self.autosave.path(self.w.opened.path).unlink(missing_ok=True)
        elif self.autosave.pending():
            self.autosave.write()
        self.autosave.closed_cleanly()
        return True


def read_result(result: ProjectResult | None, kind: type[R]) -> R | None:
    """A saved result, typed (the project keeps each job's JSON as it came); None for none, or for one that does
    not read as its kind (a file edited by hand): the rest of the project still opens."""
    if result is None:
        return None
    try:
        return kind.from_json(result.data)
    except ResultFormatError as exc:
        log.warning("a saved %s result was left out: %s", result.kind, exc)
        return None


def _same_file(a: str | Path, b: str | Path) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False
