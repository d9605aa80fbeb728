"""What a built TensorRT engine really ran: engine-inspector JSON, ONNX origins, per-layer times, plan checks.

Pure logic: the TensorRT backend hands over the strings and numbers it reads, nothing here imports tensorrt.

**Inspector JSON** (``IEngineInspector.get_engine_information(LayerInformationFormat.JSON)``, TENSORRT.md §7).
Both schemas are read:

* 10.x: ``{"Layers": [...], "Bindings": ["input", ...]}``; every layer tensor is
  ``{"Name", "Location", "Dimensions", "Format/Datatype"}`` where the one string carries both, e.g.
  ``"Row major linear FP32"``, ``"Channel major FP16 format where channel % 8 == 0"`` or, on Myelin layers,
  just ``"Half"``.
* 11.x: ``"Bindings"`` is replaced by ``"I/O Tensors"`` (objects with ``Name, IOMode, DataType, Dimensions,
  Location, IsShapeInferenceIO, ProfileInfo[{MinShape, OptShape, MaxShape, Format}]``) and the per-tensor
  ``"Format/Datatype"`` is split in two. The per-layer key names of the split are not documented; ``DataType``
  (also ``Datatype``/``Data Type``) and ``Format`` are read, and the data type falls back to the format text.

With ``ProfilingVerbosity.LAYER_NAMES_ONLY`` (TensorRT's default) ``"Layers"`` holds bare names, and with
``NONE`` no layers: both parse, with every precision ``"unknown"``. Engines with several optimization
profiles list each profile's layers with a ``" [profile N]"`` suffix (the first profile has none);
:meth:`EngineInfo.profile_layers` picks one profile.

**Precision that ran** (:func:`ran_precision`), from the layer's tensor data types:

1. A quantized input (INT8, FP8, INT4, FP4) means a quantized kernel: that type. Its output may be float
   when a DequantizeLinear was fused into it.
2. Otherwise the float type of the inputs (``fp32``, ``fp16``, ``bf16``; TF32 is invisible here and shows
   as ``fp32``); ``"mixed"`` when the float inputs disagree. A float input with a quantized output is a
   quantize step that computes in the input's float type.
3. A layer without float or quantized inputs (constants) takes its outputs' type by the same rules.
4. Integer and bool tensors (indices, masks, shape values) are ignored when float data is present; a layer
   that moves only integers or bools reports that type (``"int32"``, ``"int64"``, ``"bool"``...).
5. Nothing known (names only, or ``"N/A due to dynamic shapes"``): ``"unknown"``.

**ONNX origins** (:func:`onnx_nodes_of`, TENSORRT.md §3d and §7). The ONNX parser sets every layer's metadata
to ``"[ONNX Layer: <node name>]"`` (possibly followed by ``" | Local Function: <fn>"`` or
``" | <caller node> (<fn>)"`` parts), truncated at 4000 characters; a fused engine layer joins its origins
with ``"\\x1E"`` (``"\\x1F"`` is accepted too). That is used first. Without metadata the layer *name* is
parsed: ``"a + b"`` fusions, ``"PWN(a, PWN(b, c))"`` point-wise fusions, and Myelin
``"{ForeignNode[first...last]}"`` regions, of which only the two ends are known (a *range*). Reformat and
no-op layers (``"Reformatting CopyNode for ..."``), Myelin-internal kernels (``"__myl_..."``, ``"__mye..."``,
``"$$myelin$$..."``: e.g. TensorRT for RTX's ``shape_call`` layers and unrolled recurrences) and parser helper
layers (``"ONNXTRT_..."``) have no ONNX node. TensorRT for RTX's builder-log ``Layers:`` dump is read into this
JSON by :mod:`app.core.engine.layer_dump` (its ``"\\x1F"``-joined metadata included). An unnamed ONNX node appears as
``"node_of_<first output>"``, which this project keys as ``"<Op>:<first output>"``.

**Mapping onto the graph** (:func:`map_to_onnx`): exact names first, then the loose rules, whose matches are
listed in :attr:`OnnxMapping.approximate`: Myelin renames (``'.'`` to ``'_'`` plus a ``"_myl<N>_<M>"``
suffix), the parser's ``"<name>_<N>"`` suffix for the extra layers of one node, the caller of a local
function, and range members. A range ``first...last`` without metadata is expanded to the graph nodes
between its ends, in graph order, that no other engine layer claims.

**Time of a fused layer** (:func:`onnx_node_times`): its mean time is split evenly among the ONNX nodes it
ran, so node times add up to the engine's total; every such node is flagged ``fused`` and also carries the
whole time of its layers, because the even split is an estimate, not a measurement.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import onnx

from app.core.errors import TrtlabError
from app.core.precision import node_keys
from app.core.transforms.int8 import QUANTIZABLE_OPS

__all__ = [
    "EngineInfo", "EngineLayer", "IOTensor", "InspectError", "LayerTime", "Mismatch", "NodeLookup", "NodeTime",
    "OnnxMapping", "OnnxOrigin", "OnnxRefs", "ProfileShape", "TensorDesc", "TimingRecorder", "map_to_onnx",
    "normalize_dtype", "onnx_node_times", "onnx_nodes_of", "parse_engine_info", "parse_layer", "parse_metadata",
    "per_layer_times", "plan_mismatches", "ran_precision",
]

METADATA_SEPARATORS = ("\x1e", "\x1f")
ONNX_LAYER_TAG = "[ONNX Layer: "
QUANTIZED = ("int8", "fp8", "int4", "fp4")
FLOATS = ("fp32", "fp16", "bf16", "fp64")
INTEGERS = ("int32", "int64", "int16", "uint8", "uint16", "uint32", "uint64", "bool", "e8m0")
QDQ_OPS = frozenset({"QuantizeLinear", "DequantizeLinear"})
DYNAMIC_NA = "n/a due to dynamic shapes"

# Words of TensorRT's format and data-type strings -> this module's dtype names. The first word that names a
# type decides, so "Row major linear FP32 format (kLINEAR)" is fp32 and "Thirty-two wide ... Int8 format." int8.
_DTYPE_WORDS = {
    "fp32": "fp32", "float": "fp32", "float32": "fp32", "kfloat": "fp32",
    "fp16": "fp16", "half": "fp16", "float16": "fp16", "khalf": "fp16",
    "bf16": "bf16", "bfloat16": "bf16", "kbf16": "bf16",
    "int8": "int8", "kint8": "int8",
    "fp8": "fp8", "e4m3": "fp8", "float8": "fp8", "kfp8": "fp8",
    "int4": "int4", "kint4": "int4",
    "fp4": "fp4", "e2m1": "fp4", "kfp4": "fp4",
    "e8m0": "e8m0", "ke8m0": "e8m0",
    "int32": "int32", "kint32": "int32",
    "int64": "int64", "kint64": "int64",
    "int16": "int16",
    "uint8": "uint8", "kuint8": "uint8",
    "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
    "bool": "bool", "kbool": "bool",
    "double": "fp64", "fp64": "fp64",
}
_PROFILE_RE = re.compile(r"\s*\[profile (\d+)\]$")
_MYELIN_SUFFIX_RE = re.compile(r"^(.+?)_myl\d+_\d+$")
_UNIQUE_SUFFIX_RE = re.compile(r"^(.+)_\d+$")
_FOREIGN_RE = re.compile(r"^\{ForeignNode\[(.*)\]\}$", re.S)
_PWN_RE = re.compile(r"^PWN\((.*)\)$", re.S)
_CUT_RE = re.compile(r" \.\.\.(?: |$)")
_CALLER_RE = re.compile(r"^(.+) \(([^()]*)\)$")
_REFORMAT_PREFIX = "Reformatting CopyNode for "
_SYNTHETIC_PREFIXES = ("__myl_", "__mye", "$$myelin$$", "ONNXTRT_", "(Unnamed Layer* ")


class InspectError(TrtlabError):
    title = "Cannot read the engine information"


# ============================================================================================== data types

def normalize_dtype(text: object) -> str:
    """A TensorRT data-type or format string ("Half", "Row major linear FP32", "kINT8"...) -> "fp16", "fp32"...

    Returns "unknown" for "N/A due to dynamic shapes", "Unknown format", "None" and anything unrecognised.
    """
    if text is None:
        return "unknown"
    s = str(text).strip()
    if not s:
        return "unknown"
    for word in re.findall(r"[A-Za-z0-9]+", s):
        hit = _DTYPE_WORDS.get(word.lower())
        if hit:
            return hit
    return "unknown"


def ran_precision(inputs: Sequence[TensorDesc], outputs: Sequence[TensorDesc]) -> str:
    """The precision a layer ran in, from its tensors' data types (rules in the module docstring)."""
    ins = [t.dtype for t in inputs if t.dtype != "unknown"]
    outs = [t.dtype for t in outputs if t.dtype != "unknown"]
    if not ins and not outs:
        return "unknown"
    quantized_in = sorted({d for d in ins if d in QUANTIZED})
    if quantized_in:
        return quantized_in[0] if len(quantized_in) == 1 else "mixed"
    for group in (ins, outs):
        floats = sorted({d for d in group if d in FLOATS})
        if floats:
            return floats[0] if len(floats) == 1 else "mixed"
    quantized_out = sorted({d for d in outs if d in QUANTIZED})
    if quantized_out:
        return quantized_out[0] if len(quantized_out) == 1 else "mixed"
    rest = sorted(set(ins) | set(outs))
    return rest[0] if len(rest) == 1 else "mixed"


