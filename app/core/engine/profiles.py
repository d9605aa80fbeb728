"""Optimization profiles: the min/opt/max shape range an engine is built for, per input.

A TensorRT engine with dynamic inputs runs only on shapes inside the ranges it was built with
(``IOptimizationProfile.set_shape(name, min, opt, max)``), and TensorRT tunes its kernels for ``opt``.
Everything here is checked before a build starts, and every problem names the input and the axis.

The CLI writes one range per input as ``--profile NAME:MIN:OPT:MAX`` (``x:1x3x224x224:4x3x224x224:8x3x224x224``);
the three shapes are the last three ``:``-separated fields, so input names such as ``input:0`` work.

Dims that share a dim_param name are one dimension to TensorRT: :mod:`app.core.engine.dim_params` says which
ranges it builds, and the checks here apply it (give them ``named_dims(graph)`` so dims named '?' count).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from app.core.engine.dim_params import DimNames, dim_name_problems, named_dims, names_in, shape_name_problems
from app.core.errors import TrtlabError
from app.core.model import TensorInfo

Shape = tuple[int, ...]
_DIMS_RE = re.compile(r"-?\d+(x-?\d+)*")
_WHICH = ("min", "opt", "max")


class ProfileError(TrtlabError):
    """An optimization profile that does not fit the model, or a malformed ``--profile``."""

    title = "Invalid optimization profile"


def _as_shape(value: object, where: str) -> Shape:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ProfileError(f"{where} is not a shape: {value!r}.",
                           fix="Give a list of integers such as [1, 3, 224, 224].")
    dims = []
    for d in value:
        if isinstance(d, bool) or not hasattr(d, "__index__"):
            raise ProfileError(f"{where} has a dimension that is not an integer: {d!r}.",
                               fix="Give whole numbers such as [1, 3, 224, 224].")
        dims.append(int(d))
    return tuple(dims)


def shape_text(shape: Sequence[int]) -> str:
    """``1x3x224x224`` (``scalar`` for rank 0), the way shapes are written on the command line."""
    return "x".join(str(d) for d in shape) if len(shape) else "scalar"


@dataclass(frozen=True)
class InputProfile:
    """The shape range of one input: TensorRT accepts any shape with min ≤ shape ≤ max on every axis."""

    name: str
    min: Shape
    opt: Shape
    max: Shape

    def __post_init__(self) -> None:
        for which in _WHICH:
            dims = _as_shape(getattr(self, which), f"The {which} shape of input '{self.name}'")
            object.__setattr__(self, which, dims)

    @classmethod
    def fixed(cls, name: str, shape: Sequence[int]) -> InputProfile:
        """A single shape: min = opt = max."""
        dims = tuple(shape)
        return cls(name, dims, dims, dims)

    def is_fixed(self) -> bool:
        return self.min == self.opt == self.max

    def spec(self) -> str:
        """The ``--profile`` argument that gives this range."""
        return f"{self.name}:{shape_text(self.min)}:{shape_text(self.opt)}:{shape_text(self.max)}"

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "min": list(self.min), "opt": list(self.opt), "max": list(self.max)}

    @classmethod
    def from_json(cls, doc: object) -> InputProfile:
        if not isinstance(doc, Mapping) or not isinstance(doc.get("name"), str) \
                or any(k not in doc for k in _WHICH):
            raise ProfileError(f"A saved input range is malformed: {doc!r}.",
                               fix="Each range needs 'name', 'min', 'opt' and 'max'; set the profile again.")
        return cls(doc["name"], doc["min"], doc["opt"], doc["max"])


@dataclass
class OptimizationProfile:
    """One TensorRT optimization profile: a shape range for each input it names."""

    inputs: dict[str, InputProfile] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for key, item in self.inputs.items():
            if not isinstance(item, InputProfile) or item.name != key:
                raise ProfileError(f"Profile entry '{key}' does not hold the range of input '{key}'.",
                                   fix="Key each InputProfile by its own name.")

    @classmethod
    def of(cls, items: Iterable[InputProfile]) -> OptimizationProfile:
        out: dict[str, InputProfile] = {}
        for item in items:
            if item.name in out:
                raise ProfileError(f"Input '{item.name}' is given twice in one profile.", fix="Give each input once.")
            out[item.name] = item
        return cls(out)

    def shapes(self, which: str = "opt") -> dict[str, Shape]:
        """One shape per input: ``"min"``, ``"opt"`` (what TensorRT tunes for) or ``"max"``."""
        if which not in _WHICH:
            raise ValueError(f"which must be one of {_WHICH}, not {which!r}")
        return {name: getattr(p, which) for name, p in self.inputs.items()}

    def trt_shapes(self) -> dict[str, tuple[Shape, Shape, Shape]]:
        """``{name: (min, opt, max)}``: the arguments of ``IOptimizationProfile.set_shape``."""
        return {name: (p.min, p.opt, p.max) for name, p in self.inputs.items()}

    def specs(self) -> list[str]:
        """The ``--profile`` arguments that give this profile back."""
        return [p.spec() for p in self.inputs.values()]

    def is_static(self) -> bool:
        return all(p.is_fixed() for p in self.inputs.values())

    def to_json(self) -> dict[str, object]:
        # Sorted: the order of inputs means nothing to TensorRT, and cache digests must not depend on it.
        return {"inputs": [self.inputs[n].to_json() for n in sorted(self.inputs)]}

    @classmethod
    def from_json(cls, doc: object) -> OptimizationProfile:
        if not isinstance(doc, Mapping) or not isinstance(doc.get("inputs"), list):
            raise ProfileError(f"A saved optimization profile is malformed: {doc!r}.",
                               fix="A profile is {'inputs': [{'name', 'min', 'opt', 'max'}, ...]}; set it again.")
        return cls.of(InputProfile.from_json(d) for d in doc["inputs"])


# --- building profiles ------------------------------------------------------------------------------

def _real_inputs(inputs: Iterable[TensorInfo]) -> str:
    return ", ".join(f"'{i.name}' ({i.shape_text()})" for i in inputs)


def _is_dynamic(d: object) -> bool:
    return not (isinstance(d, int) and d > 0)


def _template(info: TensorInfo) -> str:
    """``Nx3xHxW``: the model's dims, symbols where a number must go."""
    if info.shape is None:
        return "DIMS"
    return "x".join(str(d) if not _is_dynamic(d) else (str(d) if isinstance(d, str) and d != "?" else f"d{a}")
                    for a, d in enumerate(info.shape))


