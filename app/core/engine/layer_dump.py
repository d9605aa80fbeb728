"""The builder's ``Layers:`` dump, read into the engine inspector's JSON for :mod:`app.core.engine.inspector_json`.

With ``ProfilingVerbosity.DETAILED`` TensorRT for RTX logs, at VERBOSE, one message holding what the engine
inspector would say (TENSORRT_RTX.md): ``Layers:`` with one ONELINE record per engine layer, then
``I/O Tensors:`` and ``Engine Metadata:``. It is the only per-layer information there is without a GPU that can
load the engine. A record reads::

    Name: Conv_0_myl0_1, LayerType: correlation, Inputs: [ { Name: x, Dimensions: [1,3,320,320], Strides: [...],
    StrideOrder: [...], Datatype: Float, Format: (NHWC) Channel major format }], Constants: [...], Outputs: [...],
    TacticName: __myelin_CASK_STUB, StreamId: 0, Metadata: [ONNX Layer: Conv_0]\\x1f[ONNX Layer: Relu_1]

Values are scalars, ``[..]`` lists (of numbers or of ``{ .. }`` objects) or objects; ``Metadata`` is last and
runs to the end of the line (the ONNX names are free text). A layer's ``Name`` runs to ``, LayerType:``, so
names with commas and brackets (``PWN(a, b)``, ``{ForeignNode[..]}``) stay whole.

Engines with several optimization profiles list each profile's layers in turn; Myelin numbers its graphs per
profile (``_myl<G>_<i>``) and names some layers ``"<node> [profile N]_myl<G>_<i>"``. A graph takes the profile
its tagged layers name, an untagged one that of the graph before it; when no layer is tagged and there are as
many graphs as profiles, graph *k* is profile *k*. Layers of profile N > 0 get the inspector's
``" [profile N]"`` suffix, so :meth:`EngineInfo.profile_layers` selects them the same way.
"""

from __future__ import annotations

import re

__all__ = ["DUMP_HEADER", "find_dump", "parse_layer_dump", "parse_record"]

DUMP_HEADER = "Layers:"
_SECTIONS = ("I/O Tensors:", "Engine Metadata:")
_NEXT_KEY = re.compile(r", ([A-Z][A-Za-z0-9]*): ")
_KEY = re.compile(r"\s*([A-Z][A-Za-z0-9/ -]*?): ")
_MYELIN_GRAPH = re.compile(r"_myl(\d+)_\d+$")
_PROFILE_TAG = re.compile(r" \[profile (\d+)\]")
_SUFFIX = re.compile(r"\s*\[profile (\d+)\]$")
_NAME_ENDS = {"LayerType", "IOMode"}   # the field after a top-level Name


def find_dump(messages: list[str] | tuple[str, ...]) -> str | None:
    """The last ``Layers:`` message among logged messages (one per build), or None."""
    for msg in reversed(messages):
        if msg.lstrip().startswith(DUMP_HEADER):
            return msg
    return None


def _scalar(text: str) -> object:
    t = text.strip()
    if t in ("true", "false"):
        return t == "true"
    return t


def _numbers(body: str) -> list[object]:
    out: list[object] = []
    for part in (p.strip() for p in body.split(",")):
        if not part:
            continue
        try:
            out.append(int(part))
        except ValueError:
            out.append(part)
    return out


