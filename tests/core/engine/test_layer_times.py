"""Per-layer times from IProfiler reports and their attribution to ONNX nodes, on the fixture engine."""

from __future__ import annotations

import pytest

from app.core.engine.inspector_json import parse_engine_info
from app.core.engine.layer_times import TimingRecorder, onnx_node_times, per_layer_times
from app.core.engine.onnx_map import map_to_onnx
from tests.core.engine.inspector_fixtures import CONV1, MYELIN, REFORMAT_IN, STEM, fixture_graph, load


def test_per_layer_times_and_onnx_attribution():
    graph = fixture_graph()
    m = map_to_onnx(parse_engine_info(load("engine_10x_detailed.json")), graph)
    runs = [
        {REFORMAT_IN: 0.010, STEM: 0.100, CONV1: 0.060, MYELIN: 0.040},
        {REFORMAT_IN: 0.012, STEM: 0.120, CONV1: 0.050, MYELIN: 0.040},
        {REFORMAT_IN: 0.008, STEM: 0.110, CONV1: 0.070, MYELIN: 0.100},
    ]
    recorder = TimingRecorder()
    for run in runs:
        for name, ms in run.items():
            recorder.report_layer_time(name, ms)
    times = recorder.times()
    assert times == per_layer_times(recorder.records)
    assert list(times) == [REFORMAT_IN, STEM, CONV1, MYELIN]
    stem = times[STEM]
    assert (stem.count, stem.mean_ms, stem.median_ms, stem.min_ms, stem.max_ms) == pytest.approx(
        (3, 0.110, 0.110, 0.100, 0.120))
    assert times[MYELIN].median_ms == pytest.approx(0.040) and times[MYELIN].mean_ms == pytest.approx(0.060)
    total = 0.030 + 0.330 + 0.180 + 0.180
    assert stem.share == pytest.approx(0.330 / total)
    assert sum(t.share for t in times.values()) == pytest.approx(1.0)

    nt = onnx_node_times(times, m)
    assert nt.total_ms == pytest.approx(total / 3)
    assert nt.unattributed == {REFORMAT_IN: pytest.approx(0.010)}
    conv = nt.nodes["/stem/conv/Conv"]
    assert conv.ms == pytest.approx(0.055) and conv.fused and conv.layer_ms == pytest.approx(0.110)
    assert conv.layers == (STEM,) and conv.share == pytest.approx(0.055 / nt.total_ms)
    assert nt.nodes["/blk/conv1/Conv"].ms == pytest.approx(0.060 / 5)          # five ONNX nodes in that layer
    assert nt.nodes["/head/Softmax"].ms == pytest.approx(0.060 / 4)
    assert sum(x.ms for x in nt.nodes.values()) + sum(nt.unattributed.values()) == pytest.approx(nt.total_ms)

    # The profiler may report a layer the inspector does not list: its name still finds the node.
    solo = onnx_node_times(per_layer_times([("/head/GlobalAveragePool", 0.02), ("/head/fc/MatMul_myl7_0", 0.01)]), m)
    assert solo.nodes["/head/GlobalAveragePool"].fused is False
    assert solo.nodes["/head/fc/MatMul"].ms == pytest.approx(0.01) and solo.unattributed == {}
    assert per_layer_times([]) == {}