def _parse_dims(text: str, name: str, which: str, inputs: list[TensorInfo]) -> Shape:
    text = text.strip()
    if not _DIMS_RE.fullmatch(text):
        raise ProfileError(f"The {which} shape '{text}' of input '{name}' is not a shape; write dims as integers "
                           "joined by 'x', e.g. 1x3x224x224.", fix=f"The model's inputs are {_real_inputs(inputs)}.")
    return tuple(int(d) for d in text.split("x"))


def parse_profile_args(args: Sequence[str], inputs: list[TensorInfo],
                       shapes: Mapping[str, Sequence[int]] | None = None, *,
                       dim_names: DimNames | None = None) -> OptimizationProfile:
    """One profile from ``--profile NAME:MIN:OPT:MAX`` arguments (one per input), checked against the model.

    Inputs no ``--profile`` names get a fixed range: their ``shapes`` entry (from ``--shapes``) when given,
    else the model's own static shape. A dynamic input left without a range is an error that names its axes.
    ``dim_names`` (``named_dims(graph)``, :mod:`app.core.engine.dim_params`) checks dims sharing a dim_param; see
    :func:`profile_problems`.
    """
    by_name = {i.name: i for i in inputs}
    given: dict[str, InputProfile] = {}
    for raw in args:
        arg = raw.strip()
        parts = arg.rsplit(":", 3)
        if len(parts) != 4 or not parts[0]:
            raise ProfileError(f"'{arg}' is not NAME:MIN:OPT:MAX; a profile gives an input three shapes, "
                               "e.g. x:1x3x224x224:4x3x224x224:8x3x224x224.",
                               fix="For one fixed shape use --shapes NAME:DIMS instead. "
                                   f"The model's inputs are {_real_inputs(inputs)}.")
        name, texts = parts[0], parts[1:]
        if name not in by_name:
            hint = ""
            two = arg.rsplit(":", 2)[0]
            if two in by_name:
                hint = f" It looks like only two shapes were given for input '{two}'; a profile needs three. "
            raise ProfileError(f"The model has no input named '{name}'.{hint}".rstrip(),
                               fix=f"The model's inputs are {_real_inputs(inputs)}.")
        if name in given:
            raise ProfileError(f"Input '{name}' is given twice with --profile.",
                               fix="Give each input one --profile NAME:MIN:OPT:MAX.")
        mn, op, mx = (_parse_dims(t, name, w, inputs) for t, w in zip(texts, _WHICH, strict=True))
        given[name] = InputProfile(name, mn, op, mx)
    unknown = [n for n in (shapes or {}) if n not in by_name]
    if unknown:
        raise ProfileError(f"The model has no input named {', '.join(map(repr, unknown))}.",
                           fix=f"The model's inputs are {_real_inputs(inputs)}.")
    profile = OptimizationProfile(dict(given))
    for info in inputs:
        if info.name in given:
            continue
        if shapes and info.name in shapes:
            profile.inputs[info.name] = InputProfile.fixed(info.name, shapes[info.name])
        elif info.shape is not None and not any(_is_dynamic(d) for d in info.shape):
            profile.inputs[info.name] = InputProfile.fixed(info.name, tuple(int(d) for d in info.shape))
    validate_profile(profile, inputs, dim_names=dim_names)
    return OptimizationProfile.of(profile.inputs[i.name] for i in inputs if i.name in profile.inputs)