def _combine(precisions: Iterable[str]) -> str:
    """One precision for an ONNX node that ran in several engine layers: integer-only helpers don't count."""
    known = {p for p in precisions if p != "unknown"}
    numeric = {p for p in known if p not in INTEGERS}
    pick = numeric or known
    if not pick:
        return "unknown"
    return next(iter(pick)) if len(pick) == 1 else "mixed"


# ============================================================================================== inspector JSON

@dataclass(frozen=True)
class TensorDesc:
    """One tensor of an engine layer. ``format`` is TensorRT's text as given; ``dtype`` the normalized type."""

    name: str
    dtype: str = "unknown"
    format: str = ""
    dims: tuple[int, ...] = ()
    location: str = ""


@dataclass(frozen=True)
class ProfileShape:
    min: tuple[int, ...] = ()
    opt: tuple[int, ...] = ()
    max: tuple[int, ...] = ()
    format: str = ""


@dataclass(frozen=True)
class IOTensor:
    """An engine input or output. 10.x ``Bindings`` give only the name; 11.x ``I/O Tensors`` give the rest."""

    name: str
    mode: str = ""               # "input" | "output" | "" (10.x does not say)
    dtype: str = "unknown"
    dims: tuple[int, ...] = ()
    location: str = ""
    shape_io: bool = False       # IsShapeInferenceIO: a host-memory shape tensor
    profiles: tuple[ProfileShape, ...] = ()


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


