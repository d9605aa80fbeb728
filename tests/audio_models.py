"""Small audio models built with onnx.helper for the tests: a waveform denoiser (a learned filter bank, a mask, the
inverse filter bank and a residual Add, as Conv-TasNet-style denoisers are made) and a text-to-speech-like model
(phoneme ids → a waveform)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SAMPLES = 16000
KERNEL, STRIDE, FILTERS = 32, 16, 24


def denoiser_model(path: Path, samples: int = SAMPLES, name: str = "enhanced", rate: int | None = None,
                   seed: int = 0) -> Path:
    """noisy [1, T] → [1, 1, T]: encoder Conv (24 filters of 32 taps, stride 16), a sigmoid mask from a 1×1 Conv,
    the masked code decoded by a ConvTranspose, plus half the input (a residual Add last). With `rate`, the model's
    metadata states its sample rate."""
    rng = np.random.default_rng(seed)
    enc = (rng.standard_normal((FILTERS, 1, KERNEL)) / np.sqrt(KERNEL)).astype(np.float32)
    mask_w = (rng.standard_normal((FILTERS, FILTERS, 1)) / np.sqrt(FILTERS)).astype(np.float32)
    dec = (rng.standard_normal((FILTERS, 1, KERNEL)) / np.sqrt(FILTERS * KERNEL)).astype(np.float32)
    nodes = [
        helper.make_node("Unsqueeze", ["noisy", "axes1"], ["x3"], name="unsqueeze"),
        helper.make_node("Conv", ["x3", "enc_w"], ["code"], strides=[STRIDE], name="encoder"),
        helper.make_node("Relu", ["code"], ["code_r"], name="enc_relu"),
        helper.make_node("Conv", ["code_r", "mask_w"], ["mask_logits"], name="mask_conv"),
        helper.make_node("Sigmoid", ["mask_logits"], ["mask"], name="mask"),
        helper.make_node("Mul", ["code_r", "mask"], ["masked"], name="apply_mask"),
        helper.make_node("ConvTranspose", ["masked", "dec_w"], ["decoded"], strides=[STRIDE], name="decoder"),
        helper.make_node("Mul", ["x3", "half"], ["skip"], name="skip_scale"),
        helper.make_node("Add", ["decoded", "skip"], [name], name="residual"),
    ]
    inits = [numpy_helper.from_array(np.array([1], np.int64), "axes1"), numpy_helper.from_array(enc, "enc_w"),
             numpy_helper.from_array(mask_w, "mask_w"), numpy_helper.from_array(dec, "dec_w"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half")]
    graph = helper.make_graph(nodes, "denoiser", [helper.make_tensor_value_info("noisy", TensorProto.FLOAT,
                                                                                 [1, samples])],
                              [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 1, samples])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10,
                              producer_name="trtlab-tests")
    if rate:
        helper.set_model_props(model, {"sample_rate": str(rate)})
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def tts_model(path: Path, phonemes: int = 20, hop: int = 400, vocab: int = 64, seed: int = 0, name: str = "output"
              ) -> Path:
    """ids int64 [1, L] → [1, 1, L·hop]: each phoneme's id picks a learned frame of `hop` samples (a Gather from a
    table), the frames laid end to end and squashed by a Tanh, as a vocoder's last layer does."""
    rng = np.random.default_rng(seed)
    table = (0.3 * rng.standard_normal((vocab, hop))).astype(np.float32)
    nodes = [helper.make_node("Gather", ["table", "ids"], ["frames"], axis=0, name="frames"),
             helper.make_node("Reshape", ["frames", "shape"], ["flat"], name="lay_out"),
             helper.make_node("Tanh", ["flat"], [name], name="squash")]
    inits = [numpy_helper.from_array(table, "table"),
             numpy_helper.from_array(np.array([1, 1, phonemes * hop], np.int64), "shape")]
    graph = helper.make_graph(nodes, "tts", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, phonemes])],
                              [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 1, phonemes * hop])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10,
                              producer_name="trtlab-tests")
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path
