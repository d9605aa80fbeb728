"""TensorRT's data-type strings normalized, and the precision a layer ran in from its tensors' types."""

from __future__ import annotations

import pytest

from app.core.engine.engine_layers import TensorDesc
from app.core.engine.layer_precision import normalize_dtype, ran_precision


@pytest.mark.parametrize("text, dtype", [
    ("Row major linear FP32", "fp32"), ("Float", "fp32"), ("Row major linear FP32 format (kLINEAR)", "fp32"),
    ("Half", "fp16"), ("Channel major FP16 format where channel % 8 == 0", "fp16"),
    ("Thirty-two wide channel vectorized row major Int8 format.", "int8"), ("Int8", "int8"),
    ("Row major linear BFloat16 format", "bf16"), ("BFloat16", "bf16"), ("Row major linear FP8 format", "fp8"),
    ("Row major linear Int32", "int32"), ("Row major linear Int64 format", "int64"),
    ("Row major linear BOOL", "bool"), ("Row major linear UInt8 format", "uint8"), ("kHALF", "fp16"),
    ("N/A due to dynamic shapes", "unknown"), ("Unknown format", "unknown"), ("None", "unknown"), ("", "unknown"),
    (None, "unknown"),
])
def test_normalize_dtype(text, dtype):
    assert normalize_dtype(text) == dtype


def _t(*dtypes: str) -> tuple[TensorDesc, ...]:
    return tuple(TensorDesc(f"t{i}", d) for i, d in enumerate(dtypes))


@pytest.mark.parametrize("ins, outs, precision", [
    (("fp16",), ("fp16",), "fp16"),
    (("bf16",), ("bf16",), "bf16"),
    (("int8",), ("fp16",), "int8"),             # INT8 kernel, dequantize fused at the output
    (("int8", "fp16"), ("fp16",), "int8"),      # INT8 conv + FP16 residual
    (("fp8",), ("fp16",), "fp8"),
    (("int8", "fp8"), ("fp16",), "mixed"),
    (("fp16",), ("int8",), "fp16"),             # a quantize step computes in its input's type
    (("fp16",), ("fp32",), "fp16"),
    (("fp16", "fp32"), ("fp32",), "mixed"),
    (("fp32", "int32"), ("fp32",), "fp32"),     # Gather: indices do not count
    (("bool", "fp16"), ("fp16",), "fp16"),      # masked softmax
    ((), ("fp16",), "fp16"),                    # constant
    (("int64",), ("int64",), "int64"),          # shape arithmetic
    (("int32",), ("int64",), "mixed"),
    (("unknown",), ("unknown",), "unknown"),
])
def test_ran_precision_rules(ins, outs, precision):
    assert ran_precision(_t(*ins), _t(*outs)) == precision
