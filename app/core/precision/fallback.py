"""Automatic fallback search: a small set of nodes to keep in high precision so that a variant meets a target.

The target is one tolerance (``cos:0.999``, ``max_abs:0.01``…) that every output must meet, or a drop on a
dataset's metric against the reference (``DropTarget``: ``map50:-0.5``, evaluations giving the change in points).
For FP16/BF16
variants the nodes found are kept FP32; for INT8 variants they are left unquantized — the search itself only
sees node keys and a caller-supplied ``evaluate(keep)`` that builds and measures the variant.

1. ``rank_candidates`` orders the changeable nodes worst first from a per-layer diagnosis: nodes whose output
   has NaN/Inf where the reference's is finite come first (in graph order), then the rest by the error each
   node *adds*: ``1 - cosine`` of its output minus the largest ``1 - cosine`` among the tensors it reads (an
   error inherited from upstream is not the node's fault). Ties go to the larger error, then graph order.
   Each node is followed by the nodes that feed it (see ``rank_candidates``).
2. ``search`` measures the variant as it is, then keeps a growing prefix of the ranking in high precision
   (1, 2, 4, … nodes) until the target is met, bisects the prefix length down to the shortest prefix that
   meets it, and finally tries dropping kept nodes (least suspicious first, in chunks halving down to
   single nodes), keeping a drop when the target is still met. Every set is measured at most once.

The search stops early when it is cancelled or its time budget is spent; it then reports the best set
found so far (the smallest one that met the target, else the one closest to it).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import onnx

from app.core.measure import METRICS, CandidateReport, Tolerance, compare_samples
from app.core.precision.diagnose import LayerError, diagnose_outputs, expose_all
from app.core.precision.plan import PrecisionPlan, node_keys

Progress = Callable[[float | None, str], None]
Feeds = dict[str, np.ndarray]
RunFn = Callable[[onnx.ModelProto, Sequence[Feeds]], list[dict[str, np.ndarray]]]
# evaluate(keep) -> a CandidateReport (from compare_samples), or a mapping {metric: worst value over outputs}
# with an optional "met" entry (bool) that overrides the comparison of the target metric with the target.
Evaluate = Callable[[frozenset[str]], "CandidateReport | Mapping[str, float | bool | None]"]

STOP_BUDGET = "budget"
STOP_CANCELLED = "cancelled"
STOP_EXHAUSTED = "exhausted"
_ALWAYS = ("cos", "max_abs")  # metrics reported besides the target's own
# Ops whose outputs are copies or selections of their inputs: in half precision they pass on the rounding
# of what they read and add none, so the search looks through them for the node that rounded.
COPYING_OPS = frozenset({"Identity", "Relu", "MaxPool", "GlobalMaxPool", "Concat", "Split", "Slice", "Gather",
                         "GatherElements", "GatherND", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose",
                         "Expand", "Tile", "Pad", "DepthToSpace", "SpaceToDepth", "ReduceMax", "ReduceMin", "Max",
                         "Min", "Where", "Dropout"})
_MAX_FEEDERS = 16  # feeders listed after one ranked node


class DropTarget(Protocol):
    """A target on the change of a dataset metric against the reference, in percentage points (as
    app.core.evaluate's ``DropTolerance`` states it): met when the change is at least ``points`` (a score) or at
    most ``points`` (an error rate). Its evaluations give the change in points under the metric's name."""

    @property
    def metric(self) -> str: ...

    @property
    def points(self) -> float: ...

    @property
    def higher_is_better(self) -> bool: ...


Target = Tolerance | DropTarget


@dataclass
class FallbackResult:
    target: str
    met: bool
    keep: list[str]                      # node keys to keep in high precision, worst-ranked first
    before: dict[str, float | None]      # the variant as planned: worst value over outputs per metric
    after: dict[str, float | None]       # with `keep` in high precision
    evaluations: int
    seconds: float
    history: list[dict] = field(default_factory=list)  # one per evaluation: size, value, met, phase
    stopped: str | None = None           # None (finished) | "budget" | "cancelled" | "exhausted"

    def to_json(self) -> dict:
        return {"target": self.target, "met": self.met, "keep_high_precision": list(self.keep),
                "before": _json_metrics(self.before), "after": _json_metrics(self.after),
                "evaluations": self.evaluations, "seconds": round(self.seconds, 3),
                "history": [{**h, "value": _json_float(h.get("value"))} for h in self.history],
                "stopped": self.stopped}


def _json_float(v: float | None) -> float | None:
    return None if v is None or not math.isfinite(v) else float(v)


def _json_metrics(d: dict[str, float | None]) -> dict[str, float | None]:
    return {k: _json_float(v) for k, v in d.items()}


# --------------------------------------------------------------------------------------------- ranking
def _row_error(row: LayerError) -> float:
    """1 - cosine, clamped to [0, 2]; a tensor with nothing finite to compare counts as fully wrong."""
    if row.cosine is None:
        return 1.0 if _row_nonfinite(row) else 0.0
    return min(2.0, max(0.0, 1.0 - row.cosine))


def _row_nonfinite(row: LayerError) -> int:
    """NaN/Inf values in the candidate beyond those of the reference."""
    return max(0, (row.nan + row.inf) - (row.ref_nan + row.ref_inf))


def rank_candidates(rows: list[LayerError], plannable: set[str] | None = None, *,
                    graph: onnx.GraphProto | None = None) -> list[str]:
    """Node keys, worst first, from a diagnosis of the variant against the reference (see the module doc).

    With ``graph`` (the reference model's graph, the one the rows were measured on) rows are matched to
    node keys through their tensors, a node's inherited error is read from the tensors it actually consumes
    (through nodes that have no row, such as unexposed ones), and each ranked node is followed by the nodes
    that feed it (``feeders``): a half-precision producer rounds what it hands on, and an ill-conditioned
    node is fixed only when its inputs arrive unrounded too. Without it the rows are taken as a chain: each
    row inherits the error of the row before it. Only keys in ``plannable`` are returned when it is given;
    plannable nodes without a row follow the ranked ones (in graph order when the graph is given).
    """
    err: dict[str, float] = {}       # tensor -> 1 - cos
    nonfinite: dict[str, int] = {}   # tensor -> new NaN/Inf count
    node_rows: dict[str, list[LayerError]] = {}
    order: dict[str, int] = {}       # key -> graph (or row) position
    inherited: dict[str, float] = {}
    for r in rows:
        err[r.tensor] = max(err.get(r.tensor, 0.0), _row_error(r))
        nonfinite[r.tensor] = max(nonfinite.get(r.tensor, 0), _row_nonfinite(r))

    feeders: Callable[[str], list[str]] = lambda key: []
    if graph is not None:
        keys = node_keys(graph)
        nodes = dict(zip(keys, graph.node, strict=True))
        producer = {o: k for k, n in nodes.items() for o in n.output if o}
        memo: dict[str, float] = {}

        def upstream(tensor: str) -> float:
            """The error of a tensor: its row's, else the worst of what its producer reads."""
            stack = [tensor]
            while stack:  # iterative post-order: deep graphs would exhaust the recursion limit
                t = stack[-1]
                if t in memo:
                    stack.pop()
                elif t in err or t not in producer:
                    memo[t] = err.get(t, 0.0)
                    stack.pop()
                else:
                    ins = [x for x in nodes[producer[t]].input if x]
                    todo = [x for x in ins if x not in memo]
                    if todo:
                        stack.extend(todo)
                    else:
                        memo[t] = max((memo[x] for x in ins), default=0.0)
                        stack.pop()
            return memo[tensor]

        for r in rows:
            node_rows.setdefault(producer.get(r.tensor, r.node), []).append(r)
        for i, (key, node) in enumerate(nodes.items()):
            order[key] = i
            if key in node_rows:
                inherited[key] = max((upstream(x) for x in node.input if x), default=0.0)

        def feeders(key: str) -> list[str]:
            """Producers of the node's float inputs, through copying ops and fixed nodes, up to computing ones."""
            out: list[str] = []
            todo = [x for x in nodes[key].input if x in err]
            seen = set(todo)
            while todo and len(out) < _MAX_FEEDERS:
                p = producer.get(todo.pop(0))
                if p is None:
                    continue
                if p not in out:
                    out.append(p)
                changeable = plannable is None or p in plannable
                if nodes[p].op_type in COPYING_OPS or not changeable:
                    for x in nodes[p].input:
                        if x in err and x not in seen:
                            seen.add(x)
                            todo.append(x)
            return out
    else:
        prev: LayerError | None = None
        for r in rows:
            if r.node not in node_rows:
                order[r.node] = len(order)
                inherited[r.node] = _row_error(prev) if prev is not None else 0.0
            node_rows.setdefault(r.node, []).append(r)
            prev = r

    broken, scored = [], []
    for key, rs in node_rows.items():
        own = max(_row_error(r) for r in rs)
        if any(_row_nonfinite(r) for r in rs):
            broken.append(key)
        else:
            scored.append((-max(0.0, own - inherited.get(key, 0.0)), -own, order.get(key, 0), key))
    ranked: list[str] = []
    seen_keys: set[str] = set()

    def emit(key: str) -> None:
        if key not in seen_keys and (plannable is None or key in plannable):
            seen_keys.add(key)
            ranked.append(key)

    for key in sorted(broken, key=lambda k: order.get(k, 0)):
        emit(key)
    for *_, key in sorted(scored):
        emit(key)
        for f in feeders(key):
            emit(f)
    if plannable is not None:
        rest = [k for k in plannable if k not in seen_keys]
        ranked += sorted(rest, key=lambda k: (order.get(k, len(order)), k))
    return ranked


# --------------------------------------------------------------------------------------------- search
def _as_tolerance(target: Target | str) -> Target:
    return Tolerance.parse(target) if isinstance(target, str) else target


def target_text(target: Target) -> str:
    """``metric:value`` with every significant digit (``str(Tolerance)`` rounds 0.9999999 to 1); a drop target as
    it writes itself (``map50:-0.5``)."""
    return f"{target.metric}:{target.value:.15g}" if isinstance(target, Tolerance) else str(target)


def _higher_is_better(target: Target) -> bool:
    return METRICS[target.metric][1] == "min" if isinstance(target, Tolerance) else target.higher_is_better


def _bound(target: Target) -> float:
    return target.value if isinstance(target, Tolerance) else target.points


def _meets(value: float | None, target: Target) -> bool:
    if value is None or math.isnan(value):
        return False
    return value >= _bound(target) if _higher_is_better(target) else value <= _bound(target)


def _worst(outputs: list, metric: str) -> float | None:
    sense = METRICS[metric][1]
    values = [v for o in outputs if (v := o.value(metric)) is not None]
    if not values:
        return None
    return float(min(values) if sense == "min" else max(values))


def measure(result: CandidateReport | Mapping[str, float | bool | None], target: Target
            ) -> tuple[dict[str, float | None], bool]:
    """What one evaluation says: {metric: worst value over outputs} and whether the target is met.

    A report meets the target when every output passes it and no output has a missing value, a shape
    mismatch or NaN/Inf where the reference is finite ("nonfinite" counts those values).
    """
    if isinstance(result, Mapping):
        metrics = {k: (None if v is None else float(v)) for k, v in result.items() if k != "met"}
        metrics.setdefault(target.metric, None)
        met = bool(result["met"]) if "met" in result else _meets(metrics[target.metric], target)
        return metrics, met
    if not isinstance(target, Tolerance):
        raise TypeError(f"a drop target ({target}) is measured from a mapping of the change, not a report")
    outs = list(result.outputs)
    metrics = {m: _worst(outs, m) for m in (target.metric, *_ALWAYS)}
    metrics["nonfinite"] = float(sum(o.new_nonfinite for o in outs))
    met = bool(outs) and all(target.passes(o) and not o.new_nonfinite and not o.shape_mismatch for o in outs)
    return metrics, met


class SearchStopped(Exception):
    """Ends a search early (cancelled, budget spent, nothing left to try); the best set so far is reported."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _closer(a: float | None, b: float | None, target: Target) -> bool:
    """Whether value a is nearer the target than b (None is the farthest)."""
    if a is None or math.isnan(a):
        return False
    if b is None or math.isnan(b):
        return True
    return a > b if _higher_is_better(target) else a < b


def search(ranked: Sequence[str], evaluate: Evaluate, target: Target | str, *, budget_s: float | None = None,
           progress: Progress | None = None, cancelled: Callable[[], bool] | None = None) -> FallbackResult:
    """The smallest set of ranked nodes found whose high-precision fallback meets the target.

    ``evaluate(keep)`` builds the variant with the nodes in ``keep`` kept in high precision, runs it and
    compares it with the reference; it returns a ``CandidateReport`` (``compare_samples``) or a mapping
    ``{metric: worst value over outputs}`` (optionally with ``"met": bool``; for a ``DropTarget``, the change in
    points under its metric's name). ``cancelled`` is polled and the
    budget (seconds) checked before each evaluation; the evaluation of the variant as planned always runs
    unless the search is cancelled first. ``stopped`` is "exhausted" when even keeping every ranked node
    does not meet the target; ``keep`` is then the set that came closest.
    """
    target = _as_tolerance(target)
    ranked = list(dict.fromkeys(ranked))
    position = {k: i for i, k in enumerate(ranked)}
    say = progress or (lambda f, m: None)
    t0 = time.monotonic()
    seen: dict[frozenset[str], tuple[dict[str, float | None], bool]] = {}
    history: list[dict] = []
    best_met: frozenset[str] | None = None
    closest: frozenset[str] | None = None
    span = {"baseline": (0.0, 0.05), "grow": (0.05, 0.4), "bisect": (0.4, 0.6), "prune": (0.6, 1.0)}

    def ev(keep: frozenset[str], phase: str, share: float) -> bool:
        nonlocal best_met, closest
        if keep in seen:
            return seen[keep][1]
        if cancelled is not None and cancelled():
            raise SearchStopped(STOP_CANCELLED)
        if seen and budget_s is not None and time.monotonic() - t0 >= budget_s:
            raise SearchStopped(STOP_BUDGET)
        lo, hi = span[phase]
        say(lo + (hi - lo) * min(1.0, share), f"Evaluation {len(seen) + 1} ({phase}): keeping {len(keep)} node(s) "
            f"in high precision…")
        metrics, met = measure(evaluate(keep), target)
        seen[keep] = (metrics, met)
        value = metrics.get(target.metric)
        history.append({"size": len(keep), "value": value, "met": met, "phase": phase})
        if met and (best_met is None or len(keep) < len(best_met)):
            best_met = keep
        if closest is None or _closer(value, seen[closest][0].get(target.metric), target):
            closest = keep
        return met

    def prefix(n: int) -> frozenset[str]:
        return frozenset(ranked[:n])

    stopped: str | None = None
    try:
        if not ev(frozenset(), "baseline", 0.0):
            # Grow the prefix by doubling until the target is met.
            lo, n, total = 0, 1, max(1, len(ranked))
            while True:
                n = min(n, len(ranked))
                if ev(prefix(n), "grow", math.log2(n + 1) / math.log2(total + 1)):
                    hi = n
                    break
                lo = n
                if n >= len(ranked):
                    raise SearchStopped(STOP_EXHAUSTED)
                n *= 2
            # Bisect to the shortest prefix that meets it.
            steps = max(1, math.ceil(math.log2(max(2, hi - lo))))
            done = 0
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if ev(prefix(mid), "bisect", done / steps):
                    hi = mid
                else:
                    lo = mid
                done += 1
            # Prune: drop kept nodes the target does not need, least suspicious first, in chunks that halve
            # down to single nodes (few evaluations when most of the prefix is unneeded). The prefix's last
            # node is needed: without it the prefix failed.
            keep = list(ranked[:hi])
            size = max(1, (hi - 1) // 2)
            tried = 0
            while True:
                rest = keep[:-1][::-1]
                for i in range(0, len(rest), size):
                    chunk = set(rest[i:i + size])
                    trial = frozenset(k for k in keep if k not in chunk)
                    tried += 1
                    if ev(trial, "prune", tried / (2 * hi)):
                        keep = [k for k in keep if k not in chunk]
                if size == 1:
                    break
                size = max(1, size // 2)
    except SearchStopped as stop:
        stopped = stop.reason

    chosen = best_met if best_met is not None else closest
    before = seen[frozenset()][0] if frozenset() in seen else {m: None for m in (target.metric, *_ALWAYS)}
    after = seen[chosen][0] if chosen is not None else dict(before)
    result = FallbackResult(target_text(target), best_met is not None,
                            sorted(chosen or (), key=lambda k: position.get(k, len(position))),
                            dict(before), dict(after), len(history), time.monotonic() - t0, history, stopped)
    say(1.0, _summary(result))
    return result


def _summary(r: FallbackResult) -> str:
    metric = r.target.partition(":")[0]
    b, a = r.before.get(metric), r.after.get(metric)
    text = (f"target {r.target} {'met' if r.met else 'not met'} keeping {len(r.keep)} node(s) in high precision "
            f"({metric} {b if b is None else f'{b:.6g}'} → {a if a is None else f'{a:.6g}'}, "
            f"{r.evaluations} evaluation(s))")
    return text + (f"; stopped: {r.stopped}" if r.stopped else "")


# --------------------------------------------------------------------------------------------- FP16 / BF16
def run_onnxruntime_cpu(model: onnx.ModelProto, samples: Sequence[Feeds]) -> list[dict[str, np.ndarray]]:
    """Every sample through ONNX Runtime on the CPU: one {output name: array} per sample."""
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    inputs = [i.name for i in session.get_inputs()]
    return [dict(zip(names, session.run(None, {n: feeds[n] for n in inputs}), strict=True)) for feeds in samples]


def with_high_precision(plan: PrecisionPlan, keep: Iterable[str], precision: str = "fp32") -> PrecisionPlan:
    """A copy of the plan with the given nodes overridden to ``precision``."""
    return plan.with_overrides(keep, precision)


def diagnose_half(model: onnx.ModelProto, variant: onnx.ModelProto, feeds: Feeds, run: RunFn) -> list[LayerError]:
    """Per-layer errors of a variant against its model on one sample (every float tensor exposed)."""
    ref_x, names = expose_all(model)
    cand_x, _ = expose_all(variant, names)
    ref = run(ref_x, [feeds])[0]
    cand = run(cand_x, [feeds])[0]
    rows, _ = diagnose_outputs(model, ref, cand)
    return rows


def half_fallback(model: onnx.ModelProto, plan: PrecisionPlan, precision: str, samples: Sequence[Feeds],
                  reference_outputs: Sequence[dict[str, np.ndarray]], target: Tolerance | str, *,
                  run: RunFn | None = None, budget_s: float | None = None, progress: Progress | None = None,
                  cancelled: Callable[[], bool] | None = None,
                  diagnosis_rows: list[LayerError] | None = None) -> FallbackResult:
    """Which of the plan's FP16/BF16 nodes to keep FP32 so that the variant meets ``target`` on ``samples``.

    ``reference_outputs`` are the reference's outputs on ``samples`` (one dict per sample). ``run`` runs a
    model on samples (default: ONNX Runtime on the CPU); the diagnosis uses the first sample unless
    ``diagnosis_rows`` (from ``diagnose_outputs`` on this model) are given. Each evaluation converts the
    model with the kept nodes overridden to FP32, runs it on every sample and compares the outputs. The
    budget covers the diagnosis too; ``seconds`` counts the whole call.
    """
    from app.core.precision.transforms.half import HALF, to_half

    if precision not in HALF:
        raise ValueError(f"half_fallback needs fp16 or bf16, not {precision!r}")
    if not samples or len(samples) != len(reference_outputs):
        raise ValueError("half_fallback needs samples and one reference output dict per sample")
    target = Tolerance.parse(target) if isinstance(target, str) else target
    run = run or run_onnxruntime_cpu
    say = progress or (lambda f, m: None)
    t0 = time.monotonic()
    say(0.0, f"Converting to {precision.upper()}…")
    variant, report = to_half(model, plan, precision)
    plannable = set(report.half_nodes)
    if diagnosis_rows is None:
        if cancelled is not None and cancelled():
            empty: dict[str, float | None] = {m: None for m in (target.metric, *_ALWAYS)}
            return FallbackResult(target_text(target), False, [], empty, dict(empty), 0, time.monotonic() - t0, [],
                                  STOP_CANCELLED)
        say(0.02, "Diagnosing each layer…")
        diagnosis_rows = diagnose_half(model, variant, samples[0], run)
    ranked = rank_candidates(diagnosis_rows, plannable, graph=model.graph)

    def evaluate(keep: frozenset[str]) -> CandidateReport:
        v = variant if not keep else to_half(model, with_high_precision(plan, keep), precision)[0]
        return compare_samples(list(reference_outputs), run(v, samples), f"{precision} fallback", [target])

    remaining = None if budget_s is None else max(0.0, budget_s - (time.monotonic() - t0))
    result = search(ranked, evaluate, target, budget_s=remaining, cancelled=cancelled,
                    progress=lambda f, m: say(None if f is None else 0.1 + 0.9 * f, m))
    result.seconds = time.monotonic() - t0
    return result
