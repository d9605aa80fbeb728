"""File ▸ Import TensorRT Results… and File ▸ Export Run Kit… on the real window: trtlab's own TensorRT for RTX build
of the shared magika model brought back as trtexec's files shows in the Engine dock (slowest layer first) and colours
the graph by the precision that ran; a folder with nothing to import says what to do; a kit written from the window
holds what `trtlab kit` writes, and its results folder imports as the kit's."""

from __future__ import annotations

import json
import shutil

import pytest
from PySide6.QtWidgets import QDialogButtonBox

from tests.support.trt_results import (
    RTX_GPU,
    RTX_RUNS,
    RTX_VERSION,
    import_and_wait,
    open_model,
    rtx_results_folder,
    save_outputs,
)

MAGIKA = "magika_standard_v3_3"
SHAPES = {"bytes": (1, 2048)}


def _times(window) -> list[float]:
    table = window.engine_panel.table
    col = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())].index("Time (ms)")
    return [float(table.item(r, col).text()) for r in range(table.rowCount())]


def test_imported_rtx_engine_shows_its_layers_and_colours_the_graph(qtbot, window, model_paths, tmp_path):
    open_model(qtbot, window, model_paths[MAGIKA], SHAPES)
    assert window.view.item.node_fill is None and window.colors.color_mode == "op"
    shown = import_and_wait(qtbot, window, rtx_results_folder(tmp_path / "rtx"))
    assert shown is not None, window.banner.text()
    # The Engine dock: every layer, slowest first, with the ONNX nodes fused into each.
    assert window.engine_panel.table.rowCount() == len(shown.layers) == 10
    times = _times(window)
    assert times == sorted(times, reverse=True) and times[0] == pytest.approx(1.0)
    nodes_col = window.engine_panel.table.columnCount() - 1
    assert all(window.engine_panel.table.item(r, nodes_col).text() for r in range(10))
    assert window.engine_dock.isVisible()
    # The graph coloured by the precision that ran, as a build's engine colours it.
    assert window.colors.color_mode == "engine"
    assert window.engine_results.engine is not None and window.engine_results.engine.ran == shown.ran
    fill = window.view.item.node_fill
    assert fill is not None and len(set(map(str, fill))) > 1  # the nodes that ran differ from the unclaimed ones
    # Where it ran, in the status line and the dock's headline.
    for text in (window.status_label.text(), window.engine_panel.summary.text()):
        assert RTX_GPU in text and RTX_VERSION in text and "10 engine layers" in text
        assert f"median latency {shown.latency_ms.median:.3f} ms over {RTX_RUNS} runs" in text
    assert shown.latency_ms.median == pytest.approx(5.5 + 0.01 * 49.5)
    # The project keeps it as `trtlab import` would.
    kept = [r for r in window.project.session_results if r.kind == "import"]
    assert len(kept) == 1 and kept[0].data["gpu"] == RTX_GPU


def test_a_folder_with_nothing_to_import_says_what_to_do(qtbot, window, model_paths, tmp_path):
    open_model(qtbot, window, model_paths[MAGIKA], SHAPES)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert import_and_wait(qtbot, window, empty) is None
    assert window.banner.isVisible() and window.banner.title == "Cannot import these results"
    assert window.banner.fix
    assert window.engine_results.engine is None and window.colors.color_mode == "op"


def test_import_needs_a_model_on_show(qtbot, window, tmp_path):
    assert not window.imports.import_folder(rtx_results_folder(tmp_path / "rtx"))
    assert "Open the ONNX model" in window.banner.fix


def test_export_run_kit_then_import_its_results(qtbot, window, model_paths, tmp_path):
    opened = open_model(qtbot, window, model_paths[MAGIKA], SHAPES)
    kit = tmp_path / "kit"
    dialog = window.run_controller.open_kit_dialog()
    assert dialog is not None and dialog.isVisible()
    dialog.folder.setText(str(kit))
    dialog.precision.setCurrentIndex(dialog.precision.findData("fp32"))
    done = []
    window.jobs.finished.connect(lambda _job, r: done.append(r))
    dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok).click()  # Write Kit
    assert not dialog.isVisible(), dialog.message.text()
    qtbot.waitUntil(lambda: window.run_controller.kit_message is not None or window.banner.isVisible(),
                    timeout=300_000)
    assert done and done[0].status == "done", (done[0].error, done[0].log_tail)
    assert window.run_controller.kit_message is not None, window.banner.text()
    assert str(kit) in window.run_controller.kit_message.text()
    assert "python run_kit.py" in window.run_controller.kit_message.text()
    manifest = json.loads((kit / "kit.json").read_text(encoding="utf-8"))
    assert manifest["precision"] == "fp32" and (kit / manifest["variant"]).is_file()
    for name in ("run_kit.py", "README.md", "inputs.json"):
        assert (kit / name).is_file(), name
    window.run_controller.kit_message.close()
    # Its results, as run_kit.py leaves them on the GPU machine, imported from the kit's folder; where Polygraphy is
    # here, with the engine's saved outputs (ONNX Runtime's, in the file format of its TensorRT runs).
    shutil.copytree(rtx_results_folder(tmp_path / "rtx"), kit / "results")
    judged = save_outputs(kit)
    shown = import_and_wait(qtbot, window, kit)
    assert shown is not None, window.banner.text()
    assert shown.kit and shown.model == str(opened.path) and window.colors.color_mode == "engine"
    assert window.engine_panel.table.rowCount() == 10
    if judged:  # the verdict in the Results, as a comparison's candidate
        assert shown.answers is not None and window.results_view.compare is not None
        names = [c.name for c in window.results_view.compare.candidates]
        assert shown.answers.candidates[0].name in names and shown.answers.candidates[0].passed


def test_a_kit_folder_that_is_not_empty_is_refused(qtbot, window, model_paths, tmp_path):
    open_model(qtbot, window, model_paths[MAGIKA], SHAPES)
    (tmp_path / "kept.txt").write_text("x", encoding="utf-8")
    assert window.run_controller.start_kit(str(tmp_path), "fp16") is None
    assert "not empty" in window.run_controller.last_refusal and not window.run_controller.running


def test_the_file_menu_offers_both_with_a_model_open(qtbot, window, model_paths):
    menus = window.menus
    assert menus.act_export_kit.shortcut().toString() == "Ctrl+Alt+K"
    assert menus.act_import_trt.shortcut().toString() == "Ctrl+Alt+I"
    assert not menus.act_export_kit.isEnabled() and not menus.act_import_trt.isEnabled()
    open_model(qtbot, window, model_paths[MAGIKA], SHAPES)
    assert menus.act_export_kit.isEnabled() and menus.act_import_trt.isEnabled()
    file_menu = window.menuBar().actions()[0].menu()
    assert {menus.act_export_kit, menus.act_import_trt} <= set(file_menu.actions())
