"""``check_model``: every readiness check on one model, in one pass over the graph."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import onnx

from app.core.engine import OptimizationProfile, parse_targets
from app.core.model import ShapeResult, infer_shapes
from app.core.precision import PrecisionPlan
from app.core.readiness import graph_checks
from app.core.readiness.context import build_index
from app.core.readiness.findings import Report, sort_findings
from app.core.readiness.input_checks import check_dim_names, check_inputs, check_shape_range, valid_shapes
from app.core.readiness.plan_checks import check_plan
from app.core.readiness.support import SupportTable, check_version, load_support_table
from app.core.readiness.type_checks import check_mixed_types
from app.core.readiness.values import ScanCache, check_values


def check_model(model: onnx.ModelProto, *, plan: PrecisionPlan | None = None,
                shapes: Mapping[str, Sequence[int]] | None = None, trt_version: str = "11",
                profile: OptimizationProfile | None = None, model_path: str | os.PathLike[str] | None = None,
                shape_result: ShapeResult | None = None, cache: ScanCache | None = None,
                table: SupportTable | None = None, targets: Sequence[str] | str | None = None,
                shape_budget_s: float | None = None) -> Report:
    """What would break (error), surprise (warning) or is worth knowing (info) in a TensorRT build of ``model``.

    ``shapes``: the user's input shapes (``{input: dims}``, as the input panel or ``--shapes`` gives them);
    ``profile``: the optimization profile set for the build; ``plan``: the precision plan the variant will be
    made from. ``model_path`` lets weights stored as external data be read; ``shape_result`` reuses shape
    inference the caller already ran (with the same shapes); ``cache`` keeps per-tensor value scans
    between calls (pass one per opened model so plan edits are cheap). ``trt_version`` "rtx" checks for
    TensorRT for RTX, whose ``targets`` are compute capabilities ("8.6,8.9"; None: its portable default).
    ``shape_budget_s`` bounds the time the shape-range analysis spends on rules and on sizes inside a profile's
    range (the window passes one: it checks after every edit). Nothing here needs TensorRT.
    """
    started = time.perf_counter()
    version = check_version(trt_version)
    table = table or load_support_table()
    cache = cache if cache is not None else ScanCache()
    path = Path(model_path) if model_path is not None else None
    index = build_index(model)

    findings = []
    findings += graph_checks.check_opsets(index, table, version)
    findings += graph_checks.check_ops(index, table, version)
    findings += graph_checks.check_qdq(index)
    findings += graph_checks.check_restrictions(index, table, version)
    findings += graph_checks.check_data_dependent(index, table, version)
    findings += graph_checks.check_control_flow(index)
    findings += graph_checks.check_io_types(index)
    findings += graph_checks.check_random_ops(index)
    findings += check_inputs(index, shapes, profile)
    findings += check_dim_names(index, shapes, profile)
    findings += check_values(index, table, cache, path)
    if shape_result is None:  # types for the mixed-type check, shapes for the plan's: one inference for both
        shape_result = infer_shapes(model, valid_shapes(index, shapes))
    fixes: dict[str, tuple[str, str]] = {}
    if not any(f.severity == "error" for f in findings if f.code.startswith(("shape", "profile", "input"))):
        findings += check_shape_range(model, valid_shapes(index, shapes), profile, fixes, shape_result,
                                      shape_budget_s)
    findings += check_mixed_types(index, shape_result)
    if targets and version != "rtx":
        raise ValueError("compute-capability targets are a TensorRT for RTX setting; check with trt_version='rtx'")
    rtx_targets = parse_targets(targets) if version == "rtx" else ()
    if version == "rtx":
        from app.core.readiness.rtx_checks import check_rtx

        findings += check_rtx(index, targets=rtx_targets, plan=plan, shapes=valid_shapes(index, shapes))
    if plan is not None:
        findings += check_plan(index, plan, shape_result, cache, path)
    report = Report(findings=sort_findings(_merge_unscanned(findings), index.order), trt_version=version,
                    targets=rtx_targets, profile_fixes=fixes)
    report.seconds = time.perf_counter() - started
    return report


def _merge_unscanned(findings: list) -> list:
    """One 'weights-not-scanned' note, however many checks met unreadable tensors."""
    notes = [f for f in findings if f.code == "weights-not-scanned"]
    if len(notes) <= 1:
        return findings
    return [f for f in findings if f.code != "weights-not-scanned"] + [notes[0]]
