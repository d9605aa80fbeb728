"""`trtlab import`: a TensorRT engine built and run elsewhere, read back onto the ONNX graph.

Takes a run kit's folder (`app.core.engine.kit`: its ``kit.json`` names the model and the graph TensorRT built) or
a folder of trtexec's bare files (then the model is given). Every JSON file of the folder is recognised by its
content (:func:`app.core.engine.trtexec_files.classify_json`), the logs by their suffix. The engine layers come from
the engine inspector's JSON (``--exportLayerInfo``, read by :func:`parse_engine_info`), their times from
``--exportProfile`` (or the ``--dumpProfile`` table of the log), their ONNX nodes from :func:`map_to_onnx` on the
graph TensorRT built. A reformat copy or a Q/DQ layer *serves* the layers that read its output: its ``serves``
names their ONNX nodes, and a reformat's time is charged to them. The engine's outputs (Polygraphy's saved
``RunResults``, else trtexec's ``--exportOutput`` for sample 0) are handed back with the samples they ran on, for the
caller to judge against ONNX Runtime FP32 (``app/backends/imported.py``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import onnx

from app.core.engine.engine_layers import EngineInfo, EngineLayer
from app.core.engine.inspector_json import InspectError, parse_engine_info
from app.core.engine.kit import MANIFEST_NAME, KitError, KitManifest
from app.core.engine.onnx_map import OnnxMapping, map_to_onnx
from app.core.engine.onnx_origins import layer_kind, onnx_nodes_of
from app.core.engine.polygraphy_json import PolygraphyFormatError, load_feeds, load_run_results
from app.core.engine.trtexec_files import (
    BuildLogFacts,
    ProfileFile,
    classify_json,
    latency_stats,
    parse_build_log,
    parse_profile,
    parse_profile_table,
    parse_times,
    parse_trtexec_outputs,
    trex_device,
)
from app.core.errors import TrtlabError
from app.core.results import ImportedLayer, ImportResult, LatencyStats

__all__ = ["Artefacts", "Imported", "ImportInputError", "find_artefacts", "import_engine"]

MAX_JSON = 1 << 30            # a JSON file larger than this is not read (a timing file of millions of runs)
_QDQ_TYPES = {"quantize", "dequantize", "quantizelinear", "dequantizelinear"}
_PREFERRED = {"layers": ("layers.json", ".graph.json", "layer"), "profile": ("profile.json", ".profile.json"),
              "times": ("times.json", ".timing.json", "times"), "outputs": ("outputs.json",)}


class ImportInputError(TrtlabError):
    """The user's folder or model cannot be imported (exit 2, with the fix)."""

    title = "Cannot import these results"


@dataclass
class Artefacts:
    """The files found in an imported folder, by what they are."""

    folder: Path
    root: Path | None = None                 # the kit's folder (holds kit.json), None for bare files
    manifest: KitManifest | None = None
    files: dict[str, Path] = field(default_factory=dict)   # artefact -> file
    docs: dict[str, object] = field(default_factory=dict)  # artefact -> its JSON (read once)
    metadata: list[object] = field(default_factory=list)  # every TREx metadata JSON
    logs: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class Imported:
    """What an import gives: the typed result (without answers) and what judging the outputs needs."""

    result: ImportResult
    feeds: list[dict[str, np.ndarray]] = field(default_factory=list)      # the samples the engine ran on
    outputs: list[dict[str, np.ndarray]] = field(default_factory=list)    # its outputs, one dict per sample
    reference_model: str | None = None       # the FP32 model to judge against
    candidate_name: str = ""
    inputs_text: str = ""                    # where the samples came from, in words


def _rank(kind: str, path: Path) -> int:
    name = path.name.lower()
    for i, hint in enumerate(_PREFERRED.get(kind, ())):
        if name == hint or name.endswith(hint) or hint in name:
            return i
    return len(_PREFERRED.get(kind, ()))


def _read_json(path: Path) -> object | None:
    try:
        if path.stat().st_size > MAX_JSON:
            return None
        return json.loads(path.read_text(encoding="utf-8", errors="replace"), strict=False)
    except (OSError, json.JSONDecodeError, RecursionError):
        return None


