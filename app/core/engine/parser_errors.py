"""ONNX-parser errors of TensorRT, resolved to this project's node keys, with a message and a fix for the user.

Pure logic: the TensorRT backend reads each ``parser.get_error(i)`` and passes what it read, nothing here
imports tensorrt. What an ``IParserError`` exposes (TENSORRT.md §1; ``python/src/parsers/pyOnnx.cpp``) — all
**methods**, present from 10.0 through 11.x: ``code()`` (``trt.ErrorCode``), ``desc()``, ``file()``,
``line()``, ``func()``, ``node()`` (index of the node in the ONNX graph, -1 when the error names no node),
``node_name()``, ``node_operator()``, ``local_function_stack()`` (call sites from the top level down, as
``"<node> (<function>)"`` in recent parsers, bare function names in older ones) and
``local_function_stack_size()``. ``str(err)`` reads
``"In node N with name: X and operator: Y (func): CODE: desc"`` (no node part for MODEL_DESERIALIZE_FAILED
and REFIT_FAILED); :func:`issue_from_text` reads that when nothing else is at hand.

Use :func:`issue_from_error` on the error object itself (it calls whichever accessors exist), or
:func:`issue_from_fields` with what the backend read. :func:`map_issues_to_graph` finds the node key, and
:func:`explain` / :func:`parse_failure` turn issues into :class:`~app.core.errors.TrtlabError` texts.

Resolution order (the index is the node's position in ``graph.node``; the name is that of the node where the
error arose, which may sit inside a local function or an If/Loop/Scan body):

1. Inside a local function: the top-level call site from the stack's first entry.
2. The node name, when a top-level node has it (the index picks among duplicates).
3. The node name inside a subgraph: the top-level node that owns that subgraph.
4. The node index, when it is in range.
5. Otherwise unresolved (``key`` None): graph-level errors such as a bad input or a file that is not ONNX.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import onnx

from app.core.engine.onnx_map import NodeLookup
from app.core.errors import TrtlabError

__all__ = ["ERROR_CODES", "ParseFailedError", "ParserIssue", "ResolvedIssue", "describe", "explain",
           "issue_from_error", "issue_from_fields", "issue_from_text", "keys_of", "map_issues_to_graph",
           "normalize_code", "parse_failure"]

# nvonnxparser::ErrorCode, by value (NvOnnxParser.h; the same names in trt.ErrorCode).
ERROR_CODES = ("SUCCESS", "INTERNAL_ERROR", "MEM_ALLOC_FAILED", "MODEL_DESERIALIZE_FAILED", "INVALID_VALUE",
               "INVALID_GRAPH", "INVALID_NODE", "UNSUPPORTED_GRAPH", "UNSUPPORTED_NODE", "UNSUPPORTED_NODE_ATTR",
               "UNSUPPORTED_NODE_INPUT", "UNSUPPORTED_NODE_DATATYPE", "UNSUPPORTED_NODE_DYNAMIC",
               "UNSUPPORTED_NODE_SHAPE", "REFIT_FAILED")

_TEXT_FULL = re.compile(r"^In node (-?\d+) with name: (.*?) and operator: (.*?) \((.*?)\): ([A-Z_]+): (.*)$", re.S)
_TEXT_OLD = re.compile(r"^In node (-?\d+) \((.*?)\): ([A-Z_]+): (.*)$", re.S)
_TEXT_SHORT = re.compile(r"^\((.*?)\): ([A-Z_]+): (.*)$", re.S)
_CALL_SITE = re.compile(r"^(.+) \(([^()]*)\)$")


class ParseFailedError(TrtlabError):
    """The ONNX parser failed; ``issues`` holds what it reported."""

    title = "TensorRT cannot parse the model"

    def __init__(self, message: str, *, fix: str = "", issues: Sequence[object] = ()) -> None:
        super().__init__(message, fix=fix)
        self.issues = list(issues)


@dataclass(frozen=True)
class ParserIssue:
    node_index: int | None       # None when TensorRT names no node (-1) or did not say
    node_name: str
    op: str
    code: str                    # an ERROR_CODES name, or "UNKNOWN(<n>)"
    message: str                 # desc()
    file: str = ""
    line: int | None = None
    func: str = ""
    local_functions: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResolvedIssue:
    issue: ParserIssue
    key: str | None              # this project's node key (precision.node_keys), None when unresolved
    index: int | None            # position of that node in graph.node
    via: str = ""                # "local function" | "name" | "name+index" | "subgraph" | "index" | ""
    note: str = ""               # e.g. the index and the name disagreed


# ============================================================================================== reading

def normalize_code(code: object) -> str:
    """A ``trt.ErrorCode`` member, its value, or a name ("UNSUPPORTED_NODE", "ErrorCode.kINVALID_NODE") -> name."""
    if code is None:
        return "UNKNOWN"
    name = getattr(code, "name", None)
    value: int | str
    if isinstance(name, str) and name:
        value = name
    elif isinstance(code, bool):
        value = int(code)
    elif isinstance(code, (int, str)):
        value = code
    else:
        number = _int(code)         # pybind11 enums convert to their value
        value = number if number is not None else str(code)
    if isinstance(value, int):
        return ERROR_CODES[value] if 0 <= value < len(ERROR_CODES) else f"UNKNOWN({value})"
    text = value.strip().rsplit(".", 1)[-1].strip()
    if text.lstrip("-").isdigit():
        return normalize_code(int(text))
    if len(text) > 1 and text[0] == "k" and text[1].isupper():
        text = text[1:]
    return text.upper() or "UNKNOWN"


def _str(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


def _int(value: object) -> int | None:
    try:
        # int() takes any object at run time (pybind11 enums, numbers, numeric text) and raises for the rest;
        # typeshed only lists the convertible types.
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None


def issue_from_fields(**fields: object) -> ParserIssue:
    """A :class:`ParserIssue` from what was read off an ``IParserError``; every field is optional.

    Accepts the accessor names (``code, desc, file, line, func, node, node_name, node_operator,
    local_function_stack``), the field names of :class:`ParserIssue` (``node_index, op, message,
    local_functions``) and ``text`` (``str(err)``, read for whatever the accessors did not give). Unknown
    names are ignored, so a newer TensorRT's extra accessors do no harm.
    """
    def pick(*names: str) -> object:
        for n in names:
            if fields.get(n) is not None:
                return fields[n]
        return None

    index = _int(pick("node_index", "node"))
    stack = pick("local_functions", "local_function_stack")
    frames: Iterable[object] = ([stack] if isinstance(stack, (str, bytes))
                                else stack if isinstance(stack, Iterable) else ())
    issue = ParserIssue(
        node_index=index if index is not None and index >= 0 else None,
        node_name=_str(pick("node_name")).strip(),
        op=_str(pick("op", "node_operator")).strip(),
        code=normalize_code(pick("code")),
        message=_str(pick("message", "desc")).strip(),
        file=_str(pick("file")),
        line=(lambda v: v if v is not None and v >= 0 else None)(_int(pick("line"))),
        func=_str(pick("func")),
        local_functions=tuple(_str(s) for s in frames if _str(s)),
    )
    text = _str(pick("text")).strip()
    if text:   # str(err), when given, fills what the accessors did not answer
        parsed = issue_from_text(text)
        issue = ParserIssue(
            node_index=issue.node_index if issue.node_index is not None else parsed.node_index,
            node_name=issue.node_name or parsed.node_name, op=issue.op or parsed.op,
            code=parsed.code if issue.code == "UNKNOWN" else issue.code, message=issue.message or parsed.message,
            file=issue.file, line=issue.line, func=issue.func or parsed.func, local_functions=issue.local_functions)
    return issue


def issue_from_text(text: str) -> ParserIssue:
    """A :class:`ParserIssue` from ``str(parser_error)`` (both the 10.x/11.x and the older wording)."""
    t = text.strip()
    m = _TEXT_FULL.match(t)
    if m:
        return issue_from_fields(node=m.group(1), node_name=m.group(2), node_operator=m.group(3), func=m.group(4),
                                 code=m.group(5), desc=m.group(6))
    m = _TEXT_OLD.match(t)
    if m:
        return issue_from_fields(node=m.group(1), func=m.group(2), code=m.group(3), desc=m.group(4))
    m = _TEXT_SHORT.match(t)
    if m:
        return issue_from_fields(func=m.group(1), code=m.group(2), desc=m.group(3))
    return issue_from_fields(desc=t)


_ACCESSORS = ("code", "desc", "file", "line", "func", "node", "node_name", "node_operator", "local_function_stack")


def issue_from_error(err: object) -> ParserIssue:
    """A :class:`ParserIssue` from an ``IParserError`` object, calling whichever accessors this TensorRT has."""
    fields: dict[str, object] = {}
    for name in _ACCESSORS:
        attr = getattr(err, name, None)
        if attr is None:
            continue
        try:
            fields[name] = attr() if callable(attr) else attr
        except Exception:  # an accessor a binding exposes but cannot answer: read the rest
            continue
    if not fields:
        return issue_from_text(_str(err))
    issue = issue_from_fields(**fields)
    if not issue.message and not issue.node_name:
        parsed = issue_from_text(_str(err))
        return parsed if parsed.message else issue
    return issue


# ============================================================================================== graph

def _call_site(entry: str) -> tuple[str, str]:
    """``"<node> (<function>)"`` -> (node, function); a bare entry is a function name."""
    m = _CALL_SITE.match(entry.strip())
    return (m.group(1).strip(), m.group(2).strip()) if m else ("", entry.strip())


def _resolve(issue: ParserIssue, lookup: NodeLookup) -> ResolvedIssue:
    n = len(lookup)
    index = issue.node_index if issue.node_index is not None and issue.node_index < n else None
    name = issue.node_name

    if issue.local_functions:
        node, function = _call_site(issue.local_functions[0])
        hits = lookup.exact(node) if node else []
        if not hits and function:
            hits = lookup.by_function(function)
            if len(hits) > 1 and index is not None and index in hits:
                hits = [index]
        if len(hits) == 1:
            return ResolvedIssue(issue, lookup.keys[hits[0]], hits[0], "local function",
                                 f"inside local function {function or node}; the failing node is "
                                 f"{name or 'unnamed'}")

    if name:
        hits = lookup.exact(name)
        if hits:
            if index is not None and index in hits:
                return ResolvedIssue(issue, lookup.keys[index], index, "name+index")
            note = (f"TensorRT gave node index {issue.node_index}, which is "
                    f"{lookup.keys[index]!r}; the name was used" if index is not None else "")
            return ResolvedIssue(issue, lookup.keys[hits[0]], hits[0], "name", note)
        owner = lookup.owner(name)
        if owner is not None:
            return ResolvedIssue(issue, lookup.keys[owner], owner, "subgraph",
                                 f"{name} is inside the subgraph of {lookup.keys[owner]}")

    if index is not None:
        note = f"no node is named {name!r}; resolved by the node index" if name else ""
        return ResolvedIssue(issue, lookup.keys[index], index, "index", note)
    note = ""
    if issue.node_index is not None and issue.node_index >= n:
        note = f"node index {issue.node_index} is outside this graph ({n} nodes)"
    elif name:
        note = f"no node is named {name!r}"
    return ResolvedIssue(issue, None, None, "", note)


def map_issues_to_graph(issues: Iterable[ParserIssue], graph: onnx.GraphProto | onnx.ModelProto | Sequence[str],
                        ) -> list[ResolvedIssue]:
    """Each issue with its node key in ``graph`` (resolution order in the module docstring)."""
    lookup = NodeLookup.of(graph)
    return [_resolve(i, lookup) for i in issues]


# ============================================================================================== user texts

_GRAPH_FIX = ("Check the model with onnx.checker.check_model(model, full_check=True) and re-export it; "
              "`polygraphy surgeon sanitize --fold-constants` (pip install polygraphy) often repairs exported graphs.")
_FALLBACK_FIX = ("Or run this model with the ort-trt backend (ONNX Runtime's TensorRT provider), which leaves "
                 "unsupported nodes to CUDA.")

# code -> (what went wrong, how to fix it). "{node}" is the node's key (and op), "{desc}" TensorRT's text.
_TEXTS: dict[str, tuple[str, str]] = {
    "UNSUPPORTED_NODE": (
        "TensorRT's ONNX parser cannot import {node}: {desc}",
        "If the op is custom or from a contrib domain, load a TensorRT plugin that implements it "
        "(trt.init_libnvinfer_plugins, or the plugin's library); otherwise re-export with a standard opset, "
        "or replace the node. " + _FALLBACK_FIX),
    "UNSUPPORTED_NODE_ATTR": (
        "TensorRT does not support an attribute value of {node}: {desc}",
        "Re-export the model so the node uses a supported attribute (the TensorRT operator list in "
        "onnx-tensorrt's docs/operators.md gives the restrictions). " + _FALLBACK_FIX),
    "UNSUPPORTED_NODE_INPUT": (
        "TensorRT cannot use an input of {node} as given: {desc}",
        "TensorRT needs some inputs (scales, pads, axes, shapes) as build-time constants: fold constants "
        "(`polygraphy surgeon sanitize --fold-constants`) and fix the input shapes so they become initializers."),
    "UNSUPPORTED_NODE_DATATYPE": (
        "TensorRT does not support a data type used by {node}: {desc}",
        "Export float32/float16 and int32/int64 tensors (no float64 or strings). For INT8 use signed int8 "
        "Q/DQ with zero points of 0 (ActivationSymmetric=True) and no quantized int32 bias (QuantizeBias=False)."),
    "UNSUPPORTED_NODE_DYNAMIC": (
        "TensorRT does not support dynamic shapes at {node}: {desc}",
        "Give the model's inputs fixed shapes (trtlab --shapes, or the input-shape editor), or re-export "
        "with static shapes."),
    "UNSUPPORTED_NODE_SHAPE": (
        "TensorRT does not support the tensor shapes at {node}: {desc}",
        "Check the input shapes you set; re-export with shapes (rank, broadcast) TensorRT supports for this op."),
    "INVALID_NODE": (
        "TensorRT failed to import {node}: {desc}",
        "The node is malformed or its inputs do not fit it. " + _GRAPH_FIX),
    "INVALID_GRAPH": (
        "The model's graph is invalid for TensorRT: {desc}",
        "Missing inputs or a graph that cannot be ordered topologically. " + _GRAPH_FIX),
    "UNSUPPORTED_GRAPH": (
        "TensorRT does not support the model's graph: {desc}",
        "Usually a graph input's type or shape: export float32/float16/int32/int64 inputs with at most 8 "
        "dimensions. " + _FALLBACK_FIX),
    "INVALID_VALUE": (
        "TensorRT rejected a value while parsing{at}: {desc}",
        "Check the input shapes and the values set for the model's inputs. " + _GRAPH_FIX),
    "MODEL_DESERIALIZE_FAILED": (
        "TensorRT could not read the ONNX file: {desc}",
        "Open the model in trtlab first (it checks the file); keep its external-data files next to it, "
        "because the file is parsed from its own folder."),
    "MEM_ALLOC_FAILED": (
        "TensorRT ran out of host memory while parsing the model: {desc}",
        "Close other programs or use a machine with more memory."),
    "INTERNAL_ERROR": (
        "TensorRT's ONNX parser hit an internal error{at}: {desc}",
        "Update TensorRT; if it persists, simplify the node (`polygraphy surgeon sanitize --fold-constants`). "
        + _FALLBACK_FIX),
    "REFIT_FAILED": (
        "TensorRT could not refit the engine's weights: {desc}",
        "Refit only with the model the engine was built from (same graph, new weights), or rebuild the engine."),
}
_DEFAULT = ("TensorRT's ONNX parser failed{at} ({code}): {desc}", _GRAPH_FIX + " " + _FALLBACK_FIX)


def _node_text(issue: ParserIssue, key: str | None) -> str:
    name = key or issue.node_name or (f"node #{issue.node_index}" if issue.node_index is not None else "")
    if not name:
        return "a node"
    return f"node '{name}' ({issue.op})" if issue.op else f"node '{name}'"


def explain(item: ParserIssue | ResolvedIssue) -> tuple[str, str]:
    """(message, fix) for the user, by error code; the node is named by its project key when resolved."""
    resolved = item if isinstance(item, ResolvedIssue) else None
    issue = item.issue if isinstance(item, ResolvedIssue) else item
    key = resolved.key if resolved else None
    template, fix = _TEXTS.get(issue.code, _DEFAULT)
    node = _node_text(issue, key)
    at = f" at {node}" if (key or issue.node_name or issue.node_index is not None) else ""
    desc = issue.message.rstrip(".") or "no details given"
    message = template.format(node=node, desc=desc, at=at, code=issue.code).rstrip() + "."
    if resolved and resolved.note:
        message += f" ({resolved.note}.)"
    text = issue.message.lower()
    if "zero point" in text or "zero-point" in text:
        fix = ("TensorRT supports only symmetric quantization: every zero point must be 0. Re-quantize with "
               "symmetric activations (ActivationSymmetric=True) and signed int8 (QInt8).")
    elif "int32" in text and ("dequantize" in text or "bias" in text):
        fix = ("TensorRT cannot dequantize an int32 bias: quantize again with QuantizeBias=False so biases stay float.")
    elif "same input types" in text or "must be of same type" in text:
        # Strongly typed networks (TensorRT 11, RTX) take no implicit casts: FP32 meets FP16 inside this node.
        fix = ("The node reads tensors of two float types (FP32 and FP16): strongly typed TensorRT does not cast "
               "between them. Keep this node FP32 in the precision plan (or FP16 together with what feeds it), or "
               "insert a Cast so both inputs have one type.")
    return message, fix


def describe(item: ParserIssue | ResolvedIssue) -> str:
    """One line for logs: code, node and TensorRT's description, with the parser's source location."""
    resolved = item if isinstance(item, ResolvedIssue) else None
    issue = item.issue if isinstance(item, ResolvedIssue) else item
    parts = [issue.code]
    where = []
    if issue.node_index is not None:
        where.append(f"#{issue.node_index}")
    if resolved and resolved.key and resolved.key != issue.node_name:
        where.append(repr(resolved.key))
    if issue.node_name:
        where.append(repr(issue.node_name))
    if issue.op:
        where.append(f"[{issue.op}]")
    if where:
        parts.append("node " + " ".join(where))
    if issue.local_functions:
        parts.append("in " + " > ".join(issue.local_functions))
    text = ": ".join([" ".join(parts), issue.message or "no details given"])
    if issue.file or issue.func:
        loc = issue.file + (f":{issue.line}" if issue.line is not None else "")
        text += f" ({', '.join(p for p in (loc, issue.func) if p)})"
    return text


def parse_failure(items: Sequence[ParserIssue | ResolvedIssue], *, limit: int = 5) -> ParseFailedError:
    """One error for a failed parse: the first issues' messages, and the first issue's fix."""
    if not items:
        return ParseFailedError("TensorRT's ONNX parser failed without reporting an error.",
                                fix=_GRAPH_FIX + " " + _FALLBACK_FIX)
    explained = [explain(i) for i in items]
    lines = [m for m, _ in explained[:limit]]
    more = len(items) - len(lines)
    head = lines[0] if len(items) == 1 else (
        f"TensorRT's ONNX parser reported {len(items)} errors: " + " ".join(f"({n}) {m}" for n, m in
                                                                        enumerate(lines, 1)))
    if more > 0:
        head += f" ...and {more} more."
    return ParseFailedError(head, fix=explained[0][1], issues=items)


def keys_of(resolved: Iterable[ResolvedIssue]) -> dict[str, list[ResolvedIssue]]:
    """Resolved issues grouped by node key (for marking nodes in the graph view)."""
    out: dict[str, list[ResolvedIssue]] = {}
    for r in resolved:
        if r.key is not None:
            out.setdefault(r.key, []).append(r)
    return out

