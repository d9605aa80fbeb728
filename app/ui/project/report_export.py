"""File ▸ Export Report…: the window's results as one self-contained HTML report (app.reports), and the offer to
open it in the browser."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from PySide6.QtCore import QSettings, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QFileDialog, QLabel, QMessageBox, QWidget

from app.core.errors import TrtlabError
from app.core.fileio import atomic_write_text
from app.core.model import OpenedModel
from app.core.project import Project
from app.ui.precision.engine_results import EngineResults
from app.ui.precision.panel import PrecisionPanel
from app.ui.precision.work import PrecisionWork
from app.ui.project.controller import ProjectController
from app.ui.results.view import ResultsView

REPORT_FILTER = "HTML reports (*.html);;All files (*)"


class ReportHost(Protocol):
    """The window's parts a report is made from."""

    opened: OpenedModel | None
    settings: QSettings
    status_label: QLabel
    project: ProjectController
    precision: PrecisionWork
    engine_results: EngineResults
    precision_panel: PrecisionPanel
    results_view: ResultsView

    def window(self) -> QWidget: ...

    def show_error(self, error: TrtlabError) -> None: ...


def window_results(window: ReportHost) -> tuple[list[object], Project | None]:
    """The results to report and the project they belong to: the session's recorded results with the project
    (model, settings, environment) when the window keeps them, else what the panels show."""
    if window.opened is not None and window.project.session_results:
        project = window.project.gather_project()
        return list(project.results), project
    results: list[object] = []
    view = window.results_view
    compare = view.compare
    if compare is not None:
        results.append({"kind": "compare", "data": compare})
    results += [{"kind": "bench", "data": doc} for doc in view.bench.values()]
    for kind, doc in (("diagnose", window.precision.diagnosis), ("fallback", window.precision_panel.fallback),
                      ("build", window.engine_results.engine)):
        if doc:
            results.append({"kind": kind, "data": doc})
    return results, None


def report_html(window: ReportHost) -> str | None:
    """The report of the window's results; None when it has none."""
    from app.reports import build_report, current_environment

    results, project = window_results(window)
    if not results:
        return None
    env = dict(project.environment if project is not None else {}) or current_environment()
    return build_report(results, project, env)


def write_report(window: ReportHost, path: str | Path) -> Path | None:
    """Write the report to ``path`` (".html" added when it has no suffix); None when there is nothing to report."""
    html = report_html(window)
    if html is None:
        return None
    target = Path(path)
    if not target.suffix:
        target = target.with_suffix(".html")
    try:
        atomic_write_text(target, html)
    except OSError as exc:
        raise TrtlabError(f"Cannot write the report to '{target}': {exc.strerror or exc}.",
                          fix="Choose a folder you can write to.") from exc
    return target


def export_report_dialog(window: ReportHost) -> Path | None:
    """Ask where, write the report, then offer to open it in the browser."""
    status = window.status_label
    results, _ = window_results(window)
    if not results:
        status.setText("No results to report yet: compare, benchmark, diagnose or build first.")
        return None
    settings = window.settings
    opened = window.opened
    stem = opened.path.stem if opened is not None else "trtlab"
    folder = Path(str(settings.value("paths/report_dir", str(opened.path.parent) if opened else str(Path.home()))))
    path, _ = QFileDialog.getSaveFileName(window.window(), "Export report", str(folder / f"{stem}-report.html"),
                                          REPORT_FILTER)
    if not path:
        return None
    try:
        written = write_report(window, path)
    except TrtlabError as exc:
        window.show_error(exc)
        return None
    if written is None:
        return None
    settings.setValue("paths/report_dir", str(written.parent))
    status.setText(f"Report saved to {written}")
    answer = QMessageBox.question(window.window(), "Report saved",
                                  f"The report was saved to\n{written}\n\nOpen it in the browser?",
                                  QMessageBox.StandardButton.Open | QMessageBox.StandardButton.Close,
                                  QMessageBox.StandardButton.Open)
    if answer == QMessageBox.StandardButton.Open:
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(written)))
    return written