def profile_from_shapes(inputs: list[TensorInfo], shapes: Mapping[str, Sequence[int]], *,
                        dim_names: DimNames | None = None) -> OptimizationProfile:
    """A profile of fixed shapes (min = opt = max): ``shapes`` where given, the model's static dims elsewhere."""
    return parse_profile_args([], inputs, shapes, dim_names=dim_names)


# --- checking ---------------------------------------------------------------------------------------

def check_engine_shapes(graph: object, shapes: Mapping[str, Sequence[int]]) -> None:
    """The shapes a TensorRT target runs at, checked before any job starts (the CLI and the window alike):
    ProfileError when dims that share a dim_param name are given different sizes. ONNX Runtime does not care."""
    problems = shape_name_problems(shapes, named_dims(graph))
    if problems:
        raise ProfileError(problems[0][0], fix=problems[0][1])



def profile_problems(profile: OptimizationProfile, inputs: list[TensorInfo], *,
                     dim_names: DimNames | None = None) -> list[tuple[str, str]]:
    """Every way ``profile`` does not fit the model, as (problem, fix) pairs; empty when it fits.

    Dims that share a dim_param name are one dimension to TensorRT (:func:`dim_name_problems`). ``dim_names``
    gives them from the graph (``named_dims(graph)``); without it they are read from ``inputs``, where a dim named
    '?' cannot be told from an unnamed one, so only other names are checked. ``{}`` checks none.
    """
    by_name = {i.name: i for i in inputs}
    real = _real_inputs(inputs)
    problems: list[tuple[str, str]] = []
    for name in profile.inputs:
        if name not in by_name:
            problems.append((f"The profile names input '{name}', which the model does not have.",
                             f"The model's inputs are {real}."))
    for info in inputs:
        p = profile.inputs.get(info.name)
        if p is None:
            if info.shape is None:
                problems.append((f"Input '{info.name}' has no declared rank and no range in the profile.",
                                 f"Give its range with --profile {info.name}:MIN:OPT:MAX."))
            elif dyn := [a for a, d in enumerate(info.shape) if _is_dynamic(d)]:
                axes = ", ".join(f"'{info.shape[a]}' on axis {a}" for a in dyn)
                problems.append((f"Input '{info.name}' ({info.shape_text()}) has dynamic dimensions ({axes}) "
                                 "but no range in the profile.",
                                 f"Give its range with --profile {info.name}:MIN:OPT:MAX, each shape like "
                                 f"{_template(info)} with numbers for the dynamic dims."))
            continue
        problems.extend(_input_problems(info, p))
    names = dim_names if dim_names is not None else names_in(inputs)
    problems.extend(dim_name_problems(profile, names))
    return problems


