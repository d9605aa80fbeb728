"""Shape-range analysis: where concrete input shapes break a graph, and the rule on a dynamic dim that avoids it.

TensorRT builds a profile whose corners make shapes inconsistent and fails late ("Profile kMAX values are not
self-consistent. Add.12: dimensions not compatible for elementwise. 78 != 77"), or builds it and the engine fails at
run time; ONNX Runtime fails at the first run of such a size. The shapes are known long before: ONNX shape inference
plus trtlab's evaluation of the shape arithmetic (:func:`app.core.model.infer_shapes`) gives every tensor's dims for
concrete input shapes, in tens of milliseconds for a thousand-node detector. :func:`shape_breaks` reads those dims
node by node and names where they disagree: element-wise broadcasts, Concat, MatMul's inner dims, Reshape volumes,
Split sizes, and sizes of zero or less out of convolutions, pooling, Resize and Slice.

:func:`dim_rule` then finds the rule on one dynamic dim by probing sizes around a failing one (each probe is one
shape inference): "a multiple of 32" when the nearest multiples of 32 pass and those of 16 do not, "at most 512" when
the sizes pass up to a bound and fail beyond it. PP-OCRv4's text detector at 1×3×1472×1224: the FPN upsamples 39 to
78 and adds it to 77 (1224 is not a multiple of 32); 1216 and 1248 pass.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import numpy_helper

from app.core.model import ShapeResult, attr_int, attr_ints, constant_tensor, infer_shapes, node_keys

Shapes = Mapping[str, Sequence[int]]
# Ops whose inputs broadcast against each other (numpy rules): every input for these, the first two for PRelu.
BROADCAST_OPS = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Mod", "And", "Or", "Xor", "Equal", "Greater",
                           "Less", "GreaterOrEqual", "LessOrEqual", "Where", "Max", "Min", "Sum", "Mean", "PRelu",
                           "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor"})
# Ops whose output sizes come from their input sizes by arithmetic that can reach zero or less (not Slice: an empty
# slice is how a decoder reads an empty past).
SIZE_OPS = frozenset({"Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool", "Resize", "Upsample",
                      "Col2Im", "DepthToSpace", "SpaceToDepth"})
_INCONSISTENT = re.compile(r"op_type:(\w+), node name: ([^)]*)\): (.*)")
MULTIPLES = (2, 4, 8, 16, 32, 64, 128)  # strides tried, smallest first
PROBE_BUDGET = 48                          # shape inferences one rule may cost


@dataclass(frozen=True)
class ShapeBreak:
    """One node where the given input shapes make the graph's shapes disagree."""

    node: str                       # the node's plan key
    op: str
    message: str                    # "dims 77 and 78 do not broadcast (axis 3)"
    inputs: dict[str, tuple[int, ...]] = field(default_factory=dict)  # the model's input shapes that cause it

    def text(self) -> str:
        at = ", ".join(f"{k} {'×'.join(map(str, v))}" for k, v in self.inputs.items())
        return f"{self.op} '{self.node}': {self.message}" + (f" (at {at})" if at else "")

    def to_json(self) -> dict:
        return {"node": self.node, "op": self.op, "message": self.message,
                "inputs": {k: list(v) for k, v in self.inputs.items()}}


def _static(result: ShapeResult, name: str) -> tuple[int, ...] | None:
    info = result.get(name) if name else None
    return info.static_shape() if info is not None else None


def _ints(name: str, consts: Mapping[str, onnx.TensorProto]) -> list[int] | None:
    t = consts.get(name)
    if t is None:
        return None
    return [int(v) for v in np.asarray(numpy_helper.to_array(t)).reshape(-1)]


def _attr(node: onnx.NodeProto, name: str, default: object = None) -> object:
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def _broadcast(dims: list[tuple[int, ...]]) -> str | None:
    rank = max(len(d) for d in dims)
    for back in range(1, rank + 1):
        sizes = sorted({d[-back] for d in dims if len(d) >= back} - {1})
        if len(sizes) > 1:
            return f"dims {sizes[0]} and {sizes[1]} do not broadcast (axis {rank - back})"
    return None


