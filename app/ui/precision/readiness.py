"""Readiness in the window: the model and its plan checked for what would break a TensorRT build, in a
fraction of a second, again a moment after each plan or profile edit; the findings in the Readiness dock and as
badges on the graph. A controller the window assembles."""

from __future__ import annotations

import logging
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from app.core import errors
from app.core.model import OpenedModel
from app.core.readiness import Report, ScanCache
from app.ui.model.readiness_panel import SEVERITY_COLORS
from app.ui.precision.host import ReadinessHost
from app.ui.precision.steps import FILL_LATER_NODES, start_worker

log = logging.getLogger(__name__)


BACKGROUND_NODES = FILL_LATER_NODES  # from this many nodes a check (~1 s at 50k) runs off the GUI thread


class ReadinessCheck(QObject):
    """Runs the readiness check and shows its report (`report`: the latest, None before a model is open).

    On a model of `BACKGROUND_NODES` nodes or more, the checks that follow opening it, a plan or profile edit
    or another TensorRT version run on a worker thread (the check is Python: the GUI thread keeps turning) and
    `checked` says when the report is shown; a build's check (`run`) stays on the caller's thread."""

    checked = Signal(object)  # the Report now shown (None: the check failed), after a check on the worker thread

    def __init__(self, host: ReadinessHost) -> None:
        super().__init__(host.window())
        self.w = host
        self.report: Report | None = None
        self._cache: ScanCache | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(250)  # plan edits come in bursts: check once they settle
        self._timer.timeout.connect(self.check)
        self._task: object | None = None  # the worker thread's check in flight
        self._again = False               # asked again while one was in flight: check once more when it ends
        self._reveal = False              # the report after opening another model: errors raise the dock
        self._model: OpenedModel | None = None  # the model the worker's check is of
        self._checking: OpenedModel | None = None  # the model shown since `model_opened`: edits check it again
        host.plan.changed.connect(self.soon)
        host.run_panel.profileChanged.connect(self.soon)
        host.readiness_panel.versionChanged.connect(lambda _v: self.check())

    def soon(self) -> None:
        """Check again a moment after an edit; not before the window has asked for the model's first check (a big
        model's plan and Run panel are filled over several turns before it does)."""
        if self.w.opened is not None and self.w.opened is self._checking:
            self._timer.start()

    def in_background(self) -> bool:
        """Whether this model's checks run on the worker thread."""
        opened = self.w.opened
        return opened is not None and len(opened.doc.model.graph.node) >= BACKGROUND_NODES

    def busy(self) -> bool:
        """Whether a check is running on the worker thread."""
        return self._task is not None

    def model_opened(self, same: bool) -> Report | None:
        """Check a model just shown. Another model's errors bring the Readiness dock forward (a model TensorRT
        cannot take: said at once, not when a build fails minutes later). On a big model the report comes later
        (`checked`); None is returned then."""
        if not same:
            self._cache = None
        self._checking = self.w.opened
        if self.in_background():
            self._reveal = self._reveal or not same
            self.check()
            return None
        report = self.run()
        if not same:
            self._reveal_errors(report)
        return report

    def model_closed(self) -> None:
        self._timer.stop()
        self._again = self._reveal = False
        self._model = self._checking = None  # a check in flight is of a model no longer shown: its report is dropped
        self.report = None
        self.w.readiness_panel.set_report(None)
        self.w.readiness_dock.setWindowTitle("Readiness")

    def graph_changed(self) -> None:
        self._apply_badges()

    def check(self) -> None:
        """Check again: on the worker thread for a big model (once more after one in flight), else now."""
        self._timer.stop()
        if not self.in_background():
            self.run()
            return
        if self._task is not None:
            self._again = True
            return
        args = self._arguments(None)
        if args is None:
            return
        from app.core.readiness import check_model

        self._model = self.w.opened
        self.w.readiness_panel.summary.setText("Checking the model for TensorRT…")
        self._task = start_worker(self, lambda: check_model(**args), self._checked, self._check_failed)

    def _checked(self, report: Report) -> None:
        self._task = None
        if self._model is not None and self._model is self.w.opened:
            self._show(report)
            if self._reveal:
                self._reveal = False
                self._reveal_errors(report)
            self._model = None
            self.checked.emit(report)
        if self._again:
            self._again = False
            self.check()

    def _check_failed(self, message: str) -> None:
        self._task = None
        log.error("readiness check failed: %s", message)
        if self._model is not None and self._model is self.w.opened:
            self.w.readiness_panel.summary.setText(f"The readiness check failed: {message}")
            self._model = None
            self.checked.emit(None)
        if self._again:
            self._again = False
            self.check()

    def run(self, trt_version: str | None = None) -> Report | None:
        """Check the model (and the plan) for what would break a TensorRT build; badges on the graph.
        `trt_version` overrides the Readiness panel's choice (a build checks against the TensorRT it uses)."""
        from app.core.readiness import check_model

        self._timer.stop()
        if self.w.opened is None:
            return None
        args = self._arguments(trt_version)
        if args is None:
            return None
        if self._task is not None:  # the worker's check uses the scan cache meanwhile: this one scans afresh
            args["cache"] = ScanCache()
        try:
            report = check_model(**args)
        except Exception as exc:  # a check must never take the window down
            log.exception("readiness check failed")
            self.w.readiness_panel.summary.setText(f"The readiness check failed: {exc}")
            return None
        self._show(report)
        return report

    def _arguments(self, trt_version: str | None) -> dict[str, Any] | None:
        """`check_model`'s arguments for the model on show, its plan and the Run panel's profile (read here, on
        the GUI thread)."""
        opened = self.w.opened
        if opened is None:
            return None
        if self._cache is None:
            self._cache = ScanCache()
        plan = None if self.w.plan.is_trivial() and not self.w.plan.plan.overrides else self.w.plan.plan
        profile = None
        if self.w.run_panel.profile_args():
            from app.core.engine import parse_profile_args

            try:
                profile = parse_profile_args(self.w.run_panel.profile_args(), opened.summary.inputs,
                                             opened.input_shapes or None, dim_names={})  # a finding below
            except errors.TrtlabError:
                profile = None  # the Run panel says what is wrong with it when a build is asked for
        version = trt_version or self.w.readiness_panel.version.currentData()
        targets = None
        if version == "rtx":
            try:
                targets = self.w.run_panel.rtx_target_list() or None
            except errors.TrtlabError:
                targets = None  # the Run panel names the bad target when a build is asked for
        return {"model": opened.doc.model, "plan": plan, "shapes": opened.input_shapes or None,
                "profile": profile, "targets": targets, "trt_version": version, "model_path": str(opened.path),
                "shape_result": opened.shapes, "cache": self._cache, "shape_budget_s": 0.5}

    def _show(self, report: Report) -> None:
        self.report = report
        self.w.run_panel.profile_box.set_problems(report.profile_fixes)  # bad ranges marked, with their fix
        self.w.readiness_panel.set_report(report)
        self._apply_badges()
        self.w.readiness_dock.setWindowTitle(f"Readiness ({report.errors} ✗, {report.warnings} ⚠)"
                                           if report.errors or report.warnings else "Readiness")

    def _reveal_errors(self, report: Report | None) -> None:
        if report is not None and report.errors:
            self.w.readiness_dock.show()
            self.w.readiness_dock.raise_()

    def _apply_badges(self) -> None:
        item, pic = self.w.view.item, self.w.graph_page.picture
        if item is None or pic is None:
            return
        if self.report is None or not len(self.w.graph_page.levels) == 1:
            item.set_badges({})
            return
        index = {r.key: r.index for r in self.w.plan.rows}
        worst: dict[int, str] = {}  # a group box shows the worst finding inside it
        for key, sev in self.report.node_severity().items():
            if sev == "info" or key not in index:
                continue
            node = pic.graph.node_of_onnx(index[key])
            if node is not None and (node not in worst or sev == "error"):
                worst[node] = sev
        item.set_badges({node: SEVERITY_COLORS[sev] for node, sev in worst.items()})
