"""`trtlab import DIR --against DIR2` as a user runs it: trtlab's own TensorRT for RTX builder dumps of the shared
magika model (FP32 and its INT8 Q/DQ variant, real dumps; the RTX builds ran without a GPU, so the profiles' times
are set here), compared node by node, in words and as JSON; then both put in an HTML report with `trtlab report`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.core.engine import group_changes, group_words
from app.core.engine.layer_dump import parse_layer_dump
from app.core.results import ImportComparison, ImportResult
from tests.cli.runner import trtlab
from tests.support.results import untyped_keys

RTX_DUMPS = Path(__file__).resolve().parents[1] / "core" / "engine" / "fixtures"


def _folder(where: Path, dump: str, scale: float) -> Path:
    doc = parse_layer_dump((RTX_DUMPS / dump).read_text(encoding="utf-8"))
    folder = where / Path(dump).stem
    folder.mkdir()
    (folder / "layers.json").write_text(json.dumps(doc), encoding="utf-8")
    profile = [{"count": 10}] + [{"name": layer["Name"], "timeMs": 10 * (i + 1) * scale, "averageMs": (i + 1) * scale,
                                  "medianMs": (i + 1) * scale, "percentage": 0.0}
                                 for i, layer in enumerate(doc["Layers"])]
    (folder / "profile.json").write_text(json.dumps(profile), encoding="utf-8")
    (folder / "build.log").write_text("&&&& RUNNING TensorRT.tensorrt_rtx [TensorRT v10700] [b1]\n"
                                      "[I] Selected Device: NVIDIA GeForce RTX 4090\n[I] Compute Capability: 8.9\n",
                                      encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[Path, Path]:
    where = tmp_path_factory.mktemp("pair")
    return _folder(where, "rtx_layers_magika_fp32.txt", 0.1), _folder(where, "rtx_layers_magika_int8.txt", 0.03)


def test_two_engines_compared_in_words_and_json(pair, model_paths, tmp_path):
    a, b = pair
    model = model_paths["magika_standard_v3_3"]
    proc = trtlab("import", a, "--against", b, "--model", model, "--json", tmp_path / "cmp.json")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "Engine A: " in text and "Engine B: " in text and "Largest changes first" in text
    c = ImportComparison.from_json(json.loads((tmp_path / "cmp.json").read_text(encoding="utf-8")))
    assert c.kind == "import_compare" and not untyped_keys(c)
    assert c.engine_a is not None and c.engine_b is not None and c.engine_a.imported_from == str(a)
    assert c.engine_a.gpu == "NVIDIA GeForce RTX 4090" and c.engine_b.trt_version == "1.7.0"
    # the totals side by side, as the profiles give them
    assert c.total_ms_a == pytest.approx(sum(0.1 * (i + 1) for i in range(10)))
    assert c.total_ms_b == pytest.approx(sum(0.03 * (i + 1) for i in range(10)))
    assert f"{c.total_ms_a:.4f} → {c.total_ms_b:.4f} ms" in text
    # the first line of changes is the node that changed most, with its precision and fusion in words
    lines = text.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("Largest changes first (B against A"))
    groups = group_changes(c)
    assert lines[start + 1:start + 1 + len(groups)] == ["  " + group_words(g) for g in groups]
    matmul = next(x for x in lines if x.startswith("  Dense_1/MatMul: "))
    assert "fused with Dense_1/AddV2" in matmul and "no longer fused with LayerNorm_1/" in matmul
    conv = next(x for x in lines if x.startswith("  Conv_0/Conv2D: "))
    assert "(FP32 → INT8)" in conv
    # nodes fused alike in both engines share a line, their times summed
    group = next(g for g in groups if len(g.nodes) == 2)
    members = [n for n in c.nodes if n.node in group.nodes]
    assert len({(n.layer_a, n.layer_b) for n in members}) == 1  # one layer in A, one in B
    assert group.ms_a == pytest.approx(sum(n.ms_a for n in members))
    assert group.ms_b == pytest.approx(sum(n.ms_b for n in members))
    line = "  " + " + ".join("/".join(n.rsplit("/", 2)[-2:]) for n in group.nodes) + ": "
    assert any(x.startswith(line + f"{group.ms_a:.3f} → {group.ms_b:.3f} ms") for x in lines)
    assert f"{c.precision_changes} ran in another precision, {c.fusion_changes} fused differently" in text


def test_the_report_holds_both_engines_and_their_comparison(pair, model_paths, tmp_path):
    a, b = pair
    model = model_paths["magika_standard_v3_3"]
    assert trtlab("import", a, "--against", b, "--model", model, "--json", tmp_path / "cmp.json").returncode == 0
    proc = trtlab("report", tmp_path / "cmp.json", "-o", tmp_path / "r.html")
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert 'id="imported"' in html and html.count('class="imported-layers"') == 2
    assert html.count('class="imported-compare"') == 1


def test_a_folder_to_compare_that_is_not_one(pair, model_paths, tmp_path):
    a, _ = pair
    proc = trtlab("import", a, "--against", tmp_path / "nowhere", "--model", model_paths["magika_standard_v3_3"])
    assert proc.returncode == 2 and "nowhere" in proc.stderr
    proc = trtlab("import", a, "--against-model", model_paths["magika_standard_v3_3"])
    assert proc.returncode == 2 and "--against DIR2" in proc.stderr


def test_one_import_still_reads_as_an_import(pair, model_paths):
    a, _ = pair
    proc = trtlab("import", a, "--model", model_paths["magika_standard_v3_3"], "--json", "-")
    assert proc.returncode == 0, proc.stderr
    assert ImportResult.from_json(json.loads(proc.stdout)).kind == "import"