@dataclass(frozen=True)
class EngineLayer:
    name: str
    type: str = ""                   # LayerType ("CaskConvolution", "Reformat", "Myelin", "kgen"...); "" if unknown
    inputs: tuple[TensorDesc, ...] = ()
    outputs: tuple[TensorDesc, ...] = ()
    tactic: str = ""                 # TacticName, else TacticValue
    metadata: str = ""
    onnx_nodes: tuple[str, ...] = ()
    precision: str = "unknown"
    parameter_type: str = ""         # ParameterType ("Convolution", "Reformat"...)
    kind: str = "compute"            # "compute" | "reformat" | "noop" | "sync"
    profile: int = 0                 # optimization profile from the " [profile N]" suffix
    ranges: tuple[tuple[str, str], ...] = ()
    raw: Mapping[str, object] = field(default_factory=dict, repr=False, compare=False)

    @property
    def base_name(self) -> str:
        """The name without its " [profile N]" suffix."""
        return _PROFILE_RE.sub("", self.name)

    @property
    def maps_to_onnx(self) -> bool:
        return bool(self.onnx_nodes or self.ranges)


@dataclass
class EngineInfo:
    schema: str                       # "10.x" | "11.x" | "unknown"
    verbosity: str                    # "detailed" | "layer_names_only" | "none"
    layers: list[EngineLayer] = field(default_factory=list)
    io: list[IOTensor] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def profile_layers(self, profile: int = 0) -> list[EngineLayer]:
        return [layer for layer in self.layers if layer.profile == profile]

    @property
    def profiles(self) -> list[int]:
        return sorted({layer.profile for layer in self.layers}) or [0]

    @property
    def inputs(self) -> list[IOTensor]:
        return [t for t in self.io if t.mode == "input"]

    @property
    def outputs(self) -> list[IOTensor]:
        return [t for t in self.io if t.mode == "output"]


def _dims(value: object) -> tuple[int, ...]:
    if isinstance(value, (list, tuple)):
        out = []
        for d in value:
            try:
                out.append(int(d))
            except (TypeError, ValueError):
                out.append(-1)
        return tuple(out)
    return ()


def _text(value: object) -> str:
    return "" if value is None else str(value)


_DTYPE_KEYS = ("DataType", "Datatype", "Data Type", "Data type", "Type")
_COMBINED_KEYS = ("Format/Datatype", "Format/DataType", "Format/Data Type")


def _tensor(raw: object) -> TensorDesc:
    if not isinstance(raw, Mapping):
        return TensorDesc(name=_text(raw))
    fmt = next((_text(raw[k]) for k in _COMBINED_KEYS if k in raw), "")
    if not fmt:
        fmt = _text(raw.get("Format"))
    dtype_text = next((_text(raw[k]) for k in _DTYPE_KEYS if k in raw), "")
    dtype = normalize_dtype(dtype_text) if dtype_text else "unknown"
    if dtype == "unknown":
        dtype = normalize_dtype(fmt)
    return TensorDesc(name=_text(raw.get("Name")), dtype=dtype, format=fmt,
                      dims=_dims(raw.get("Dimensions", raw.get("Shape"))), location=_text(raw.get("Location")))


def _kind(name: str, layer_type: str) -> str:
    t = layer_type.lower()
    if t in ("signal", "wait"):
        return "sync"
    if t == "noop":
        return "noop"
    if t == "reformat" or _PROFILE_RE.sub("", name).startswith(_REFORMAT_PREFIX):
        return "reformat"
    return "compute"


