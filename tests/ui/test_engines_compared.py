"""Two imported TensorRT engines compared in the real window: trtlab's own TensorRT for RTX builder dumps of the
shared magika model (FP32 and its INT8 Q/DQ variant, mapped onto the model's nodes) imported one against the other,
and NVIDIA's two QAT MobileNet engines (tests/data/trex: real trtexec profiles). The Engine dock shows the
comparison node by node, the graph is coloured by each node's change of time and by the engine layer each node was
fused into, and a saved project keeps the imported files and shows the comparison again."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from app.core.engine import compare_imports
from app.core.project import load_project
from app.ui.graph.node_colors import DELTA_BANDS, FUSION_PALETTE, NOT_MEASURED, delta_band
from app.ui.results.engine_compare import COMPARE_COLUMNS
from tests.support.trt_results import RTX_DUMP, import_and_wait, open_model, rtx_results_folder

MAGIKA = "magika_standard_v3_3"
SHAPES = {"bytes": (1, 2048)}
INT8_DUMP = RTX_DUMP.with_name("rtx_layers_magika_int8.txt")
TREX = Path(__file__).resolve().parents[1] / "data" / "trex"


def compare_and_wait(qtbot, window, folder, timeout: int = 120_000):
    """Import `folder` against the import on show (File ▸ Compare With Another TensorRT Import…'s path) and wait."""
    shown: list[object] = []
    window.imports.finished.connect(shown.append)
    assert window.imports.import_folder(folder, against=True)
    assert window.imports.busy  # read and compared on a worker thread
    qtbot.waitUntil(lambda: bool(shown) and not window.imports.busy, timeout=timeout)
    return shown[0]


def _column(view, name: str) -> list[str]:
    c = COMPARE_COLUMNS.index(name)
    return [view.table.item(r, c).text() for r in range(view.table.rowCount())]


def _display_of(window) -> dict[str, int]:
    """Each ONNX node key's drawn box at the top level."""
    graph = window.graph_page.picture.graph
    keys = [r.key for r in window.plan.rows]
    return {keys[idx]: i for i, idx in enumerate(graph.onnx_index.tolist()) if 0 <= idx < len(keys)}


@pytest.fixture()
def magika_pair(qtbot, window, model_paths, tmp_path):
    open_model(qtbot, window, model_paths[MAGIKA], SHAPES)
    a = import_and_wait(qtbot, window, rtx_results_folder(tmp_path / "fp32"))
    assert a is not None, window.banner.text()
    assert window.engine_panel.compare_button.isVisible()  # an import on show offers the comparison
    b = compare_and_wait(qtbot, window, rtx_results_folder(tmp_path / "int8", INT8_DUMP))
    assert b is not None, window.banner.text()
    return a, b


def test_two_imports_compared_node_by_node_in_the_engine_dock(qtbot, window, magika_pair):
    a, b = magika_pair
    c = window.imports.comparison
    assert c == compare_imports(a, b) and c.total_ms_a == a.total_ms and c.total_ms_b == b.total_ms
    view = window.engine_panel.compare
    assert view.isVisible() and window.engine_panel.table.isHidden()
    assert view.table.rowCount() == len(c.nodes) > 40
    # each row's change is B − A of its two times, the biggest change first
    by_node = {n.node: n for n in c.nodes}
    rows = view.node_rows()
    assert sorted(rows) == sorted(by_node)
    deltas = [abs(by_node[n].delta_ms) for n in rows if by_node[n].delta_ms is not None]
    assert deltas == sorted(deltas, reverse=True) and deltas[0] > 0
    for n, ms_a, ms_b, change in zip(rows, _column(view, "A (ms)"), _column(view, "B (ms)"),
                                     _column(view, "Change (ms)"), strict=True):
        if change:
            assert float(change) == pytest.approx(float(ms_b) - float(ms_a), abs=2e-4)
            assert float(change) == pytest.approx(by_node[n].delta_ms, abs=1e-4)
    # precision changes and fusions gained or lost are in their columns
    conv = next(r for r, n in enumerate(rows) if n.endswith("MagikaV2/Conv_0/Conv2D"))
    assert (view.table.item(conv, COMPARE_COLUMNS.index("Ran in A")).text(),
            view.table.item(conv, COMPARE_COLUMNS.index("Ran in B")).text()) == ("FP32", "INT8")
    fusions = [t for t in _column(view, "Fusion") if t]
    assert len(fusions) == c.fusion_changes > 0 and any("fused with" in t for t in fusions)
    assert "A</b>" in view.headline.text() and f"{c.total_ms_a:.3f} ms" in view.headline.text()
    # sortable: by A's time, then back to the biggest changes
    view.table.sortItems(COMPARE_COLUMNS.index("A (ms)"), Qt.SortOrder.DescendingOrder)
    times = [float(t) for t in _column(view, "A (ms)") if t]
    assert times == sorted(times, reverse=True)
    # "Show layers" goes back to engine B's layers, and again to the comparison
    window.engine_panel.layers_button.click()
    assert view.isHidden() and not window.engine_panel.table.isHidden()
    assert window.engine_panel.table.rowCount() == len(b.layers)
    window.engine_panel.layers_button.click()
    assert not view.isHidden()
    # the project keeps the comparison as `trtlab import A --against B` makes it
    kept = [r for r in window.project.session_results if r.kind == "import_compare"]
    assert len(kept) == 1 and kept[0].command.startswith("trtlab import ") and " --against " in kept[0].command
    assert kept[0].data["kind"] == "import_compare" and kept[0].data["total_ms_b"] == b.total_ms


def test_double_click_selects_the_node_in_the_graph(qtbot, window, magika_pair):
    view = window.engine_panel.compare
    rows = view.node_rows()
    display = _display_of(window)
    r = next(k for k, n in enumerate(rows) if n in display and k > 0)
    item = view.table.item(r, 0)
    view.table.cellDoubleClicked.emit(r, 0)
    assert item.data(Qt.ItemDataRole.UserRole) == rows[r]
    assert window.view.selection.selected == frozenset({display[rows[r]]})


def test_the_graph_is_coloured_by_each_nodes_change_of_time(qtbot, window, magika_pair):
    c = window.imports.comparison
    assert window.colors.color_mode == "delta" and window.colors.color_actions["delta"].isChecked()
    fill = window.view.item.node_fill
    display = _display_of(window)
    both = [n for n in c.nodes if n.delta_ms is not None and n.node in display]
    slower = [n for n in both if n.delta_ms > 0]
    faster = [n for n in both if n.delta_ms < 0]
    assert slower and faster  # this pair has both
    for n in both:
        assert fill[display[n.node]].name() == DELTA_BANDS[delta_band(n.ms_a, n.delta_ms)][2].name()
    reds = {DELTA_BANDS[0][2].name(), DELTA_BANDS[1][2].name()}
    greens = {DELTA_BANDS[3][2].name(), DELTA_BANDS[4][2].name()}
    assert any(fill[display[n.node]].name() in reds for n in slower if n.delta_ms / n.ms_a >= 0.1)
    assert any(fill[display[n.node]].name() in greens for n in faster if n.delta_ms / n.ms_a <= -0.1)
    legend = [label for label, _n in window.view.legend.entries]
    assert any("slower" in t for t in legend) and any("faster" in t for t in legend)


def test_the_graph_is_coloured_by_the_engine_layer_each_node_was_fused_into(qtbot, window, magika_pair):
    _a, b = magika_pair
    window.colors.set_color_mode("fusion")
    assert window.colors.color_mode == "fusion"
    fill = window.view.item.node_fill
    display = _display_of(window)
    compute = [layer for layer in b.layers if layer.kind == "compute" and layer.onnx_nodes]
    first: dict[str, int] = {}
    for k, layer in enumerate(compute):
        for n in layer.onnx_nodes:
            first.setdefault(n, k)
    fused = [layer for layer in compute if len([n for n in layer.onnx_nodes if first[n] == compute.index(layer)
                                                and n in display]) > 1]
    assert fused, "the INT8 engine fuses nodes"
    for layer in fused:  # the nodes one layer fused take one colour
        mine = [n for n in layer.onnx_nodes if first[n] == compute.index(layer) and n in display]
        assert len({fill[display[n]].name() for n in mine}) == 1
        assert fill[display[mine[0]]].name() in {p.name() for p in FUSION_PALETTE}
    # neighbouring layers along the graph differ: the palette is walked in the order the graph reaches them
    keys = [r.key for r in window.plan.rows]
    seen = [first[k] for k in keys if k in first]
    order = list(dict.fromkeys(seen))
    for x, y in zip(order, order[1:], strict=False):
        nx = next(n for n in compute[x].onnx_nodes if first[n] == x)
        ny = next(n for n in compute[y].onnx_nodes if first[n] == y)
        if nx in display and ny in display:
            assert fill[display[nx]].name() != fill[display[ny]].name()
    # nodes no layer claims are grey
    claimed = {n for layer in b.layers for n in layer.onnx_nodes}
    grey = [k for k in display if k not in claimed]
    assert grey and all(fill[display[k]].name() == NOT_MEASURED.name() for k in grey)


def test_fusion_colours_need_an_engine(qtbot, window, model_paths):
    open_model(qtbot, window, model_paths[MAGIKA], SHAPES)
    window.colors.set_color_mode("fusion")
    assert window.colors.color_mode == "op" and "No engine yet" in window.status_label.text()
    window.colors.set_color_mode("delta")
    assert window.colors.color_mode == "op" and "No two engines compared" in window.status_label.text()
    act = window.menus.act_compare_trt  # File ▸ Compare With Another TensorRT Import…
    assert act.isEnabled() and act.shortcut().toString() == "Ctrl+Alt+J"
    act.trigger()  # nothing imported: says what to do, opens no dialog
    assert "Import one engine first" in window.banner.text()
    for mode, key in (("fusion", "Ctrl+Shift+7"), ("delta", "Ctrl+Shift+8")):
        assert window.colors.color_actions[mode].shortcut().toString() == key


def test_nvidias_two_mobilenet_engines_compared(qtbot, window, model_paths):
    open_model(qtbot, window, model_paths[MAGIKA], SHAPES)  # trtexec's bare files are read with the model on show
    a = import_and_wait(qtbot, window, TREX / "mobilenet")
    assert a is not None, window.banner.text()
    b = compare_and_wait(qtbot, window, TREX / "mobilenet_v2_residuals")
    assert b is not None, window.banner.text()
    c = window.imports.comparison
    assert c.total_ms_a == pytest.approx(0.47038876) and c.total_ms_b == pytest.approx(0.35592094)
    view = window.engine_panel.compare
    assert view.table.rowCount() == len(c.nodes)
    head = view.headline.text()
    assert "0.470 ms" in head and "0.356 ms" in head and "B is 0.114 ms" in head and "faster" in head
    assert "same graph" in head  # two exports of different graphs: the comparison says so
    assert "NVIDIA TITAN RTX" in head


def test_a_saved_project_keeps_the_imported_files_and_shows_the_comparison_again(qtbot, window, magika_pair,
                                                                                 tmp_path):
    a, b = magika_pair
    project = tmp_path / "work" / "magika.trtlab"
    project.parent.mkdir()
    assert window.project.save_project_to(project)
    kept = tmp_path / "work" / "magika.imports"
    assert sorted(p.name for p in kept.iterdir()) == ["fp32", "int8"]
    for name in ("fp32", "int8"):
        assert sorted(p.name for p in (kept / name).iterdir()) == sorted(p.name for p in (tmp_path / name).iterdir())
    saved = [r for r in load_project(project).results if r.kind in ("import", "import_compare")]
    assert {r.kind for r in saved} == {"import", "import_compare"}
    for r in saved:
        assert Path(r.spec["folder"]).parent == kept.resolve()
        assert str(kept.resolve()) in r.command
    compared = next(r for r in saved if r.kind == "import_compare")
    assert Path(compared.spec["against"]) == (kept / "int8").resolve()
    assert window.project.save_project_to(project)  # saved again: copied once
    assert sorted(p.name for p in kept.iterdir()) == ["fp32", "int8"]
    # the imported folders are gone: the project shows the comparison again from its own copy
    shutil.rmtree(tmp_path / "fp32")
    shutil.rmtree(tmp_path / "int8")
    window.imports.comparison = None
    window.engine_results.set_engine(None)
    assert window.engine_panel.compare.isHidden()
    assert window.project.open_project(project)
    qtbot.waitUntil(lambda: window.imports.comparison is not None, timeout=60_000)
    assert window.imports.comparison == compare_imports(a, b)
    assert not window.engine_panel.compare.isHidden() and window.colors.color_mode == "delta"
    assert Path(window.imports.folder) == (kept / "int8").resolve()