def _input_problems(info: TensorInfo, p: InputProfile) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    name = info.name
    # A fixed range is one shape (from --shapes or the model): name it once, not three times.
    shapes = {"the shape given": p.min} if p.is_fixed() else {f"the profile's {w} shape": getattr(p, w) for w in _WHICH}
    rank = len(info.shape) if info.shape is not None else len(p.min)
    for label, dims in shapes.items():
        if len(dims) != rank:
            declared = (f"rank {rank} ({info.shape_text()})" if info.shape is not None
                        else f"rank {rank} in its min shape")
            out.append((f"Input '{name}' has {declared}, but {label} has rank {len(dims)} ({shape_text(dims)}).",
                        f"Give {rank} dims in each shape of '{name}'."))
    if out:
        return out  # per-axis checks mean nothing across ranks
    for label, dims in shapes.items():
        for axis, d in enumerate(dims):
            if d <= 0:
                out.append((f"Input '{name}': {label} has {d} on axis {axis}; every dimension must be a positive "
                            "integer.", f"Use a size of at least 1 on axis {axis} of '{name}'."))
    if info.shape is not None:
        for axis, want in enumerate(info.shape):
            if _is_dynamic(want):
                continue
            for label, dims in shapes.items():
                if dims[axis] != want:
                    out.append((f"Input '{name}' has a fixed size {want} on axis {axis}, but {label} has "
                                f"{dims[axis]} there.",
                                f"Use {want} on axis {axis} of '{name}' ({info.shape_text()})."))
    for axis, (lo, mid, hi) in enumerate(zip(p.min, p.opt, p.max, strict=True)):
        if not lo <= mid <= hi:
            out.append((f"Input '{name}' axis {axis}: min {lo}, opt {mid}, max {hi} are out of order; a profile "
                        "needs min ≤ opt ≤ max on every axis.",
                        f"Order the sizes on axis {axis} of '{name}' as min ≤ opt ≤ max."))
    return out


def validate_profile(profile: OptimizationProfile, inputs: list[TensorInfo], *,
                     dim_names: DimNames | None = None) -> None:
    """Raise :class:`ProfileError` listing every problem (input and axis named), or return when it fits."""
    problems = profile_problems(profile, inputs, dim_names=dim_names)
    if not problems:
        return
    if len(problems) == 1:
        raise ProfileError(problems[0][0], fix=problems[0][1])
    fixes = list(dict.fromkeys(f for _, f in problems))
    raise ProfileError(f"The optimization profile has {len(problems)} problems: "
                       + " ".join(f"({i}) {m}" for i, (m, _) in enumerate(problems, 1)), fix=" ".join(fixes))


# --- run time ---------------------------------------------------------------------------------------

def shape_in_profile(profile: OptimizationProfile, feeds_shapes: Mapping[str, Sequence[int]]) -> list[str]:
    """Why a run's input shapes do not fit the engine's profile; empty when they all fit.

    TensorRT refuses such shapes in ``set_input_shape``; checking first gives a message naming the input
    and the axis, and the range the engine was built for.
    """
    problems: list[str] = []
    for name in feeds_shapes:
        if name not in profile.inputs:
            problems.append(f"input '{name}' is not an input of the engine's profile "
                            f"(it has {', '.join(map(repr, profile.inputs)) or 'no inputs'})")
    for name, p in profile.inputs.items():
        if name not in feeds_shapes:
            problems.append(f"no data for input '{name}' (the engine takes {shape_text(p.min)} to {shape_text(p.max)})")
            continue
        shape = tuple(int(d) for d in feeds_shapes[name])
        if len(shape) != len(p.min):
            problems.append(f"input '{name}' has rank {len(shape)} ({shape_text(shape)}), but the engine was built "
                            f"for rank {len(p.min)} ({shape_text(p.min)} to {shape_text(p.max)})")
            continue
        for axis, (d, lo, hi) in enumerate(zip(shape, p.min, p.max, strict=True)):
            if not lo <= d <= hi:
                span = f"exactly {lo}" if lo == hi else f"{lo} to {hi}"
                problems.append(f"input '{name}' axis {axis} is {d}, outside the engine's range ({span}; "
                                f"profile {shape_text(p.min)} to {shape_text(p.max)})")
    return problems


def check_shapes_in_profile(profile: OptimizationProfile, feeds_shapes: Mapping[str, Sequence[int]]) -> None:
    """Raise :class:`ProfileError` when a run's shapes do not fit the engine's profile."""
    problems = shape_in_profile(profile, feeds_shapes)
    if problems:
        raise ProfileError("The input shapes do not fit the engine: " + "; ".join(problems) + ".",
                           fix="Run with shapes inside the engine's ranges, or rebuild it with a --profile that "
                               "covers them.")


def pick_profile(profiles: Sequence[OptimizationProfile], feeds_shapes: Mapping[str, Sequence[int]]) -> int | None:
    """The index of the first profile the shapes fit (``set_optimization_profile_async``), else None."""
    for index, profile in enumerate(profiles):
        if not shape_in_profile(profile, feeds_shapes):
            return index
    return None
