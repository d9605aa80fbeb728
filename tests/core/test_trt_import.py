"""TensorRT results brought back (`trtlab import`): real trtexec outputs of a QAT MobileNet from NVIDIA's engine
explorer (tests/data/trex/README.md), trtlab's own TensorRT for RTX builder dump mapped onto a shared model, and
Polygraphy's JSON files as its own package writes them."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest

from app.core.engine.kit import KitManifest, write_kit
from app.core.engine.layer_dump import parse_layer_dump
from app.core.engine.polygraphy_json import encode_array, load_feeds, load_run_results, save_feeds
from app.core.engine.trt_import import ImportInputError, import_engine
from app.core.engine.trtexec_files import (
    classify_json,
    parse_build_log,
    parse_profile_table,
    parse_trtexec_outputs,
    version_from_banner,
)
from app.core.precision.plan import node_keys
from app.core.results import ImportResult

DATA = Path(__file__).resolve().parents[1] / "data" / "trex"
MOBILENET = DATA / "mobilenet"
RTX_DUMPS = Path(__file__).resolve().parent / "engine" / "fixtures"


def _raw(name: str) -> object:
    return json.loads((MOBILENET / f"mobilenet.qat.onnx.engine.{name}.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def mobilenet() -> ImportResult:
    return import_engine(MOBILENET, need_model=False).result


def test_every_profiled_layer_is_shown_and_the_total_is_the_profiles(mobilenet):
    profile = [p for p in _raw("profile") if "name" in p]
    assert len(profile) == 73
    shown = {layer.name: layer for layer in mobilenet.layers}
    assert set(shown) == {p["name"] for p in profile}
    for p in profile:
        assert shown[p["name"]].ms == pytest.approx(p["averageMs"]) and shown[p["name"]].profiled
    assert mobilenet.total_ms == pytest.approx(math.fsum(p["averageMs"] for p in profile), rel=1e-12)
    assert sum(layer.ms or 0.0 for layer in mobilenet.layers) == pytest.approx(mobilenet.total_ms)
    assert sum(layer.share or 0.0 for layer in mobilenet.layers) == pytest.approx(1.0)
    assert mobilenet.profile_runs == 6610 and mobilenet.layer_source == "exportLayerInfo"


def test_slowest_layers_come_first(mobilenet):
    times = [layer.ms for layer in mobilenet.layers]
    assert times == sorted(times, reverse=True)
    first = mobilenet.layers[0]
    assert first.name == "features.15.conv.2.weight + QuantizeLinear_722 + Conv_726 + Add_728"
    assert first.onnx_nodes[-2:] == ("Conv_726", "Add_728") and first.precision == "int8"
    assert mobilenet.slowest(3) == mobilenet.layers[:3]


def test_qdq_and_reformat_layers_are_attributed_to_the_nodes_they_serve(mobilenet):
    origins = {layer["Name"]: layer.get("Origin") for layer in _raw("graph")["Layers"]}
    qdq = [layer for layer in mobilenet.layers if origins.get(layer.name) == "QDQ"]
    assert len(qdq) == 17 and all(layer.kind == "qdq" for layer in qdq)
    assert all(layer.serves and layer.onnx_nodes == (layer.name,) for layer in qdq)
    q2 = next(layer for layer in qdq if layer.name == "QuantizeLinear_2")
    assert "Conv_12" in q2.serves and "QuantizeLinear_2" not in q2.serves
    assert q2.inputs == ("fp32",) and q2.outputs == ("int8",)
    reformat = next(layer for layer in mobilenet.layers if layer.name.startswith("Reformatting CopyNode"))
    assert reformat.kind == "reformat" and not reformat.onnx_nodes and reformat.serves == ("GlobalAveragePool_843",)
    # a reformat's time goes to the node it serves; a Q/DQ layer's to its own node
    assert mobilenet.node_ms["GlobalAveragePool_843"] >= reformat.ms
    assert mobilenet.node_ms["QuantizeLinear_2"] == pytest.approx(q2.ms)


def test_precisions_ran_and_where_it_ran(mobilenet):
    ran = Counter(layer.precision for layer in mobilenet.layers if layer.kind == "compute")
    assert ran["int8"] >= 50
    assert mobilenet.gpu == "NVIDIA TITAN RTX" and mobilenet.compute_capability == "7.5"
    assert mobilenet.files["layers"].endswith("graph.json") and mobilenet.files["times"].endswith("timing.json")


def test_latency_from_the_timing_file(mobilenet):
    times = np.array([r["latencyMs"] for r in _raw("timing")])
    assert mobilenet.timed_runs == 600 == times.size
    lat = mobilenet.latency_ms
    assert lat is not None
    assert lat.median == pytest.approx(float(np.median(times)))
    assert lat.p99 == pytest.approx(float(np.percentile(times, 99))) and lat.max == pytest.approx(times.max())
    assert mobilenet.throughput_per_s == pytest.approx(1000.0 / times.mean())


def test_the_result_round_trips_its_json(mobilenet):
    doc = json.loads(json.dumps(mobilenet.to_json()))
    back = ImportResult.from_json(doc)
    assert back == mobilenet and not back.extra and back.layers[0].serves == mobilenet.layers[0].serves


def test_a_second_engine_reads_alike():
    other = import_engine(DATA / "mobilenet_v2_residuals", need_model=False).result
    assert len(other.layers) == 58 and other.latency_ms is None and other.gpu == "NVIDIA TITAN RTX"
    assert [layer.ms for layer in other.layers] == sorted((layer.ms for layer in other.layers), reverse=True)


def test_bare_files_need_their_model(tmp_path):
    with pytest.raises(ImportInputError) as err:
        import_engine(MOBILENET)
    assert "--model" in err.value.fix
    with pytest.raises(ImportInputError):
        import_engine(tmp_path / "missing")
    with pytest.raises(ImportInputError) as err:
        import_engine(tmp_path, need_model=False)  # an empty folder: nothing to read
    assert "--exportLayerInfo" in err.value.fix


def _rtx_folder(tmp_path: Path) -> Path:
    """trtlab's own TensorRT for RTX build of the shared magika model: its builder dump as the inspector's JSON (the
    same content `--exportLayerInfo` writes), with a profile naming its layers."""
    dump = (RTX_DUMPS / "rtx_layers_magika_fp32.txt").read_text(encoding="utf-8")
    doc = parse_layer_dump(dump)
    folder = tmp_path / "rtx"
    folder.mkdir()
    (folder / "layers.json").write_text(json.dumps(doc), encoding="utf-8")
    names = [layer["Name"] for layer in doc["Layers"]]
    profile = [{"count": 10}] + [{"name": n, "timeMs": float(i + 1), "averageMs": (i + 1) / 10.0,
                                  "medianMs": (i + 1) / 10.0, "percentage": 0.0} for i, n in enumerate(names)]
    (folder / "profile.json").write_text(json.dumps(profile), encoding="utf-8")
    (folder / "build.log").write_text("&&&& RUNNING TensorRT.trtexec [TensorRT v110100] [b6]\n"
                                      "[I] Selected Device: NVIDIA GeForce RTX 4090\n[I] Compute Capability: 8.9\n",
                                      encoding="utf-8")
    return folder


def test_rtx_layers_map_onto_the_model_graph(tmp_path, model_paths):
    model = model_paths["magika_standard_v3_3"]
    r = import_engine(_rtx_folder(tmp_path), str(model)).result
    keys = set(node_keys(onnx.load(model, load_external_data=False).graph))
    assert len(r.layers) == 10 and all(layer.onnx_nodes for layer in r.layers)
    assert all(set(layer.onnx_nodes) <= keys for layer in r.layers)
    assert set(r.ran) <= keys and len(r.ran) > 40 and set(r.ran.values()) == {"fp32"}
    assert set(r.unclaimed) == keys - set(r.ran) and not r.unmapped
    conv = next(layer for layer in r.layers if layer.type == "correlation")
    assert conv.onnx_nodes == ("jax2tf_get_logits_/pjit_get_logits_/MagikaV2/Conv_0/Conv2D",)
    assert r.trt_version == "11.1.0" and r.gpu == "NVIDIA GeForce RTX 4090" and r.compute_capability == "8.9"
    assert sum(r.node_ms.values()) == pytest.approx(r.total_ms)  # every layer's time lands on its nodes


def test_a_kit_folder_names_its_model(tmp_path, model_paths):
    model = model_paths["magika_standard_v3_3"]
    kit = tmp_path / "kit"
    kit.mkdir()
    (kit / "magika.fp32.onnx").write_bytes(Path(model).read_bytes())
    feeds = [{"bytes": np.zeros((1, 2048), np.int32)}]
    write_kit(kit, KitManifest(model=str(model), model_sha256="", variant="magika.fp32.onnx", precision="fp32"),
              feeds, {"bytes": np.dtype(np.int32)})
    results = _rtx_folder(tmp_path)
    results.rename(kit / "results")
    for where in (kit, kit / "results"):  # the kit, or its results folder
        r = import_engine(where).result
        assert r.kit and r.model == str(model) and r.variant.endswith("magika.fp32.onnx") and len(r.ran) > 40
    assert (kit / "inputs" / "bytes.bin").stat().st_size == 2048 * 4
    assert load_feeds(kit / "inputs.json")[0]["bytes"].dtype == np.int32


# ----------------------------------------------------------------- Polygraphy's JSON
def test_feeds_are_what_polygraphy_loads(tmp_path):
    feeds = [{"x": np.arange(6, dtype=np.float32).reshape(2, 3), "ids:0": np.array([[1, 2]], np.int64)},
             {"x": np.ones((2, 3), np.float16), "ids:0": np.array([[3, 4]], np.int64)}]
    save_feeds(feeds, tmp_path / "inputs.json")
    back = load_feeds(tmp_path / "inputs.json")
    assert all(np.array_equal(a[k], b[k]) and a[k].dtype == b[k].dtype for a, b in zip(feeds, back, strict=True)
               for k in a)
    polygraphy_json = pytest.importorskip("polygraphy.json")
    loaded = polygraphy_json.load_json(str(tmp_path / "inputs.json"))
    assert np.array_equal(loaded[1]["x"], feeds[1]["x"]) and loaded[0]["ids:0"].dtype == np.int64


def test_run_results_read_with_and_without_the_package(tmp_path):
    comparator = pytest.importorskip("polygraphy.comparator")
    results = comparator.RunResults()
    results.add([{"y": np.arange(4, dtype=np.float32)}, {"y": np.ones(4, np.float16)}], runtime=0.5,
                runner_name="trt-runner-N0-11/28/26")
    results.save(str(tmp_path / "outputs.json"))
    for use in (True, False):
        (runner,) = load_run_results(tmp_path / "outputs.json", use_package=use)
        assert runner.runner == "trt-runner-N0-11/28/26" and len(runner.iterations) == 2
        assert np.array_equal(runner.iterations[0]["y"], np.arange(4)) and runner.iterations[1]["y"].dtype == np.float16
    doc = json.loads((tmp_path / "outputs.json").read_text())
    assert classify_json(doc) == "outputs"


def test_older_polygraphy_files_read_too(tmp_path):
    arr = np.arange(3, dtype=np.float32)
    legacy_array = {"array": encode_array(arr)["array"],
                    "__polygraphy_encoded_ndarray": "polygraphy_serialized_json_type"}
    doc = {"lst": [["onnxrt-runner", [{"outputs": {"y": legacy_array}, "runtime": 0.1, "runner_name": "onnxrt-runner",
                                       "polygraphy_class": "IterationResult"}]]], "polygraphy_class": "RunResults"}
    (tmp_path / "old.json").write_text(json.dumps(doc))
    (runner,) = load_run_results(tmp_path / "old.json", use_package=False)
    assert np.array_equal(runner.iterations[0]["y"], arr)


# ----------------------------------------------------------------- logs and trtexec's other files
def test_the_build_log_says_version_gpu_and_compute_capability():
    log = ("&&&& RUNNING TensorRT.trtexec [TensorRT v101600] [b12] # trtexec --onnx=m.onnx\n"
           "[11/28/2026-10:00:00] [I] === Device Information ===\n"
           "[11/28/2026-10:00:00] [I] Selected Device: NVIDIA RTX A6000\n"
           "[11/28/2026-10:00:00] [I] Compute Capability: 8.6\n"
           "[11/28/2026-10:00:01] [E] Error[4]: something\n")
    facts = parse_build_log(log)
    assert (facts.trt_version, facts.gpu, facts.compute_capability, facts.tool) == \
        ("10.16.0", "NVIDIA RTX A6000", "8.6", "trtexec")
    assert facts.errors == ("[11/28/2026-10:00:01] [E] Error[4]: something",)
    assert version_from_banner("[TensorRT v110100]") == "11.1.0" and version_from_banner("[TensorRT v80601]") == "8.6.1"


def test_the_dump_profile_table_of_a_log():
    log = ("[I] === Profile (2929 iterations ) ===\n"
           "[I]    Time(ms)     Avg.(ms)   Median(ms)   Time(%)   Layer\n"
           "[I]       15.58       0.0053       0.0053       0.5   __myl_Move_myl0_0\n"
           "[I]      116.78       0.0399       0.0401       3.7   __myl_CorrMulAddRelu_myl0_1\n"
           "[I]     3178.92       1.0853       1.0852     100.0   Total\n")
    table = parse_profile_table(log)
    assert table.runs == 2929 and [p.name for p in table.layers] == ["__myl_Move_myl0_0", "__myl_CorrMulAddRelu_myl0_1"]
    assert table.total_ms == pytest.approx(0.0452)


def test_trtexec_export_output():
    doc = [{"name": "probs", "dimensions": "1x3", "values": [0.1, 0.2, 0.7]}]
    assert classify_json(doc) == "trtexec_outputs"
    out = parse_trtexec_outputs(doc)
    assert out["probs"].shape == (1, 3) and out["probs"][0, 2] == pytest.approx(0.7)
