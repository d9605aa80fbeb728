"""The engine inspector's JSON read into :mod:`app.core.engine.engine_layers`: tensors, data types, precision, origins.

Pure logic: the TensorRT backend hands over the strings it reads, nothing here imports tensorrt.

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
:meth:`EngineInfo.profile_layers` picks one profile. A layer's precision comes from
:func:`app.core.engine.layer_precision.ran_precision`, its ONNX nodes from
:func:`app.core.engine.onnx_origins.onnx_nodes_of`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from app.core.engine.engine_layers import PROFILE_RE, EngineInfo, EngineLayer, IOTensor, ProfileShape, TensorDesc
from app.core.engine.layer_precision import normalize_dtype, ran_precision
from app.core.engine.onnx_origins import field_text, layer_kind, onnx_nodes_of
from app.core.errors import TrtlabError

__all__ = ["InspectError", "parse_engine_info", "parse_layer"]

DYNAMIC_NA = "n/a due to dynamic shapes"


class InspectError(TrtlabError):
    title = "Cannot read the engine information"


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


def _each(value: object) -> Iterable[object]:
    """The items of a JSON list (a layer's "Inputs", "Outputs"); nothing for a missing key (None) or a scalar."""
    return value if isinstance(value, Iterable) else ()


_DTYPE_KEYS = ("DataType", "Datatype", "Data Type", "Data type", "Type")
_COMBINED_KEYS = ("Format/Datatype", "Format/DataType", "Format/Data Type")


def _tensor(raw: object) -> TensorDesc:
    if not isinstance(raw, Mapping):
        return TensorDesc(name=field_text(raw))
    fmt = next((field_text(raw[k]) for k in _COMBINED_KEYS if k in raw), "")
    if not fmt:
        fmt = field_text(raw.get("Format"))
    dtype_text = next((field_text(raw[k]) for k in _DTYPE_KEYS if k in raw), "")
    dtype = normalize_dtype(dtype_text) if dtype_text else "unknown"
    if dtype == "unknown":
        dtype = normalize_dtype(fmt)
    return TensorDesc(name=field_text(raw.get("Name")), dtype=dtype, format=fmt,
                      dims=_dims(raw.get("Dimensions", raw.get("Shape"))), location=field_text(raw.get("Location")))


def parse_layer(raw: Mapping[str, object] | str) -> EngineLayer:
    """One layer from the inspector: a DETAILED object, or a bare name (LAYER_NAMES_ONLY)."""
    if isinstance(raw, str):
        raw = {"Name": raw}
    if not isinstance(raw, Mapping):
        raise InspectError(f"An engine layer is a {type(raw).__name__}, not an object or a name.",
                           fix="Pass the JSON of IEngineInspector.get_engine_information(LayerInformationFormat.JSON).")
    name = field_text(raw.get("Name"))
    layer_type = field_text(raw.get("LayerType"))
    inputs = tuple(_tensor(t) for t in _each(raw.get("Inputs")))
    outputs = tuple(_tensor(t) for t in _each(raw.get("Outputs")))
    tactic = field_text(raw.get("TacticName")) or field_text(raw.get("TacticValue"))
    metadata = field_text(raw.get("Metadata"))
    m = PROFILE_RE.search(name)
    layer = EngineLayer(name=name, type=layer_type, inputs=inputs, outputs=outputs, tactic=tactic,
                        metadata=metadata, precision=ran_precision(inputs, outputs),
                        parameter_type=field_text(raw.get("ParameterType")), kind=layer_kind(name, layer_type),
                        profile=int(m.group(1)) if m else 0, raw=dict(raw))
    refs = onnx_nodes_of(layer)
    return replace(layer, onnx_nodes=refs.nodes, ranges=refs.ranges)


def _io_tensor(raw: object) -> IOTensor:
    if not isinstance(raw, Mapping):
        return IOTensor(name=field_text(raw))
    mode = field_text(raw.get("IOMode")).lower()
    profiles = tuple(ProfileShape(_dims(p.get("MinShape")), _dims(p.get("OptShape")), _dims(p.get("MaxShape")),
                                  field_text(p.get("Format")))
                     for p in raw.get("ProfileInfo") or () if isinstance(p, Mapping))
    dtype = normalize_dtype(raw.get("DataType"))
    if dtype == "unknown" and profiles:
        dtype = normalize_dtype(profiles[0].format)
    return IOTensor(name=field_text(raw.get("Name")), mode=mode,
                    dtype=dtype, dims=_dims(raw.get("Dimensions")), location=field_text(raw.get("Location")).lower(),
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
        io = [IOTensor(name=field_text(b)) for b in data.get("Bindings") or ()]
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