def find_artefacts(folder: str | Path) -> Artefacts:
    """The files of a kit's folder (or its ``results``/``results-rtx`` folder), or of a folder of bare files."""
    where = Path(folder)
    if not where.is_dir():
        raise ImportInputError(f"{where} is not a folder.",
                               fix="Give the folder `trtlab kit` wrote (brought back after run_kit.py ran), or a "
                                   "folder holding trtexec's --exportLayerInfo/--exportProfile/--exportTimes files.")
    art = Artefacts(folder=where)
    results = where
    if (where / MANIFEST_NAME).is_file():
        art.root = where
        for sub in ("results", "results-rtx"):
            if (where / sub).is_dir():
                results = where / sub
                break
    elif (where.parent / MANIFEST_NAME).is_file():
        art.root = where.parent
    if art.root is not None:
        try:
            art.manifest = KitManifest.load(art.root)
        except KitError as exc:
            raise ImportInputError(exc.message, fix=exc.fix) from exc
    found: dict[str, list[tuple[Path, object]]] = {}
    scan = [results] + ([art.root] if art.root is not None and art.root != results else [])
    for folder_ in scan:
        for path in sorted(folder_.iterdir()):
            if not path.is_file():
                continue
            suffix = path.suffix.lower()
            if suffix in (".log", ".txt") and folder_ == results:
                art.logs.append(path)
            elif suffix == ".json":
                doc = _read_json(path)
                kind = classify_json(doc) if doc is not None else ""
                if kind and (folder_ == results or kind in ("feeds", "manifest")):
                    found.setdefault(kind, []).append((path, doc))
    art.metadata = [doc for _, doc in found.get("metadata", [])]
    for kind, items in found.items():
        items.sort(key=lambda item: (_rank(kind, item[0]), item[0].name))
        art.files[kind], art.docs[kind] = items[0]
        if len(items) > 1 and kind in _PREFERRED:
            art.notes.append(f"several {kind} files: read {items[0][0].name}, not "
                             f"{', '.join(p.name for p, _ in items[1:])}")
    return art


def _qdq(layer: EngineLayer) -> bool:
    origin = str(layer.raw.get("Origin", "")).upper()
    if origin == "QDQ" or layer.type.lower() in _QDQ_TYPES:
        return True
    names = layer.onnx_nodes
    return bool(names) and layer.kind == "reformat" and all("quantize" in n.lower() for n in names)


def _kind(layer: EngineLayer) -> str:
    return "qdq" if _qdq(layer) else layer.kind


def _own_nodes(layer: EngineLayer, kind: str, mapping: OnnxMapping | None) -> tuple[str, ...]:
    """The ONNX nodes a layer ran: the mapping's keys (a model given), else the names TensorRT wrote. A Q/DQ layer
    TensorRT kept apart is named after its ONNX node, although a reformat by type."""
    if mapping is not None:
        keys = mapping.nodes.get(layer.name) or (mapping.keys_for_name(layer.name) if kind == "qdq" else [])
        return tuple(keys)
    if kind == "qdq" and not layer.onnx_nodes:
        return onnx_nodes_of(layer.name).nodes
    return layer.onnx_nodes


def _served_by_name(name: str) -> tuple[str, ...]:
    """The layer a reformat's name says it feeds: "Reformatting CopyNode for Input Tensor 0 to X" -> X's nodes."""
    _, sep, rest = name.partition(" to ")
    return onnx_nodes_of(rest).nodes if sep and rest else ()


