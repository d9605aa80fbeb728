"""Values of small shape-carrying tensors (shape vectors, axes, scalars), computed with numpy.

Exporters compute Reshape targets, Resize sizes and Pad amounts from ``Shape`` of an earlier tensor. Once
that tensor's dims are known, these ops give plain numbers; :func:`evaluate_node` computes them for the
ops such arithmetic uses, and for nothing large: a value over :data:`MAX_VALUE_ELEMENTS` is never built.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence

import numpy as np
import onnx
from onnx import TypeProto, helper, numpy_helper

from app.core.model.onnx_walk import constant_tensor

log = logging.getLogger(__name__)

MAX_VALUE_ELEMENTS = 4096  # shape vectors, axes and scalars; never activations

Arrays = list[np.ndarray | None]


def is_static_type(t: TypeProto | None) -> bool:
    """A tensor type whose rank and every dim are known numbers."""
    if t is None or t.WhichOneof("value") != "tensor_type" or not t.tensor_type.HasField("shape"):
        return False
    return all(d.HasField("dim_value") for d in t.tensor_type.shape.dim)


def _dims(t: TypeProto) -> tuple[int, ...]:
    return tuple(int(d.dim_value) for d in t.tensor_type.shape.dim)


def known_dims(t: TypeProto | None) -> int:
    if t is None or t.WhichOneof("value") != "tensor_type" or not t.tensor_type.HasField("shape"):
        return -1
    return sum(1 for d in t.tensor_type.shape.dim if d.HasField("dim_value"))


def type_of(value: np.ndarray) -> TypeProto | None:
    try:
        elem = helper.np_dtype_to_tensor_dtype(value.dtype)
    except (KeyError, TypeError, ValueError):
        return None
    return helper.make_tensor_type_proto(elem, value.shape)


def _attrs(node: onnx.NodeProto) -> dict[str, object]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute
            if a.type not in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)}


def _int_list(v: np.ndarray | None) -> list[int] | None:
    return None if v is None else [int(x) for x in np.asarray(v).reshape(-1)]


def _axes(attrs: dict[str, object], inputs: Arrays, index: int, opset: int, since: int) -> list[int] | None:
    """Axes given as an attribute before opset ``since`` and as input ``index`` from it on."""
    if opset < since:
        ax = attrs.get("axes")
        return None if ax is None else [int(a) for a in ax]  # type: ignore[union-attr]
    return _int_list(inputs[index]) if len(inputs) > index else None


def _unsqueeze(x: np.ndarray, axes: list[int]) -> np.ndarray:
    rank = x.ndim + len(axes)
    for a in sorted(a % rank for a in axes):
        x = np.expand_dims(x, a)
    return x


def _slice(x: np.ndarray, starts: list[int], ends: list[int], axes: list[int] | None,
           steps: list[int] | None) -> np.ndarray:
    index: list[slice] = [slice(None)] * x.ndim
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps if steps is not None else [1] * len(starts)
    for s, e, a, k in zip(starts, ends, axes, steps, strict=True):
        index[a % x.ndim] = slice(s, e, k)  # numpy's clamping is ONNX's
    return x[tuple(index)]


def _reshape(x: np.ndarray, shape: list[int], allowzero: int) -> np.ndarray:
    target = [x.shape[i] if d == 0 and not allowzero else d for i, d in enumerate(shape)]
    return x.reshape(target)


def _reduce(fn: Callable[..., np.ndarray]) -> Callable[[Arrays, dict[str, object], int, int], Arrays]:
    def run(inputs: Arrays, attrs: dict[str, object], opset: int, since: int) -> Arrays:
        x = inputs[0]
        axes = _axes(attrs, inputs, 1, opset, since)
        if not axes and attrs.get("noop_with_empty_axes", 0):
            return [x]
        keep = bool(attrs.get("keepdims", 1))
        return [np.asarray(fn(x, axis=None if not axes else tuple(axes), keepdims=keep), dtype=x.dtype)]
    return run


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.issubdtype(a.dtype, np.integer):
        return np.trunc(np.true_divide(a, b)).astype(a.dtype)  # C semantics, as runtimes divide ints
    return np.asarray(np.true_divide(a, b), dtype=a.dtype)


def _range(start: np.ndarray, limit: np.ndarray, delta: np.ndarray) -> np.ndarray | None:
    count = int(max(np.ceil((limit - start) / delta), 0))
    if count > MAX_VALUE_ELEMENTS:
        return None
    return np.arange(count, dtype=start.dtype) * delta + start


def _constant_of_shape(shape: list[int], attrs: dict[str, object]) -> np.ndarray | None:
    if int(np.prod(shape, dtype=np.int64)) > MAX_VALUE_ELEMENTS:
        return None
    value = attrs.get("value")
    fill = numpy_helper.to_array(value).reshape(-1) if value is not None else np.zeros(1, np.float32)
    return np.full(shape, fill[0], dtype=fill.dtype)


def _expand(x: np.ndarray, shape: list[int]) -> np.ndarray | None:
    out = np.broadcast_shapes(x.shape, tuple(shape))
    if int(np.prod(out, dtype=np.int64)) > MAX_VALUE_ELEMENTS:
        return None
    return np.broadcast_to(x, out).copy()


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray], keep_dtype: bool = True) -> Callable[..., Arrays]:
    def run(inputs: Arrays, _attrs: dict[str, object], _opset: int, _since: int) -> Arrays:
        a, b = inputs[0], inputs[1]
        out = np.asarray(fn(a, b))
        return [out.astype(a.dtype) if keep_dtype else out]
    return run


def _unary(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., Arrays]:
    def run(inputs: Arrays, _attrs: dict[str, object], _opset: int, _since: int) -> Arrays:
        return [np.asarray(fn(inputs[0])).astype(inputs[0].dtype)]
    return run


def _variadic(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., Arrays]:
    def run(inputs: Arrays, _attrs: dict[str, object], _opset: int, _since: int) -> Arrays:
        out = inputs[0]
        for x in inputs[1:]:
            out = np.asarray(fn(out, x))
        return [out]
    return run


# op type -> (evaluate(inputs, attrs, opset, since), the opset from which axes-like attributes became inputs)
_EVAL: dict[str, tuple[Callable[[Arrays, dict[str, object], int, int], Arrays | None], int]] = {
    "Identity": (lambda i, a, o, s: [i[0]], 0),
    "Cast": (lambda i, a, o, s: [i[0].astype(helper.tensor_dtype_to_np_dtype(int(a["to"])))], 0),
    "Gather": (lambda i, a, o, s: [np.take(i[0], i[1].astype(np.int64), axis=int(a.get("axis", 0)))], 0),
    "Concat": (lambda i, a, o, s: [np.concatenate([x for x in i if x is not None], axis=int(a["axis"]))], 0),
    "Unsqueeze": (lambda i, a, o, s: [_unsqueeze(i[0], _axes(a, i, 1, o, s) or [])], 13),
    "Squeeze": (lambda i, a, o, s: [np.squeeze(i[0], axis=None if (ax := _axes(a, i, 1, o, s)) is None
                                               else tuple(ax))], 13),
    "Slice": (lambda i, a, o, s: [_slice(i[0], [int(v) for v in a["starts"]], [int(v) for v in a["ends"]],
                                         a.get("axes"), None) if o < s else
                                  _slice(i[0], _int_list(i[1]), _int_list(i[2]),
                                         _int_list(i[3]) if len(i) > 3 else None,
                                         _int_list(i[4]) if len(i) > 4 else None)], 10),
    "Reshape": (lambda i, a, o, s: [_reshape(i[0], _int_list(i[1]) or [], int(a.get("allowzero", 0)))], 0),
    "Transpose": (lambda i, a, o, s: [np.transpose(i[0], a.get("perm"))], 0),
    "ConstantOfShape": (lambda i, a, o, s: [_constant_of_shape(_int_list(i[0]) or [], a)], 0),
    "Expand": (lambda i, a, o, s: [_expand(i[0], _int_list(i[1]) or [])], 0),
    "Range": (lambda i, a, o, s: [_range(i[0], i[1], i[2])], 0),
    "Add": (_binary(np.add), 0), "Sub": (_binary(np.subtract), 0), "Mul": (_binary(np.multiply), 0),
    "Div": (_binary(_div), 0), "Mod": (_binary(np.fmod), 0),
    "Equal": (_binary(np.equal, False), 0), "Less": (_binary(np.less, False), 0),
    "Greater": (_binary(np.greater, False), 0), "LessOrEqual": (_binary(np.less_equal, False), 0),
    "GreaterOrEqual": (_binary(np.greater_equal, False), 0),
    "And": (_binary(np.logical_and, False), 0), "Or": (_binary(np.logical_or, False), 0),
    "Not": (lambda i, a, o, s: [np.logical_not(i[0])], 0),
    "Where": (lambda i, a, o, s: [np.where(i[0], i[1], i[2])], 0),
    "Neg": (_unary(np.negative), 0), "Abs": (_unary(np.abs), 0), "Floor": (_unary(np.floor), 0),
    "Ceil": (_unary(np.ceil), 0), "Sqrt": (_unary(np.sqrt), 0), "Sign": (_unary(np.sign), 0),
    "Min": (_variadic(np.minimum), 0), "Max": (_variadic(np.maximum), 0), "Sum": (_variadic(np.add), 0),
    "ReduceProd": (_reduce(np.prod), 18), "ReduceSum": (_reduce(np.sum), 13),
    "ReduceMin": (_reduce(np.min), 18), "ReduceMax": (_reduce(np.max), 18),
    "Tile": (lambda i, a, o, s: [np.tile(i[0], _int_list(i[1]) or [])
                                 if i[0].size * int(np.prod(_int_list(i[1]) or [1])) <= MAX_VALUE_ELEMENTS
                                 else None], 0),
}


def _evaluate(node: onnx.NodeProto, inputs: Arrays, types: dict[str, TypeProto], opset: int) -> Arrays | None:
    """The node's output values, or None where it is not a small, computable shape op."""
    if node.op_type == "Constant":
        t = constant_tensor(node)  # weights live in Constant nodes too (PaddleOCR): read only small ones
        return [numpy_helper.to_array(t)] if t is not None and numel(t.dims) <= MAX_VALUE_ELEMENTS else None
    attrs = _attrs(node)
    if node.op_type in ("Shape", "Size"):
        t = types.get(node.input[0]) if node.input else None
        if not is_static_type(t):
            return None
        dims = np.array(_dims(t), dtype=np.int64)  # type: ignore[arg-type]
        if node.op_type == "Size":
            return [np.array(np.prod(dims), dtype=np.int64)]
        start, end = int(attrs.get("start", 0)), attrs.get("end")
        return [dims[start:None if end is None else int(end)]]  # type: ignore[arg-type]
    entry = _EVAL.get(node.op_type)
    if entry is None or any(x is None for x in inputs[:1]):
        return None
    fn, since = entry
    return fn(inputs, attrs, opset, since)


def evaluate_node(node: onnx.NodeProto, values: dict[str, np.ndarray], types: dict[str, TypeProto],
                  opset: int) -> Sequence[np.ndarray | None] | None:
    """The values of a node's outputs when its inputs' values (or, for Shape/Size, dims) are known."""
    if node.op_type not in _EVAL and node.op_type not in ("Constant", "Shape", "Size"):
        return None
    if node.op_type not in ("Constant", "Shape", "Size") and any(i and i not in values for i in node.input):
        return None
    inputs: Arrays = [values.get(i) if i else None for i in node.input]
    try:
        out = _evaluate(node, inputs, types, opset)
    except Exception as exc:  # a value this pass cannot compute stays unknown  # noqa: BLE001
        log.debug("could not compute %s '%s': %s", node.op_type, node.name, exc)
        return None
    if out is None or all(v is None for v in out) or any(v is not None and v.size > MAX_VALUE_ELEMENTS for v in out):
        return None
    return out


def numel(dims: Sequence[int]) -> int:
    return math.prod(int(d) for d in dims)