def _check_node(node: onnx.NodeProto, ins: list[tuple[int, ...] | None], outs: list[tuple[int, ...] | None],
                consts: Mapping[str, onnx.TensorProto]) -> str | None:
    op = node.op_type
    if op in BROADCAST_OPS:
        dims = [d for d in (ins[:2] if op == "PRelu" else ins) if d is not None]
        if len(dims) == len([n for n in (node.input[:2] if op == "PRelu" else node.input) if n]) and len(dims) > 1:
            return _broadcast(dims)
        return None
    if op == "Concat" and ins and all(d is not None for d in ins):
        dims = [d for d in ins if d is not None]
        if len({len(d) for d in dims}) > 1:
            return f"inputs of rank {' and '.join(str(len(d)) for d in dims[:2])} cannot be concatenated"
        axis = attr_int(_attr(node, "axis", 0)) % len(dims[0])
        for j in range(len(dims[0])):
            sizes = sorted({d[j] for d in dims})
            if j != axis and len(sizes) > 1:
                return f"inputs disagree on axis {j} ({sizes[0]} ≠ {sizes[1]}); only axis {axis} may differ"
        return None
    if op == "MatMul" and len(ins) == 2 and ins[0] is not None and ins[1] is not None:
        a, b = ins[0], ins[1]
        k_a, k_b = a[-1], (b[-2] if len(b) >= 2 else b[-1])
        if k_a != k_b:
            return f"inner dims {k_a} and {k_b} differ ({'×'.join(map(str, a))} @ {'×'.join(map(str, b))})"
        if len(a) > 2 and len(b) > 2:
            return _broadcast([a[:-2], b[:-2]])
        return None
    if op == "Reshape" and ins and ins[0] is not None:
        volume = math.prod(ins[0])
        target = _ints(node.input[1], consts) if len(node.input) > 1 else None
        if target is not None:
            zero_copies = not _attr(node, "allowzero", 0)
            sizes = [ins[0][i] if (t == 0 and zero_copies and i < len(ins[0])) else t for i, t in enumerate(target)]
            known = math.prod(s for s in sizes if s != -1)
            if -1 in sizes and (known == 0 or volume % known):
                return f"{volume} values cannot be reshaped to {target} (not a multiple of {known})"
            if -1 not in sizes and known != volume:
                return f"{volume} values cannot be reshaped to {target} ({known} values)"
        elif outs and outs[0] is not None and math.prod(outs[0]) != volume:
            return f"{volume} values reshaped to {math.prod(outs[0])}"
        return None
    if op == "Split" and ins and ins[0] is not None:
        if len(node.input) > 1 and node.input[1]:
            split = _ints(node.input[1], consts)
        else:
            given = _attr(node, "split")
            split = None if given is None else attr_ints(given)
        axis = attr_int(_attr(node, "axis", 0)) % len(ins[0])
        if split and sum(split) != ins[0][axis]:
            return f"split sizes {split} add up to {sum(split)}, not axis {axis}'s {ins[0][axis]}"
        return None
    if op in SIZE_OPS:
        for name, d in zip(node.output, outs, strict=False):
            if d is not None and any(x <= 0 for x in d):
                return f"output '{name}' would be {'×'.join(map(str, d))}: a size of zero or less"
    return None


_MEMO: dict[tuple, list[ShapeBreak]] = {}  # (graph fingerprint, shapes) -> breaks: the GUI re-checks per edit
_MEMO_SIZE = 256


def shape_breaks(model: onnx.ModelProto, input_shapes: Shapes, result: ShapeResult | None = None
                 ) -> list[ShapeBreak]:
    """Where these concrete input shapes make the top-level graph's shapes disagree, in graph order. Answers for a
    model object and shapes are remembered (the Readiness check runs again after every plan edit)."""
    shapes = {k: tuple(int(x) for x in v) for k, v in input_shapes.items()}
    memo = (_fingerprint(model.graph), tuple(sorted(shapes.items())))
    if memo in _MEMO:
        return list(_MEMO[memo])
    found = _breaks(model, shapes, result if result is not None else infer_shapes(model, shapes))
    if len(_MEMO) >= _MEMO_SIZE:
        _MEMO.pop(next(iter(_MEMO)))
    _MEMO[memo] = found
    return list(found)


def _fingerprint(graph: onnx.GraphProto) -> int:
    """What the breaks depend on, hashed: every node's op, name, inputs, outputs and attributes, and the small
    initializers (Reshape targets, Resize scales) by value. Not the object's id: a new model can reuse an old id."""
    nodes = tuple((n.op_type, n.name, tuple(n.input), tuple(n.output), n.SerializeToString() if n.attribute else b"")
                  for n in graph.node)
    small = tuple((t.name, tuple(t.dims), t.SerializeToString()) for t in graph.initializer
                  if math.prod(t.dims) <= 64)
    inputs = tuple(v.SerializeToString() for v in graph.input)
    return hash((nodes, small, inputs))


