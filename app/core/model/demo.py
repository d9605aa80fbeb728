"""The demo models: the one trtlab generates itself (a small residual image classifier with seeded weights)
and the one it ships, u2netp (U²-Net-p salient object segmentation, 4.6 MB, trained weights; origin and
licences in app/resources/models/LICENSE.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from app.core.errors import ModelNotFoundError
from app.core.fileio import atomic_write_bytes

DEMO_NAME = "trtlab_demo_resnet.onnx"
BUNDLED_DEMO = Path(__file__).resolve().parents[2] / "resources" / "models" / "u2netp.onnx"


def bundled_demo_model() -> Path:
    """The path of the bundled demo model, u2netp.onnx (input 1×3×320×320, seven 1×1×320×320 outputs).

    Raises :class:`ModelNotFoundError` with a fix when the file is missing (a broken or partial install).
    """
    if not BUNDLED_DEMO.is_file():
        raise ModelNotFoundError(f"The bundled demo model is missing: '{BUNDLED_DEMO}' does not exist.",
                                 fix="Reinstall trtlab (pip install --force-reinstall trtlab, or pip install -e . "
                                     "in a checkout), or open a model of your own.")
    return BUNDLED_DEMO


def _conv(rng: np.random.Generator, inits: list[TensorProto], name: str, cin: int, cout: int,
          k: int) -> tuple[str, str]:
    w = rng.normal(0.0, np.sqrt(2.0 / (cin * k * k)), size=(cout, cin, k, k)).astype(np.float32)
    b = rng.normal(0.0, 0.01, size=(cout,)).astype(np.float32)
    inits += [numpy_helper.from_array(w, f"{name}.weight"), numpy_helper.from_array(b, f"{name}.bias")]
    return f"{name}.weight", f"{name}.bias"


def _bn(rng: np.random.Generator, inits: list[TensorProto], name: str, c: int) -> list[str]:
    arrays = {
        "scale": rng.uniform(0.8, 1.2, c), "bias": rng.normal(0, 0.05, c),
        "mean": rng.normal(0, 0.1, c), "var": rng.uniform(0.5, 1.5, c),
    }
    names = []
    for key, arr in arrays.items():
        inits.append(numpy_helper.from_array(arr.astype(np.float32), f"{name}.{key}"))
        names.append(f"{name}.{key}")
    return names


def build_demo_model(seed: int = 0, classes: int = 10) -> onnx.ModelProto:
    """A ResNet-style network: stem, three residual stages, global pooling, classifier, softmax."""
    rng = np.random.default_rng(seed)
    inits: list[TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def conv_bn(x: str, name: str, cin: int, cout: int, k: int, stride: int, relu: bool) -> str:
        w, b = _conv(rng, inits, f"{name}.conv", cin, cout, k)
        nodes.append(helper.make_node("Conv", [x, w, b], [f"{name}.conv_out"], name=f"{name}.conv",
                                      kernel_shape=[k, k], strides=[stride, stride],
                                      pads=[k // 2] * 4))
        nodes.append(helper.make_node("BatchNormalization", [f"{name}.conv_out", *_bn(rng, inits, f"{name}.bn", cout)],
                                      [f"{name}.bn_out"], name=f"{name}.bn"))
        if not relu:
            return f"{name}.bn_out"
        nodes.append(helper.make_node("Relu", [f"{name}.bn_out"], [f"{name}.relu_out"], name=f"{name}.relu"))
        return f"{name}.relu_out"

    x = conv_bn("image", "stem", 3, 16, 3, 1, True)
    nodes.append(helper.make_node("MaxPool", [x], ["stem.pool_out"], name="stem.pool",
                                  kernel_shape=[2, 2], strides=[2, 2]))
    x, cin = "stem.pool_out", 16
    for stage, cout in enumerate((16, 32, 64), start=1):
        stride = 1 if stage == 1 else 2
        y = conv_bn(x, f"stage{stage}.a", cin, cout, 3, stride, True)
        y = conv_bn(y, f"stage{stage}.b", cout, cout, 3, 1, False)
        skip = x if (cin == cout and stride == 1) else conv_bn(x, f"stage{stage}.down", cin, cout, 1, stride, False)
        nodes.append(helper.make_node("Add", [y, skip], [f"stage{stage}.sum"], name=f"stage{stage}.add"))
        nodes.append(helper.make_node("Relu", [f"stage{stage}.sum"], [f"stage{stage}.out"], name=f"stage{stage}.relu"))
        x, cin = f"stage{stage}.out", cout
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["pooled"], name="head.pool"))
    nodes.append(helper.make_node("Flatten", ["pooled"], ["features"], name="head.flatten", axis=1))
    fc = rng.normal(0, np.sqrt(1.0 / cin), size=(classes, cin)).astype(np.float32)
    inits += [numpy_helper.from_array(fc, "head.fc.weight"),
              numpy_helper.from_array(np.zeros(classes, np.float32), "head.fc.bias")]
    nodes.append(helper.make_node("Gemm", ["features", "head.fc.weight", "head.fc.bias"], ["logits"],
                                  name="head.fc", transB=1))
    nodes.append(helper.make_node("Softmax", ["logits"], ["probabilities"], name="head.softmax", axis=1))
    graph = helper.make_graph(
        nodes, "trtlab_demo",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, 64, 64])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["batch", classes])],
        initializer=inits)
    model = helper.make_model(graph, producer_name="trtlab", producer_version="demo",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10  # readable by every onnxruntime release trtlab supports
    model.doc_string = "A small residual image classifier generated by trtlab (seeded random weights)."
    return model


def write_demo_model(folder: Path) -> Path:
    """Write the demo model into `folder` (atomically) and return its path."""
    path = Path(folder) / DEMO_NAME
    atomic_write_bytes(path, build_demo_model().SerializeToString())
    return path
