"""Checks of the input shapes and the optimization profile the user set against the model's real inputs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import onnx

from app.core.engine import InputProfile, OptimizationProfile, dim_name_problems, named_dims, profile_problems
from app.core.errors import ShapeSpecError
from app.core.model import ShapeResult, TensorInfo, dynamic_dims, validate_input_shape
from app.core.readiness.context import GraphIndex
from app.core.readiness.findings import Finding


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
        for problem, fix in profile_problems(sub, known, dim_names={}):  # names: check_dim_names
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


def check_dim_names(index: GraphIndex, shapes: Mapping[str, Sequence[int]] | None,
                    profile: OptimizationProfile | None) -> list[Finding]:
    """Dims that share a dim_param name are one dimension to TensorRT (its named dimensions): the shapes must
    give them one size, and a profile equal opt sizes and overlapping ranges. TensorRT refuses the build
    otherwise ("Input dimensions with this name have different constant values"), e.g. a classifier whose H and
    W are both '?'. The rule is :func:`app.core.engine.dim_params.dim_name_problems`, which profiles use too."""
    names = named_dims(index.graph)
    given = valid_shapes(index, shapes)
    out: list[Finding] = []
    checks = [OptimizationProfile({n: InputProfile.fixed(n, d) for n, d in given.items()})]
    if profile is not None:
        checks.append(profile)
    seen: set[str] = set()
    for p in checks:
        for problem, fix in dim_name_problems(p, names):
            if problem in seen:
                continue
            seen.add(problem)
            inputs = [i.name for i in index.inputs if f"'{i.name}' axis" in problem]
            nodes = sorted({k for inp in inputs for k in index.reader_keys(inp)}, key=lambda k: index.order.get(k, 0))
            out.append(Finding("error", "dim-param-conflict", nodes, problem, fix))
    return out


def check_shape_range(model: onnx.ModelProto, shapes: Mapping[str, Sequence[int]] | None,
                      profile: OptimizationProfile | None, fixes: dict[str, tuple[str, str]] | None = None,
                      shape_result: ShapeResult | None = None, budget_s: float | None = None) -> list[Finding]:
    """Where the given shapes, or the profile's min/opt/max and sizes inside its ranges, make the graph's shapes
    disagree (app.core.readiness.shape_range), with the rule on the input dims and the nearest valid sizes.
    `fixes` receives, per profile input that breaks, the problem and the range with valid sizes."""
    from app.core.readiness.shape_range import analyse, analyse_profile, profile_fixes

    if profile is not None and profile.inputs:
        report = analyse_profile(model, profile, shapes, budget_s=budget_s)
        if fixes is not None:
            fixes.update(profile_fixes(report, profile))
        corners = {w: {**dict(shapes or {}), **profile.shapes(w)} for w in ("min", "opt", "max")}
    elif shapes:
        report = analyse(model, shapes=shapes, result=shape_result, budget_s=budget_s)
        corners = {"shapes": dict(shapes)}
    else:
        return []
    where = {"shapes": "At the given shapes", "min": "At the profile's min", "opt": "At the profile's opt",
             "max": "At the profile's max"}
    out = []
    for which, b in report.breaks:
        suggested = report.fixes(corners[which])
        fix = ("Use " + "; ".join(suggested) + "." if suggested else
               "Change the input sizes so that these dims agree (no single rule on one input dim explains it).")
        rules = "; ".join(r.text() for r in report.rules
                          if r.input in corners[which] and not r.ok(int(corners[which][r.input][r.axis])))
        out.append(Finding("error", "shape-break", [b.node],
                           f"{where[which]}, the graph's shapes disagree: {b.text()}." + (f" Rule: {rules}." if rules
                                                                                           else ""),
                           fix + (" The build fails or its engine fails at these sizes." if which != "shapes" else
                                  " ONNX Runtime and TensorRT both fail at these sizes.")))
    if report.cut:
        out.append(Finding("info", "profile-range-partial", [],
                           f"Sizes inside the profile's range were tried only in part ({budget_s:g} s spent).",
                           "Run `trtlab check MODEL --profile …` to try them all."))
    for name, axis, value, b in report.inside:
        rule = report.rule_for(name, axis)
        out.append(Finding("warning", "profile-range-breaks", [b.node],
                           f"Inside the profile's range, {name} dim {axis} = {value} makes the graph's shapes disagree:"
                           f" {b.text()}." + (f" Rule: {rule.text()}." if rule else ""),
                           "The engine builds, but a run at such a size fails: feed only sizes that keep the rule"
                           + (f" ({rule.text()})" if rule else "") + ", or narrow the range."))
    return out
