"""Shape inference so edges carry shapes, with the user's input shapes when given.

With every input static, dims that ONNX inference leaves as exporter-named symbols are computed through the
model's shape arithmetic (:mod:`app.core.model.shape_values`), so edges and outputs show numbers.

Large initializers are replaced by typed graph inputs before inference: inference needs their dims,
not their values, and this keeps a multi-GB model from being serialised again.
"""

from __future__ import annotations

import logging
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import onnx

from app.core import errors
from app.core.model.onnx_walk import iter_graphs, node_subgraphs, tensor_numel
from app.core.model.shape_ops import is_static_type, known_dims
from app.core.model.shape_values import refine_types
from app.core.model.tensors import TensorInfo, tensor_proto_info, value_info_to_tensor_info

log = logging.getLogger(__name__)

_KEEP_VALUES_UP_TO = 4096  # elements; shape-carrying tensors (Reshape targets, axes) are tiny
# Ops whose output size is decided by the values they read, so no input shape can settle it.
_DATA_DEPENDENT = frozenset({"NonZero", "Unique", "Compress", "NonMaxSuppression", "StringSplit"})


@dataclass
class ShapeResult:
    """Known tensor types after inference, and how well inference went."""

    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    ok: bool = True
    message: str = ""
    known: int = 0
    total: int = 0

    def get(self, name: str) -> TensorInfo | None:
        return self.tensors.get(name)


def parse_shape_spec(spec: str, inputs: list[TensorInfo]) -> dict[str, tuple[int, ...]]:
    """Parse ``name:1x3x224x224[,name2:...]`` against the model's inputs.

    The dims follow the last ``:`` so that names such as ``input:0`` work. Names, ranks and sizes
    are checked here, before any job starts, and errors name the model's real inputs.
    """
    by_name = {i.name: i for i in inputs}
    real = ", ".join(f"'{i.name}' {list(i.shape) if i.shape is not None else '?'}" for i in inputs)
    shapes: dict[str, tuple[int, ...]] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        if ":" not in part:
            raise errors.ShapeSpecError(
                f"'{part}' has no input name; write NAME:DIMS such as 'x:1x3x224x224'.",
                fix=f"The model's inputs are {real}.")
        name, dims_text = part.rsplit(":", 1)
        if name not in by_name:
            raise errors.ShapeSpecError(
                f"The model has no input named '{name}'.", fix=f"The model's inputs are {real}.")
        if not re.fullmatch(r"\d+(x\d+)*", dims_text.strip()):
            raise errors.ShapeSpecError(
                f"'{dims_text}' for input '{name}' is not a shape; write dims as positive integers "
                "joined by 'x', e.g. 1x3x224x224.", fix=f"The model's inputs are {real}.")
        dims = tuple(int(d) for d in dims_text.strip().split("x"))
        if name in shapes:
            raise errors.ShapeSpecError(f"Input '{name}' is given twice.", fix="Give each input once.")
        shapes[name] = dims
    for name, dims in shapes.items():
        validate_input_shape(by_name[name], dims)
    return shapes


def validate_input_shape(info: TensorInfo, dims: tuple[int, ...]) -> None:
    """Check rank, positivity and fixed dims of one input shape against the model's declaration."""
    if any(d <= 0 for d in dims):
        raise errors.ShapeSpecError(
            f"Input '{info.name}': every dimension must be a positive integer, got {list(dims)}.")
    if info.shape is None:
        return
    if len(dims) != len(info.shape):
        raise errors.ShapeSpecError(
            f"Input '{info.name}' has rank {len(info.shape)} ({info.shape_text()}), "
            f"but the shape given has rank {len(dims)} ({'x'.join(map(str, dims))}).",
            fix=f"Give {len(info.shape)} dims for '{info.name}'.")
    for axis, (want, got) in enumerate(zip(info.shape, dims, strict=True)):
        if isinstance(want, int) and want > 0 and want != got:
            raise errors.ShapeSpecError(
                f"Input '{info.name}' has a fixed size {want} on axis {axis}, but {got} was given.",
                fix=f"Use {want} on axis {axis} ({info.shape_text()}).")


def dynamic_dims(info: TensorInfo) -> list[int]:
    """Axes of an input that the user must choose (symbolic, unnamed or -1)."""
    if info.shape is None:
        return []
    return [i for i, d in enumerate(info.shape) if not (isinstance(d, int) and d > 0)]


