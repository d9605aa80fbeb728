"""Fold Constant-node weights into initializers, so converters and quantizers see them as weights.

paddle2onnx exports keep every weight in a Constant node; quantizers then treat them as activations and
FP16 converters convert them even on blocked nodes. Folding leaves ONNX Runtime's outputs bit-identical.
"""

from __future__ import annotations

import onnx

from app.core.model import constant_tensor


def fold_constants(model: onnx.ModelProto) -> tuple[onnx.ModelProto, int]:
    """A copy of `model` with top-level Constant nodes turned into initializers; returns it and the count.

    Constants inside If/Loop/Scan bodies stay: an initializer there would be a different scope.
    Graph outputs produced by a Constant keep their node, since an initializer cannot be a graph output
    in every IR version. Empty tensors (a Resize's unused roi or scales) keep their node too: they are no
    weight, and TensorRT's parser warns about every zero-size initializer.
    """
    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = out.graph
    outputs = {o.name for o in g.output}
    existing = {t.name for t in g.initializer} | {i.name for i in g.input}
    keep, folded = [], 0
    for node in g.node:
        tensor = constant_tensor(node) if node.op_type == "Constant" and len(node.output) == 1 else None
        name = node.output[0] if node.output else ""
        if tensor is None or name in outputs or name in existing or not name or 0 in tensor.dims:
            keep.append(node)
            continue
        init = g.initializer.add()
        init.CopyFrom(tensor)
        init.name = name
        if out.ir_version < 4:  # before IR 4 every initializer must also be declared as a graph input
            g.input.append(onnx.helper.make_tensor_value_info(name, init.data_type, list(init.dims)))
        folded += 1
    del g.node[:]
    g.node.extend(keep)
    return out, folded
