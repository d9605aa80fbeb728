"""The small models of the readiness tests (tests/core/readiness/, and tests/backends/test_check_vs_parser.py,
which runs the same models through TensorRT for RTX's parser), with the helpers that build and read them."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from app.core.readiness import Finding, Report

F, H = TensorProto.FLOAT, TensorProto.FLOAT16


def vi(name: str, shape, dtype: int = F) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, shape)


def model(nodes, inputs=None, outputs=None, inits=(), opset: int = 17, extra_opsets=None, functions=()):
    inputs = inputs if inputs is not None else [vi("x", [1, 4])]
    outputs = outputs if outputs is not None else [vi("y", None)]
    graph = helper.make_graph(list(nodes), "g", list(inputs), list(outputs), list(inits))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in (extra_opsets or {}).items()]
    return helper.make_model(graph, opset_imports=opsets, ir_version=10, functions=list(functions))


def codes(report: Report) -> set[str]:
    return {f.code for f in report.findings}


def only(report: Report, code: str) -> Finding:
    found = [f for f in report.findings if f.code == code]
    assert len(found) == 1, report.findings
    return found[0]


# ------------------------------------------------------------------------------------------------ Q/DQ

ZERO, SCALE = np.int8(0), np.float32(0.1)


def qdq(*, zp=ZERO, scale=SCALE, axis=None, opset=17, extra_nodes=(), extra_inits=(),
        scale_input=False) -> onnx.ModelProto:
    kw = {} if axis is None else {"axis": axis}
    zp_in = ["zp"] if zp is not None else []
    inits = [*extra_inits] + ([] if zp is None else [numpy_helper.from_array(np.asarray(zp), "zp")])
    inputs = [vi("x", [1, 4])]
    if scale_input:
        inputs.append(vi("s", []))
    else:
        inits.append(numpy_helper.from_array(np.asarray(scale), "s"))
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", *zp_in], ["q"], name="q", **kw),
             helper.make_node("DequantizeLinear", ["q", "s", *zp_in], ["dq"], name="dq", **kw),
             helper.make_node("Relu", ["dq"], ["y"], name="relu"), *extra_nodes]
    return model(nodes, inputs=inputs, inits=inits, opset=opset)


# (qdq() arguments, the error code the check gives): one case per Q/DQ rule
QDQ_CASES = [
    ({"zp": np.uint8(0)}, "qdq-zero-point-type"),
    ({"zp": np.int8(5)}, "qdq-zero-point-not-zero"),
    ({"zp": None}, "qdq-uint8-output"),
    ({"scale": np.float32(-0.5)}, "qdq-scale-not-positive"),
    ({"scale": np.float32(0.0)}, "qdq-scale-not-positive"),
    ({"scale_input": True}, "qdq-scale-not-constant"),
    ({"scale": np.full(4, 0.1, np.float32), "zp": np.zeros(4, np.int8), "axis": 1}, "qdq-per-axis-activation"),
    ({"extra_nodes": [helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], name="w_dq", axis=0)],
      "extra_inits": [numpy_helper.from_array(np.ones((4, 3), np.int8), "w"),
                      numpy_helper.from_array(np.full(3, 0.1, np.float32), "ws"),
                      numpy_helper.from_array(np.zeros(3, np.int8), "wz")]}, "qdq-axis"),
    ({"extra_nodes": [helper.make_node("DequantizeLinear", ["b", "bs"], ["bf"], name="bias_dq")],
      "extra_inits": [numpy_helper.from_array(np.zeros(4, np.int32), "b"),
                      numpy_helper.from_array(np.float32(0.01), "bs")]}, "qdq-int32-bias"),
    ({"opset": 12, "extra_nodes": [helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], name="w_dq",
                                                    axis=0)],
      "extra_inits": [numpy_helper.from_array(np.ones((3, 2), np.int8), "w"),
                      numpy_helper.from_array(np.full(3, 0.1, np.float32), "ws"),
                      numpy_helper.from_array(np.zeros(3, np.int8), "wz")]}, "qdq-axis-opset"),
]


# ------------------------------------------------------------------------------------------------ Resize

def resize_model(*, mode: str = "nearest", scales=None, sizes=None, opset: int = 13, rank: int = 4,
                 scales_input: bool = False, **attrs) -> onnx.ModelProto:
    """One Resize 'rs' of x (1×3×8×8[×8]); scales/sizes as initializers, or scales as a graph input."""
    inits = [numpy_helper.from_array(np.array([], np.float32), "roi")]
    inputs = [vi("x", [1, 3, 8, 8, 8][:rank])]
    names = ["x", "roi", ""]
    if scales_input:
        inputs.append(vi("scales", [len(attrs.get("axes", [])) or rank]))
        names[2] = "scales"
    elif scales is not None:
        inits.append(numpy_helper.from_array(np.array(scales, np.float32), "scales"))
        names[2] = "scales"
    if sizes is not None:
        inits.append(numpy_helper.from_array(np.array(sizes, np.int64), "sizes"))
        names.append("sizes")
    node = helper.make_node("Resize", names, ["y"], name="rs", mode=mode, **attrs)
    return model([node], inputs=inputs, inits=inits, opset=opset)


# (case id, model arguments, refused by the importer): onnx-tensorrt's importResize/checkResize, see resize_rule.py
RESIZE_CASES = [
    ("cubic-2-dims", {"mode": "cubic", "scales": [1, 1, 2, 2]}, False),
    ("cubic-3-dims", {"mode": "cubic", "scales": [1, 2, 2, 2]}, True),
    ("cubic-rank5-last-2", {"mode": "cubic", "scales": [1, 1, 1, 2, 2], "rank": 5}, False),
    ("cubic-rank5-3-dims", {"mode": "cubic", "scales": [1, 1, 2, 2, 2], "rank": 5}, True),
    ("cubic-by-sizes-3-dims", {"mode": "cubic", "sizes": [1, 6, 16, 16]}, False),
    ("cubic-exclude-outside-coeff", {"mode": "cubic", "scales": [1, 1, 2, 2], "exclude_outside": 1,
                                     "cubic_coeff_a": -0.5}, False),
    ("cubic-axes-2", {"mode": "cubic", "scales": [2, 2], "axes": [2, 3], "opset": 18}, False),
    ("linear-3-dims", {"mode": "linear", "scales": [1, 2, 2, 2]}, False),
    ("linear-4-dims", {"mode": "linear", "scales": [2, 2, 2, 2]}, True),
    ("nearest-4-dims", {"mode": "nearest", "scales": [2, 2, 2, 2]}, False),
    ("nearest-mode-ceil", {"scales": [1, 1, 2, 2], "nearest_mode": "ceil"}, False),
    ("tf-crop-and-resize", {"mode": "linear", "scales": [1, 1, 2, 2],
                            "coordinate_transformation_mode": "tf_crop_and_resize"}, True),
    ("half-pixel-symmetric", {"mode": "linear", "scales": [1, 1, 2, 2], "opset": 19,
                              "coordinate_transformation_mode": "half_pixel_symmetric"}, True),
    ("tf-half-pixel-for-nn-floor", {"scales": [1, 1, 2, 2], "coordinate_transformation_mode": "tf_half_pixel_for_nn",
                                    "nearest_mode": "floor"}, True),
    ("tf-half-pixel-for-nn", {"scales": [1, 1, 2, 2], "coordinate_transformation_mode": "tf_half_pixel_for_nn"},
     False),
    ("antialias", {"mode": "linear", "scales": [1, 1, 2, 2], "antialias": 1, "opset": 18}, True),
    ("keep-aspect-ratio", {"sizes": [1, 3, 16, 12], "keep_aspect_ratio_policy": "not_larger", "opset": 18}, True),
    ("axes-with-computed-scales", {"scales_input": True, "axes": [2, 3], "opset": 18}, True),
]



# ------------------------------------------------------------------------------------------------ other rules

def scatter_add() -> onnx.ModelProto:
    idx = numpy_helper.from_array(np.zeros((1, 4), np.int64), "idx")
    return model([helper.make_node("ScatterElements", ["x", "idx", "u"], ["y"], name="scat", axis=0,
                                   reduction="add")], inputs=[vi("x", [3, 4]), vi("u", [1, 4])], inits=[idx])


def mixed(op: str, types, *, init: bool = False, name: str = "n0", **attrs) -> onnx.ModelProto:
    """One op whose inputs have the given element types (the last one an initializer when init)."""
    inputs, inits, names = [], [], []
    shape = [2, 4]
    for j, t in enumerate(types):
        n = f"i{j}"
        names.append(n)
        if t == TensorProto.BOOL:
            inputs.append(vi(n, shape, t))
        elif init and j == len(types) - 1:
            inits.append(numpy_helper.from_array(np.ones(shape, np.float16 if t == H else np.float32), n))
        else:
            inputs.append(vi(n, shape, t))
    return model([helper.make_node(op, names, ["y"], name=name, **attrs)], inputs=inputs, inits=inits)


def nonzero() -> onnx.ModelProto:
    """x → NonZero → Cast: TensorRT for RTX's parser says it supports NonZero, then fails to find its plugin."""
    nodes = [helper.make_node("NonZero", ["x"], ["nz"], name="nz"),
             helper.make_node("Cast", ["nz"], ["y"], to=F, name="to_float")]
    return model(nodes, inputs=[vi("x", [4, 4])], outputs=[vi("y", [2, "n"])])