class _Reader:
    """A small recursive-descent reader of ONELINE records (see the module docstring)."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0

    def _skip(self) -> None:
        while self.i < len(self.s) and self.s[self.i] == " ":
            self.i += 1

    def record(self, top: bool) -> dict[str, object]:
        s = self.s
        out: dict[str, object] = {}
        while self.i < len(s):
            self._skip()
            if not top and s.startswith("}", self.i):
                self.i += 1
                break
            m = _KEY.match(s, self.i)
            if m is None:  # nothing readable left in this record
                if top:
                    break
                end = s.find("}", self.i)
                self.i = len(s) if end < 0 else end + 1
                break
            key = m.group(1).strip()
            self.i = m.end()
            if top and key == "Metadata":
                out[key] = s[self.i:]
                self.i = len(s)
                break
            if top and key == "Name":
                ends = [s.find(f", {k}: ", self.i) for k in _NAME_ENDS]
                ends = [e for e in ends if e >= 0]
                if ends:
                    out[key] = s[self.i:min(ends)]
                    self.i = min(ends) + 2
                    continue
            out[key] = self.value(top)
            self._skip()
            if s.startswith(",", self.i):
                self.i += 1
        return out

    def value(self, top: bool) -> object:
        s = self.s
        self._skip()
        if s.startswith("[", self.i):
            return self.items()
        if s.startswith("{", self.i):
            self.i += 1
            return self.record(top=False)
        m = _NEXT_KEY.search(s, self.i)
        end = m.start() if m else len(s)
        if not top:  # inside { }: the record closes with " }"
            close = s.find(" }", self.i)
            if close >= 0 and close < end:
                end = close
        text = s[self.i:end]
        self.i = end
        return _scalar(text)

    def items(self) -> list[object]:
        s = self.s
        self.i += 1  # "["
        self._skip()
        if not s.startswith("{", self.i):
            end = s.find("]", self.i)
            end = len(s) if end < 0 else end
            body = s[self.i:end]
            self.i = min(end + 1, len(s))
            return _numbers(body)
        out: list[object] = []
        while self.i < len(s):
            self._skip()
            if s.startswith("]", self.i):
                self.i += 1
                break
            if s.startswith(",", self.i):
                self.i += 1
                continue
            if s.startswith("{", self.i):
                self.i += 1
                out.append(self.record(top=False))
                continue
            self.i += 1  # anything else between records
        return out


def parse_record(line: str) -> dict[str, object]:
    """One ONELINE record (a layer or an I/O tensor) as a dict of its fields."""
    return _Reader(line.strip()).record(top=True)


def _profiles_of(layers: list[dict[str, object]], count: int) -> list[int]:
    """The optimization profile of each layer (module docstring)."""
    if count <= 1:
        return [0] * len(layers)
    groups: list[list[int]] = []
    last_graph: str | None = None
    for k, layer in enumerate(layers):
        m = _MYELIN_GRAPH.search(str(layer.get("Name", "")))
        graph = m.group(1) if m else last_graph
        if not groups or graph != last_graph:
            groups.append([])
        groups[-1].append(k)
        last_graph = graph
    tags: list[int | None] = []
    for members in groups:
        found = [int(t.group(1)) for k in members if (t := _PROFILE_TAG.search(str(layers[k].get("Name", ""))))]
        tags.append(max(found) if found else None)
    if all(t is None for t in tags) and len(groups) == count:
        tags = list(range(count))
    out = [0] * len(layers)
    current = 0
    for members, tag in zip(groups, tags, strict=True):
        current = tag if tag is not None else current
        for k in members:
            out[k] = min(current, count - 1)
    return out


def parse_layer_dump(text: str) -> dict[str, object]:
    """The ``Layers:`` message as inspector JSON: ``{"Layers": [...], "I/O Tensors": [...], "Source": ...}``.

    Layer records keep their own keys (``Name``, ``LayerType``, ``Inputs``/``Outputs`` with ``Datatype`` and
    ``Format``, ``TacticName``, ``Metadata``...), which :func:`app.core.engine.inspector_json.parse_engine_info`
    reads.
    """
    section = "layers"
    layers: list[dict[str, object]] = []
    io: list[dict[str, object]] = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        stripped = line.strip()
        if not stripped or stripped == DUMP_HEADER:
            continue
        if stripped in _SECTIONS:
            section = "io" if stripped == _SECTIONS[0] else "meta"
            continue
        if not stripped.startswith("Name: "):
            continue
        if section == "layers":
            layers.append(parse_record(line))
        elif section == "io":
            io.append(parse_record(line))
    count = max([len(p) for p in (t.get("ProfileInfo") for t in io) if isinstance(p, list)] or [1])
    for layer, profile in zip(layers, _profiles_of(layers, count), strict=True):
        name = str(layer.get("Name", ""))
        if profile > 0 and not _SUFFIX.search(name):
            layer["Name"] = f"{name} [profile {profile}]"
    return {"Layers": layers, "I/O Tensors": io, "Source": "builder log (Layers: dump)"}
