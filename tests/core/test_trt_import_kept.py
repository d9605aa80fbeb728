"""Imports kept in a project (`app/core/project.py`): NVIDIA's QAT MobileNet engines (tests/data/trex) saved in a
`.trtlab` file and read back as the same results, with the GPU and TensorRT of the machine they ran on, the command
that imports them again, their files copied beside the project, and `trtlab report` of the project showing them."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.core.engine import compare_imports, import_engine
from app.core.project import Project, import_result, keep_import_files, load_project, save_project
from app.core.results import ImportComparison, ImportResult, read_job_result
from tests.cli.runner import trtlab

TREX = Path(__file__).resolve().parents[1] / "data" / "trex"


@pytest.fixture(scope="module")
def pair() -> tuple[ImportResult, ImportResult]:
    return (import_engine(TREX / "mobilenet", need_model=False).result,
            import_engine(TREX / "mobilenet_v2_residuals", need_model=False).result)


def test_a_project_keeps_imports_and_their_comparison(pair, tmp_path):
    a, b = pair
    c = compare_imports(a, b)
    project = Project(results=[
        import_result(a.to_json(), folder=str(TREX / "mobilenet"), model="mobilenet.qat.onnx"),
        import_result(c.to_json(), folder=str(TREX / "mobilenet"), against=str(TREX / "mobilenet_v2_residuals"))])
    path = save_project(project, tmp_path / "engines")
    back = load_project(path)
    kept, compared = back.results
    assert kept.kind == "import" and compared.kind == "import_compare"
    r = read_job_result(kept.kind, kept.data)
    assert isinstance(r, ImportResult) and r == a and r.layers == a.layers and r.latency_ms == a.latency_ms
    assert (r.gpu, r.compute_capability) == ("NVIDIA TITAN RTX", "7.5")
    assert kept.command == f"trtlab import {TREX / 'mobilenet'} --model mobilenet.qat.onnx"
    assert compared.command.endswith(f"--against {TREX / 'mobilenet_v2_residuals'}")
    rc = read_job_result(compared.kind, compared.data)
    assert isinstance(rc, ImportComparison) and rc == c and rc.nodes[0].delta_ms == c.nodes[0].delta_ms
    proc = trtlab("report", path, "-o", tmp_path / "r.html")
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert 'id="imported"' in html and a.layers[0].name in html and "trtlab import" in html


def test_the_imported_files_are_copied_beside_the_project(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    for f in (TREX / "mobilenet").iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    (folder / "engine.plan").write_bytes(b"\0" * 64)  # a serialized engine: only its GPU loads it, not kept
    first = keep_import_files(folder, tmp_path / "work.trtlab")
    assert first == tmp_path / "work.imports" / "results"
    assert sorted(p.name for p in first.iterdir()) == sorted(p.name for p in (TREX / "mobilenet").iterdir())
    again = keep_import_files(folder, tmp_path / "work.trtlab")  # a second import of a folder of that name
    assert again == tmp_path / "work.imports" / "results-2" and again.is_dir()
    assert import_engine(first, need_model=False).result.layers == import_engine(folder, need_model=False).result.layers
