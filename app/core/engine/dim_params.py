"""Dims that share a dim_param name: TensorRT's named dimensions, one dimension however many inputs carry it.

An input dim with a ``dim_param`` becomes a named dimension in TensorRT's network; every dim with the same name
must have the same size at build time, in each optimization profile (see :func:`dim_name_problems` for what was
measured). ONNX Runtime does not care, so only TensorRT builds are checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from app.core.model import TensorInfo


class _Range(Protocol):
    # Read-only members: a profile's tuples and dicts match them (settable members would have to match exactly).
    @property
    def min(self) -> Sequence[int]: ...
    @property
    def opt(self) -> Sequence[int]: ...
    @property
    def max(self) -> Sequence[int]: ...


class ProfileLike(Protocol):
    """What the checks here read of an optimization profile (`app.core.engine.profiles.OptimizationProfile`), named
    by shape alone: profiles.py imports this module, so this one does not import it back."""

    @property
    def inputs(self) -> Mapping[str, _Range]: ...


DimNames = Mapping[str, Sequence[tuple[str, int]]]   # dim_param name -> [(input, axis)] that carry it


def named_dims(graph: object) -> dict[str, list[tuple[str, int]]]:
    """dim_param name -> [(input, axis)] over the graph's real inputs (an ``onnx.GraphProto``; initializers listed
    as inputs left out). A dim named '?' is named: TensorRT treats every '?' dim as one dimension."""
    stored = {t.name for t in getattr(graph, "initializer", ())}
    out: dict[str, list[tuple[str, int]]] = {}
    for vi in getattr(graph, "input", ()):
        if vi.name in stored or not vi.type.HasField("tensor_type"):
            continue
        for axis, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.HasField("dim_param") and d.dim_param:
                out.setdefault(d.dim_param, []).append((vi.name, axis))
    return out


def names_in(inputs: Iterable[TensorInfo]) -> dict[str, list[tuple[str, int]]]:
    """The names :class:`TensorInfo` shapes keep: every dim_param but '?', which unnamed dims also show as."""
    out: dict[str, list[tuple[str, int]]] = {}
    for info in inputs:
        for axis, d in enumerate(info.shape or ()):
            if isinstance(d, str) and d != "?":
                out.setdefault(d, []).append((info.name, axis))
    return out


def dim_name_problems(profile: ProfileLike, dim_names: DimNames) -> list[tuple[str, str]]:
    """Dims sharing a dim_param name whose ranges TensorRT refuses, as (problem, fix) pairs.

    TensorRT treats them as one dimension. Measured with TensorRT for RTX 1.7.1 on PP-OCR's classifier (H and W
    both '?'): the opt sizes must be equal ("Profile kOPT values are not self-consistent. Dimensions with name ?
    must be equal") and the min..max ranges must overlap ("Input dimensions with this name have different
    constant values or have contradictory IOptimizationProfile kMIN/kMAX constraints"); different mins or maxes
    that overlap build. So fixed shapes (min = opt = max) must give such dims one size.
    """
    out: list[tuple[str, str]] = []
    for name, places in dim_names.items():
        ranges: dict[tuple[str, int], tuple[int, int, int]] = {}
        for inp, axis in places:
            p = profile.inputs.get(inp)
            if p is not None and axis < min(len(p.min), len(p.opt), len(p.max)):
                ranges[(inp, axis)] = (p.min[axis], p.opt[axis], p.max[axis])
        if len(ranges) < 2:
            continue
        dims = [f"'{inp}' axis {axis}" for inp, axis in ranges]
        where = ", ".join(dims[:-1]) + f" and {dims[-1]}"
        same = f"The dims {where} share the name '{name}', so TensorRT treats them as one dimension"
        fix = (f"Give every dim named '{name}' the same size (the same range in a profile), or rename the dim_param "
               "in the model so the dims are independent.")
        if all(lo == mid == hi for lo, mid, hi in ranges.values()):
            if len({mid for _, mid, _ in ranges.values()}) > 1:
                got = ", ".join(f"'{inp}' axis {axis} = {mid}" for (inp, axis), (_, mid, _) in ranges.items())
                out.append((f"{same}, but the shapes give them different sizes ({got}): the build fails ('Input "
                            "dimensions with this name have different constant values').", fix))
            continue
        if max(lo for lo, _, _ in ranges.values()) > min(hi for _, _, hi in ranges.values()):
            got = ", ".join(f"'{inp}' axis {axis} {lo}..{hi}" for (inp, axis), (lo, _, hi) in ranges.items())
            out.append((f"{same}, but the profile's min..max ranges do not overlap ({got}): the build fails "
                        "('contradictory IOptimizationProfile kMIN/kMAX constraints').", fix))
        elif len({mid for _, mid, _ in ranges.values()}) > 1:
            got = ", ".join(f"'{inp}' axis {axis} opt {mid}" for (inp, axis), (_, mid, _) in ranges.items())
            out.append((f"{same}, but the profile's opt sizes differ ({got}): the build fails ('Dimensions with "
                        f"name {name} must be equal').", fix))
    return out


@dataclass(frozen=True)
class _Fixed:
    min: tuple[int, ...]
    opt: tuple[int, ...]
    max: tuple[int, ...]


@dataclass(frozen=True)
class _FixedShapes:
    inputs: Mapping[str, _Fixed]


def shape_name_problems(shapes: Mapping[str, Sequence[int]], dim_names: DimNames) -> list[tuple[str, str]]:
    """`dim_name_problems` of a run's fixed shapes (each one size, not a range): dims that share a dim_param name
    sized apart, which a TensorRT build refuses. Inputs `shapes` does not give are not checked."""
    fixed = {name: _Fixed(tuple(dims), tuple(dims), tuple(dims)) for name, dims in shapes.items()}
    return dim_name_problems(_FixedShapes(fixed), dim_names)
