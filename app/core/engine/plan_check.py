"""The plan check: ONNX nodes whose engine precision differs from the precision plan, as warnings or explained infos.

Pure logic: it compares :attr:`app.core.engine.onnx_map.OnnxMapping.precision` with a plan's resolved precisions;
the rules are in :func:`plan_mismatches`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.core.engine.layer_precision import INTEGERS, QUANTIZED
from app.core.engine.onnx_map import OnnxMapping
from app.core.model import QUANTIZABLE_OPS

__all__ = ["Mismatch", "plan_mismatches"]

QDQ_OPS = frozenset({"QuantizeLinear", "DequantizeLinear"})


@dataclass(frozen=True)
class Mismatch:
    key: str
    planned: str
    ran: str
    severity: str                # "warning" (the engine did not do what the plan asked) | "info" (explained)
    message: str
    layers: tuple[str, ...] = ()


_LABEL = {"fp32": "FP32", "fp16": "FP16", "bf16": "BF16", "int8": "INT8", "fp8": "FP8", "int4": "INT4",
          "fp4": "FP4", "fp64": "FP64"}


_BITS = {"fp64": 64, "fp32": 32, "fp16": 16, "bf16": 16}


def _label(p: str) -> str:
    return _LABEL.get(p, p)


def plan_mismatches(ran: Mapping[str, str], planned: Mapping[str, str], *, mapping: OnnxMapping | None = None,
                    op_types: Mapping[str, str] | None = None, include_missing: bool = False) -> list[Mismatch]:
    """Nodes whose engine precision differs from the plan, warnings first.

    ``ran`` is :attr:`OnnxMapping.precision`; ``planned`` maps node keys to "fp32"/"fp16"/"bf16"/"int8" (or
    "fixed", skipped), e.g. ``{r.key: r.precision for r in plan.resolve(graph)}``. Rules:

    * Skipped: "fixed" nodes (Q/DQ, integer and shape paths), nodes whose engine precision is "unknown" (no
      DETAILED verbosity) or integer-only, and nodes no engine layer ran (reported as "info" with
      ``include_missing``: folded at build time, eliminated, or inside an unlisted Myelin region).
    * Planned float, ran in another float type: warning (FP16 planned but FP32 ran costs speed; FP32 planned
      but FP16 ran costs accuracy).
    * Planned float, ran INT8 (or another quantized type): info when it shares an engine layer with a node
      planned INT8 or a Q/DQ node (an activation or residual fused into the quantized kernel takes its
      precision), else warning.
    * Planned INT8, ran float: info when the op has no INT8 kernel of its own (not Conv, ConvTranspose,
      MatMul, Gemm, Add or pooling; known only through ``op_types``): such nodes follow the layer they are
      fused into. Otherwise warning: TensorRT did not fuse the Q/DQ into an INT8 kernel.
    * Ran "mixed" (its layer reads tensors of several float types): info.
    """
    layers_of = mapping.layers if mapping is not None else {}
    nodes_of = mapping.nodes if mapping is not None else {}
    ops = op_types or {}
    found: list[Mismatch] = []

    def neighbours(key: str) -> list[str]:
        out: list[str] = []
        for layer in layers_of.get(key, ()):
            out.extend(k for k in nodes_of.get(layer, ()) if k != key)
        return list(dict.fromkeys(out))

    for key, want in planned.items():
        if want not in ("fp32", "fp16", "bf16", "int8"):
            continue
        layers = tuple(layers_of.get(key, ()))
        got = ran.get(key)
        if got is None:
            if include_missing:
                found.append(Mismatch(key, want, "", "info",
                                      f"{key}: planned {_label(want)}, but no engine layer ran it (folded at "
                                      "build time, eliminated, or inside a Myelin region whose members are not "
                                      "listed).", layers))
            continue
        if got == want or got == "unknown" or got in INTEGERS:
            continue
        where = f" (engine layer: {', '.join(layers)})" if layers else ""
        if got == "mixed":
            found.append(Mismatch(key, want, got, "info",
                                  f"{key}: planned {_label(want)}; its engine layer reads tensors of several "
                                  f"precisions, check it{where}.", layers))
        elif want == "int8":
            op = ops.get(key, "")
            if got not in QUANTIZED and op and op not in QUANTIZABLE_OPS:
                found.append(Mismatch(key, want, got, "info",
                                      f"{key}: planned INT8, ran {_label(got)}: {op} has no INT8 kernel of its "
                                      f"own and follows the layer it is fused into{where}.", layers))
            else:
                found.append(Mismatch(key, want, got, "warning",
                                      f"{key}: planned INT8 but ran {_label(got)}: TensorRT did not run it in an "
                                      f"INT8 kernel; check the Q/DQ around it{where}.", layers))
        elif got in QUANTIZED:
            near = neighbours(key)
            quantized = [k for k in near if planned.get(k) == "int8"] + [k for k in near if ops.get(k) in QDQ_OPS]
            if quantized:
                found.append(Mismatch(key, want, got, "info",
                                      f"{key}: planned {_label(want)}, ran {_label(got)}: fused into the "
                                      f"quantized kernel of {quantized[0]}{where}.", layers))
            else:
                found.append(Mismatch(key, want, got, "warning",
                                      f"{key}: planned {_label(want)} but ran {_label(got)}, with no "
                                      f"INT8-planned node in its layer{where}.", layers))
        else:
            wider, narrower = _BITS.get(got, 0) > _BITS.get(want, 0), _BITS.get(got, 0) < _BITS.get(want, 0)
            why = ("a wider type than planned, correct but slower" if wider else
                   "a narrower type than planned, accuracy may suffer" if narrower else
                   "another 16-bit type, FP16 and BF16 round differently")
            found.append(Mismatch(key, want, got, "warning",
                                  f"{key}: planned {_label(want)} but ran {_label(got)}: {why}{where}.", layers))
    found.sort(key=lambda m: 0 if m.severity == "warning" else 1)
    return found