def parse_layer(raw: Mapping[str, object] | str) -> EngineLayer:
    """One layer from the inspector: a DETAILED object, or a bare name (LAYER_NAMES_ONLY)."""
    if isinstance(raw, str):
        raw = {"Name": raw}
    if not isinstance(raw, Mapping):
        raise InspectError(f"An engine layer is a {type(raw).__name__}, not an object or a name.",
                           fix="Pass the JSON of IEngineInspector.get_engine_information(LayerInformationFormat.JSON).")
    name = _text(raw.get("Name"))
    layer_type = _text(raw.get("LayerType"))
    inputs = tuple(_tensor(t) for t in raw.get("Inputs") or ())
    outputs = tuple(_tensor(t) for t in raw.get("Outputs") or ())
    tactic = _text(raw.get("TacticName")) or _text(raw.get("TacticValue"))
    metadata = _text(raw.get("Metadata"))
    m = _PROFILE_RE.search(name)
    layer = EngineLayer(name=name, type=layer_type, inputs=inputs, outputs=outputs, tactic=tactic,
                        metadata=metadata, precision=ran_precision(inputs, outputs),
                        parameter_type=_text(raw.get("ParameterType")), kind=_kind(name, layer_type),
                        profile=int(m.group(1)) if m else 0, raw=dict(raw))
    refs = onnx_nodes_of(layer)
    return replace(layer, onnx_nodes=refs.nodes, ranges=refs.ranges)


def _io_tensor(raw: object) -> IOTensor:
    if not isinstance(raw, Mapping):
        return IOTensor(name=_text(raw))
    mode = _text(raw.get("IOMode")).lower()
    profiles = tuple(ProfileShape(_dims(p.get("MinShape")), _dims(p.get("OptShape")), _dims(p.get("MaxShape")),
                                  _text(p.get("Format")))
                     for p in raw.get("ProfileInfo") or () if isinstance(p, Mapping))
    dtype = normalize_dtype(raw.get("DataType"))
    if dtype == "unknown" and profiles:
        dtype = normalize_dtype(profiles[0].format)
    return IOTensor(name=_text(raw.get("Name")), mode=mode,
                    dtype=dtype, dims=_dims(raw.get("Dimensions")), location=_text(raw.get("Location")).lower(),
                    shape_io=bool(raw.get("IsShapeInferenceIO", False)), profiles=profiles)


def _load(doc: Mapping[str, object] | Sequence[object] | str | bytes) -> object:
    if isinstance(doc, (bytes, bytearray)):
        doc = bytes(doc).decode("utf-8", errors="replace")
    if isinstance(doc, str):
        try:
            # strict=False: the 0x1E metadata separator is read whether it comes escaped or as a raw byte.
            return json.loads(doc, strict=False)
        except json.JSONDecodeError as exc:
            raise InspectError(f"The engine information is not JSON ({exc.msg}, line {exc.lineno}).",
                               fix="Ask the inspector for LayerInformationFormat.JSON, not ONELINE.") from exc
    return doc


def parse_engine_info(doc: Mapping[str, object] | Sequence[object] | str | bytes) -> EngineInfo:
    """The engine inspector's JSON (10.x or 11.x schema, any verbosity) as an :class:`EngineInfo`.

    Also takes one layer's JSON (``get_layer_information``) or a bare list of layers.
    """
    data = _load(doc)
    if isinstance(data, Mapping) and "Layers" not in data and "Name" in data:
        data = {"Layers": [data]}
    elif isinstance(data, (list, tuple)):
        data = {"Layers": list(data)}
    if not isinstance(data, Mapping):
        raise InspectError(f"The engine information is a {type(data).__name__}, not a JSON object.",
                           fix="Pass the JSON of IEngineInspector.get_engine_information(LayerInformationFormat.JSON).")
    raw_layers = data.get("Layers") or []
    if not isinstance(raw_layers, list):
        raise InspectError("The engine information's 'Layers' is not a list.",
                           fix="Pass the JSON of IEngineInspector.get_engine_information(LayerInformationFormat.JSON).")
    layers = [parse_layer(r) for r in raw_layers]

    if "I/O Tensors" in data:
        schema = "11.x"
        io = [_io_tensor(t) for t in data.get("I/O Tensors") or ()]
    elif "Bindings" in data:
        schema = "10.x"
        io = [IOTensor(name=_text(b)) for b in data.get("Bindings") or ()]
    else:
        io = []
        tensors = [t for r in raw_layers if isinstance(r, Mapping)
                   for t in [*(r.get("Inputs") or ()), *(r.get("Outputs") or ())] if isinstance(t, Mapping)]
        if any(k in t for t in tensors for k in _DTYPE_KEYS):
            schema = "11.x"
        elif any(k in t for t in tensors for k in _COMBINED_KEYS):
            schema = "10.x"
        else:
            schema = "unknown"

    detailed = any(isinstance(r, Mapping) and set(r) - {"Name"} for r in raw_layers)
    verbosity = "detailed" if detailed else ("layer_names_only" if raw_layers else "none")
    notes = []
    if verbosity != "detailed":
        notes.append("The engine was built without ProfilingVerbosity.DETAILED, so the precisions that ran are "
                     "unknown; build with config.profiling_verbosity = trt.ProfilingVerbosity.DETAILED.")
    formats = [t.format for layer in layers for t in (*layer.inputs, *layer.outputs)]
    if any(f.strip().lower().startswith(DYNAMIC_NA) for f in formats):
        notes.append("Some tensor formats are 'N/A due to dynamic shapes': set inspector.execution_context to a "
                     "context whose input shapes are set before reading the engine information.")
    return EngineInfo(schema=schema, verbosity=verbosity, layers=layers, io=io, notes=notes)


