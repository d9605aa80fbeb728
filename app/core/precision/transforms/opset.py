"""Raising a model's opset, so BF16 has kernels to convert to: most ops admit bfloat16 only from opset 22 (Conv,
Relu, MaxPool…), and a BF16 plan on an opset-11 convnet otherwise converts nothing.

ONNX's version converter does the work; the result is used only when it passes ONNX's full check, keeps every
node of the model (same plan keys, same ops) and, given sample inputs, gives the FP32 outputs the model gives.
"""

from __future__ import annotations

import numpy as np
import onnx

from app.core.errors import TrtlabError
from app.core.precision.plan_keys import node_keys
from app.core.precision.transforms.half_rules import BF16_OPSET


class OpsetRaiseError(TrtlabError):
    title = "Cannot raise the model's opset"


def default_opset(model: onnx.ModelProto) -> int:
    return next((int(o.version) for o in model.opset_import if (o.domain or "") in ("", "ai.onnx")), 1)


def raise_opset(model: onnx.ModelProto, target: int = BF16_OPSET,
                feeds: list[dict[str, np.ndarray]] | None = None) -> tuple[onnx.ModelProto, str]:
    """The model at opset `target` and a note saying so; the model itself (and "") when it is there already.

    Raises :class:`OpsetRaiseError` when the converter fails, its result is not valid, it replaced a node, or
    (with `feeds`) the FP32 outputs differ."""
    current = default_opset(model)
    if current >= target:
        return model, ""
    keep = (f"Keep the model at opset {current} (BF16 then converts only the ops with bf16 kernels there), or "
            f"export it at opset {target}.")
    try:
        raised = onnx.version_converter.convert_version(model, target)
        onnx.checker.check_model(raised, full_check=True)
    except Exception as exc:  # noqa: BLE001 - the converter and checker raise several unrelated classes
        first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        raise OpsetRaiseError(f"ONNX's version converter cannot take this model from opset {current} to {target}: "
                              f"{first}", fix=keep) from exc
    # The plan names nodes by key: a converter that replaced a node would leave the plan pointing at nothing.
    before = list(zip(node_keys(model.graph), (n.op_type for n in model.graph.node), strict=True))
    after = set(zip(node_keys(raised.graph), (n.op_type for n in raised.graph.node), strict=True))
    lost = [f"{key} ({op})" for key, op in before if (key, op) not in after]
    if lost:
        nodes = "node" if len(lost) == 1 else "nodes"
        raise OpsetRaiseError(f"Raising the opset from {current} to {target} replaces {len(lost)} {nodes} "
                              f"({', '.join(lost[:3])}{'…' if len(lost) > 3 else ''}).", fix=keep)
    if feeds:
        _same_outputs(model, raised, feeds, current, target, keep)
    checked = ", FP32 outputs checked equal" if feeds else ""
    return raised, f"opset raised from {current} to {target} (ONNX's version converter{checked})"


def _same_outputs(model: onnx.ModelProto, raised: onnx.ModelProto, feeds: list[dict[str, np.ndarray]],
                  current: int, target: int, keep: str) -> None:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    a = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    b = ort.InferenceSession(raised.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    for feed in feeds:
        for out, x, y in zip(a.get_outputs(), a.run(None, feed), b.run(None, feed), strict=True):
            # Rewritten ops may reorder a float sum: agreement to FP32 rounding, not bit for bit.
            if x.shape != y.shape or not np.allclose(x, y, rtol=1e-5, atol=1e-5, equal_nan=True):
                raise OpsetRaiseError(f"At opset {target} the model's output '{out.name}' differs from opset "
                                      f"{current}'s (ONNX's version converter changed what it computes).", fix=keep)
