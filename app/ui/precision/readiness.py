"""Readiness in the window: the model and its plan checked for what would break a TensorRT build, in a
fraction of a second, again a moment after each plan or profile edit; the findings in the Readiness dock and as
badges on the graph. A controller the window assembles."""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, QTimer

from app.core import errors
from app.core.readiness import Report, ScanCache
from app.ui.model.readiness_panel import SEVERITY_COLORS
from app.ui.precision.host import ReadinessHost

log = logging.getLogger(__name__)


class ReadinessCheck(QObject):
    """Runs the readiness check and shows its report (`report`: the latest, None before a model is open)."""

    def __init__(self, host: ReadinessHost) -> None:
        super().__init__(host.window())
        self.w = host
        self.report: Report | None = None
        self._cache: ScanCache | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(250)  # plan edits come in bursts: check once they settle
        self._timer.timeout.connect(self.run)
        host.plan.changed.connect(self.soon)
        host.run_panel.profileChanged.connect(self.soon)
        host.readiness_panel.versionChanged.connect(lambda _v: self.run())

    def soon(self) -> None:
        if self.w.opened is not None:
            self._timer.start()

    def model_opened(self, same: bool) -> Report | None:
        if not same:
            self._cache = None
        return self.run()

    def model_closed(self) -> None:
        self.report = None
        self.w.readiness_panel.set_report(None)
        self.w.readiness_dock.setWindowTitle("Readiness")

    def graph_changed(self) -> None:
        self._apply_badges()

    def run(self, trt_version: str | None = None) -> Report | None:
        """Check the model (and the plan) for what would break a TensorRT build; badges on the graph.
        `trt_version` overrides the Readiness panel's choice (a build checks against the TensorRT it uses)."""
        from app.core.readiness import check_model

        self._timer.stop()
        if self.w.opened is None:
            return None
        if self._cache is None:
            self._cache = ScanCache()
        plan = None if self.w.plan.is_trivial() and not self.w.plan.plan.overrides else self.w.plan.plan
        profile = None
        if self.w.run_panel.profile_args():
            from app.core.engine import parse_profile_args

            try:
                profile = parse_profile_args(self.w.run_panel.profile_args(), self.w.opened.summary.inputs,
                                             self.w.opened.input_shapes or None, dim_names={})  # a finding below
            except errors.TrtlabError:
                profile = None  # the Run panel says what is wrong with it when a build is asked for
        version = trt_version or self.w.readiness_panel.version.currentData()
        targets = None
        if version == "rtx":
            try:
                targets = self.w.run_panel.rtx_target_list() or None
            except errors.TrtlabError:
                targets = None  # the Run panel names the bad target when a build is asked for
        try:
            report = check_model(self.w.opened.doc.model, plan=plan, shapes=self.w.opened.input_shapes or None,
                                 profile=profile, targets=targets,
                                 trt_version=version,
                                 model_path=str(self.w.opened.path), shape_result=self.w.opened.shapes,
                                 cache=self._cache, shape_budget_s=0.5)
        except Exception as exc:  # a check must never take the window down
            log.exception("readiness check failed")
            self.w.readiness_panel.summary.setText(f"The readiness check failed: {exc}")
            return None
        self.report = report
        self.w.run_panel.profile_box.set_problems(report.profile_fixes)  # bad ranges marked, with their fix
        self.w.readiness_panel.set_report(report)
        self._apply_badges()
        self.w.readiness_dock.setWindowTitle(f"Readiness ({report.errors} ✗, {report.warnings} ⚠)"
                                           if report.errors or report.warnings else "Readiness")
        return report

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
