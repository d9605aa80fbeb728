"""Open an ONNX file into a :class:`ModelDoc`, refusing bad files with a typed, actionable error.

External weights are never read here: drawing and summarising a 10 GB model needs only the graph.
Their locations are validated (inside the model's folder, present, long enough) so that a later
read is safe.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import onnx
from google.protobuf.message import DecodeError

from app.core import errors
from app.core.model.loader_checks import check_tensor_sizes, nesting_error, read_varint
from app.core.model.onnx_walk import iter_graphs, iter_tensors

log = logging.getLogger(__name__)

ProgressFn = Callable[[float | None, str], None]
CancelFn = Callable[[], bool]

_CHUNK = 8 * 1024 * 1024
_REEXPORT = "Re-export the model from its framework, or copy the file again if it was cut short."


@dataclass
class ExternalRef:
    """One tensor stored outside the .onnx file."""

    tensor: str
    location: str
    offset: int
    length: int | None


@dataclass
class ModelDoc:
    """A loaded model: the ONNX proto (external weights not loaded) and facts about its file."""

    path: Path
    model: onnx.ModelProto
    file_size: int
    load_seconds: float = 0.0
    external: list[ExternalRef] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    verified: bool = False  # verify_model has run (load_model runs it unless told not to)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def external_bytes(self) -> int:
        return sum(r.length or 0 for r in self.external)


def load_model(path: str | os.PathLike[str], progress: ProgressFn | None = None,
               cancel: CancelFn | None = None, *, verify: bool = True) -> ModelDoc:
    """Load and validate an ONNX model file (graph only; external data is checked, not read). `verify=False`: the
    checks that drawing the graph does not need (every input defined, tensors holding the data their dims claim,
    external data present) are left to :func:`verify_model`, which must run before anything reads tensor data."""
    started = time.perf_counter()
    p = Path(path).expanduser()
    report = progress or (lambda _f, _m: None)
    data = _read_file(p, report, cancel)
    _sniff_foreign_format(p, data)
    report(None, "Parsing the ONNX graph…")
    model = _parse(p, data)
    del data
    _check_structure(p, model)
    _check_versions(p, model)
    doc = ModelDoc(path=p, model=model, file_size=p.stat().st_size)
    if verify:
        verify_model(doc, report, cancel)
    doc.load_seconds = time.perf_counter() - started
    log.info("loaded %s in %.2f s", p, doc.load_seconds)
    return doc


def verify_model(doc: ModelDoc, progress: ProgressFn | None = None, cancel: CancelFn | None = None) -> None:
    """The checks of a loaded model that reading its tensors needs (see :func:`load_model`); sets `doc.external`."""
    report = progress or (lambda _f, _m: None)
    p, model = doc.path, doc.model
    _check_inputs_defined(p, model.graph)
    check_tensor_sizes(p, model)
    if cancel is not None and cancel():
        raise errors.LoadCancelled("Loading was cancelled.")
    report(None, "Checking external data…")
    doc.external = _check_external_data(p, model)
    doc.verified = True


def _read_file(p: Path, report: ProgressFn, cancel: CancelFn | None) -> bytes:
    if not p.exists():
        raise errors.ModelNotFoundError(
            f"'{p}' does not exist.", fix="Check the path and the file name; it may have been moved or renamed.")
    if p.is_dir():
        raise errors.NotOnnxError(
            f"'{p}' is a folder, not an ONNX file.", fix="Choose the .onnx file inside it.")
    size = p.stat().st_size
    if size == 0:
        raise errors.EmptyFileError(
            f"'{p.name}' is empty (0 bytes).",
            fix="The file was probably not written completely; export or download it again.")
    parts: list[bytes] = []
    done = 0
    try:
        with p.open("rb") as fh:
            while chunk := fh.read(_CHUNK):
                parts.append(chunk)
                done += len(chunk)
                report(done / size, f"Reading {p.name}: {done >> 20} of {size >> 20} MB")
                if cancel is not None and cancel():
                    raise errors.LoadCancelled("Loading was cancelled.")
    except PermissionError as exc:
        raise errors.ModelLoadError(
            f"'{p}' cannot be read: permission denied.",
            fix="Check the file's permissions or copy it somewhere readable.") from exc
    return b"".join(parts)


def _sniff_foreign_format(p: Path, head: bytes) -> None:
    """Name the format of files that are clearly not ONNX, so the user knows what to do."""
    hint = "Export the model to ONNX first (e.g. torch.onnx.export, tf2onnx, paddle2onnx)."
    what = None
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08"):  # entry, empty archive, spanned
        what = "a ZIP archive (a PyTorch checkpoint, a Keras model or a zipped file)"
    elif head[:4] == b"\x89HDF":
        what = "an HDF5 file (a Keras .h5 model)"
    elif head[4:8] == b"TFL3":
        what = "a TensorFlow Lite model"
    elif head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        what = "a Python pickle (a PyTorch or scikit-learn checkpoint)"
    elif p.suffix.lower() in (".engine", ".plan", ".trt"):
        what = "a TensorRT engine"
        hint = "Open the ONNX model the engine was built from; trtlab builds engines itself."
    elif _looks_like_text(head[:4096]):
        what = "a text file"
    if what:
        raise errors.NotOnnxError(f"'{p.name}' is {what}, not an ONNX model.", fix=hint)


def _looks_like_text(head: bytes) -> bool:
    if not head:
        return False
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    printable = sum(ch.isprintable() or ch in "\r\n\t" for ch in text)
    return printable / len(text) > 0.97


def _parse(p: Path, data: bytes) -> onnx.ModelProto:
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        if _top_level_truncated(data):
            raise errors.TruncatedModelError(
                f"'{p.name}' is truncated: the file ends in the middle of the model "
                f"({len(data):,} bytes on disk).", fix=_REEXPORT) from exc
        if (nested := nesting_error(p, data, exc)) is not None:
            raise nested from exc
        raise errors.CorruptModelError(
            f"'{p.name}' is not a valid ONNX file: its contents cannot be decoded ({exc}).",
            fix="If it is an ONNX model, it is corrupt; " + _REEXPORT) from exc
    if not model.HasField("graph") and not model.opset_import and model.ir_version == 0:
        raise errors.NotOnnxError(
            f"'{p.name}' does not contain an ONNX model (no IR version, graph or opsets).",
            fix="Check that this is the .onnx file exported from your framework.")
    return model


def _top_level_truncated(data: bytes) -> bool:
    """Walk ModelProto's top-level protobuf fields: does one claim more bytes than the file holds?"""
    view, i, n = memoryview(data), 0, len(data)
    while i < n:
        key, i = read_varint(view, i, n)
        if key is None:
            return True
        wire = key & 7
        if wire == 0:
            value, i = read_varint(view, i, n)
            if value is None:
                return True
        elif wire == 1:
            i += 8
        elif wire == 2:
            length, i = read_varint(view, i, n)
            if length is None:
                return True
            i += length
        elif wire == 5:
            i += 4
        else:
            return False
        if i > n:
            return True
    return False