# ============================================================================================== ONNX origins

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
    base = _PROFILE_RE.sub("", name).strip()
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
        name, metadata = _text(raw.get("Name")), _text(raw.get("Metadata"))
        kind = _kind(name, _text(raw.get("LayerType")))
    else:
        name, metadata, kind = layer.name, layer.metadata, layer.kind
    origins = parse_metadata(metadata)
    if origins:
        nodes = tuple(dict.fromkeys(o.node for o in origins))
        return OnnxRefs(nodes=nodes, source="metadata", origins=tuple(origins),
                        partial=any(o.truncated for o in origins))
    return _refs_from_name(name, kind)


# ============================================================================================== graph lookup

class NodeLookup:
    """Finds this project's node key (``precision.node_keys``) for a name TensorRT reports.

    Built from a graph (full rules) or from a list of keys (names, keys and ``node_of_<output>`` for
    ``"<Op>:<output>"`` keys only).
    """

    def __init__(self, keys: Sequence[str], names: Sequence[str] | None = None,
                 first_outputs: Sequence[str] | None = None, op_types: Sequence[str] | None = None,
                 owners: Mapping[str, int] | None = None) -> None:
        self.keys = list(keys)
        self.names = list(names) if names is not None else list(keys)
        self.op_types = list(op_types) if op_types is not None else [""] * len(self.keys)
        self._owners = dict(owners or {})
        self._by_key = {k: i for i, k in enumerate(self.keys)}
        self._by_name: dict[str, list[int]] = {}
        for i, n in enumerate(self.names):
            if n:
                self._by_name.setdefault(n, []).append(i)
        self._by_output: dict[str, int] = {}
        if first_outputs is not None:
            for i, out in enumerate(first_outputs):
                if out and not self.names[i]:
                    self._by_output.setdefault(out, i)
        else:
            for i, k in enumerate(self.keys):
                op, sep, out = k.partition(":")
                if sep and op and out and "@" not in out:
                    self._by_output.setdefault(out, i)
        self._mangled: dict[str, list[int]] = {}
        for i, n in enumerate(self.names):
            if n:
                self._mangled.setdefault(n.replace(".", "_"), []).append(i)

    @classmethod
    def from_graph(cls, graph: onnx.GraphProto | onnx.ModelProto) -> NodeLookup:
        if isinstance(graph, onnx.ModelProto):
            graph = graph.graph
        owners: dict[str, int] = {}
        for i, node in enumerate(graph.node):
            for name in _nested_node_names(node):
                owners.setdefault(name, i)
        return cls(node_keys(graph), [n.name for n in graph.node],
                   [n.output[0] if len(n.output) else "" for n in graph.node], [n.op_type for n in graph.node],
                   owners)

    @classmethod
    def of(cls, graph: onnx.GraphProto | onnx.ModelProto | Sequence[str] | NodeLookup) -> NodeLookup:
        if isinstance(graph, NodeLookup):
            return graph
        if isinstance(graph, (onnx.GraphProto, onnx.ModelProto)):
            return cls.from_graph(graph)
        return cls(list(graph))

    def __len__(self) -> int:
        return len(self.keys)

    def exact(self, name: str) -> list[int]:
        """Indices for an exact ONNX name, key, or ``node_of_<first output>``."""
        if not name:
            return []
        if name in self._by_name:
            return list(self._by_name[name])
        if name in self._by_key:
            return [self._by_key[name]]
        if name.startswith("node_of_"):
            out = name[len("node_of_"):]
            if out in self._by_output:
                return [self._by_output[out]]
        return []

    def loose(self, name: str) -> list[int]:
        """Indices by the loose rules: Myelin renames ('.' -> '_') and the parser's "_<N>" suffix."""
        hits = self._mangled.get(name.replace(".", "_"), [])
        if len(hits) == 1:
            return list(hits)
        m = _UNIQUE_SUFFIX_RE.match(name)
        if m:
            hits = self.exact(m.group(1)) or self._mangled.get(m.group(1).replace(".", "_"), [])
            if len(hits) == 1:
                return list(hits)
        return []

    def owner(self, name: str) -> int | None:
        """The top-level node whose subgraph (If/Loop/Scan body) holds a node of this name."""
        return self._owners.get(name)

    def by_function(self, function: str) -> list[int]:
        """Top-level nodes that call a local function (their op_type is the function's name)."""
        return [i for i, op in enumerate(self.op_types) if op and op == function]


