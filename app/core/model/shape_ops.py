"""Values of small shape-carrying tensors (shape vectors, axes, scalars), computed with numpy.

Exporters compute Reshape targets, Resize sizes and Pad amounts from ``Shape`` of an earlier tensor. Once
that tensor's dims are known, these ops give plain numbers; :func:`evaluate_node` computes them for the
ops such arithmetic uses, and for nothing large: a value over :data:`MAX_VALUE_ELEMENTS` is never built.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from typing import overload

import numpy as np
import onnx
from onnx import TypeProto, helper, numpy_helper

from app.core.model.onnx_walk import attr_int, attr_ints, constant_tensor

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


def _arr(inputs: Arrays, index: int) -> np.ndarray:
    """Input ``index``, which the op requires: an empty input name there is an invalid node, not computed."""
    x = inputs[index]
    if x is None:
        raise ValueError(f"input {index} is required")
    return x


@overload
def _int_list(v: np.ndarray) -> list[int]: ...


@overload
def _int_list(v: np.ndarray | None) -> list[int] | None: ...


def _int_list(v: np.ndarray | None) -> list[int] | None:
    return None if v is None else [int(x) for x in np.asarray(v).reshape(-1)]


def _ints_attr(value: object) -> list[int] | None:
    return None if value is None else attr_ints(value)


def _axes(attrs: dict[str, object], inputs: Arrays, index: int, opset: int, since: int) -> list[int] | None:
    """Axes given as an attribute before opset ``since`` and as input ``index`` from it on."""
    if opset < since:
        return _ints_attr(attrs.get("axes"))
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
        x = _arr(inputs, 0)
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
    if value is not None and not isinstance(value, onnx.TensorProto):
        raise TypeError(f"ConstantOfShape's value is {type(value).__name__}, not a tensor")
    fill = numpy_helper.to_array(value).reshape(-1) if value is not None else np.zeros(1, np.float32)
    return np.full(shape, fill[0], dtype=fill.dtype)


def _expand(x: np.ndarray, shape: list[int]) -> np.ndarray | None:
    out = np.broadcast_shapes(x.shape, tuple(shape))
    if int(np.prod(out, dtype=np.int64)) > MAX_VALUE_ELEMENTS:
        return None
    return np.broadcast_to(x, out).copy()


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray], keep_dtype: bool = True) -> Callable[..., Arrays]:
    def run(inputs: Arrays, _attrs: dict[str, object], _opset: int, _since: int) -> Arrays:
        a, b = _arr(inputs, 0), _arr(inputs, 1)
        out = np.asarray(fn(a, b))
        return [out.astype(a.dtype) if keep_dtype else out]
    return run


def _unary(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., Arrays]:
    def run(inputs: Arrays, _attrs: dict[str, object], _opset: int, _since: int) -> Arrays:
        x = _arr(inputs, 0)
        return [np.asarray(fn(x)).astype(x.dtype)]
    return run


def _variadic(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., Arrays]:
    def run(inputs: Arrays, _attrs: dict[str, object], _opset: int, _since: int) -> Arrays:
        out = _arr(inputs, 0)
        for k in range(1, len(inputs)):
            out = np.asarray(fn(out, _arr(inputs, k)))
        return [out]
    return run


# op type -> (evaluate(inputs, attrs, opset, since), the opset from which axes-like attributes became inputs)
_EVAL: dict[str, tuple[Callable[[Arrays, dict[str, object], int, int], Arrays | None], int]] = {
    "Identity": (lambda i, a, o, s: [i[0]], 0),
    "Cast": (lambda i, a, o, s: [_arr(i, 0).astype(helper.tensor_dtype_to_np_dtype(attr_int(a["to"])))], 0),
    "Gather": (lambda i, a, o, s: [np.take(_arr(i, 0), _arr(i, 1).astype(np.int64),
                                           axis=attr_int(a.get("axis", 0)))], 0),
    "Concat": (lambda i, a, o, s: [np.concatenate([x for x in i if x is not None], axis=attr_int(a["axis"]))], 0),
    "Unsqueeze": (lambda i, a, o, s: [_unsqueeze(_arr(i, 0), _axes(a, i, 1, o, s) or [])], 13),
    "Squeeze": (lambda i, a, o, s: [np.squeeze(_arr(i, 0), axis=None if (ax := _axes(a, i, 1, o, s)) is None
                                               else tuple(ax))], 13),
    "Slice": (lambda i, a, o, s: [_slice(_arr(i, 0), attr_ints(a["starts"]), attr_ints(a["ends"]),
                                         _ints_attr(a.get("axes")), None) if o < s else
                                  _slice(_arr(i, 0), _int_list(_arr(i, 1)), _int_list(_arr(i, 2)),
                                         _int_list(i[3]) if len(i) > 3 else None,
                                         _int_list(i[4]) if len(i) > 4 else None)], 10),
    "Reshape": (lambda i, a, o, s: [_reshape(_arr(i, 0), _int_list(i[1]) or [], attr_int(a.get("allowzero", 0)))],
                0),
    "Transpose": (lambda i, a, o, s: [np.transpose(_arr(i, 0), _ints_attr(a.get("perm")))], 0),
    "ConstantOfShape": (lambda i, a, o, s: [_constant_of_shape(_int_list(i[0]) or [], a)], 0),
    "Expand": (lambda i, a, o, s: [_expand(_arr(i, 0), _int_list(i[1]) or [])], 0),
    "Range": (lambda i, a, o, s: [_range(_arr(i, 0), _arr(i, 1), _arr(i, 2))], 0),
    "Add": (_binary(np.add), 0), "Sub": (_binary(np.subtract), 0), "Mul": (_binary(np.multiply), 0),
    "Div": (_binary(_div), 0), "Mod": (_binary(np.fmod), 0),
    "Equal": (_binary(np.equal, False), 0), "Less": (_binary(np.less, False), 0),
    "Greater": (_binary(np.greater, False), 0), "LessOrEqual": (_binary(np.less_equal, False), 0),
    "GreaterOrEqual": (_binary(np.greater_equal, False), 0),
    "And": (_binary(np.logical_and, False), 0), "Or": (_binary(np.logical_or, False), 0),
    "Not": (lambda i, a, o, s: [np.logical_not(_arr(i, 0))], 0),
    "Where": (lambda i, a, o, s: [np.where(_arr(i, 0), _arr(i, 1), _arr(i, 2))], 0),
    "Neg": (_unary(np.negative), 0), "Abs": (_unary(np.abs), 0), "Floor": (_unary(np.floor), 0),
    "Ceil": (_unary(np.ceil), 0), "Sqrt": (_unary(np.sqrt), 0), "Sign": (_unary(np.sign), 0),
    "Min": (_variadic(np.minimum), 0), "Max": (_variadic(np.maximum), 0), "Sum": (_variadic(np.add), 0),
    "ReduceProd": (_reduce(np.prod), 18), "ReduceSum": (_reduce(np.sum), 13),
    "ReduceMin": (_reduce(np.min), 18), "ReduceMax": (_reduce(np.max), 18),
    "Tile": (lambda i, a, o, s: [np.tile(_arr(i, 0), _int_list(i[1]) or [])
                                 if _arr(i, 0).size * int(np.prod(_int_list(i[1]) or [1])) <= MAX_VALUE_ELEMENTS
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
        if t is None or not is_static_type(t):
            return None
        dims = np.array(_dims(t), dtype=np.int64)
        if node.op_type == "Size":
            return [np.array(np.prod(dims), dtype=np.int64)]
        start, end = attr_int(attrs.get("start", 0)), attrs.get("end")
        return [dims[start:None if end is None else attr_int(end)]]
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