def _serves(layers: Sequence[EngineLayer], own: Mapping[str, tuple[str, ...]], kinds: Mapping[str, str]
            ) -> dict[str, tuple[str, ...]]:
    """For each reformat and Q/DQ layer, the ONNX nodes of the layers that read its outputs (through further
    reformats), else of the layer that wrote its input, else the layer its name says it feeds."""
    readers: dict[str, list[EngineLayer]] = {}
    writers: dict[str, EngineLayer] = {}
    for layer in layers:
        for t in layer.inputs:
            readers.setdefault(t.name, []).append(layer)
        for t in layer.outputs:
            writers.setdefault(t.name, layer)
    out: dict[str, tuple[str, ...]] = {}
    for layer in layers:
        if kinds[layer.name] not in ("reformat", "qdq"):
            continue
        nodes: list[str] = []
        todo, seen = [layer], {layer.name}
        while todo:
            cur = todo.pop()
            for t in cur.outputs:
                for reader in readers.get(t.name, ()):
                    if reader.name in seen:
                        continue
                    seen.add(reader.name)
                    if kinds[reader.name] in ("reformat", "qdq", "noop") and not own.get(reader.name):
                        todo.append(reader)
                    else:
                        nodes.extend(own.get(reader.name, ()))
        if not nodes:
            for t in layer.inputs:
                writer = writers.get(t.name)
                if writer is not None and writer.name != layer.name:
                    nodes.extend(own.get(writer.name, ()))
        if not nodes:
            nodes.extend(_served_by_name(layer.name))
        served = tuple(n for n in dict.fromkeys(nodes) if n not in own.get(layer.name, ()))
        if served:
            out[layer.name] = served
    return out


def _facts(art: Artefacts) -> tuple[BuildLogFacts, str]:
    """Where it ran (TensorRT version, GPU, compute capability, tool) and the logs' text."""
    text = ""
    for log in art.logs:
        try:
            text += log.read_text(encoding="utf-8", errors="replace") + "\n"
        except OSError:
            continue
    facts = parse_build_log(text)
    run = art.docs.get("run")
    if isinstance(run, Mapping):
        version, tool = str(run.get("version") or ""), str(run.get("tool") or "")
        facts = replace(facts, trt_version=facts.trt_version or version, tool=tool or facts.tool)
    for meta in art.metadata:
        gpu, cc = trex_device(meta)
        if gpu and not facts.gpu:
            facts = replace(facts, gpu=gpu, compute_capability=facts.compute_capability or cc)
    return facts, text


def _graph(path: str | None) -> onnx.GraphProto | None:
    if not path:
        return None
    try:
        return onnx.load(path, load_external_data=False).graph
    except Exception as exc:  # onnx raises its own decode and check errors besides OSError
        raise ImportInputError(f"{path} cannot be read as an ONNX model ({exc}).",
                               fix="Give the ONNX model the engine was built from with --model.") from exc


def _paths(art: Artefacts, model: str | None, need_model: bool) -> tuple[str | None, str | None, list[str]]:
    """The graph the engine was built from (for mapping layers to nodes), the FP32 model (the reference), notes."""
    notes: list[str] = []
    if model is not None and not Path(model).is_file():
        raise ImportInputError(f"--model {model}: no such file.", fix="Give the ONNX model the engine was built from.")
    if art.manifest is None:
        if model is None and need_model:
            raise ImportInputError(
                f"{art.folder} holds trtexec's files but no kit.json, so it does not say which model they come from.",
                fix=f"Name it: trtlab import {art.folder} --model MODEL.onnx (the ONNX file trtexec built).")
        return model, model, notes
    assert art.root is not None
    variant = art.root / art.manifest.variant
    built = str(variant) if variant.is_file() else model
    if not variant.is_file():
        notes.append(f"the kit's graph {art.manifest.variant} is missing; layers are mapped onto --model's nodes")
    reference = model or (art.manifest.model if Path(art.manifest.model).is_file() else None)
    if reference is None:
        if art.manifest.precision == "fp32" and variant.is_file():
            reference = str(variant)
        else:
            notes.append(f"the model the kit was made from ({art.manifest.model}) is not here: give it with --model "
                         "to judge the engine's outputs against ONNX Runtime FP32")
    return built, reference, notes


def _profile(art: Artefacts, log_text: str) -> tuple[ProfileFile, str]:
    if "profile" in art.docs:
        return parse_profile(art.docs["profile"]), art.files["profile"].name
    table = parse_profile_table(log_text)
    if table.layers:
        return table, "the log's --dumpProfile table"
    return ProfileFile(), ""