def _nested_node_names(node: onnx.NodeProto) -> Iterable[str]:
    for attr in node.attribute:
        graphs = list(attr.graphs)
        if attr.HasField("g"):
            graphs.append(attr.g)
        for g in graphs:
            for inner in g.node:
                if inner.name:
                    yield inner.name
                yield from _nested_node_names(inner)


# ============================================================================================== mapping

@dataclass
class OnnxMapping:
    """Engine layers <-> ONNX nodes (this project's node keys)."""

    layers: dict[str, list[str]] = field(default_factory=dict)       # onnx key -> engine layer names
    nodes: dict[str, list[str]] = field(default_factory=dict)        # engine layer name -> onnx keys
    precision: dict[str, str] = field(default_factory=dict)          # onnx key -> precision that ran
    unmapped: list[str] = field(default_factory=list)                # engine layers of no ONNX node
    unknown: dict[str, list[str]] = field(default_factory=dict)      # engine layer -> names not in the graph
    approximate: dict[str, list[str]] = field(default_factory=dict)  # engine layer -> keys found by loose rules
    missing: list[str] = field(default_factory=list)                 # graph keys no engine layer ran
    lookup: NodeLookup | None = field(default=None, repr=False, compare=False)

    def keys_for_name(self, layer_name: str) -> list[str]:
        """Keys for an engine layer name, also one the inspector did not list (e.g. a profiler name)."""
        if layer_name in self.nodes:
            return list(self.nodes[layer_name])
        if self.lookup is None:
            return []
        refs = onnx_nodes_of(layer_name)
        out: list[str] = []
        for name in refs.nodes:
            hits = self.lookup.exact(name) or self.lookup.loose(name)
            out.extend(self.lookup.keys[i] for i in hits)
        return list(dict.fromkeys(out))


def _resolve_origin(lookup: NodeLookup, origin: OnnxOrigin) -> tuple[list[int], bool]:
    hits = lookup.exact(origin.node)
    if hits:
        return hits, False
    for caller in reversed(origin.callers):         # the last caller is the top-level call site
        hits = lookup.exact(caller)
        if hits:
            return hits, True
    owner = lookup.owner(origin.node)
    if owner is not None:
        return [owner], True
    for fn in origin.functions[:1]:
        hits = lookup.by_function(fn)
        if len(hits) == 1:
            return hits, True
    return [], False


def map_to_onnx(layers: EngineInfo | Iterable[EngineLayer],
                graph: onnx.GraphProto | onnx.ModelProto | Sequence[str] | NodeLookup,
                *, profile: int = 0) -> OnnxMapping:
    """Which engine layers ran each ONNX node, and in which precision (rules in the module docstring).

    ``graph`` is the ONNX graph (or model), or just its node keys/names. An :class:`EngineInfo` contributes
    the layers of one optimization ``profile``; a plain list of layers is used as given.
    """
    lookup = NodeLookup.of(graph)
    todo = layers.profile_layers(profile) if isinstance(layers, EngineInfo) else list(layers)
    result = OnnxMapping(lookup=lookup)
    claimed: dict[int, list[str]] = {}
    pending_ranges: list[tuple[EngineLayer, list[tuple[str, str]]]] = []

    def claim(idx: int, layer: EngineLayer, loose: bool) -> None:
        names = claimed.setdefault(idx, [])
        if layer.name not in names:
            names.append(layer.name)
        keys = result.nodes.setdefault(layer.name, [])
        key = lookup.keys[idx]
        if key not in keys:
            keys.append(key)
        if loose:
            approx = result.approximate.setdefault(layer.name, [])
            if key not in approx:
                approx.append(key)

    for layer in todo:
        refs = onnx_nodes_of(layer)
        found = False
        if refs.source == "metadata":
            for origin in refs.origins:
                hits, loose = _resolve_origin(lookup, origin)
                for idx in hits:
                    claim(idx, layer, loose)
                found |= bool(hits)
                if not hits:
                    result.unknown.setdefault(layer.name, []).append(origin.node)
        elif refs.source == "name":
            for name in refs.nodes:
                hits = lookup.exact(name)
                loose = refs.loose
                if not hits:
                    hits, loose = lookup.loose(name), True
                for idx in hits:
                    claim(idx, layer, loose)
                found |= bool(hits)
                if not hits:
                    result.unknown.setdefault(layer.name, []).append(name)
            if refs.ranges:
                pending_ranges.append((layer, list(refs.ranges)))
        if not found and not refs.ranges:
            result.unmapped.append(layer.name)

    # Myelin ranges named by their ends only: the nodes between the ends that no other layer claims.
    for layer, ranges in pending_ranges:
        for first, last in ranges:
            a = (lookup.exact(first) or lookup.loose(first) or [None])[0]
            b = (lookup.exact(last) or lookup.loose(last) or [None])[0]
            if a is None or b is None:
                continue
            lo, hi = min(a, b), max(a, b)
            for idx in range(lo + 1, hi):
                if idx not in claimed:
                    claim(idx, layer, True)
        if layer.name not in result.nodes and layer.name not in result.unmapped:
            result.unmapped.append(layer.name)

    by_name = {layer.name: layer for layer in todo}
    for idx in sorted(claimed):
        key = lookup.keys[idx]
        result.layers[key] = claimed[idx]
        result.precision[key] = _combine(by_name[n].precision for n in claimed[idx] if n in by_name)
    result.missing = [k for i, k in enumerate(lookup.keys) if i not in claimed]
    return result


