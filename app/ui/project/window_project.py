"""The main window's projects: the whole workspace saved as one `.trtlab` file and opened back into the same
state (model, shapes, plan, Run settings, every result, dock layout). Mixed into `MainWindow`, whose panels,
docks, plan and settings it reads and fills; autosave and recovery are in project_autosave.py.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

from PySide6.QtCore import QByteArray, QEventLoop, QTimer
from PySide6.QtWidgets import QFileDialog

from app.core.project import (
    PROJECT_SUFFIX,
    Project,
    ProjectError,
    ProjectResult,
    environment,
    file_sha256,
    load_project,
    model_changed,
    save_project,
)
from app.ui.common.docks import LAYOUT_VERSION
from app.ui.project.autosave import AUTOSAVE_DELAY_MS, AutosaveMixin, ProjectBanner
from app.ui.run.settings import apply_settings, panel_inputs, panel_settings

log = logging.getLogger(__name__)

PROJECT_FILTER = "trtlab projects (*.trtlab);;All files (*)"


class ProjectMixin(AutosaveMixin):
    """Save / open / autosave / recover the workspace (see the module's doc)."""

    def _init_projects(self) -> None:
        self.project_path: Path | None = None
        self.session_results: list[ProjectResult] = []
        self.project_dirty = False
        # Closing with unsaved results asks Save / Discard / Cancel; TRTLAB_NO_CLOSE_PROMPT=1 (tests, scripts) skips it.
        self.ask_before_close = os.environ.get("TRTLAB_NO_CLOSE_PROMPT") != "1"
        self._pending_project: Project | None = None
        self._relocated_sha = ""  # the SHA-256 a relocated model should have (checked once the loader hashed it)
        self._pending_project_path: Path | None = None
        self._model_digest: tuple[str, int, int, str] | None = None
        self.project_banner = ProjectBanner()
        self.centralWidget().layout().insertWidget(1, self.project_banner)
        self._autosave_timer = QTimer(self)
        self._autosave_timer.setSingleShot(True)
        self._autosave_timer.setInterval(AUTOSAVE_DELAY_MS)
        self._autosave_timer.timeout.connect(self.autosave_project)
        self.results_view.clear_button.clicked.connect(self._results_cleared)
        self._offer_recovery()

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
        """Clear results forgets the comparisons and benchmarks: the project forgets them too."""
        self.session_results = [r for r in self.session_results if r.kind not in ("compare", "bench")]
        self._mark_changed()

    def _mark_changed(self) -> None:
        self.project_dirty = True
        self._update_title()
        self._autosave_timer.start()

    def _on_plan_changed(self) -> None:
        super()._on_plan_changed()  # type: ignore[misc]
        if self.opened is not None and self.plan.undo_stack.count():
            self._autosave_timer.start()
        self._update_title()

    def _update_title(self) -> None:
        if self.opened is None:
            return
        name = self.project_path.name if self.project_path else self.opened.path.name
        unsaved = self.project_dirty or self.plan.dirty
        self.setWindowTitle(f"{name}{' •' if unsaved else ''} — trtlab")

    # ----------------------------------------------------------------- gathering
    def _model_sha(self, path: Path) -> str:
        """The model's SHA-256, computed once per file version (a big model takes a while to hash)."""
        try:
            st = path.stat()
        except OSError:
            return ""
        key = (str(path), st.st_size, st.st_mtime_ns)
        opened = self.opened
        if (self._model_digest is None or self._model_digest[:3] != key) and opened is not None \
                and opened.sha256 and opened.path == path and opened.sha256_of == (st.st_size, st.st_mtime_ns):
            self._model_digest = (*key, opened.sha256)  # hashed by the loader's thread as the model opened
        if self._model_digest is None or self._model_digest[:3] != key:
            self._model_digest = (*key, file_sha256(path))
        return self._model_digest[3]

    def gather_project(self) -> Project:
        """Everything the window holds of this model's work, as a Project."""
        opened = self.opened
        assert opened is not None
        state = self.results_view.state
        settings = {**panel_settings(self.run_panel), "color_mode": self.color_mode,
                    "bench_reference": state.bench_reference,
                    "plan_precisions": {t: sorted(p) for t, p in state.plan_precisions.items()}}
        gpu = (self.engine or {}).get("gpu")
        return Project(model=str(opened.path.resolve()), model_sha256=self._model_sha(opened.path),
                       shapes={k: list(v) for k, v in (opened.input_shapes or {}).items()},
                       profiles=self.run_panel.profile_args(), plan=self.plan.plan.to_json(),
                       inputs=panel_inputs(self.run_panel), calib=None, settings=settings,
                       results=list(self.session_results),
                       layout=bytes(self.saveState(LAYOUT_VERSION).toBase64()).decode("ascii"),
                       environment=environment(gpu))

    # ----------------------------------------------------------------- saving
    def save_project_action(self) -> bool:
        if self.project_path is not None:
            return self.save_project_to(self.project_path)
        return self.save_project_as_dialog()

    def save_project_as_dialog(self) -> bool:
        if self.opened is None:
            self.status_label.setText("Open a model first: a project saves the work on a model.")
            return False
        folder = self.settings.value("paths/project_dir", str(self.opened.path.parent))
        start = str(self.project_path or Path(str(folder)) / f"{self.opened.path.stem}{PROJECT_SUFFIX}")
        path, _ = QFileDialog.getSaveFileName(self, "Save project", start, PROJECT_FILTER)
        return bool(path) and self.save_project_to(Path(path))

    def save_project_to(self, path: Path) -> bool:
        if self.opened is None:
            return False
        try:
            written = save_project(self.gather_project(), path)
        except ProjectError as exc:
            self.show_error(exc)
            return False
        self.project_path = written
        self.project_dirty = False
        self.plan.undo_stack.setClean()  # the plan is saved in the project
        self.settings.setValue("paths/project_dir", str(written.parent))
        self._add_recent(written)
        self.autosave_project()  # the autosave now matches the saved project
        self.status_label.setText(f"Project saved to {written} ({len(self.session_results)} result(s))")
        self._update_title()
        return True

    # ----------------------------------------------------------------- opening
    def open_project_dialog(self) -> None:
        start = self.settings.value("paths/project_dir", str(Path.home()))
        path, _ = QFileDialog.getOpenFileName(self, "Open project", str(start), PROJECT_FILTER)
        if path:
            self.open_project(Path(path))

    def read_project(self, path: Path) -> tuple[Project, bool]:
        """The project at `path` and whether its model changed since it was saved, read on a worker thread (the
        archive, its arrays, the model's SHA-256) while the window keeps painting and says how long it has been
        reading. ProjectError as load_project raises it."""
        out: dict[str, object] = {}

        def work() -> None:
            try:
                project = load_project(path)
                out["changed"] = Path(project.model).is_file() and model_changed(project)
                out["project"] = project
            except ProjectError as exc:
                out["error"] = exc
            except Exception as exc:  # noqa: BLE001 - a fault of ours: shown, never a dead window
                log.exception("reading %s failed", path)
                out["error"] = ProjectError(f"Reading the project {path.name} failed: {exc}",
                                            fix="This is a fault in trtlab; please report it with the file.")

        worker = threading.Thread(target=work, name="read-project", daemon=True)
        started = time.monotonic()
        worker.start()
        worker.join(0.05)  # most projects are read by now
        if worker.is_alive():
            loop = QEventLoop()
            timer = QTimer()
            timer.setInterval(50)

            def poll() -> None:
                if not worker.is_alive():
                    loop.quit()
                else:
                    self.status_label.setText(f"Reading the project {path.name}… "
                                              f"{time.monotonic() - started:.0f} s")
            timer.timeout.connect(poll)
            timer.start()
            loop.exec()
            timer.stop()
        if "error" in out:
            raise out["error"]  # type: ignore[misc]
        return out["project"], bool(out["changed"])  # type: ignore[return-value]

    def open_project(self, path: str | Path, project_path: Path | None = None) -> bool:
        """Open a project: its model (with its shapes), then everything else once the model is shown.
        `project_path`: the file the work belongs to when `path` is its autosave."""
        p = Path(path)
        if getattr(self, "_reading_project", False):
            self.status_label.setText(f"Still reading a project; open {p.name} once it is open")
            return False
        self._reading_project = True
        try:
            project, changed = self.read_project(p)
        except ProjectError as exc:
            self.show_error(exc)
            self.status_label.setText(f"Could not open the project {p.name}")
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
            self.status_label.setText(f"The model of {p.name} is missing.")
            return False
        self._start_project(project)
        if changed:
            self.project_banner.offer(
                "model", "The model changed since the project was saved",
                f"{Path(project.model).name} is not the file the results were made with; they may not match it. "
                "Run the jobs again, or locate the model the project was saved with.",
                [("Locate model…", self._locate_model)])
        return True

    def _start_project(self, project: Project) -> None:
        self._pending_project = project
        shapes = {k: tuple(v) for k, v in project.shapes.items()}
        self.open_path(project.model, shapes or None)

    def _locate_model(self) -> None:
        project = self._pending_project or (self.gather_project() if self.opened is not None else None)
        if project is None:
            return
        start = str(Path(project.model).parent if Path(project.model).parent.is_dir() else Path.home())
        path, _ = QFileDialog.getOpenFileName(self, f"Locate {Path(project.model).name}", start,
                                              "ONNX models (*.onnx *.pb);;All files (*)")
        if path:
            self.relocate_model(Path(path))

    def relocate_model(self, path: Path) -> None:
        """Open the pending project on another copy of its model."""
        project = self._pending_project or (self.gather_project() if self.opened is not None else None)
        if project is None:
            return
        self._relocated_sha = project.model_sha256  # compared with the hash the loader's thread makes of it
        project.model = str(path.resolve())
        self.project_banner.hide()
        self._start_project(project)

    def _after_model_loaded(self, same: bool) -> None:
        """Called once a model is shown: a pending project is applied; another model starts a new project
        (with that model's autosaved work, if there is some)."""
        opened = self.opened
        if opened is None:
            return
        pending = self._pending_project
        if pending is not None and _same_file(pending.model, opened.path):
            self._pending_project = None
            self._apply_project(pending)
            expected, self._relocated_sha = getattr(self, "_relocated_sha", ""), ""
            if expected and opened.sha256 and opened.sha256 != expected:  # a relocated model, hashed off this thread
                self.project_banner.offer("model", "This is not the model the project was saved with",
                                          f"{opened.path.name} differs from the file the results were made with.",
                                          [("Locate model…", self._locate_model)])
            self.project_path = self._pending_project_path
            if getattr(self, "_recovered", False):
                self._recovered, self.project_dirty = False, True
            if self.project_path is not None and self.project_path.suffix == PROJECT_SUFFIX \
                    and self.project_path.parent != self._autosave_dir():
                self._add_recent(self.project_path)
        elif not same:
            self._pending_project = None
            self.project_path, self.session_results, self.project_dirty = None, [], False
            if self.project_banner.kind == "model":
                self.project_banner.hide()
            self._restore_autosaved_project(opened.path)
        self._update_title()

    def _restore_autosaved_project(self, model_path: Path) -> None:
        auto = self.project_autosave_path(model_path)
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
        if shapes and shapes != dict(self.opened.input_shapes or {}):
            self._pending_project, self._pending_project_path = project, None
            self.open_path(model_path, shapes)  # the rest once the model is shown at these shapes
            return
        self._apply_project(project)
        self.project_path = None

    def _apply_project(self, project: Project) -> None:
        """Everything but the model and shapes (already open): plan, settings, results, docks."""
        from app.core.precision import PlanError, PrecisionPlan

        if project.plan:
            try:
                plan = PrecisionPlan.from_json(project.plan)
                if plan.to_json() != self.plan.plan.to_json():
                    self.plan.load(plan, "the project's plan")
            except PlanError as exc:
                self.show_error(exc)
        s = project.settings or {}
        apply_settings(self.run_panel, s, project.profiles)
        self.session_results = list(project.results)
        latest = {r.kind: r.data for r in project.results}
        self.set_diagnosis(latest.get("diagnose"))
        self.precision_panel.show_fallback(latest.get("fallback"))
        self.set_engine(latest.get("build"))
        self.set_profile(latest.get("profile"))
        entries = [(r.kind, r.data) for r in project.results if r.kind in ("compare", "bench")]
        self.results_view.set_model(str(self.opened.path))
        self.results_view.restore(entries, s.get("bench_reference"),
                                  {t: frozenset(p) for t, p in (s.get("plan_precisions") or {}).items()})
        engine = self.engine or {}
        timed = [d for k, d in entries if k == "bench" and d.get("layer_times")
                 and d.get("backend") == engine.get("target")]
        if timed:
            self.engine_panel.set_times(timed[-1]["layer_times"])
        if project.layout:
            self.restoreState(QByteArray.fromBase64(project.layout.encode("ascii")), LAYOUT_VERSION)
            self._regroup_hidden_docks()
        if entries:
            self.show_results()
        if s.get("color_mode") in self.color_actions:
            self.set_color_mode(s["color_mode"])
        self.plan.undo_stack.setClean()
        self.project_dirty = False
        n = len(project.results)
        self.status_label.setText(f"Restored {n} result{'s' if n != 1 else ''} of {Path(project.model).name}"
                                  f" (saved {project.saved_at}).")


def _same_file(a: str | Path, b: str | Path) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False
