"""The report's "Imported TensorRT engines" section: NVIDIA's QAT MobileNet engines (tests/data/trex: real trtexec
layer information, profiles and timings), one of trtlab's own TensorRT for RTX builds of magika judged against ONNX
Runtime FP32 by the answers machinery, and two engines compared. The tables hold the imports' own numbers."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import numpy as np
import pytest

from app.backends.imported import judge_engine_outputs
from app.core.engine import compare_imports, import_engine
from app.core.engine.layer_dump import parse_layer_dump
from app.core.results import CompareResult, ImportResult
from app.reports import as_item, build_report, infer_kind
from app.reports.imports import CHANGE_ROWS, LAYER_ROWS
from app.reports.words import fmt

TREX = Path(__file__).resolve().parents[1] / "data" / "trex"
RTX_DUMPS = Path(__file__).resolve().parents[1] / "core" / "engine" / "fixtures"


def _cells(row: str) -> list[str]:
    return [re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", c))).strip()
            for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]


def _table(html: str, cls: str, index: int = 0) -> list[list[str]]:
    tables = re.findall(rf'<table class="{cls}">(.*?)</table>', html, re.S)
    assert len(tables) > index, f"no table {cls} #{index}"
    return [_cells(r) for r in re.findall(r"<tr>(.*?)</tr>", tables[index], re.S)]


def _section(html: str) -> str:
    m = re.search(r'<section id="imported">(.*?)</section>', html, re.S)
    assert m, "no imported section"
    return m.group(1)


@pytest.fixture(scope="module")
def mobilenet() -> ImportResult:
    return import_engine(TREX / "mobilenet", need_model=False).result


@pytest.fixture(scope="module")
def residuals() -> ImportResult:
    return import_engine(TREX / "mobilenet_v2_residuals", need_model=False).result


@pytest.fixture(scope="module")
def judged(tmp_path_factory, model_paths) -> ImportResult:
    """magika's RTX FP32 engine layers, its outputs (ONNX Runtime's on the same samples, a little off) judged."""
    model = str(model_paths["magika_standard_v3_3"])
    folder = tmp_path_factory.mktemp("rtx")
    doc = parse_layer_dump((RTX_DUMPS / "rtx_layers_magika_fp32.txt").read_text(encoding="utf-8"))
    (folder / "layers.json").write_text(json.dumps(doc), encoding="utf-8")
    profile = [{"count": 10}] + [{"name": layer["Name"], "timeMs": 1.0, "averageMs": (i + 1) / 10.0,
                                  "medianMs": (i + 1) / 10.0, "percentage": 0.0}
                                 for i, layer in enumerate(doc["Layers"])]
    (folder / "profile.json").write_text(json.dumps(profile), encoding="utf-8")
    result = import_engine(folder, model).result
    import onnxruntime as ort

    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(3)
    feeds = [{"bytes": rng.integers(0, 256, (1, 2048)).astype(np.int32)} for _ in range(2)]
    names = [o.name for o in session.get_outputs()]
    outputs = [{n: v * np.float32(1.0001) for n, v in zip(names, session.run(None, f), strict=True)} for f in feeds]
    answers = judge_engine_outputs(model, feeds, outputs, "trt-rtx:fp32 (TensorRT on NVIDIA GeForce RTX 4090)")
    return result.replace(answers=CompareResult.from_json(answers))


def test_an_engine_slowest_layers_first_with_its_onnx_nodes(mobilenet):
    html = build_report([mobilenet.to_json()])
    section = _section(html)
    rows = _table(section, "imported-layers")[1:]
    timed = [layer for layer in mobilenet.layers if layer.ms is not None]
    assert len(rows) == LAYER_ROWS < len(timed) == 73
    for row, layer in zip(rows, timed, strict=False):
        assert row[1] == fmt(layer.ms, 4) and row[3] == layer.precision.upper() and row[5] == layer.name
        assert row[6].startswith(", ".join(layer.onnx_nodes) or "—")
    assert [float(r[1]) for r in rows] == sorted((float(r[1]) for r in rows), reverse=True)
    assert f"{len(timed) - LAYER_ROWS} more layers" in section
    assert "NVIDIA TITAN RTX" in section and "compute capability 7.5" in section
    assert f"total {fmt(mobilenet.total_ms, 4)} ms over a profile of 6610 runs" in unescape(section)
    lat = _table(section, "imported-latency")
    assert lat[0][0] == "Timed inferences" and lat[1][0] == "600"
    assert lat[1][1] == fmt(mobilenet.latency_ms.median, 4) and lat[1][4] == fmt(mobilenet.latency_ms.p99, 4)
    assert "not judged" in section
    assert 'href="#imported"' in html and "Imported engine mobilenet" in html  # the table of contents, the scorecard


def test_the_verdict_against_onnx_runtime(judged):
    section = _section(build_report([judged]))
    cand = judged.answers.candidates[0]
    assert cand.passed and "passes against ort-cpu:fp32 on 2 sample(s)" in section
    rows = _table(section, "imported-verdict")[1:]
    assert [r[0] for r in rows] == [o.name for o in cand.outputs]
    assert rows[0][2] == fmt(cand.outputs[0].cosine, 6) and rows[0][4] == "pass"


def test_two_engines_compared(mobilenet, residuals):
    c = compare_imports(mobilenet, residuals)
    for given in ([mobilenet, residuals], [c.to_json()]):  # two imports, or their comparison's JSON
        html = build_report(given)
        section = _section(html)
        assert section.count('class="imported-layers"') == 2
        totals = _table(section, "imported-totals")
        delta = c.total_ms_b - c.total_ms_a
        assert totals[1][1:] == [fmt(c.total_ms_a, 4), fmt(c.total_ms_b, 4),
                                 f"{delta:+.4f} ({delta / c.total_ms_a:+.0%})"]
        rows = _table(section, "imported-compare")[1:]
        changed = [n for n in c.changed() if not n.only_in]
        assert len(rows) == min(CHANGE_ROWS, len(changed))
        for row, n in zip(rows, changed, strict=False):
            assert row[0] == n.node and row[1] == fmt(n.ms_a, 4) and row[2] == fmt(n.ms_b, 4)
            assert row[3] == f"{n.delta_ms:+.4f}"
            assert float(row[3]) == pytest.approx(residuals.node_ms[n.node] - mobilenet.node_ms[n.node], abs=1e-4)
        assert "same graph" in section  # two exports of different graphs: said
    said = (f"Imported engines {c.label_a} against {c.label_b}: {fmt(c.total_ms_a, 4)} → {fmt(c.total_ms_b, 4)} ms "
            f"per inference; {c.precision_changes} ONNX node(s) ran in another precision, {c.fusion_changes} fused "
            "differently")
    assert said in unescape(html)  # the comparison's own line in the scorecard


def test_imports_of_two_models_are_not_compared(mobilenet, residuals):
    section = _section(build_report([mobilenet.replace(model="mobilenet.onnx"), residuals.replace(model="v2.onnx")]))
    assert section.count('class="imported-layers"') == 2 and 'class="imported-compare"' not in section


def test_result_files_are_told_by_their_keys(mobilenet, residuals):
    c = compare_imports(mobilenet, residuals)
    plain = {k: v for k, v in mobilenet.to_json().items() if k != "kind"}
    assert infer_kind(plain) == "import" and as_item(plain).kind == "import"
    assert infer_kind({k: v for k, v in c.to_json().items() if k != "kind"}) == "import_compare"
