"""Weight statistics on crafted tensors, real Constant/initializer weights and external data."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from app.core import errors
from app.core.model.loader import load_model
from app.core.model.weights import find_tensor, tensor_to_array, weight_stats

CRAFTED = np.array([0.0, 0.0, 1.5, -2.5, 3.0, np.nan, np.inf, -np.inf, 70000.0, -1e5,
                    1e-5, -3e-6, 1e-8, -1e-9, 5.0], dtype=np.float32).reshape(3, 5)


def test_stats_on_crafted_tensor() -> None:
    s = weight_stats(numpy_helper.from_array(CRAFTED, "crafted"))
    assert (s.name, s.dtype, s.shape, s.count) == ("crafted", "float32", (3, 5), 15)
    assert s.note == ""
    assert (s.zeros, s.nan, s.inf) == (2, 1, 2)
    # statistics are over the finite values only
    assert s.min == -1e5
    assert s.max == 70000.0
    finite = [0.0, 0.0, 1.5, -2.5, 3.0, 70000.0, -1e5, float(np.float32(1e-5)),
              float(np.float32(-3e-6)), float(np.float32(1e-8)), float(np.float32(-1e-9)), 5.0]
    mean = sum(finite) / 12
    assert s.mean == pytest.approx(-29993.0 / 12, rel=1e-9)
    assert s.std == pytest.approx(math.sqrt(sum((v - mean) ** 2 for v in finite) / 12), rel=1e-12)
    assert s.fp16_overflow == 2       # 70000 and -1e5 (the infinities are already counted as inf)
    assert s.fp16_subnormal == 4      # 1e-5, -3e-6, 1e-8, -1e-9: nonzero and below 6.1e-5
    assert s.fp16_underflow == 2      # 1e-8 and -1e-9 flush to zero in FP16


def test_fp16_thresholds_match_numpy_float16() -> None:
    # 4e-8 lies between half the smallest FP16 subnormal (2.98e-8) and it: it rounds up, not to 0
    values = np.array([65504.0, 65520.0, 1e5, 6.2e-5, 6.0e-5, 1e-7, 4e-8, 2.9e-8, 1e-8], dtype=np.float32)
    s = weight_stats(numpy_helper.from_array(values, "edges"))
    with np.errstate(over="ignore"):
        half = values.astype(np.float16)
    assert s.fp16_overflow == 2 and int(np.isinf(half).sum()) == 2           # 65520 and 1e5
    assert s.fp16_underflow == int(((half == 0) & (values != 0)).sum()) == 2  # 2.9e-8 and 1e-8
    assert s.fp16_subnormal == 5                                           # 6.0e-5 and below
    assert s.fp16_subnormal == int(((np.abs(half) < 6.104e-5) & (values != 0)).sum())


def test_float16_and_bfloat16_tensors() -> None:
    h = weight_stats(numpy_helper.from_array(np.array([65504, 1e-7, 0, -2], np.float16), "h"))
    assert (h.dtype, h.min, h.max, h.zeros, h.fp16_overflow, h.fp16_subnormal) == (
        "float16", -2.0, 65504.0, 1, 0, 1)
    b = weight_stats(helper.make_tensor("b", TensorProto.BFLOAT16, [3], [1e5, 1.0, 1e-6]))
    assert b.dtype == "bfloat16" and b.note == ""
    assert b.fp16_overflow == 1 and b.fp16_subnormal == 1
    assert b.max == pytest.approx(1e5, rel=1e-2)


def test_integer_tensor() -> None:
    s = weight_stats(numpy_helper.from_array(np.array([[0, -7, 100000]], np.int32), "i"))
    assert (s.dtype, s.shape, s.min, s.max, s.zeros) == ("int32", (1, 3), -7.0, 100000.0, 1)
    assert s.fp16_overflow == 0       # FP16 checks are for floating-point weights


def test_scalar_and_empty_tensors() -> None:
    scalar = weight_stats(numpy_helper.from_array(np.array(2.5, np.float32), "s"))
    assert (scalar.shape, scalar.count, scalar.min, scalar.max, scalar.std) == ((), 1, 2.5, 2.5, 0.0)
    empty = weight_stats(numpy_helper.from_array(np.zeros((0, 3), np.float32), "e"))
    assert (empty.count, empty.min, empty.note) == (0, None, "")


def test_non_numeric_and_oversized_tensors() -> None:
    text = weight_stats(numpy_helper.from_array(np.array(["a", "b"], dtype=object), "labels"))
    assert text.min is None and "numeric" in text.note
    big = weight_stats(numpy_helper.from_array(np.ones(1000, np.float32), "big"), max_elements=999)
    assert big.min is None and "skipped" in big.note and big.count == 1000


def test_real_constant_node_weight(model_paths: dict[str, Path]) -> None:
    doc = load_model(model_paths["ppocr_cls_mobile_v2"])
    graph = doc.model.graph
    conv = next(n for n in graph.node if n.op_type == "Conv")
    t = find_tensor(graph, conv.input[1])
    assert t is not None
    const_node = next(n for n in graph.node if n.output and n.output[0] == conv.input[1])
    expected = numpy_helper.to_array(const_node.attribute[0].t).astype(np.float64)
    s = weight_stats(t, doc.path)
    assert s.shape == expected.shape and s.count == expected.size
    assert s.min == expected.min() and s.max == expected.max()
    assert s.mean == pytest.approx(expected.mean(), rel=1e-12, abs=1e-15)
    assert s.zeros == int((expected == 0).sum())


def test_real_initializer(model_paths: dict[str, Path]) -> None:
    doc = load_model(model_paths["magika_standard_v3_3"])
    t = max(doc.model.graph.initializer, key=lambda x: len(x.raw_data))
    expected = numpy_helper.to_array(t).astype(np.float64)
    s = weight_stats(t, doc.path)
    assert s.count == expected.size > 1000
    assert s.std == pytest.approx(expected.std(), rel=1e-9)
    assert find_tensor(doc.model.graph, t.name) is t
    assert find_tensor(doc.model.graph, "no such tensor") is None


def test_external_tensor_is_read_through_validated_path(tiny_model) -> None:
    w1 = np.array([[1.0, -2.0, 0.0, 4.0]], np.float32)
    w2 = np.array([[0.25, 70000.0, 0.0, 0.0]], np.float32)
    nodes = [helper.make_node("Add", ["x", "w1"], ["s"]), helper.make_node("Mul", ["s", "w2"], ["y"])]
    model = tiny_model.build(nodes=nodes, initializers=[numpy_helper.from_array(w1, "w1"),
                                                        numpy_helper.from_array(w2, "w2")])
    path = tiny_model.save(model, "ext/model.onnx", external=True, location="weights.bin")
    doc = load_model(path)
    refs = {r.tensor: r for r in doc.external}
    assert refs["w2"].offset > 0                  # the second tensor sits after the first
    inits = {t.name: t for t in doc.model.graph.initializer}
    assert all(t.data_location == TensorProto.EXTERNAL for t in inits.values())
    np.testing.assert_array_equal(tensor_to_array(inits["w2"], doc.path), w2)
    s = weight_stats(inits["w2"], doc.path)
    assert (s.min, s.max, s.zeros, s.fp16_overflow, s.note) == (0.0, 70000.0, 2, 1, "")
    assert weight_stats(inits["w1"], doc.path).min == -2.0
    # the proto in the document is left external
    assert inits["w2"].data_location == TensorProto.EXTERNAL and not inits["w2"].raw_data


def test_external_tensor_without_model_path(make_external_tensor) -> None:
    t = make_external_tensor("w", [4], "w.bin", length=16)
    with pytest.raises(errors.ExternalDataMissingError):
        tensor_to_array(t, None)
    assert "stored externally" in weight_stats(t).note


def test_external_tensor_outside_the_folder_is_never_read(tmp_path: Path, make_external_tensor,
                                                          opened_paths: set[Path]) -> None:
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.full(4, 7.0, np.float32).tobytes())
    model_path = tmp_path / "models" / "m.onnx"
    model_path.parent.mkdir()
    opened_paths.clear()
    for location in ("../secret.bin", str(secret)):
        t = make_external_tensor("w", [4], location, length=16)
        with pytest.raises(errors.ExternalDataOutsideError):
            tensor_to_array(t, model_path)
        s = weight_stats(t, model_path)
        assert s.min is None and "outside" in s.note
    assert secret.resolve() not in opened_paths
