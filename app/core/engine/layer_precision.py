"""The precision an engine layer ran in, from the data types TensorRT reports for its tensors.

Pure logic: nothing here imports tensorrt. TensorRT's format and data-type strings (``"Half"``, ``"Row major
linear FP32"``, ``"kINT8"``...) are normalized by :func:`normalize_dtype` to ``"fp32"``, ``"fp16"``, ``"int8"``...

**Precision that ran** (:func:`ran_precision`), from the layer's tensor data types:

1. A quantized input (INT8, FP8, INT4, FP4) means a quantized kernel: that type. Its output may be float
   when a DequantizeLinear was fused into it.
2. Otherwise the float type of the inputs (``fp32``, ``fp16``, ``bf16``; TF32 is invisible here and shows
   as ``fp32``); ``"mixed"`` when the float inputs disagree. A float input with a quantized output is a
   quantize step that computes in the input's float type.
3. A layer without float or quantized inputs (constants) takes its outputs' type by the same rules.
4. Integer and bool tensors (indices, masks, shape values) are ignored when float data is present; a layer
   that moves only integers or bools reports that type (``"int32"``, ``"int64"``, ``"bool"``...).
5. Nothing known (names only, or ``"N/A due to dynamic shapes"``): ``"unknown"``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from app.core.engine.engine_layers import TensorDesc

__all__ = ["FLOATS", "INTEGERS", "QUANTIZED", "combine_precisions", "normalize_dtype", "ran_precision"]

QUANTIZED = ("int8", "fp8", "int4", "fp4")
FLOATS = ("fp32", "fp16", "bf16", "fp64")
INTEGERS = ("int32", "int64", "int16", "uint8", "uint16", "uint32", "uint64", "bool", "e8m0")

# Words of TensorRT's format and data-type strings -> this module's dtype names. The first word that names a
# type decides, so "Row major linear FP32 format (kLINEAR)" is fp32 and "Thirty-two wide ... Int8 format." int8.
_DTYPE_WORDS = {
    "fp32": "fp32", "float": "fp32", "float32": "fp32", "kfloat": "fp32",
    "fp16": "fp16", "half": "fp16", "float16": "fp16", "khalf": "fp16",
    "bf16": "bf16", "bfloat16": "bf16", "kbf16": "bf16",
    "int8": "int8", "kint8": "int8",
    "fp8": "fp8", "e4m3": "fp8", "float8": "fp8", "kfp8": "fp8",
    "int4": "int4", "kint4": "int4",
    "fp4": "fp4", "e2m1": "fp4", "kfp4": "fp4",
    "e8m0": "e8m0", "ke8m0": "e8m0",
    "int32": "int32", "kint32": "int32",
    "int64": "int64", "kint64": "int64",
    "int16": "int16",
    "uint8": "uint8", "kuint8": "uint8",
    "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
    "bool": "bool", "kbool": "bool",
    "double": "fp64", "fp64": "fp64",
}


def normalize_dtype(text: object) -> str:
    """A TensorRT data-type or format string ("Half", "Row major linear FP32", "kINT8"...) -> "fp16", "fp32"...

    Returns "unknown" for "N/A due to dynamic shapes", "Unknown format", "None" and anything unrecognised.
    """
    if text is None:
        return "unknown"
    s = str(text).strip()
    if not s:
        return "unknown"
    for word in re.findall(r"[A-Za-z0-9]+", s):
        hit = _DTYPE_WORDS.get(word.lower())
        if hit:
            return hit
    return "unknown"


def ran_precision(inputs: Sequence[TensorDesc], outputs: Sequence[TensorDesc]) -> str:
    """The precision a layer ran in, from its tensors' data types (rules in the module docstring)."""
    ins = [t.dtype for t in inputs if t.dtype != "unknown"]
    outs = [t.dtype for t in outputs if t.dtype != "unknown"]
    if not ins and not outs:
        return "unknown"
    quantized_in = sorted({d for d in ins if d in QUANTIZED})
    if quantized_in:
        return quantized_in[0] if len(quantized_in) == 1 else "mixed"
    for group in (ins, outs):
        floats = sorted({d for d in group if d in FLOATS})
        if floats:
            return floats[0] if len(floats) == 1 else "mixed"
    quantized_out = sorted({d for d in outs if d in QUANTIZED})
    if quantized_out:
        return quantized_out[0] if len(quantized_out) == 1 else "mixed"
    rest = sorted(set(ins) | set(outs))
    return rest[0] if len(rest) == 1 else "mixed"



def combine_precisions(precisions: Iterable[str]) -> str:
    """One precision for an ONNX node that ran in several engine layers: integer-only helpers don't count."""
    known = {p for p in precisions if p != "unknown"}
    numeric = {p for p in known if p not in INTEGERS}
    pick = numeric or known
    if not pick:
        return "unknown"
    return next(iter(pick)) if len(pick) == 1 else "mixed"