def _breaks(model: onnx.ModelProto, shapes: dict[str, tuple[int, ...]], result: ShapeResult) -> list[ShapeBreak]:
    g = model.graph
    consts: dict[str, onnx.TensorProto] = {t.name: t for t in g.initializer}
    for n in g.node:
        if n.op_type == "Constant" and n.output and (t := constant_tensor(n)) is not None:
            consts[n.output[0]] = t
    keys = node_keys(g)
    out: list[ShapeBreak] = []
    for key, node in zip(keys, g.node, strict=True):
        why = _check_node(node, [_static(result, n) for n in node.input], [_static(result, n) for n in node.output],
                          consts)
        if why:
            out.append(ShapeBreak(key, node.op_type, why, shapes))
    # An inconsistency ONNX's inference found that the checks above do not cover.
    m = _INCONSISTENT.search(result.message or "")
    if m and not out:
        op, name, text = m.groups()
        key = next((k for k, n in zip(keys, g.node, strict=True) if n.name == name), name)
        out.append(ShapeBreak(key, op, text.strip()[:200], shapes))
    return out


# ------------------------------------------------------------------------------------------------ the rule
@dataclass(frozen=True)
class DimRule:
    """What one dynamic input dim must satisfy for the graph's shapes to agree."""

    input: str
    axis: int
    multiple: int | None = None    # must be a multiple of this
    at_most: int | None = None     # must not exceed this
    at_least: int | None = None    # must be at least this

    def ok(self, value: int) -> bool:
        return ((self.multiple is None or value % self.multiple == 0)
                and (self.at_most is None or value <= self.at_most)
                and (self.at_least is None or value >= self.at_least))

    def text(self) -> str:
        parts = ([f"a multiple of {self.multiple}"] if self.multiple else []) + (
            [f"at most {self.at_most}"] if self.at_most is not None else []) + (
            [f"at least {self.at_least}"] if self.at_least is not None else [])
        return f"{self.input} dim {self.axis} must be " + " and ".join(parts)

    def nearest(self, value: int) -> list[int]:
        """The valid sizes nearest `value`: the multiples on either side, or the bound."""
        if self.multiple:
            below, above = (value // self.multiple) * self.multiple, -(-value // self.multiple) * self.multiple
            cands = sorted({v for v in (below, above) if v > 0 and self.ok(v)} or
                           {v for v in (below - self.multiple,) if v > 0 and self.ok(v)})
            return cands
        if self.at_most is not None and value > self.at_most:
            return [self.at_most]
        if self.at_least is not None and value < self.at_least:
            return [self.at_least]
        return []

    def to_json(self) -> dict:
        return {"input": self.input, "axis": self.axis, "multiple": self.multiple, "at_most": self.at_most,
                "at_least": self.at_least, "text": self.text()}


def dim_rule(model: onnx.ModelProto, good: Shapes, name: str, axis: int, bad: int,
             lo: int = 1, hi: int | None = None, budget: int = PROBE_BUDGET,
             deadline: float | None = None) -> DimRule | None:
    """The rule on input `name`'s dim `axis`, given shapes `good` that pass and a size `bad` of that dim that breaks
    them (every other dim as in `good`); sizes are probed within [lo, hi]. None when no simple rule explains it."""
    base = {k: tuple(int(x) for x in v) for k, v in good.items()}
    hi = hi if hi is not None else max(bad, base[name][axis]) * 2
    seen: dict[int, bool] = {}

    def passes(v: int) -> bool:
        if v not in seen:
            if len(seen) >= budget or (deadline is not None and time.monotonic() > deadline):
                raise _Spent
            dims = list(base[name])
            dims[axis] = v
            seen[v] = not shape_breaks(model, {**base, name: tuple(dims)})
        return seen[v]

    try:
        if passes(bad) or not passes(base[name][axis]):
            return None
        for k in MULTIPLES:
            below, above = (bad // k) * k, (bad // k + 1) * k
            probes = [v for v in (below, above, below - k) if lo <= v <= hi]
            if bad % k and len(probes) >= 2 and all(passes(v) for v in probes):
                # k explains it when a size off the multiple by k/2 fails too (else a smaller stride would do)
                return DimRule(name, axis, multiple=k)
        good_v = base[name][axis]
        a, b = (good_v, bad) if bad > good_v else (bad, good_v)  # passes at good_v, fails at bad
        while b - a > 1:
            mid = (a + b) // 2
            ok = passes(mid)
            if bad > good_v:
                a, b = (mid, b) if ok else (a, mid)
            else:
                a, b = (a, mid) if ok else (mid, b)
        if bad > good_v and all(passes(v) for v in (a - 1, a - 2) if v >= lo):
            return DimRule(name, axis, at_most=a)
        if bad < good_v and all(passes(v) for v in (b + 1, b + 2) if v <= hi):
            return DimRule(name, axis, at_least=b)
    except _Spent:
        return None
    return None


class _Spent(Exception):
    """The probe budget of one rule is spent."""


def dynamic_axes(model: onnx.ModelProto) -> dict[str, list[int]]:
    """Per graph input, the axes the model leaves open (symbolic or unknown)."""
    inits = {t.name for t in model.graph.initializer}
    out: dict[str, list[int]] = {}
    for vi in model.graph.input:
        if vi.name in inits or not vi.type.HasField("tensor_type"):
            continue
        axes = [i for i, d in enumerate(vi.type.tensor_type.shape.dim) if not d.HasField("dim_value")]
        if axes:
            out[vi.name] = axes
    return out


def explain(model: onnx.ModelProto, failing: Shapes, candidates: Sequence[Shapes],
            dynamic: Mapping[str, Sequence[int]] | None = None,
            ranges: Mapping[tuple[str, int], tuple[int, int]] | None = None,
            passes: Callable[[Shapes], bool] | None = None, deadline: float | None = None) -> list[DimRule]:
    """Rules on the dynamic dims that make `failing` break: from the first of `candidates` (other shapes of the same
    inputs: the profile's opt and min, say) that passes, each dynamic dim set to its failing size alone."""
    check = passes or (lambda s: not shape_breaks(model, s))
    good = next((c for c in candidates if check(c)), None)
    if good is None:
        return []
    dyn = dynamic if dynamic is not None else dynamic_axes(model)
    rules = []
    for name, axes in dyn.items():
        if name not in failing or name not in good:
            continue
        for axis in axes:
            bad = int(failing[name][axis])
            if bad == int(good[name][axis]):
                continue
            trial = {k: tuple(v) for k, v in good.items()}
            dims = list(trial[name])
            dims[axis] = bad
            trial[name] = tuple(dims)
            if check(trial):
                continue
            lo, hi = (ranges or {}).get((name, axis), (1, None))
            rule = dim_rule(model, good, name, axis, bad, lo, hi, deadline=deadline)
            if rule is not None:
                rules.append(rule)
    return rules


# ------------------------------------------------------------------------------------------ shapes and profiles
@dataclass
class RangeReport:
    """What the analysis of the user's shapes or profile found."""

    breaks: list[tuple[str, ShapeBreak]] = field(default_factory=list)  # (which: shapes/min/opt/max, break)
    inside: list[tuple[str, int, int, ShapeBreak]] = field(default_factory=list)  # sizes inside a range that break
    rules: list[DimRule] = field(default_factory=list)
    cut: bool = False  # the time budget ended the sampling inside the ranges

    def rule_for(self, name: str, axis: int) -> DimRule | None:
        return next((r for r in self.rules if r.input == name and r.axis == axis), None)

    def fixes(self, shapes: Shapes) -> list[str]:
        """'x dim 3: 1216 or 1248 instead of 1224 (a multiple of 32)' for each rule a shape here breaks."""
        out = []
        for r in self.rules:
            if r.input in shapes and not r.ok(int(shapes[r.input][r.axis])):
                bad = int(shapes[r.input][r.axis])
                near = " or ".join(map(str, r.nearest(bad)))
                out.append(f"{r.input} dim {r.axis}: {near} instead of {bad} ({r.text().split(' must be ')[1]})")
        return out


def _rounded(shapes: Shapes, dynamic: Mapping[str, Sequence[int]], k: int) -> dict[str, tuple[int, ...]]:
    out = {n: tuple(int(x) for x in v) for n, v in shapes.items()}
    for name, axes in dynamic.items():
        if name in out:
            dims = list(out[name])
            for a in axes:
                if dims[a] > k:
                    dims[a] = max(k, round(dims[a] / k) * k)
            out[name] = tuple(dims)
    return out


def analyse(model: onnx.ModelProto, shapes: Shapes | None = None, corners: Mapping[str, Shapes] | None = None,
            ranges: Mapping[tuple[str, int], tuple[int, int]] | None = None, sample: bool = True,
            result: ShapeResult | None = None, budget_s: float | None = None) -> RangeReport:
    """Check the user's `shapes` (`result`: their shape inference, when the caller has it), or a profile's `corners`
    ({"min": shapes, "opt": …, "max": …}) and sizes sampled inside its `ranges` ({(input, axis): (lo, hi)}), and
    find the rule behind each break. With `budget_s` the rules and the sampling inside the ranges stop when it is
    spent (the window checks on its own thread); the breaks at the given shapes or corners are always found."""
    report = RangeReport()
    deadline = None if budget_s is None else time.monotonic() + budget_s
    dyn = dynamic_axes(model)
    sets = dict(corners or {}) if corners else ({"shapes": shapes} if shapes else {})
    ok: dict[str, bool] = {}
    for which, s in sets.items():
        found = shape_breaks(model, s, result if which == "shapes" else None)
        ok[which] = not found
        report.breaks += [(which, b) for b in found[:3]]
    passing = [sets[w] for w in ("opt", "min", "max", "shapes") if ok.get(w)]
    for which, s in sets.items():
        if ok[which]:
            continue
        candidates = passing + [_rounded(s, dyn, k) for k in (32, 64, 128)]
        for rule in explain(model, s, candidates, dyn, ranges, deadline=deadline):
            if report.rule_for(rule.input, rule.axis) is None:
                report.rules.append(rule)
    if sample and ranges and ok.get("opt"):
        opt = {k: tuple(int(x) for x in v) for k, v in sets["opt"].items()}
        for (name, axis), (lo, hi) in ranges.items():
            if hi - lo < 2 or name not in opt:
                continue
            for v in sorted({lo + 1, (lo + hi) // 2, (lo + hi) // 2 + 1, hi - 1} - {lo, hi}):
                if deadline is not None and time.monotonic() > deadline:
                    report.cut = True
                    break
                dims = list(opt[name])
                dims[axis] = v
                found = shape_breaks(model, {**opt, name: tuple(dims)})
                if found:
                    report.inside.append((name, axis, v, found[0]))
                    if report.rule_for(name, axis) is None and (found_rule := dim_rule(
                            model, opt, name, axis, v, lo, hi, deadline=deadline)):
                        report.rules.append(found_rule)
                    break
    return report


def analyse_profile(model: onnx.ModelProto, profile: object, shapes: Shapes | None = None,
                    sample: bool = True, budget_s: float | None = None) -> RangeReport:
    """`analyse` for an optimization profile (app.core.engine.OptimizationProfile: its inputs' min/opt/max), the
    user's `shapes` filling the inputs the profile leaves out."""
    inputs = getattr(profile, "inputs", {}) or {}
    fixed = {k: tuple(int(x) for x in v) for k, v in (shapes or {}).items() if k not in inputs}
    corners = {w: {**fixed, **{n: tuple(getattr(p, w)) for n, p in inputs.items()}} for w in ("min", "opt", "max")}
    ranges = {(n, a): (int(p.min[a]), int(p.max[a])) for n, p in inputs.items() for a in range(len(p.min))
              if p.min[a] != p.max[a]}
    return analyse(model, corners=corners, ranges=ranges, sample=sample, budget_s=budget_s)


def profile_fixes(report: RangeReport, profile: object) -> dict[str, tuple[str, str]]:
    """Per profile input whose min, opt or max breaks a rule: (the problem, the MIN:OPT:MAX text with each such dim
    moved to the nearest valid size: down for max, up for min, the nearer for opt)."""
    out: dict[str, tuple[str, str]] = {}
    breaks = {which: b for which, b in report.breaks}
    for name, p in (getattr(profile, "inputs", {}) or {}).items():
        rules = [r for r in report.rules if r.input == name]
        corners = {w: list(getattr(p, w)) for w in ("min", "opt", "max")}
        wrong = [(w, r) for w in corners for r in rules if not r.ok(int(corners[w][r.axis]))]
        if not wrong or not any(w in breaks for w, _ in wrong):
            continue
        for w, r in wrong:
            v = int(corners[w][r.axis])
            near = r.nearest(v) or [v]
            corners[w][r.axis] = (min(near) if w == "max" else max(near) if w == "min" else
                                  min(near, key=lambda x: (abs(x - v), x)))
        first = next(breaks[w] for w, _ in wrong if w in breaks)
        problem = f"{first.text()}; " + "; ".join(dict.fromkeys(r.text() for _, r in wrong))
        out[name] = (problem, ":".join("x".join(map(str, corners[w])) for w in ("min", "opt", "max")))
    return out
