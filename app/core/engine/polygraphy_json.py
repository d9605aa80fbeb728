"""Polygraphy's JSON files: input feeds (``polygraphy run --load-inputs``) and saved outputs (``--save-outputs``).

Read with the ``polygraphy`` package when it is installed (``pip install "trtlab[polygraphy]"``), else by the small
reader here, which follows the format of Polygraphy's own encoder (NVIDIA/TensorRT, ``tools/Polygraphy/polygraphy/
json/serde.py`` and ``comparator/struct.py`` at tag v11.1; Polygraphy 0.49.27, unchanged in 0.53):

* an array is ``{"array": base64 of numpy.save(arr, allow_pickle=False), "polygraphy_class": "ndarray"}``;
  older files wrote the marker as ``"__polygraphy_encoded_ndarray": "polygraphy_serialized_json_type"``, or the
  bytes latin-1 encoded instead of base64;
* input feeds (``--load-inputs``, ``--save-inputs``) are a list with one ``{input name: array}`` per iteration;
* saved outputs are a ``RunResults``: ``{"lst": [[runner name, [IterationResult, ...]], ...], "polygraphy_class":
  "RunResults"}``, each ``IterationResult`` ``{"outputs": {name: LazyArray}, "runtime", "runner_name",
  "polygraphy_class": "IterationResult"}`` and each ``LazyArray`` ``{"values": array, "polygraphy_class":
  "LazyArray"}`` (older files hold the array itself).

Arrays are decoded with ``allow_pickle=False``: a hostile file cannot run code.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.core.errors import TrtlabError

__all__ = ["PolygraphyFormatError", "RunnerOutputs", "encode_array", "load_feeds", "load_run_results", "save_feeds"]

TYPE_MARKER = "polygraphy_class"
LEGACY_MARKER = "polygraphy_serialized_json_type"
MAX_FILE = 4 << 30  # a saved outputs file larger than this is refused before it is read


class PolygraphyFormatError(TrtlabError):
    title = "Not a Polygraphy file"


@dataclass(frozen=True)
class RunnerOutputs:
    """One runner's saved outputs: its name and one ``{output: array}`` per iteration (per input sample)."""

    runner: str
    iterations: tuple[dict[str, np.ndarray], ...]


def encode_array(arr: np.ndarray) -> dict[str, str]:
    """An array as Polygraphy's encoder writes it."""
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
    return {"array": base64.b64encode(buf.getvalue()).decode("ascii"), TYPE_MARKER: "ndarray"}


def save_feeds(samples: Sequence[Mapping[str, np.ndarray]], path: str | Path) -> None:
    """The input samples as the JSON ``polygraphy run --load-inputs`` reads: one feed dict per iteration."""
    doc = [{name: encode_array(np.asarray(value)) for name, value in feeds.items()} for feeds in samples]
    Path(path).write_text(json.dumps(doc, indent=1), encoding="utf-8")


def _type_of(obj: Mapping[str, object]) -> str:
    marker = obj.get(TYPE_MARKER)
    if isinstance(marker, str):
        return marker
    for key, value in obj.items():
        if value == LEGACY_MARKER and key.startswith("__polygraphy_encoded_"):
            return key[len("__polygraphy_encoded_"):]
    return ""