def _check_structure(p: Path, model: onnx.ModelProto) -> None:
    if not model.HasField("graph"):
        raise errors.NoGraphError(
            f"'{p.name}' is an ONNX model with no graph (it holds metadata only).",
            fix="It may be a model-local function library or a truncated file; " + _REEXPORT)
    if model.ir_version >= 3 and not model.opset_import:
        raise errors.TruncatedModelError(
            f"'{p.name}' declares no operator set (opset_import is empty), which ONNX files always "
            "have; the file was probably cut short.", fix=_REEXPORT)
    graph = model.graph
    if not graph.node and not graph.output:
        raise errors.NoGraphError(
            f"'{p.name}' has an empty graph (no nodes and no outputs).", fix=_REEXPORT)


def _check_inputs_defined(p: Path, graph: onnx.GraphProto) -> None:
    undefined = _undefined_inputs(graph)
    if undefined:
        sample = ", ".join(f"'{n}'" for n in undefined[:3])
        raise errors.CorruptModelError(
            f"'{p.name}' is inconsistent: {len(undefined)} tensor(s) are used but never produced "
            f"(e.g. {sample}); the file is probably truncated or corrupt.", fix=_REEXPORT)


def _undefined_inputs(graph: onnx.GraphProto) -> list[str]:
    """Top-level node inputs that nothing defines (subgraphs may use outer-scope names: skipped)."""
    defined = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    defined |= {t.values.name for t in graph.sparse_initializer}
    defined.add("")
    for node in graph.node:
        defined.update(node.output)
    missing: list[str] = []
    for node in graph.node:
        missing.extend(name for name in node.input if name not in defined)
    missing.extend(o.name for o in graph.output if o.name not in defined)
    return sorted(set(missing))