def _skeleton(model: onnx.ModelProto, input_shapes: dict[str, tuple[int, ...]]) -> onnx.ModelProto:
    skel = onnx.ModelProto()
    skel.CopyFrom(model)  # external weights are not loaded, so this copies the graph, not the data
    g = skel.graph
    keep, lifted = [], []
    for t in g.initializer:
        external = t.data_location == onnx.TensorProto.EXTERNAL
        if external or tensor_numel(t) > _KEEP_VALUES_UP_TO:
            lifted.append(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
        else:
            keep.append(t)
    if lifted:
        declared = {i.name for i in g.input}
        del g.initializer[:]
        g.initializer.extend(keep)
        g.input.extend(v for v in lifted if v.name not in declared)
    # Declared output shapes are often stale symbols; clear them so inference fills them in.
    for vi in g.output:
        if vi.type.HasField("tensor_type"):
            vi.type.tensor_type.ClearField("shape")
    for vi in g.input:
        if vi.name in input_shapes and vi.type.HasField("tensor_type"):
            shape = vi.type.tensor_type.shape
            dims = input_shapes[vi.name]
            del shape.dim[:]
            for d in dims:
                shape.dim.add().dim_value = d
    return skel


def _onnx_inference(skel: onnx.ModelProto) -> tuple[onnx.ModelProto | None, str]:
    """ONNX's own inference of the skeleton (with data propagation, else without): the inferred model, or None and
    why not."""
    problem = ""
    for data_prop in (True, False):
        try:
            return onnx.shape_inference.infer_shapes(skel, check_type=False, strict_mode=False,
                                                     data_prop=data_prop), ""
        except Exception as exc:  # onnx raises several C++-mapped types; all mean "could not infer"
            problem = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
            log.info("shape inference (data_prop=%s) failed: %s", data_prop, problem)
    return None, problem


# What a child process runs (python -c): ONNX's inference of the skeleton on stdin, the inferred model (b"OK" + bytes)
# or why not (b"NO" + text) on stdout, as :func:`_onnx_inference` does. Only onnx is imported: it starts quickly.
_CHILD = """
import sys, onnx
skel = onnx.load_from_string(sys.stdin.buffer.read())
problem = ""
for data_prop in (True, False):
    try:
        out = onnx.shape_inference.infer_shapes(skel, check_type=False, strict_mode=False, data_prop=data_prop)
    except Exception as exc:
        text = str(exc).strip()
        problem = text.splitlines()[0][:300] if text else type(exc).__name__
        continue
    sys.stdout.buffer.write(b"OK" + out.SerializeToString())
    break
else:
    sys.stdout.buffer.write(b"NO" + problem.encode())
"""


def _isolated_inference(skel: onnx.ModelProto, cancel: Callable[[], bool] | None) -> tuple[onnx.ModelProto | None,
                                                                                           str]:
    """:func:`_onnx_inference` in a child process. ONNX's C++ inference holds Python's interpreter lock for as long
    as it runs (seconds on a big model): run on a thread, it would freeze the GUI thread all that time. Where no child
    can run it (a frozen build has no `python -c`; the child failed), it runs here after all."""
    if getattr(sys, "frozen", False):
        return _onnx_inference(skel)
    try:
        proc = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    except OSError as exc:
        log.info("shape inference in a child process could not start (%s): inferring here", exc)
        return _onnx_inference(skel)
    data = skel.SerializeToString()
    talked: dict[str, bytes] = {}

    def talk() -> None:  # on a thread of its own: the caller can stop the child meanwhile
        talked["out"], talked["err"] = proc.communicate(data)

    talker = threading.Thread(target=talk, name="shape-inference", daemon=True)
    talker.start()
    while talker.is_alive():
        talker.join(0.1)
        if talker.is_alive() and cancel is not None and cancel():
            proc.kill()
            talker.join()
            raise errors.LoadCancelled("Loading was cancelled.")
    out, err = talked.get("out", b""), talked.get("err", b"")
    if out[:2] == b"OK":
        return onnx.load_from_string(out[2:]), ""
    if out[:2] == b"NO":
        return None, out[2:].decode(errors="replace")
    log.info("shape inference in a child process failed (code %s: %s): inferring here", proc.returncode,
             err.decode(errors="replace").strip()[-300:])
    return _onnx_inference(skel)


def infer_shapes(model: onnx.ModelProto, input_shapes: dict[str, tuple[int, ...]] | None = None, *,
                 isolated: bool = False, cancel: Callable[[], bool] | None = None) -> ShapeResult:
    """Infer every tensor's dtype and shape; on failure, keep what the file declares and say why. `isolated`: ONNX's
    inference runs in a child process (see :func:`_isolated_inference`; for a caller sharing the process with a GUI),
    which `cancel` can stop."""
    input_shapes = input_shapes or {}
    skel = _skeleton(model, input_shapes)
    inferred, problem = _isolated_inference(skel, cancel) if isolated else _onnx_inference(skel)
    source = inferred if inferred is not None else model
    result = ShapeResult()
    if inferred is not None:
        _refine(inferred, result)
    declared = {o.name: value_info_to_tensor_info(o) for g in iter_graphs(model.graph) for o in g.output}
    for g in iter_graphs(source.graph):
        for vi in list(g.output) + list(g.input) + list(g.value_info):
            info = value_info_to_tensor_info(vi)
            if info.shape is None and vi.name in declared:
                info = declared[vi.name]
            result.tensors.setdefault(vi.name, info)
        for t in g.initializer:
            result.tensors.setdefault(t.name, tensor_proto_info(t))
        for node in g.node:
            if node.op_type == "Constant" and node.output:
                for a in node.attribute:
                    if a.type == a.TENSOR:
                        info = tensor_proto_info(a.t)
                        result.tensors.setdefault(node.output[0],
                                                  TensorInfo(node.output[0], info.dtype, info.shape))
    edge_names = [o for g in iter_graphs(model.graph) for n in g.node for o in n.output if o]
    result.total = len(edge_names)
    result.known = sum(1 for o in edge_names if (ti := result.tensors.get(o)) is not None and ti.is_static())
    if inferred is None:
        result.ok = False
        result.message = (f"Shape inference failed ({problem}); edges show only the shapes stored in "
                          "the file.")
    else:
        result.message = f"Shapes known for {result.known:,} of {result.total:,} tensors."
        if result.known < result.total:
            result.message += " " + _why_incomplete(skel, result)
    return result


def _refine(inferred: onnx.ModelProto, result: ShapeResult) -> None:
    """Concrete dims through shape arithmetic (:mod:`app.core.model.shape_values`) when every input is static."""
    g = inferred.graph
    inits = {t.name for t in g.initializer}
    if not all(is_static_type(vi.type) for vi in g.input if vi.name not in inits):
        return  # symbolic inputs keep symbolic dims downstream; nothing to compute
    types: dict[str, onnx.TypeProto] = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        if known_dims(vi.type) > known_dims(types.get(vi.name)):
            types[vi.name] = vi.type
    inner: dict[str, onnx.TypeProto] = {}
    before = dict(types)
    try:
        refine_types(inferred, types, inner)
    except Exception as exc:  # the pass is a bonus: full-graph inference already gave its answer  # noqa: BLE001
        log.warning("refining shapes failed: %s", exc)
        return
    changed = {n: t for n, t in types.items() if before.get(n) is not t}
    for name, t in {**inner, **changed}.items():
        info = value_info_to_tensor_info(onnx.helper.make_value_info(name, t))
        if info.shape is not None:
            result.tensors[name] = info


def _why_incomplete(skel: onnx.ModelProto, result: ShapeResult) -> str:
    """Why tensors are left without concrete dims: an inconsistency, ops without shape rules, dynamic
    inputs (the user can fix those), or dims that only running the model gives."""
    try:
        onnx.shape_inference.infer_shapes(skel, check_type=False, strict_mode=True, data_prop=False)
    except Exception as exc:  # the lenient pass skipped this error silently; name it
        text = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        return f"Inference stopped at an inconsistency: {text}"
    local = {(f.domain, f.name) for f in skel.functions}
    unknown = sorted({f"{n.domain}.{n.op_type}" if n.domain else n.op_type
                      for g in iter_graphs(skel.graph) for n in g.node
                      if (n.domain, n.op_type) not in local
                      and not onnx.defs.has(n.op_type, "" if n.domain == "ai.onnx" else n.domain)})
    if unknown:
        return ("Inference cannot pass ops it has no shape rules for: "
                + ", ".join(unknown[:5]) + ("…" if len(unknown) > 5 else "") + ".")
    inits = {t.name for t in skel.graph.initializer}
    dynamic = [value_info_to_tensor_info(vi) for vi in skel.graph.input
               if vi.name not in inits and not is_static_type(vi.type)]
    if dynamic:
        named = ", ".join(f"'{i.name}' is {i.shape_text()}" for i in dynamic[:3]) + ("…" if len(dynamic) > 3 else "")
        return f"Set the input shapes to resolve symbolic dims ({named})."
    return _runtime_dims(skel, result)


def _runtime_dims(skel: onnx.ModelProto, result: ShapeResult) -> str:
    """Every input is static, yet some dims stay open: data-dependent ops, or rules inference lacks."""
    def open_output(node: onnx.NodeProto) -> str | None:
        return next((o for o in node.output if o and not ((ti := result.tensors.get(o)) is not None
                                                           and ti.is_static())), None)

    stack: list[tuple[onnx.GraphProto, str]] = [(skel.graph, "")]
    while stack:
        graph, where = stack.pop(0)
        for node in graph.node:
            if (out := open_output(node)) is not None:
                count = result.total - result.known
                first = f"(first: '{out}' from {node.op_type}{where})"
                if node.op_type in _DATA_DEPENDENT and node.domain in ("", "ai.onnx"):
                    many = f"{count:,} tensors have" if count != 1 else "1 tensor has"
                    return f"The inputs are static; {many} dims that depend on the data {first}."
                many = f"{count:,} tensors keep" if count != 1 else "1 tensor keeps"
                return f"The inputs are static; {many} dims that shape inference cannot compute {first}."
            stack.extend((sub, f" in the {node.op_type} '{node.name or node.output[0]}'")
                         for _, sub in node_subgraphs(node))
    return ""