# ============================================================================================== timing

@dataclass(frozen=True)
class LayerTime:
    mean_ms: float
    median_ms: float
    count: int
    share: float          # this layer's share of the summed time of all layers (0..1)
    total_ms: float = 0.0
    min_ms: float = 0.0
    max_ms: float = 0.0


class TimingRecorder:
    """Collects ``report_layer_time(layer_name, ms)`` calls; the backend's ``trt.IProfiler`` subclass forwards here."""

    def __init__(self) -> None:
        self.records: list[tuple[str, float]] = []

    def report_layer_time(self, layer_name: str, ms: float) -> None:
        self.records.append((str(layer_name), float(ms)))

    def clear(self) -> None:
        self.records.clear()

    def times(self) -> dict[str, LayerTime]:
        return per_layer_times(self.records)


def per_layer_times(records: Iterable[tuple[str, float]]) -> dict[str, LayerTime]:
    """Per engine layer: mean, median, number of reports and share of the total, over every run reported.

    ``records`` are ``(layer_name, ms)`` pairs in the order IProfiler reported them, over any number of runs.
    Layers keep the order of their first report (the engine's execution order).
    """
    samples: dict[str, list[float]] = {}
    for name, ms in records:
        samples.setdefault(str(name), []).append(float(ms))
    grand = sum(sum(v) for v in samples.values())
    return {name: LayerTime(mean_ms=statistics.fmean(v), median_ms=statistics.median(v), count=len(v),
                            share=(sum(v) / grand) if grand > 0 else 0.0, total_ms=sum(v), min_ms=min(v),
                            max_ms=max(v))
            for name, v in samples.items()}


@dataclass(frozen=True)
class NodeTime:
    ms: float                    # mean time attributed to the node (fused layers split evenly)
    share: float                 # ms / mean time of all layers
    layers: tuple[str, ...]      # the engine layers that ran it
    fused: bool                  # one of its layers also ran other ONNX nodes: ``ms`` is an even split
    layer_ms: float              # whole mean time of those layers


@dataclass
class NodeTimes:
    nodes: dict[str, NodeTime] = field(default_factory=dict)
    unattributed: dict[str, float] = field(default_factory=dict)   # layer -> mean ms (reformats, unknown names)
    total_ms: float = 0.0                                          # summed mean time of all layers


def onnx_node_times(times: Mapping[str, LayerTime], mapping: OnnxMapping) -> NodeTimes:
    """Layer times attributed to ONNX nodes: a layer that ran n nodes gives each mean/n and flags them ``fused``."""
    out = NodeTimes(total_ms=sum(t.mean_ms for t in times.values()))
    acc: dict[str, list] = {}
    for layer, t in times.items():
        keys = mapping.keys_for_name(layer)
        if not keys:
            out.unattributed[layer] = t.mean_ms
            continue
        for key in keys:
            entry = acc.setdefault(key, [0.0, [], False, 0.0])
            entry[0] += t.mean_ms / len(keys)
            entry[1].append(layer)
            entry[2] = entry[2] or len(keys) > 1
            entry[3] += t.mean_ms
    for key, (ms, layers, fused, layer_ms) in acc.items():
        out.nodes[key] = NodeTime(ms=ms, share=(ms / out.total_ms) if out.total_ms > 0 else 0.0,
                                  layers=tuple(layers), fused=fused, layer_ms=layer_ms)
    return out


# ============================================================================================== plan check

@dataclass(frozen=True)
class Mismatch:
    key: str
    planned: str
    ran: str
    severity: str                # "warning" (the engine did not do what the plan asked) | "info" (explained)
    message: str
    layers: tuple[str, ...] = ()


_LABEL = {"fp32": "FP32", "fp16": "FP16", "bf16": "BF16", "int8": "INT8", "fp8": "FP8", "int4": "INT4",
          "fp4": "FP4", "fp64": "FP64"}


