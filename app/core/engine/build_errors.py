"""What a failed TensorRT build means, from the errors its logger reported, for the person who asked for it.

``build_serialized_network`` returns None on failure and says why only in the log. :func:`explain_build_failure`
takes the ERROR lines of one build and returns a message (the first error, cleaned of source locations, plus
what it means) and a fix. The known causes were met on real models with TensorRT for RTX 1.7 (TENSORRT_RTX.md):
same-named input dims with different sizes, a Squeeze without axes over a dynamic dim, Turing (SM75) targets and
BF16 or FP32 GEMMs, inputs without a profile, and internal errors of the optimizer. Pure logic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_LOCATION = re.compile(r"\s*In \w+ at /?_?src/[^\s)]+|\s*\[[\w.]+::\w+::\d+\]")
_DIM_NAME = re.compile(r"\((\S*): Input dimensions with this name have different constant values")

# (pattern in the error text, what it means, the fix); the first that matches explains the build.
_CAUSES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"Input dimensions with this name have different constant values", re.I),
     "Inputs whose dims share one dim_param name{dim} are one dimension to TensorRT, so they must have the same "
     "size; the shapes or profile given make them differ.",
     "Give those dims equal sizes (e.g. a square H×W), or rename the dim_param in the model so the dims are "
     "independent."),
    (re.compile(r"without an axes input requires dimension", re.I),
     "A Squeeze without axes reads a dynamic dim: TensorRT fixes the output rank when it builds, so it cannot "
     "tell whether that dim (1 at run time here) is squeezed.",
     "Export the model with Squeeze axes given, or build with that dim greater than 1."),
    (re.compile(r"FP32 GEMM is not supported", re.I),
     "Turing (compute capability 7.5) cannot run FP32 matrix multiplies (MatMul/Gemm) in TensorRT for RTX.",
     "Leave 7.5 out of --target-cc, or run the MatMul/Gemm nodes in FP16."),
    (re.compile(r"HW-specific datatypes|sm75.*b16|b16.*sm75", re.I),
     "A target GPU cannot compute in a data type of the graph (BF16 needs compute capability 8.0 or later; FP8 "
     "8.9 or later).",
     "Leave the older compute capabilities out of --target-cc, or plan those nodes in FP16."),
    (re.compile(r"no optimization profile has been defined", re.I),
     "The model has dynamic inputs and no optimization profile was given.",
     "Give the input shapes (--shapes) or a range (--profile NAME:MIN:OPT:MAX)."),
    (re.compile(r"Internal Error", re.I),
     "TensorRT failed inside its optimizer: a limitation of this TensorRT on this graph, not a mistake in the "
     "settings.",
     "Check the model with the readiness check (Loop and If bodies are frequent causes), try other shapes or "
     "precisions, or report the graph to NVIDIA."),
)
_DEFAULT_FIX = ("Look for the first error in the log; unsupported layers, out-of-memory and profile problems are the "
                "usual causes.")


def clean(line: str) -> str:
    """An error line without TensorRT's source locations ("In getBounds at /_src/…cpp:4433")."""
    text = _LOCATION.sub("", line).strip()
    return re.sub(r"\s{2,}", " ", text)


def explain_build_failure(errors: Sequence[str]) -> tuple[str, str]:
    """(message, fix) for a build whose logger reported ``errors`` (its ERROR and INTERNAL_ERROR lines)."""
    lines = [clean(e) for e in errors if e and e.strip()]
    if not lines:
        return ("TensorRT could not build the engine and reported no error (its log above may say more).",
                _DEFAULT_FIX)
    text = "\n".join(errors)
    first = lines[0]
    for pattern, meaning, fix in _CAUSES:
        if pattern.search(text):
            m = _DIM_NAME.search(text)
            meaning = meaning.replace("{dim}", f" ('{m.group(1)}')" if m else "")
            return f"TensorRT could not build the engine: {first} — {meaning}", fix
    return f"TensorRT could not build the engine: {first}", _DEFAULT_FIX
