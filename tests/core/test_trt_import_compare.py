"""Two imported engines side by side on the ONNX graph (`compare_imports`): trtlab's own TensorRT for RTX builder
dumps of the shared magika model, FP32 against its INT8 Q/DQ variant (real layer dumps, both mapped onto the FP32
model's nodes; the RTX builds ran without a GPU, so each layer's time is set here, a different one per engine), and
NVIDIA's two QAT MobileNet engines (tests/data/trex: real trtexec profiles, two exports of different graphs)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from app.core.engine import change_words, compare_imports, group_changes, group_words, import_engine, short_node
from app.core.engine.layer_dump import parse_layer_dump
from app.core.results import ImportComparison, ImportResult
from tests.support.results import untyped_keys

TREX = Path(__file__).resolve().parents[1] / "data" / "trex"
RTX_DUMPS = Path(__file__).resolve().parent / "engine" / "fixtures"
DENSE_1 = "jax2tf_get_logits_/pjit_get_logits_/MagikaV2/Dense_1/"
CONV = "jax2tf_get_logits_/pjit_get_logits_/MagikaV2/Conv_0/Conv2D"


def rtx_folder(where: Path, dump: str, scale: float) -> Path:
    """A folder of trtexec's files for one RTX builder dump: the dump as the inspector's JSON, a profile naming its
    layers (layer i takes (i + 1) × scale ms)."""
    doc = parse_layer_dump((RTX_DUMPS / dump).read_text(encoding="utf-8"))
    folder = where / Path(dump).stem
    folder.mkdir()
    (folder / "layers.json").write_text(json.dumps(doc), encoding="utf-8")
    profile = [{"count": 10}] + [{"name": layer["Name"], "timeMs": 10 * (i + 1) * scale, "averageMs": (i + 1) * scale,
                                  "medianMs": (i + 1) * scale, "percentage": 0.0}
                                 for i, layer in enumerate(doc["Layers"])]
    (folder / "profile.json").write_text(json.dumps(profile), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def magika_pair(tmp_path_factory, model_paths) -> tuple[ImportResult, ImportResult]:
    where = tmp_path_factory.mktemp("rtx")
    model = str(model_paths["magika_standard_v3_3"])
    fp32 = import_engine(rtx_folder(where, "rtx_layers_magika_fp32.txt", 0.1), model).result
    int8 = import_engine(rtx_folder(where, "rtx_layers_magika_int8.txt", 0.03), model).result
    return fp32, int8


@pytest.fixture(scope="module")
def magika(magika_pair) -> ImportComparison:
    return compare_imports(*magika_pair)


def test_each_nodes_delta_is_the_difference_of_its_times(magika_pair, magika):
    a, b = magika_pair
    both = [c for c in magika.nodes if not c.only_in]
    assert len(both) > 40 and {c.node for c in both} == set(a.node_ms) & set(b.node_ms)
    for c in both:
        assert c.ms_a == a.node_ms[c.node] and c.ms_b == b.node_ms[c.node]
        assert c.delta_ms == pytest.approx(b.node_ms[c.node] - a.node_ms[c.node], abs=1e-12)
    # the largest change first, then the nodes one engine runs alone
    sizes = [abs(c.delta_ms) for c in both]
    assert sizes == sorted(sizes, reverse=True) and magika.nodes[:len(both)] == tuple(both)
    assert magika.total_ms_a == a.total_ms and magika.total_ms_b == b.total_ms
    assert magika.total_delta_ms == pytest.approx(b.total_ms - a.total_ms)
    assert math.fsum(c.ms_a or 0.0 for c in magika.nodes) == pytest.approx(a.total_ms)  # every ms lands on a node


def test_precision_changes_are_found(magika_pair, magika):
    a, b = magika_pair
    conv = next(c for c in magika.nodes if c.node == CONV)
    assert (conv.precision_a, conv.precision_b, conv.precision_changed) == ("fp32", "int8", True)
    for r, name, precision in ((a, conv.layer_a, "fp32"), (b, conv.layer_b, "int8")):
        layer = next(layer for layer in r.layers if layer.name == name)
        assert layer.onnx_nodes == (CONV,) and layer.type == "correlation" and layer.precision == precision
    assert magika.precision_changes == sum(c.precision_changed for c in magika.nodes) >= 2
    assert all(c.precision_a != c.precision_b for c in magika.nodes if c.precision_changed)
    assert "FP32 → INT8" in change_words(conv) and change_words(conv).startswith("Conv_0/Conv2D: ")


def test_a_fusion_change_is_found_on_the_real_pair(magika_pair, magika):
    a, b = magika_pair
    matmul = next(c for c in magika.nodes if c.node == DENSE_1 + "MatMul")
    # FP32: the Dense_1 MatMul runs in one Myelin kernel with the LayerNorm; INT8: in one with its AddV2 and Max
    for r, fused, named in ((a, matmul.fused_a, matmul.layer_a), (b, matmul.fused_b, matmul.layer_b)):
        claiming = [layer for layer in r.layers if matmul.node in layer.onnx_nodes and layer.kind == "compute"]
        assert named in {layer.name for layer in claiming}  # the layer that ran it is one that claims it
        assert set(fused) == {n for layer in claiming for n in layer.onnx_nodes} - {matmul.node}
    assert len([layer for layer in b.layers if matmul.node in layer.onnx_nodes]) == 2  # INT8: two kernels share it
    assert DENSE_1 + "AddV2" in matmul.gained and DENSE_1 + "AddV2" not in matmul.fused_a
    assert set(matmul.lost) == set(matmul.fused_a) - set(matmul.fused_b) and matmul.lost
    assert matmul.fusion_changed and "fused with Dense_1/AddV2" in change_words(matmul)
    assert magika.fusion_changes == sum(c.fusion_changed for c in magika.nodes)
    unchanged = [c for c in magika.nodes if not c.only_in and not c.fusion_changed]
    assert unchanged and all(set(c.fused_a) & set(c.fused_b) == set(c.fused_a) for c in unchanged)


def test_nodes_only_one_engine_runs(magika_pair, magika):
    a, b = magika_pair
    ran_a = {n for layer in a.layers for n in layer.onnx_nodes}
    ran_b = {n for layer in b.layers for n in layer.onnx_nodes}
    assert set(magika.only_b) == ran_b - ran_a and set(magika.only_a) == ran_a - ran_b
    assert magika.only_b == (CONV.replace("Conv2D", "strided_slice_2__127"),)
    only = next(c for c in magika.nodes if c.only_in == "b")
    assert only.delta_ms is None and only.ms_a is None and only.ms_b == b.node_ms[only.node]
    assert change_words(only) == f"Conv_0/strided_slice_2__127: only in B (FP32, {only.ms_b:.4f} ms)"


def test_the_comparison_round_trips_its_json(magika):
    doc = json.loads(json.dumps(magika.to_json()))
    back = ImportComparison.from_json(doc)
    assert back == magika and not untyped_keys(back) and doc["kind"] == "import_compare"
    assert back.engine_a is not None and back.engine_a.layers == magika.engine_a.layers


def test_nvidias_two_mobilenet_engines():
    a = import_engine(TREX / "mobilenet", need_model=False).result
    b = import_engine(TREX / "mobilenet_v2_residuals", need_model=False).result
    c = compare_imports(a, b)
    assert c.total_ms_a == pytest.approx(0.47038876) and c.total_ms_b == pytest.approx(0.35592094)
    assert c.median_ms_a == a.latency_ms.median and c.median_ms_b is None  # the second has no timing file
    both = [n for n in c.nodes if not n.only_in]
    for n in both:
        assert n.delta_ms == pytest.approx(b.node_ms[n.node] - a.node_ms[n.node], abs=1e-12)
    # two exports of different graphs: only the names they share line up, and the comparison says so
    assert len(both) == len(set(a.node_ms) & set(b.node_ms)) == 64
    assert any("same graph" in note for note in c.notes)
    assert c.label_a.startswith("mobilenet · ") and "NVIDIA TITAN RTX" in c.label_b


def test_nodes_fused_alike_in_both_engines_are_said_together(magika):
    groups = group_changes(magika)
    changed = [n for n in magika.changed() if not n.only_in]
    assert sorted(n for g in groups for n in g.nodes) == sorted(n.node for n in changed)  # each node once
    assert [abs(g.delta_ms) for g in groups] == sorted((abs(g.delta_ms) for g in groups), reverse=True)
    by_node = {n.node: n for n in changed}
    for g in groups:
        members = [by_node[n] for n in g.nodes]
        assert len({(n.layer_a, n.layer_b, n.precision_a, n.precision_b) for n in members}) == 1
        assert g.ms_a == pytest.approx(math.fsum(n.ms_a for n in members))
        assert g.delta_ms == pytest.approx(math.fsum(n.delta_ms for n in members))
        assert not set(g.gained) & set(g.nodes) and not set(g.lost) & set(g.nodes)
    big = max(groups, key=lambda g: len(g.nodes))
    assert len(big.nodes) > 3 and group_words(big).startswith(" + ".join(short_node(n) for n in big.nodes[:3])
                                                              + f" + {len(big.nodes) - 3} more: ")
    conv = next(g for g in groups if g.nodes == (CONV,))
    assert group_words(conv) == f"Conv_0/Conv2D: {conv.ms_a:.3f} → {conv.ms_b:.3f} ms " \
                                f"({conv.delta_ms / conv.ms_a:+.0%}) (FP32 → INT8)"