_BITS = {"fp64": 64, "fp32": 32, "fp16": 16, "bf16": 16}


def _label(p: str) -> str:
    return _LABEL.get(p, p)


def plan_mismatches(ran: Mapping[str, str], planned: Mapping[str, str], *, mapping: OnnxMapping | None = None,
                    op_types: Mapping[str, str] | None = None, include_missing: bool = False) -> list[Mismatch]:
    """Nodes whose engine precision differs from the plan, warnings first.

    ``ran`` is :attr:`OnnxMapping.precision`; ``planned`` maps node keys to "fp32"/"fp16"/"bf16"/"int8" (or
    "fixed", skipped), e.g. ``{r.key: r.precision for r in plan.resolve(graph)}``. Rules:

    * Skipped: "fixed" nodes (Q/DQ, integer and shape paths), nodes whose engine precision is "unknown" (no
      DETAILED verbosity) or integer-only, and nodes no engine layer ran (reported as "info" with
      ``include_missing``: folded at build time, eliminated, or inside an unlisted Myelin region).
    * Planned float, ran in another float type: warning (FP16 planned but FP32 ran costs speed; FP32 planned
      but FP16 ran costs accuracy).
    * Planned float, ran INT8 (or another quantized type): info when it shares an engine layer with a node
      planned INT8 or a Q/DQ node (an activation or residual fused into the quantized kernel takes its
      precision), else warning.
    * Planned INT8, ran float: info when the op has no INT8 kernel of its own (not Conv, ConvTranspose,
      MatMul, Gemm, Add or pooling; known only through ``op_types``): such nodes follow the layer they are
      fused into. Otherwise warning: TensorRT did not fuse the Q/DQ into an INT8 kernel.
    * Ran "mixed" (its layer reads tensors of several float types): info.
    """
    layers_of = mapping.layers if mapping is not None else {}
    nodes_of = mapping.nodes if mapping is not None else {}
    ops = op_types or {}
    found: list[Mismatch] = []

    def neighbours(key: str) -> list[str]:
        out = []
        for layer in layers_of.get(key, ()):
            out.extend(k for k in nodes_of.get(layer, ()) if k != key)
        return list(dict.fromkeys(out))

    for key, want in planned.items():
        if want not in ("fp32", "fp16", "bf16", "int8"):
            continue
        layers = tuple(layers_of.get(key, ()))
        got = ran.get(key)
        if got is None:
            if include_missing:
                found.append(Mismatch(key, want, "", "info",
                                      f"{key}: planned {_label(want)}, but no engine layer ran it (folded at "
                                      "build time, eliminated, or inside a Myelin region whose members are not "
                                      "listed).", layers))
            continue
        if got == want or got == "unknown" or got in INTEGERS:
            continue
        where = f" (engine layer: {', '.join(layers)})" if layers else ""
        if got == "mixed":
            found.append(Mismatch(key, want, got, "info",
                                  f"{key}: planned {_label(want)}; its engine layer reads tensors of several "
                                  f"precisions, check it{where}.", layers))
        elif want == "int8":
            op = ops.get(key, "")
            if got not in QUANTIZED and op and op not in QUANTIZABLE_OPS:
                found.append(Mismatch(key, want, got, "info",
                                      f"{key}: planned INT8, ran {_label(got)}: {op} has no INT8 kernel of its "
                                      f"own and follows the layer it is fused into{where}.", layers))
            else:
                found.append(Mismatch(key, want, got, "warning",
                                      f"{key}: planned INT8 but ran {_label(got)}: TensorRT did not run it in an "
                                      f"INT8 kernel; check the Q/DQ around it{where}.", layers))
        elif got in QUANTIZED:
            near = neighbours(key)
            quantized = [k for k in near if planned.get(k) == "int8"] + [k for k in near if ops.get(k) in QDQ_OPS]
            if quantized:
                found.append(Mismatch(key, want, got, "info",
                                      f"{key}: planned {_label(want)}, ran {_label(got)}: fused into the "
                                      f"quantized kernel of {quantized[0]}{where}.", layers))
            else:
                found.append(Mismatch(key, want, got, "warning",
                                      f"{key}: planned {_label(want)} but ran {_label(got)}, with no "
                                      f"INT8-planned node in its layer{where}.", layers))
        else:
            wider, narrower = _BITS.get(got, 0) > _BITS.get(want, 0), _BITS.get(got, 0) < _BITS.get(want, 0)
            why = ("a wider type than planned, correct but slower" if wider else
                   "a narrower type than planned, accuracy may suffer" if narrower else
                   "another 16-bit type, FP16 and BF16 round differently")
            found.append(Mismatch(key, want, got, "warning",
                                  f"{key}: planned {_label(want)} but ran {_label(got)}: {why}{where}.", layers))
    found.sort(key=lambda m: 0 if m.severity == "warning" else 1)
    return found