def _decode_array(obj: Mapping[str, object], where: str) -> np.ndarray:
    data = obj.get("array")
    if not isinstance(data, str):
        raise PolygraphyFormatError(f"{where}: an encoded array without its 'array' data.",
                                    fix="Save the file with Polygraphy (polygraphy run --save-outputs).")
    try:
        raw = base64.b64decode(data.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raw = data.encode("latin-1")  # Polygraphy's oldest files
    try:
        arr = np.load(io.BytesIO(raw), allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise PolygraphyFormatError(f"{where}: an array that does not decode ({exc}).",
                                    fix="Save the file again with Polygraphy; it may be cut short.") from exc
    if isinstance(arr, np.lib.npyio.NpzFile):  # Polygraphy's oldest files held an .npz of one array
        arr = next(iter(arr.values()))
    return np.asarray(arr)


def _value(obj: object, where: str) -> object:
    """A decoded JSON value: arrays and LazyArrays become numpy arrays, the rest stays as JSON gave it."""
    if isinstance(obj, Mapping):
        kind = _type_of(obj)
        if kind == "ndarray":
            return _decode_array(obj, where)
        if kind in ("LazyArray", "LazyNumpyArray"):
            return _value(obj.get("values"), where)
        return {k: _value(v, f"{where}.{k}") for k, v in obj.items() if k != TYPE_MARKER and v != LEGACY_MARKER}
    if isinstance(obj, list):
        return [_value(v, f"{where}[{i}]") for i, v in enumerate(obj)]
    return obj


def _read(path: str | Path) -> object:
    p = Path(path)
    if p.stat().st_size > MAX_FILE:
        raise PolygraphyFormatError(f"{p.name} is larger than {MAX_FILE >> 30} GiB.",
                                    fix="Save fewer samples (a smaller inputs.json) and run again.")
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PolygraphyFormatError(f"{p.name} is not JSON ({exc}).",
                                    fix="Bring back the file Polygraphy wrote, unchanged.") from exc


def _arrays(obj: object, where: str) -> dict[str, np.ndarray]:
    if not isinstance(obj, Mapping):
        raise PolygraphyFormatError(f"{where} is not a mapping of names to arrays.",
                                    fix="Save the file with Polygraphy.")
    out = {}
    for name, value in obj.items():
        if name == TYPE_MARKER:
            continue
        arr = _value(value, f"{where}.{name}")
        if not isinstance(arr, np.ndarray):
            raise PolygraphyFormatError(f"{where}.{name} is not an array.", fix="Save the file with Polygraphy.")
        out[str(name)] = arr
    return out


def _with_package(path: str | Path) -> object | None:
    """The file read by the polygraphy package itself, or None when it is not installed."""
    try:
        from polygraphy.json import load_json
    except ImportError:
        return None
    return load_json(str(path))


def load_feeds(path: str | Path) -> list[dict[str, np.ndarray]]:
    """Input feeds saved for ``--load-inputs``: one ``{input: array}`` per iteration."""
    doc = _read(path)
    if not isinstance(doc, list):
        raise PolygraphyFormatError(f"{Path(path).name} is not a list of input feeds.",
                                    fix="Use the inputs.json of a trtlab kit, or Polygraphy's --save-inputs file.")
    return [_arrays(feeds, f"{Path(path).name}[{i}]") for i, feeds in enumerate(doc)]


def is_run_results(doc: object) -> bool:
    return isinstance(doc, Mapping) and _type_of(doc) == "RunResults" and isinstance(doc.get("lst"), list)


def load_run_results(path: str | Path, *, use_package: bool = True) -> list[RunnerOutputs]:
    """``polygraphy run --save-outputs`` results: per runner, its outputs per iteration. Read by the polygraphy
    package when it is installed (``use_package``), else by the reader of this module."""
    if use_package:
        results = _with_package(path)
        if results is not None and hasattr(results, "items"):
            out = []
            for runner, iterations in results.items():
                its = tuple({str(k): np.asarray(v) for k, v in dict(it).items()} for it in iterations)
                out.append(RunnerOutputs(str(runner), its))
            return out
    doc = _read(path)
    name = Path(path).name
    if not is_run_results(doc):
        raise PolygraphyFormatError(f"{name} is not Polygraphy's RunResults (no 'lst' of runners).",
                                    fix="Bring back the file `polygraphy run ... --save-outputs FILE` wrote.")
    assert isinstance(doc, Mapping)
    out = []
    for i, entry in enumerate(doc["lst"]):
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[1], list)):
            raise PolygraphyFormatError(f"{name}: runner {i} is not [name, iterations].",
                                        fix="Bring back the file Polygraphy wrote, unchanged.")
        runner = str(entry[0])
        decoded = [_arrays(it.get("outputs") if isinstance(it, Mapping) else None, f"{name}: {runner} iteration {j}")
                   for j, it in enumerate(entry[1])]
        out.append(RunnerOutputs(runner, tuple(decoded)))
    return out