def _outputs(art: Artefacts) -> tuple[list[dict[str, np.ndarray]], list[dict[str, np.ndarray]], list[str], str]:
    """The samples, the engine's outputs on them, notes, and where the outputs came from."""
    notes: list[str] = []
    feeds: list[dict[str, np.ndarray]] = []
    if "feeds" in art.files:
        try:
            feeds = load_feeds(art.files["feeds"])
        except PolygraphyFormatError as exc:
            notes.append(f"{art.files['feeds'].name}: {exc.message}")
    outputs: list[dict[str, np.ndarray]] = []
    source = ""
    if "outputs" in art.files:
        try:
            runners = load_run_results(art.files["outputs"])
        except PolygraphyFormatError as exc:
            raise ImportInputError(exc.message, fix=exc.fix) from exc
        if runners:
            pick = next((r for r in runners if r.runner.startswith("trt")), runners[0])
            outputs, source = list(pick.iterations), f"{art.files['outputs'].name} ({pick.runner})"
            if len(runners) > 1:
                notes.append(f"{art.files['outputs'].name} holds {len(runners)} runners; judged {pick.runner}")
    elif "trtexec_outputs" in art.docs:
        one = parse_trtexec_outputs(art.docs["trtexec_outputs"])
        if one:
            outputs, source = [one], f"{art.files['trtexec_outputs'].name} (sample 0)"
            notes.append("only sample 0's outputs came back (trtexec --exportOutput); install Polygraphy where the "
                         "kit runs to judge every sample")
    if outputs and not feeds:
        notes.append("the engine's outputs came back without the samples they ran on (inputs.json): not judged")
        return [], [], notes, source
    if outputs and len(outputs) != len(feeds):
        n = min(len(outputs), len(feeds))
        notes.append(f"{len(outputs)} output sets for {len(feeds)} samples: the first {n} are judged")
        outputs, feeds = outputs[:n], feeds[:n]
    return feeds, outputs, notes, source