def max_supported_opsets() -> dict[str, int]:
    """The highest opset per domain that the installed onnx package knows."""
    best: dict[str, int] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        dom = schema.domain or "ai.onnx"
        best[dom] = max(best.get(dom, 0), schema.since_version)
    best["ai.onnx"] = onnx.defs.onnx_opset_version()
    return best


def _check_versions(p: Path, model: onnx.ModelProto) -> None:
    upgrade = "Upgrade onnx (pip install -U onnx), or export the model with an older opset/IR version."
    if model.ir_version > onnx.IR_VERSION:
        raise errors.UnsupportedVersionError(
            f"'{p.name}' uses ONNX IR version {model.ir_version}; the installed onnx "
            f"{onnx.__version__} understands up to {onnx.IR_VERSION}.", fix=upgrade)
    known = max_supported_opsets()
    for imp in model.opset_import:
        dom = imp.domain or "ai.onnx"
        if dom in known and imp.version > known[dom]:
            raise errors.UnsupportedVersionError(
                f"'{p.name}' uses opset {imp.version} of domain '{dom}'; the installed onnx "
                f"{onnx.__version__} knows up to opset {known[dom]}.", fix=upgrade)


def external_refs(model: onnx.ModelProto) -> Iterator[ExternalRef]:
    for tensor in iter_tensors(model.graph):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        info = {e.key: e.value for e in tensor.external_data}
        length = info.get("length")
        yield ExternalRef(tensor=tensor.name, location=info.get("location", ""),
                          offset=int(info.get("offset", 0) or 0),
                          length=int(length) if length else None)


def resolve_external(model_path: Path, location: str) -> Path:
    """Return the path of an external-data file, refusing one outside the model's folder."""
    base = model_path.resolve().parent
    if not location:
        raise errors.CorruptModelError(
            f"'{model_path.name}' has a tensor marked as external with no file location.", fix=_REEXPORT)
    target = (base / location).resolve()
    # Resolved paths compared by their parts: a sibling folder '../<model folder>_evil' shares the model
    # folder's name as a string prefix but is outside it.
    if os.path.isabs(location) or not target.is_relative_to(base):
        raise errors.ExternalDataOutsideError(
            f"'{model_path.name}' points its external data at '{location}', which is outside the "
            f"model's folder ({base}). trtlab refuses to read it, for safety.",
            fix="Move the data file next to the model and re-save the model with a relative location.")
    return target


def _check_external_data(p: Path, model: onnx.ModelProto) -> list[ExternalRef]:
    refs = list(external_refs(model))
    sizes: dict[Path, int] = {}
    missing: set[str] = set()
    for ref in refs:
        target = resolve_external(p, ref.location)
        if target not in sizes:
            if not target.is_file():
                missing.add(ref.location)
                sizes[target] = -1
                continue
            sizes[target] = target.stat().st_size
        size = sizes[target]
        if size >= 0 and ref.length is not None and ref.offset + ref.length > size:
            raise errors.TruncatedModelError(
                f"External data file '{ref.location}' is {size:,} bytes but tensor '{ref.tensor}' "
                f"needs bytes {ref.offset:,}–{ref.offset + ref.length:,}.",
                fix="Copy the data file again; it was cut short.")
    if missing:
        names = ", ".join(f"'{m}'" for m in sorted(missing))
        raise errors.ExternalDataMissingError(
            f"'{p.name}' keeps its weights in {names}, which is not in {p.resolve().parent}.",
            fix="Copy the external data file(s) next to the model; they must travel together.")
    return refs


def graph_count(model: onnx.ModelProto) -> int:
    return sum(1 for _ in iter_graphs(model.graph))
