"""The precision plan: a default precision, rules by op type and per-node overrides, saved as JSON.

Nodes are keyed by name so a plan survives reloading the same model; unnamed nodes fall back to their
first output's name (tensor names are unique in an ONNX graph). Nodes whose precision cannot change —
existing Q/DQ, and nodes that carry no floating-point output (integer, shape and bool paths) — are fixed,
with the reason.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

import onnx

from app.core.errors import TrtlabError
from app.core.fileio import atomic_write_text
from app.core.shapes import ShapeResult

PRECISIONS = ("fp32", "fp16", "bf16", "int8")
SCHEMA_VERSION = 1
FLOAT_TYPES = frozenset({"float32", "float16", "bfloat16", "float64"})
QDQ_OPS = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv",
                     "QLinearMatMul", "ConvInteger", "MatMulInteger"})


class PlanError(TrtlabError):
    title = "Invalid precision plan"


def node_key(node: onnx.NodeProto, index: int) -> str:
    """A stable key: the node's name, else its first output's name, else its position."""
    if node.name:
        return node.name
    first = next((o for o in node.output if o), "")
    return f"{node.op_type}:{first}" if first else f"#{index}"


def node_keys(graph: onnx.GraphProto) -> list[str]:
    """Keys of every top-level node; a duplicated name gets its first output appended to stay unique."""
    keys = [node_key(n, i) for i, n in enumerate(graph.node)]
    seen: dict[str, int] = {}
    for k in keys:
        seen[k] = seen.get(k, 0) + 1
    out = []
    for i, (k, n) in enumerate(zip(keys, graph.node, strict=True)):
        if seen[k] > 1:
            first = next((o for o in n.output if o), str(i))
            k = f"{k}@{first}"
        out.append(k)
    return out


def fixed_reason(node: onnx.NodeProto, shapes: ShapeResult | None) -> str | None:
    """Why a node's precision cannot change, or None when it can."""
    if node.op_type in QDQ_OPS:
        return "existing quantization node (its precision is set by its own scales)"
    if node.domain not in ("", "ai.onnx"):
        return f"custom-domain op ({node.domain}): its kernels decide its types"
    if node.op_type == "Constant":
        return "constant: its values are stored in the precision of the nodes that read them"
    if node.op_type in ("Shape", "Size", "NonZero", "ArgMax", "ArgMin"):
        return "produces integers (shape or index path)"
    if shapes is None:
        return None
    dtypes = [shapes.get(o).dtype for o in node.output if o and shapes.get(o) is not None]
    if dtypes and not any(d in FLOAT_TYPES for d in dtypes):
        kind = "bool" if all(d == "bool" for d in dtypes) else "integer"
        return f"{kind} outputs only ({', '.join(sorted(set(dtypes)))}): nothing to compute in another precision"
    return None


@dataclass
class PrecisionPlan:
    """What precision each node should compute in; pure data, observable by whoever edits it."""

    default: str = "fp32"
    op_rules: dict[str, str] = field(default_factory=dict)
    overrides: dict[str, str] = field(default_factory=dict)
    model_name: str = ""

    def __post_init__(self) -> None:
        for p in (self.default, *self.op_rules.values(), *self.overrides.values()):
            _check(p)

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

    def resolve(self, graph: onnx.GraphProto, shapes: ShapeResult | None = None) -> list[PlannedNode]:
        """Every top-level node with its planned precision, or 'fixed' and the reason."""
        rows = []
        for i, (key, node) in enumerate(zip(node_keys(graph), graph.node, strict=True)):
            reason = fixed_reason(node, shapes)
            precision = "fixed" if reason else self.planned(key, node.op_type)
            rows.append(PlannedNode(key, i, node.op_type, precision, self.source(key, node.op_type), reason or ""))
        return rows

    def unknown_keys(self, graph: onnx.GraphProto) -> list[str]:
        """Overrides that name no node of this graph (a plan made for another model, or an edited one)."""
        keys = set(node_keys(graph))
        return sorted(k for k in self.overrides if k not in keys)

    # ----------------------------------------------------------------- edits (each returns what it replaced)
    def set_nodes(self, keys: Iterable[str], precision: str | None) -> dict[str, str | None]:
        """Override some nodes (None removes their overrides); returns their previous overrides (for undo)."""
        if precision is not None:
            _check(precision)
        before = {}
        for k in keys:
            before[k] = self.overrides.get(k)
            if precision is None:
                self.overrides.pop(k, None)
            else:
                self.overrides[k] = precision
        return before

    def set_op_rule(self, op_type: str, precision: str | None) -> str | None:
        before = self.op_rules.get(op_type)
        if precision is None:
            self.op_rules.pop(op_type, None)
        else:
            self.op_rules[op_type] = _check(precision)
        return before

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
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
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
    precision: str      # one of PRECISIONS, or "fixed"
    source: str         # "node" | "op type" | "default"
    reason: str = ""    # why it is fixed


def _check(precision: str) -> str:
    if precision not in PRECISIONS:
        raise PlanError(f"Unknown precision '{precision}'.", fix=f"Use one of {', '.join(PRECISIONS)}.")
    return precision