def import_engine(folder: str | Path, model: str | None = None, *, need_model: bool = True) -> Imported:
    """Read a kit's folder or trtexec's files (with `model`, the ONNX file the engine was built from) into an
    :class:`ImportResult` (its ``answers`` left for the caller, who runs the reference), with what judging needs.
    Bare files without a model are refused unless `need_model` is False: then the layers keep TensorRT's names
    for their ONNX nodes, unchecked against a graph."""
    art = find_artefacts(folder)
    built, reference, notes = _paths(art, model, need_model)
    notes = art.notes + notes
    facts, log_text = _facts(art)
    if "layers" not in art.docs and "profile" not in art.docs and not parse_profile_table(log_text).layers:
        raise ImportInputError(
            f"{art.folder} holds no engine layer information (--exportLayerInfo) and no profile (--exportProfile).",
            fix="Run the kit's run_kit.py (or trtexec with --exportLayerInfo=layers.json --exportProfile=profile.json "
                "--profilingVerbosity=detailed) and import the folder it wrote.")
    layer_doc = art.docs.get("layers")
    try:
        info = parse_engine_info(layer_doc) if isinstance(layer_doc, (Mapping, list)) else EngineInfo("unknown", "none")
    except InspectError as exc:
        raise ImportInputError(f"{art.files['layers'].name}: {exc.message}", fix=exc.fix) from exc
    notes += info.notes
    engine_layers = info.profile_layers(0)
    profile, profile_file = _profile(art, log_text)
    timed = {p.name: p for p in profile.layers}
    known = {layer.name for layer in engine_layers}
    extra = [EngineLayer(name=p.name, kind=layer_kind(p.name, ""), onnx_nodes=onnx_nodes_of(p.name).nodes)
             for p in profile.layers if p.name not in known]
    if extra and engine_layers:
        notes.append(f"{len(extra)} profiled layer(s) are not in the layer information (e.g. '{extra[0].name}')")
    all_layers = engine_layers + extra
    order = {p.name: i for i, p in enumerate(profile.layers)}
    graph = _graph(built)
    mapping = map_to_onnx(all_layers, graph) if graph is not None else None
    kinds = {layer.name: _kind(layer) for layer in all_layers}
    own = {layer.name: _own_nodes(layer, kinds[layer.name], mapping) for layer in all_layers}
    serves = _serves(all_layers, own, kinds)
    total = profile.total_ms if profile.layers else None
    out_layers = []
    for i, layer in enumerate(all_layers):
        p = timed.get(layer.name)
        ms = p.average_ms if p is not None else None
        out_layers.append(ImportedLayer(
            name=layer.name, type=layer.type, kind=kinds[layer.name], precision=layer.precision,
            inputs=tuple(t.dtype for t in layer.inputs), outputs=tuple(t.dtype for t in layer.outputs),
            tactic=layer.tactic, onnx_nodes=own[layer.name], serves=serves.get(layer.name, ()), ms=ms,
            median_ms=p.median_ms if p is not None else None,
            share=(ms / total) if ms is not None and total else None,
            order=order.get(layer.name, len(order) + i), profiled=p is not None))
    out_layers.sort(key=lambda layer: (layer.ms is None, -(layer.ms or 0.0), layer.order))
    node_ms: dict[str, float] = {}
    for row in out_layers:
        targets = row.onnx_nodes or row.serves
        if row.ms is None or not targets:
            continue
        for node in targets:
            node_ms[node] = node_ms.get(node, 0.0) + row.ms / len(targets)
    times = parse_times(art.docs.get("times"))
    stats = latency_stats(times)
    files = {k: str(p.relative_to(art.root) if art.root is not None and p.is_relative_to(art.root) else p.name)
             for k, p in art.files.items()}
    if profile_file and "profile" not in files:
        files["profile"] = profile_file
    if art.logs:
        files["log"] = ", ".join(p.name for p in art.logs)
    feeds, outputs, out_notes, out_source = _outputs(art)
    notes += out_notes
    if out_source:
        files["outputs"] = out_source
    manifest = art.manifest
    precision = (manifest.plan_summary or manifest.precision) if manifest is not None else ""
    tool = facts.tool or ("tensorrt_rtx" if art.folder.name == "results-rtx" else "trtexec")
    version = f"TensorRT {facts.trt_version}" if facts.trt_version else "TensorRT"
    name = f"{'trt-rtx' if tool == 'tensorrt_rtx' else 'trt'}:{manifest.precision if manifest else 'engine'}"
    label = f"{name} ({version}{' on ' + facts.gpu if facts.gpu else ''})"
    if facts.errors:
        notes.append(f"the log has {len(facts.errors)} error line(s), e.g. {facts.errors[0]}")
    result = ImportResult(
        imported_from=str(art.folder), kit=manifest is not None, variant=built or "", precision=precision, tool=tool,
        trt_version=facts.trt_version, gpu=facts.gpu, compute_capability=facts.compute_capability,
        layer_source="exportLayerInfo" if "layers" in art.docs else ("profile only" if profile.layers else ""),
        layers=tuple(out_layers), total_ms=total, profile_runs=profile.runs,
        ran=dict(mapping.precision) if mapping is not None else {},
        node_ms={k: node_ms[k] for k in sorted(node_ms, key=lambda k: -node_ms[k])},
        unclaimed=tuple(mapping.missing) if mapping is not None else (),
        unmapped=tuple(n for n in mapping.unmapped if kinds.get(n) == "compute") if mapping is not None else (),
        latency_ms=LatencyStats.from_json(stats) if times else None, timed_runs=len(times),
        throughput_per_s=(1000.0 / stats["mean"]) if times and stats["mean"] else None,
        files=files, notes=tuple(notes),
        model=(manifest.model if manifest is not None else (model or "")),
        model_sha256=manifest.model_sha256 if manifest is not None else "", kind="import")
    if total is not None and not math.isfinite(total):
        raise ImportInputError("The profile's times are not numbers.", fix="Export the profile again.")
    inputs_text = (manifest.inputs_text or "the kit's samples") if manifest is not None else "the samples saved there"
    return Imported(result=result, feeds=feeds, outputs=outputs, reference_model=reference, candidate_name=label,
                    inputs_text=inputs_text)
