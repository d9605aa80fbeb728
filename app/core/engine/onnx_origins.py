"""Which ONNX nodes an engine layer ran, from its metadata or, failing that, its name (TENSORRT.md §3d and §7).

Pure logic: nothing here imports tensorrt. The ONNX parser sets every layer's metadata to
``"[ONNX Layer: <node name>]"`` (possibly followed by ``" | Local Function: <fn>"`` or ``" | <caller node> (<fn>)"``
parts), truncated at 4000 characters; a fused engine layer joins its origins with ``"\\x1E"`` (``"\\x1F"`` is
accepted too). That is used first. Without metadata the layer *name* is parsed: ``"a + b"`` fusions,
``"PWN(a, PWN(b, c))"`` point-wise fusions, and Myelin ``"{ForeignNode[first...last]}"`` regions, of which only the
two ends are known (a *range*). Reformat and no-op layers (``"Reformatting CopyNode for ..."``), Myelin-internal
kernels (``"__myl_..."``, ``"__mye..."``, ``"$$myelin$$..."``: e.g. TensorRT for RTX's ``shape_call`` layers and
unrolled recurrences) and parser helper layers (``"ONNXTRT_..."``) have no ONNX node. TensorRT for RTX's
builder-log ``Layers:`` dump is read into the inspector's JSON by :mod:`app.core.engine.layer_dump` (its
``"\\x1F"``-joined metadata included). An unnamed ONNX node appears as ``"node_of_<first output>"``, which this
project keys as ``"<Op>:<first output>"``.

:func:`layer_kind` tells compute layers from reformat, no-op and sync layers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from app.core.engine.engine_layers import PROFILE_RE, EngineLayer

__all__ = ["OnnxOrigin", "OnnxRefs", "field_text", "layer_kind", "onnx_nodes_of", "parse_metadata"]

METADATA_SEPARATORS = ("\x1e", "\x1f")
ONNX_LAYER_TAG = "[ONNX Layer: "
_REFORMAT_PREFIX = "Reformatting CopyNode for "
_MYELIN_SUFFIX_RE = re.compile(r"^(.+?)_myl\d+_\d+$")
_FOREIGN_RE = re.compile(r"^\{ForeignNode\[(.*)\]\}$", re.S)
_PWN_RE = re.compile(r"^PWN\((.*)\)$", re.S)
_CUT_RE = re.compile(r" \.\.\.(?: |$)")
_CALLER_RE = re.compile(r"^(.+) \(([^()]*)\)$")
_SYNTHETIC_PREFIXES = ("__myl_", "__mye", "$$myelin$$", "ONNXTRT_", "(Unnamed Layer* ")


@dataclass(frozen=True)
class OnnxOrigin:
    """One ``[ONNX Layer: ...]`` entry of a layer's metadata."""

    node: str
    callers: tuple[str, ...] = ()    # local-function call sites, innermost first ("caller (function)" parts)
    functions: tuple[str, ...] = ()  # local-function names ("Local Function: f" or the "(function)" parts)
    truncated: bool = False          # cut by TensorRT's 4000-character metadata limit


@dataclass(frozen=True)
class OnnxRefs:
    """The ONNX nodes an engine layer ran, as far as they can be recovered."""

    nodes: tuple[str, ...] = ()
    source: str = "none"                      # "metadata" | "name" | "none"
    ranges: tuple[tuple[str, str], ...] = ()  # Myelin {ForeignNode[first...last]}: only the ends are known
    origins: tuple[OnnxOrigin, ...] = ()      # from metadata, with local-function details
    loose: bool = False                       # names were rewritten by Myelin ('.' -> '_', _myl suffix)
    partial: bool = False                     # the list is incomplete (a range, or truncated metadata)


def field_text(value: object) -> str:
    """A field of the inspector's JSON as text: None is ""."""
    return "" if value is None else str(value)


def layer_kind(name: str, layer_type: str) -> str:
    """A layer's kind, "compute", "reformat", "noop" or "sync": only compute layers are named after ONNX nodes."""
    t = layer_type.lower()
    if t in ("signal", "wait"):
        return "sync"
    if t == "noop":
        return "noop"
    if t == "reformat" or PROFILE_RE.sub("", name).startswith(_REFORMAT_PREFIX):
        return "reformat"
    return "compute"


