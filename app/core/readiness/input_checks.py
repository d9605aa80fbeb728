"""Checks of the input shapes and the optimization profile the user set against the model's real inputs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.core.engine.profiles import OptimizationProfile, profile_problems
from app.core.errors import ShapeSpecError
from app.core.readiness.context import GraphIndex
from app.core.readiness.findings import Finding
from app.core.shapes import dynamic_dims, validate_input_shape
from app.core.tensors import TensorInfo


def _real(inputs: list[TensorInfo]) -> str:
    return ", ".join(f"'{i.name}' ({i.shape_text()})" for i in inputs) or "none"


def _example(info: TensorInfo) -> str:
    if info.shape is None:
        return "DIMS"
    return "x".join(str(d) if isinstance(d, int) and d > 0 else "N" for d in info.shape)


def valid_shapes(index: GraphIndex, shapes: Mapping[str, Sequence[int]] | None) -> dict[str, tuple[int, ...]]:
    """The given shapes that name a real input and fit it (what shape inference may use)."""
    by_name = {i.name: i for i in index.inputs}
    out = {}
    for name, dims in (shapes or {}).items():
        info = by_name.get(name)
        if info is None:
            continue
        try:
            validate_input_shape(info, tuple(int(d) for d in dims))
        except (ShapeSpecError, TypeError, ValueError):
            continue
        out[name] = tuple(int(d) for d in dims)
    return out


def check_inputs(index: GraphIndex, shapes: Mapping[str, Sequence[int]] | None,
                 profile: OptimizationProfile | None) -> list[Finding]:
    inputs = index.inputs
    by_name = {i.name: i for i in inputs}
    real = _real(inputs)
    out: list[Finding] = []
    good: set[str] = set()
    for name, dims in (shapes or {}).items():
        info = by_name.get(name)
        if info is None:
            out.append(Finding("error", "shape-unknown-input", [],
                               f"The input shapes name '{name}', which is not an input of this model; its inputs "
                               f"are {real}.", "Give the shape to one of those names."))
            continue
        try:
            validate_input_shape(info, tuple(int(d) for d in dims))
        except ShapeSpecError as exc:
            out.append(Finding("error", "shape-mismatch", index.reader_keys(name), exc.message,
                               exc.fix or f"Give '{name}' a shape like {_example(info)}."))
            continue
        except (TypeError, ValueError):
            out.append(Finding("error", "shape-mismatch", index.reader_keys(name),
                               f"The shape given for '{name}' is not a list of integers: {dims!r}.",
                               f"Give '{name}' a shape like {_example(info)}."))
            continue
        good.add(name)
    covered = set(good)
    if profile is not None:
        for name in profile.inputs:
            if name not in by_name:
                out.append(Finding("error", "profile-unknown-input", [],
                                   f"The optimization profile names '{name}', which is not an input of this model; "
                                   f"its inputs are {real}.", "Give the range to one of those names."))
        known = [i for i in inputs if i.name in profile.inputs]
        sub = OptimizationProfile({i.name: profile.inputs[i.name] for i in known})
        bad = set()
        for problem, fix in profile_problems(sub, known):
            name = next((i.name for i in known if f"'{i.name}'" in problem), "")
            bad.add(name)
            out.append(Finding("error", "profile-mismatch", index.reader_keys(name) if name else [], problem, fix))
        covered |= {i.name for i in known if i.name not in bad}
    for info in inputs:
        if info.name in covered:
            continue
        dyn = dynamic_dims(info)
        if info.shape is not None and not dyn:
            continue
        if info.shape is None:
            what = "no declared shape"
        else:
            what = "dynamic dims (" + ", ".join(f"axis {a} '{info.shape[a]}'" for a in dyn) + ")"
        out.append(Finding(
            "warning", "dynamic-input", index.reader_keys(info.name),
            f"Input '{info.name}' ({info.shape_text()}) has {what} and no shape or profile is set. A TensorRT engine "
            "is built for the shapes of an optimization profile; without one the build cannot start.",
            f"Set its shape in the input panel (CLI: --shapes {info.name}:{_example(info)}, numbers for N), or a range "
            f"(--profile {info.name}:MIN:OPT:MAX) to serve several sizes."))
    return out


def _named_dims(index: GraphIndex) -> dict[str, list[tuple[str, int]]]:
    """dim_param name -> [(input, axis)] from the file's own declarations (a name '?' is a name too)."""
    real = {i.name for i in index.inputs}
    out: dict[str, list[tuple[str, int]]] = {}
    for vi in index.graph.input:
        if vi.name not in real or not vi.type.HasField("tensor_type"):
            continue
        for axis, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.HasField("dim_param") and d.dim_param:
                out.setdefault(d.dim_param, []).append((vi.name, axis))
    return out


def check_dim_names(index: GraphIndex, shapes: Mapping[str, Sequence[int]] | None,
                    profile: OptimizationProfile | None) -> list[Finding]:
    """Dims that share a dim_param name are one dimension to TensorRT (its named dimensions): their sizes must
    be equal, and their profile ranges must overlap. TensorRT for RTX 1.7 refuses the build otherwise ("Input
    dimensions with this name have different constant values"), e.g. a classifier whose H and W are both '?'."""
    given = valid_shapes(index, shapes)
    out: list[Finding] = []
    for name, places in _named_dims(index).items():
        if len(places) < 2:
            continue
        sizes = {(inp, axis): given[inp][axis] for inp, axis in places if inp in given and axis < len(given[inp])}
        where = ", ".join(f"'{inp}' axis {axis}" for inp, axis in places)
        nodes = sorted({k for inp, _ in places for k in index.reader_keys(inp)}, key=lambda k: index.order.get(k, 0))
        if len(set(sizes.values())) > 1:
            got = ", ".join(f"'{inp}' axis {axis} = {v}" for (inp, axis), v in sizes.items())
            out.append(Finding("error", "dim-param-conflict", nodes,
                               f"The dims {where} share the name '{name}', so TensorRT treats them as one dimension, "
                               f"but the shapes give them different sizes ({got}): the build fails ('Input "
                               "dimensions with this name have different constant values').",
                               f"Give every dim named '{name}' the same size, or rename the dim_param in the model "
                               "so they are independent."))
            continue
        if profile is None:
            continue
        ranges = {}
        for inp, axis in places:
            p = profile.inputs.get(inp)
            if p is not None and axis < len(p.min) and axis < len(p.max):
                ranges[(inp, axis)] = (p.min[axis], p.max[axis])
        if len(ranges) > 1 and max(lo for lo, _ in ranges.values()) > min(hi for _, hi in ranges.values()):
            got = ", ".join(f"'{inp}' axis {axis} {lo}..{hi}" for (inp, axis), (lo, hi) in ranges.items())
            out.append(Finding("error", "dim-param-conflict", nodes,
                               f"The dims {where} share the name '{name}', so TensorRT treats them as one dimension, "
                               f"but the profile's ranges do not overlap ({got}).",
                               f"Give every dim named '{name}' overlapping min..max ranges (the same range is "
                               "simplest)."))
    return out
