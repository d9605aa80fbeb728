"""The precision plan: a default precision, rules by op type and per-node overrides, saved as JSON.

Nodes are keyed by name so a plan survives reloading the same model; unnamed nodes fall back to their
first output's name (tensor names are unique in an ONNX graph). Nodes whose precision cannot change —
existing Q/DQ, and nodes that carry no floating-point output (integer, shape and bool paths) — are fixed,
with the reason.

A resolved row says what the variant will really run, not only what was asked: a node planned FP16/BF16
that the half transform keeps FP32 (Resize, Range, an op with no half kernel at the model's opset) and a
node planned INT8 that gets no Q/DQ (activations, reductions, bias Adds) resolve to FP32, with the
transform's own reason. The decision is the transforms' own functions (`half_skip_reason`,
`int8_skip_reason`), so the table and the variant cannot drift apart.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import onnx

from app.core.fileio import atomic_write_text
from app.core.model import ShapeResult, constant_tensor

if TYPE_CHECKING:
    from app.core.precision.transforms.int8_select import Int8Graph

from app.core.precision.plan_keys import (  # noqa: F401 - the plan's vocabulary, importable from here as before
    _NATIVE,
    FLOAT_TYPES,
    HALF_PRECISIONS,
    NOT_FLOAT32,
    PRECISIONS,
    QDQ_OPS,
    SCHEMA_VERSION,
    PlanError,
    fixed_reason,
    model_opsets,
    node_key,
    node_keys,
)


class GraphFacts:
    """What resolving a plan needs to know of a graph that no plan edit changes: node keys, fixed reasons, and
    the transforms' decision per (node, precision), each found once. Build it once per model and pass it to
    every :meth:`PrecisionPlan.resolve` (a resolve runs after every edit in the GUI).
    """

    def __init__(self, graph: onnx.GraphProto, shapes: ShapeResult | None = None,
                 opsets: dict[str, int] | None = None) -> None:
        self.graph, self.shapes, self.opsets = graph, shapes, opsets or {}
        self.keys = node_keys(graph)
        self.op_types = [n.op_type for n in graph.node]
        self.fixed = [fixed_reason(n, shapes) for n in graph.node]
        self._latest = onnx.defs.onnx_opset_version()
        self._consts: set[str] | None = None
        self._in_context: dict[int, str] | None = None
        self._int8: Int8Graph | None = None  # the INT8 rules' whole-graph facts, found on first use
        self._why: dict[tuple[int, str], str | None] = {}
        self._native: dict[int, str | None] = {}
        self._readers: dict[str, list[tuple[int, int]]] | None = None

    def why_not(self, index: int, planned: str) -> str | None:
        """Why the variant does not run node `index` in `planned` (None: it does)."""
        key = (index, planned)
        if key not in self._why:
            self._why[key] = self._decide(index, planned)
        return self._why[key]

    def _decide(self, index: int, planned: str) -> str | None:
        node = self.graph.node[index]
        if planned in HALF_PRECISIONS:
            from app.core.precision.transforms.half_rules import op_skip_reason as half_skip_reason

            if index in self.in_context():
                return self.in_context()[index]
            why = half_skip_reason(node, self.opsets.get(node.domain or "", self._latest), planned)
            if why is None and self.shapes is not None and not all(
                    (info := self.shapes.get(o)) is not None and info.dtype == "float32" for o in node.output if o):
                why = NOT_FLOAT32
            return why
        if planned == "int8":
            from app.core.precision.transforms.int8_select import Int8Graph, int8_skip_reason

            if self._int8 is None:
                self._int8 = Int8Graph(self.graph, self.shapes)
            return int8_skip_reason(node, self.consts(), self.shapes or ShapeResult(), self._int8)
        return None

    def in_context(self) -> dict[int, str]:
        """Nodes to_half keeps FP32 for what surrounds them (a float result that only becomes a shape…): why."""
        if self._in_context is None:
            from app.core.precision.transforms.half_rules import graph_reasons

            shapes = self.shapes
            self._in_context = graph_reasons(
                self.graph, lambda name: (info.dtype if shapes and (info := shapes.get(name)) is not None else None))
        return self._in_context

    def native(self, index: int) -> str | None:
        """"fp16"/"bf16" when the model itself computes node `index` in that type (all its float outputs)."""
        if index not in self._native:
            found = None
            if self.shapes is not None:
                types = {info.dtype for o in self.graph.node[index].output
                         if o and (info := self.shapes.get(o)) is not None and info.dtype in FLOAT_TYPES}
                found = _NATIVE.get(types.pop()) if len(types) == 1 else None
            self._native[index] = found
        return self._native[index]

    def casts_to_half(self, rows: list[PlannedNode]) -> list[PlannedNode]:
        """The rows with the model's Casts to FP32 that the half transform casts to half instead (every reader
        converts and reads it in a half position: :func:`casts_to_half`) running that precision."""
        from app.core.precision.transforms.half_rules import (
            CAST_REASON,
            HALF,
            casts_to_half,
            tensor_readers,
            type_positions,
        )

        wanted = {r.planned for r in rows if r.reason == CAST_REASON and r.planned in HALF_PRECISIONS}
        opset = self.opsets.get("", self._latest)
        for half in sorted(wanted):
            if half == "bf16" and opset < 13:  # Cast to bfloat16 exists from opset 13
                continue
            if self._readers is None:
                self._readers = tensor_readers(self.graph)

            def reads_half(k: int, j: int, half: str = half) -> bool:
                row, node = rows[k], self.graph.node[k]
                if row.precision != half or row.planned != half or self.native(k) is not None:
                    return False
                pos = type_positions(node.op_type, node.domain or "", len(node.input), len(node.output),
                                     self.opsets.get(node.domain or "", self._latest), HALF[half])
                return pos is not None and j in pos[0]

            for i in casts_to_half(self.graph, self._readers, reads_half):
                r = rows[i]
                if r.reason == CAST_REASON and r.planned == half:
                    rows[i] = PlannedNode(r.key, i, r.op_type, half, r.source, "", half)
        return rows

    def consts(self) -> set[str]:
        """Initializers, and Constant nodes' outputs (to_int8 folds those into initializers first)."""
        if self._consts is None:
            g = self.graph
            outputs = {o.name for o in g.output}
            self._consts = {t.name for t in g.initializer} | {
                n.output[0] for n in g.node if n.op_type == "Constant" and len(n.output) == 1
                and n.output[0] not in outputs and constant_tensor(n) is not None}
        return self._consts


