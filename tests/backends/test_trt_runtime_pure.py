"""The parts of the TensorRT runtime that need no TensorRT: moving BF16/FP8 tensors as raw bits."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from app.backends.trt_runtime import decode, encode, tensor_type


def test_bf16_bits_decode_exactly():
    values = np.array([0.0, 1.0, -2.5, 3.140625, 65504.0, 1e-30, np.inf, -np.inf], np.float32)
    bits = values.astype(ml_dtypes.bfloat16).view(np.uint16)
    out = decode(bits, "BF16", values.shape)
    assert out.dtype == np.float32
    assert np.array_equal(out, values.astype(ml_dtypes.bfloat16).astype(np.float32))
    assert np.isnan(decode(np.array([0x7FC0], np.uint16), "BF16", (1,))).all()


def test_bf16_and_fp8_round_trip_through_encode():
    x = np.linspace(-4, 4, 33, dtype=np.float32).reshape(3, 11)
    raw = encode(x, "BF16")
    assert raw.dtype == np.uint8 and raw.nbytes == x.size * 2
    assert np.allclose(decode(raw, "BF16", x.shape), x, rtol=1 / 128)
    raw8 = encode(x, "FP8")
    assert raw8.dtype == np.uint8 and raw8.nbytes == x.size
    assert np.allclose(decode(raw8, "FP8", x.shape), x, rtol=1 / 8, atol=1 / 64)


def test_plain_types_pass_through():
    x = np.arange(6, dtype=np.int64).reshape(2, 3)
    raw = encode(x.T, "INT64")
    assert raw.flags.c_contiguous and raw.nbytes == 48
    assert np.array_equal(decode(raw, "INT64", (3, 2)), x.T)


def test_tensor_type_names():
    assert tensor_type("DataType.BF16") == "BF16" and tensor_type("HALF") == "HALF"
