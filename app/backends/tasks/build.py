"""`trtlab build`: a TensorRT engine or TensorRT for RTX plan of the variant graph, its layers mapped to the ONNX
nodes and checked against the plan."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import onnx

from app.backends import ENGINE_BACKENDS, BackendSpecError
from app.backends.tasks.common import progress, target_plan, variant_path
from app.backends.tasks.specs import BuildSpec, takes
from app.core.model import graph_inputs, value_info_to_tensor_info
from app.core.precision import PrecisionPlan

if TYPE_CHECKING:
    from app.jobs import JobContext


def engine_report(layer_info: dict | None, variant_graph: onnx.GraphProto, plan: PrecisionPlan,
                  model_graph: onnx.GraphProto, variant_report: dict | None = None) -> dict:
    """The engine's layers (the precision that ran, tactic, ONNX nodes fused in) and what differs from the plan."""
    from app.core.engine import map_to_onnx, parse_engine_info, plan_mismatches
    from app.core.precision import node_keys

    if not layer_info:
        return {"layers": [], "ran": {}, "mismatches": [], "notes": ["the engine gave no layer information"]}
    info = parse_engine_info(layer_info)
    layers = [layer for layer in info.layers if layer.profile == 0]
    mapping = map_to_onnx(layers, variant_graph)
    planned = {r.key: "fixed" if r.precision == "fixed" else r.planned for r in plan.resolve(model_graph)}
    # What the variant really asked of TensorRT: nodes the half transform kept FP32 are FP32 in the graph.
    for key in ((variant_report or {}).get("half") or {}).get("kept_fp32") or {}:
        if key in planned:
            planned[key] = "fp32"
    op_types = dict(zip(node_keys(model_graph), (n.op_type for n in model_graph.node), strict=True))
    mismatches = plan_mismatches(mapping.precision, planned, mapping=mapping, op_types=op_types)
    return {"layers": [{"name": layer.name, "type": layer.type, "precision": layer.precision, "tactic": layer.tactic,
                        "onnx_nodes": mapping.nodes.get(layer.name, []), "kind": layer.kind,
                        "inputs": [[t.name, t.dtype, list(t.dims)] for t in layer.inputs],
                        "outputs": [[t.name, t.dtype, list(t.dims)] for t in layer.outputs]} for layer in layers],
            "ran": mapping.precision, "notes": list(info.notes),
            "mismatches": [{"node": m.key, "planned": m.planned, "ran": m.ran, "severity": m.severity,
                            "message": m.message, "layers": list(m.layers)} for m in mismatches]}


def _variant_report(path: str) -> dict:
    """The transform report stored beside a cached variant ({} for the model itself)."""
    import json

    meta = Path(path).with_suffix(".json")
    try:
        return dict(json.loads(meta.read_text(encoding="utf-8")).get("report") or {})
    except (OSError, ValueError):
        return {}


@takes(BuildSpec)
def build_task(spec: BuildSpec, ctx: JobContext | None) -> dict:
    """`trtlab build`: the variant graph for the precision or plan, built into a TensorRT engine (`trt`) or a
    TensorRT for RTX plan (`trt-rtx`), or taken from the engine cache, saved where asked, with its layers mapped
    to the ONNX nodes (from the engine inspector, or from the builder's `Layers:` dump where no GPU can load
    the engine)."""
    import shutil

    from app.backends.trt import build_config_from, ensure_engine
    from app.backends.trt_build import BuildFailed
    from app.backends.trt_flavour import flavour_of
    from app.core.engine import explain, issue_from_fields, map_issues_to_graph

    target = spec.target
    if target.backend not in ENGINE_BACKENDS:
        raise BackendSpecError(f"{target.backend} does not build engines.",
                               fix=f"Build with one of {', '.join(ENGINE_BACKENDS)}.")
    flavour = flavour_of(target.backend)
    plan = target_plan(target, spec)
    model_path = spec.model
    path, notes = variant_path(model_path, target, ctx, spec)
    variant_graph = onnx.load(path, load_external_data=False).graph
    inputs = [value_info_to_tensor_info(v) for v in graph_inputs(variant_graph)]
    config = build_config_from(dict(spec.options), inputs, dict(spec.shapes), variant_graph)
    try:
        outcome = ensure_engine(path, config, ctx, flavour=flavour)
    except BuildFailed as exc:
        issues = exc.issues
        if not issues:
            raise
        # The parser refused the graph: a result that names the nodes, so the GUI can show them on the graph.
        resolved = map_issues_to_graph([issue_from_fields(**i) for i in issues], variant_graph)
        errors = []
        for r in resolved:
            message, fix = explain(r)
            errors.append({"node": r.key, "op": r.issue.op, "code": r.issue.code, "message": message, "fix": fix})
        return {"model": model_path, "target": target.name, "ok": False, "parse_errors": errors, "notes": notes,
                "layers": [], "ran": {}, "mismatches": [], "warnings": []}
    out = spec.out
    if out:
        from app.core.fileio import atomic_write_bytes

        progress(ctx, 0.98, f"Saving {out}…")
        atomic_write_bytes(out, outcome.path.read_bytes())
        shutil.copyfile(outcome.path.with_name(outcome.path.name + ".json"), f"{out}.json")
    model_graph = onnx.load(model_path, load_external_data=False).graph
    report = engine_report(outcome.layer_info, variant_graph, plan, model_graph, _variant_report(path))
    meta = outcome.meta
    gpu, cc = meta.get("gpu_name"), meta.get("compute_capability")
    if flavour.portable:  # an RTX plan is built for its targets, not for a GPU of this machine
        gpu, cc = "RTX GPUs (a portable plan, built without a GPU)", ", ".join(meta.get("runs_on") or [])
    if outcome.layer_source == "builder log":
        notes.append("engine layers read from the builder's Layers: dump: no GPU here can load this engine for the "
                     "engine inspector")
    return {"model": model_path, "target": target.name, "ok": True, "engine": str(outcome.path), "out": out,
            "cached": outcome.cached, "key": meta.get("key"), "trt_version": meta.get("trt_version"),
            "gpu": gpu, "compute_capability": cc, "backend": target.backend, "flavour": flavour.key,
            "targets": list(config.targets), "layer_source": outcome.layer_source,
            "config": config.to_json(), "warnings": outcome.warnings, "notes": notes + report.pop("notes"), **report}