PLAN_FILE_LIMIT = 64 * 2**20


PlanKey = tuple[str, tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]


def _no_rules() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True, eq=False)
class PrecisionPlan:
    """What precision each node should compute in: a value. Its mappings cannot be changed; each edit
    (`with_overrides`, `with_op_rule`, `with_default`…) returns a new plan and leaves this one as it was, so a
    plan can be shared (an undo step, a job's spec, the project's last saved plan) without copying it.

    Two plans are equal when they ask the same of every node and have the same model name; `key` is what they
    ask without the name (what a variant is made from), usable as a cache key."""

    default: str = "fp32"
    op_rules: Mapping[str, str] = field(default_factory=_no_rules)    # op type -> precision
    overrides: Mapping[str, str] = field(default_factory=_no_rules)   # node key -> precision
    model_name: str = ""
    _key: PlanKey = field(init=False, repr=False, compare=False)  # set once, from the value

    def __post_init__(self) -> None:
        rules, overrides = _pairs(self.op_rules, "op_rules"), _pairs(self.overrides, "overrides")
        for p in (self.default, *(p for _, p in rules), *(p for _, p in overrides)):
            _check(p)
        # Read-only views of private sorted copies: the caller's dicts stay the caller's.
        object.__setattr__(self, "op_rules", MappingProxyType(dict(rules)))
        object.__setattr__(self, "overrides", MappingProxyType(dict(overrides)))
        object.__setattr__(self, "model_name", str(self.model_name))
        object.__setattr__(self, "_key", (self.default, rules, overrides))

    # ----------------------------------------------------------------- value
    @property
    def key(self) -> PlanKey:
        """What the plan asks (default, op rules, overrides; sorted), without its model name: equal keys make
        the same variant."""
        return self._key

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PrecisionPlan):
            return NotImplemented
        return self.key == other.key and self.model_name == other.model_name

    def __hash__(self) -> int:
        return hash((self.key, self.model_name))

    def __reduce__(self) -> tuple[Any, ...]:  # read-only mappings do not pickle; their contents do
        return (PrecisionPlan, (self.default, dict(self.op_rules), dict(self.overrides), self.model_name))

    def precisions(self) -> set[str]:
        """Every precision the plan names (its default, rules and overrides)."""
        return {self.default, *self.op_rules.values(), *self.overrides.values()}

    # ----------------------------------------------------------------- queries
    def planned(self, key: str, op_type: str) -> str:
        """Override, else the op-type rule, else the default."""
        if key in self.overrides:
            return self.overrides[key]
        return self.op_rules.get(op_type, self.default)

    def source(self, key: str, op_type: str) -> str:
        if key in self.overrides:
            return "node"
        return "op type" if op_type in self.op_rules else "default"

    def resolve(self, graph: onnx.GraphProto, shapes: ShapeResult | None = None,
                opsets: dict[str, int] | None = None, *, facts: GraphFacts | None = None) -> list[PlannedNode]:
        """Every top-level node with the precision its variant really runs, what was planned, and why they
        differ: 'fixed' (cannot change), or FP32 where the FP16/BF16 or INT8 transform keeps the node in float.

        `opsets` (:func:`model_opsets`) decides which ops have half-precision kernels; without it the newest
        opset is assumed. Without `shapes`, only what the ops alone say is known. `facts`, built once for
        this graph, shapes and opsets, makes repeated resolves cheap.
        """
        if facts is None or facts.graph is not graph:
            facts = GraphFacts(graph, shapes, opsets)
        rows = []
        overrides, rules, default = self.overrides, self.op_rules, self.default
        for i, (key, op, fixed) in enumerate(zip(facts.keys, facts.op_types, facts.fixed, strict=True)):
            if key in overrides:
                planned, source = overrides[key], "node"
            elif op in rules:
                planned, source = rules[op], "op type"
            else:
                planned, source = default, "default"
            if fixed:
                rows.append(PlannedNode(key, i, op, "fixed", source, fixed, planned))
                continue
            why = facts.why_not(i, planned) if planned != "fp32" else None
            if why is None and planned != "fp32":
                rows.append(PlannedNode(key, i, op, planned, source, "", planned))
                continue
            # Kept (or planned) in float: the transforms convert float32 only, so a node the model already
            # computes in FP16/BF16 stays in that type.
            native = facts.native(i)
            precision = native or "fp32"
            if precision == planned:
                why = None
            elif native is not None:
                own = (f"the model itself computes it in {native.upper()} (its outputs are "
                       f"{'float16' if native == 'fp16' else 'bfloat16'}); no transform widens it")
                why = own if why in (None, NOT_FLOAT32) else f"{why}; {own}"
            rows.append(PlannedNode(key, i, op, precision, source, why or "", planned))
        return facts.casts_to_half(rows)

    def unknown_keys(self, graph: onnx.GraphProto) -> list[str]:
        """Overrides that name no node of this graph (a plan made for another model, or an edited one)."""
        keys = set(node_keys(graph))
        return sorted(k for k in self.overrides if k not in keys)

    # ----------------------------------------------------------------- edits (each returns a new plan)
    def with_overrides(self, keys: Iterable[str], precision: str | None) -> PrecisionPlan:
        """The plan with these nodes overridden to `precision` (None: their overrides removed)."""
        overrides = dict(self.overrides)
        for k in keys:
            if precision is None:
                overrides.pop(k, None)
            else:
                overrides[k] = precision
        return replace(self, overrides=overrides)

    def with_override(self, key: str, precision: str | None) -> PrecisionPlan:
        """The plan with one node overridden to `precision` (None: its override removed)."""
        return self.with_overrides([key], precision)

    def without_override(self, key: str) -> PrecisionPlan:
        """The plan without this node's override (the node follows its op rule or the default)."""
        return self.with_overrides([key], None)

    def with_op_rule(self, op_type: str, precision: str | None) -> PrecisionPlan:
        """The plan with every `op_type` node in `precision` unless overridden (None: the rule removed)."""
        rules = dict(self.op_rules)
        if precision is None:
            rules.pop(op_type, None)
        else:
            rules[op_type] = precision
        return replace(self, op_rules=rules)

    def without_op_rule(self, op_type: str) -> PrecisionPlan:
        return self.with_op_rule(op_type, None)

    def with_default(self, precision: str) -> PrecisionPlan:
        """The plan with another default precision (nodes without a rule or an override follow it)."""
        return replace(self, default=precision)

    def with_model_name(self, model_name: str) -> PrecisionPlan:
        return replace(self, model_name=model_name)

    def with_rules_of(self, other: PrecisionPlan) -> PrecisionPlan:
        """What `other` asks (default, op rules, overrides) under this plan's model name: loading a plan."""
        return replace(other, model_name=self.model_name)

    def cleared(self) -> PrecisionPlan:
        """The plan without overrides and op rules (its default and name kept)."""
        return replace(self, op_rules={}, overrides={})

    # ----------------------------------------------------------------- persistence
    def to_json(self) -> dict:
        return {"schema_version": SCHEMA_VERSION, "model": self.model_name, "default": self.default,
                "op_rules": dict(sorted(self.op_rules.items())), "overrides": dict(sorted(self.overrides.items()))}

    @classmethod
    def from_json(cls, d: dict) -> PrecisionPlan:
        if not isinstance(d, dict) or "default" not in d:
            raise PlanError("This is not a trtlab precision plan (no 'default' precision).",
                            fix="Save a plan from trtlab, or write {\"default\": \"fp16\", \"overrides\": {...}}.")
        version = int(d.get("schema_version", 1))
        if version > SCHEMA_VERSION:
            raise PlanError(f"The plan was written by a newer trtlab (schema {version}; this one reads "
                            f"{SCHEMA_VERSION}).", fix="Upgrade trtlab.")
        try:
            return cls(default=d["default"], op_rules=dict(d.get("op_rules") or {}),
                       overrides=dict(d.get("overrides") or {}), model_name=str(d.get("model", "")))
        except PlanError:
            raise
        except (TypeError, ValueError) as exc:
            raise PlanError(f"The plan is malformed: {exc}.", fix="Check its JSON against a saved plan.") from exc

    def save(self, path: str | os.PathLike[str]) -> None:
        atomic_write_text(path, json.dumps(self.to_json(), indent=2) + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> PrecisionPlan:
        try:
            size = os.path.getsize(path)
            if size > PLAN_FILE_LIMIT:  # a plan is a few keys per node: even 50k nodes stay far below this
                raise PlanError(f"Plan file '{path}' is {size / 2**20:.0f} MB, more than a plan can be "
                                f"({PLAN_FILE_LIMIT // 2**20} MB).", fix="Check that this is a plan saved by trtlab.")
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except RecursionError as exc:
            raise PlanError(f"Plan file '{path}' nests deeper than any plan.", fix="Check the file.") from exc
        except FileNotFoundError as exc:
            raise PlanError(f"Plan file '{path}' does not exist.", fix="Check the path.") from exc
        except json.JSONDecodeError as exc:
            raise PlanError(f"Plan file '{path}' is not valid JSON ({exc.msg}, line {exc.lineno}).",
                            fix="Fix the JSON or save the plan again from trtlab.") from exc
        return cls.from_json(data)


@dataclass(frozen=True)
class PlannedNode:
    key: str
    index: int
    op_type: str
    precision: str      # what the variant runs: one of PRECISIONS, or "fixed"
    source: str         # what set the planned precision: "node" | "op type" | "default"
    reason: str = ""    # why it is fixed, or why it runs another precision than planned (the transform's words)
    planned: str = ""   # what the plan asks (one of PRECISIONS); "" means the same as `precision`

    def __post_init__(self) -> None:
        if not self.planned:
            object.__setattr__(self, "planned", self.precision)

    @property
    def differs(self) -> bool:
        """A changeable node the variant runs in another precision than planned."""
        return self.precision != "fixed" and self.precision != self.planned

    @property
    def kept(self) -> bool:
        """Planned FP16/BF16/INT8, kept FP32 by the transform."""
        return self.differs and self.precision == "fp32"


def _pairs(mapping: Mapping[str, str], what: str) -> tuple[tuple[str, str], ...]:
    """A mapping's (key, value) pairs sorted by key; refused when it is not a mapping of names."""
    if not isinstance(mapping, Mapping):
        raise PlanError(f"The plan's {what} are not a mapping ({type(mapping).__name__}).",
                        fix=f"Write {what} as {{\"name\": \"fp16\"}}.")
    return tuple(sorted((str(k), v) for k, v in mapping.items()))


def _check(precision: str) -> str:
    if precision not in PRECISIONS:
        raise PlanError(f"Unknown precision '{precision}'.", fix=f"Use one of {', '.join(PRECISIONS)}.")
    return precision