def parse_metadata(metadata: str) -> list[OnnxOrigin]:
    """The ``[ONNX Layer: ...]`` entries of a layer's metadata, in order (see the module docstring)."""
    if not metadata or ONNX_LAYER_TAG not in metadata:
        return []
    origins = []
    for chunk in metadata.split(ONNX_LAYER_TAG)[1:]:
        body = chunk.strip().strip("".join(METADATA_SEPARATORS)).strip()
        cut = _CUT_RE.search(body)      # TensorRT's middle cut: keep the part before it
        truncated = cut is not None or not body.endswith("]")
        if cut:
            body = body[:cut.start()]
        elif body.endswith("]"):
            body = body[:-1]
        parts = body.split(" | ")
        node = parts[0].strip()
        callers, functions = [], []
        for part in parts[1:]:
            part = part.strip()
            if part.startswith("Local Function: "):
                functions.append(part[len("Local Function: "):].strip())
                continue
            m = _CALLER_RE.match(part)
            if m:
                callers.append(m.group(1).strip())
                functions.append(m.group(2).strip())
        if node:
            origins.append(OnnxOrigin(node=node, callers=tuple(callers), functions=tuple(functions),
                                      truncated=truncated))
    return origins


def _split_top(text: str, sep: str) -> list[str]:
    """Split at ``sep`` outside any (), [] or {} (names like "(Unnamed Layer* 3) [Shuffle]" stay whole)."""
    out, depth, start, i = [], 0, 0, 0
    opens, closes = "([{", ")]}"
    while i < len(text):
        c = text[i]
        if c in opens:
            depth += 1
        elif c in closes:
            depth = max(0, depth - 1)
        elif depth == 0 and text.startswith(sep, i):
            out.append(text[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    out.append(text[start:])
    return [p.strip() for p in out if p.strip()]


def _names_in(part: str, nodes: list[str], ranges: list[tuple[str, str]], flags: dict[str, bool]) -> None:
    m = _FOREIGN_RE.match(part)
    if m:
        inner = m.group(1).strip()
        if "..." in inner:
            first, last = (s.strip() for s in inner.split("...", 1))
            ranges.append((first, last))
            nodes.extend(n for n in (first, last) if n)
        elif inner:
            for p in _split_top(inner, " + "):
                _names_in(p, nodes, ranges, flags)
        return
    m = _PWN_RE.match(part)
    if m:
        for p in _split_top(m.group(1), ", "):
            _names_in(p, nodes, ranges, flags)
        return
    if part.startswith(_SYNTHETIC_PREFIXES):
        return
    m = _MYELIN_SUFFIX_RE.match(part)
    if m:
        flags["loose"] = True
        part = m.group(1)
    nodes.append(part)


def _refs_from_name(name: str, kind: str) -> OnnxRefs:
    base = PROFILE_RE.sub("", name).strip()
    if not base or kind != "compute" or base.startswith(_REFORMAT_PREFIX):
        return OnnxRefs()
    nodes: list[str] = []
    ranges: list[tuple[str, str]] = []
    flags = {"loose": False}
    for part in _split_top(base, " + "):
        _names_in(part, nodes, ranges, flags)
    nodes = list(dict.fromkeys(nodes))
    if not nodes:
        return OnnxRefs()
    return OnnxRefs(nodes=tuple(nodes), source="name", ranges=tuple(ranges), loose=flags["loose"],
                    partial=bool(ranges))


def onnx_nodes_of(layer: EngineLayer | Mapping[str, object] | str) -> OnnxRefs:
    """The ONNX node names an engine layer ran: from its metadata, else from its name (module docstring)."""
    if isinstance(layer, (str, Mapping)):
        raw = {"Name": layer} if isinstance(layer, str) else layer
        name, metadata = field_text(raw.get("Name")), field_text(raw.get("Metadata"))
        kind = layer_kind(name, field_text(raw.get("LayerType")))
    else:
        name, metadata, kind = layer.name, layer.metadata, layer.kind
    origins = parse_metadata(metadata)
    if origins:
        nodes = tuple(dict.fromkeys(o.node for o in origins))
        return OnnxRefs(nodes=nodes, source="metadata", origins=tuple(origins),
                        partial=any(o.truncated for o in origins))
    return _refs_from_name(name, kind)
