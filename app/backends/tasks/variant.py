"""`trtlab variant`: the variant graph of a precision or plan (optionally at a raised opset), saved where asked."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import onnx

from app.backends.tasks.common import calibration, cancel_check, prepare_samples, progress, target_plan
from app.backends.tasks.specs import VariantSpec, takes
from app.core.precision import PrecisionPlan

if TYPE_CHECKING:
    from app.jobs import JobContext


def plan_summary(plan: PrecisionPlan) -> str:
    """A plan in a few words: 'fp16', or 'fp16 with 3 nodes overridden, rules for Conv'."""
    parts = [plan.default]
    if plan.overrides:
        parts.append(f"{len(plan.overrides)} node override{'s' if len(plan.overrides) != 1 else ''}")
    if plan.op_rules:
        parts.append("rules for " + ", ".join(f"{op} {p}" for op, p in sorted(plan.op_rules.items())))
    return parts[0] + (" with " + ", ".join(parts[1:]) if parts[1:] else "")


@takes(VariantSpec)
def variant_task(spec: VariantSpec, ctx: JobContext) -> dict:
    """`trtlab variant`: build (or take from the cache) the variant graph and save it where asked."""
    from app.core.precision import build_variant, save_model

    target = spec.target
    plan = target_plan(target, spec)
    model_path = spec.model
    raised_note = ""
    if spec.opset:
        model_path, raised_note = _raised_opset(spec, spec.opset, ctx)
    progress(ctx, 0.0, "Building the variant…")
    variant = build_variant(
        model_path, plan, calib=calibration(spec, ctx), calib_method=spec.calib_method,
        progress=lambda f, m: ctx.progress(f, m), cancelled=cancel_check(ctx), workdir=ctx.workdir,
        cache_dir=spec.cache_dir)
    out = spec.out
    progress(ctx, 0.95, f"Saving {out}…")
    save_model(onnx.load(variant.path), out)
    notes = ([raised_note] if raised_note else []) + list(variant.notes)
    return {"model": spec.model, "out": out, "plan": plan.to_json(), "plan_summary": plan_summary(plan),
            "key": variant.key, "cached": variant.cached, "identity": variant.identity, "notes": notes,
            "report": variant.report}


def _raised_opset(spec: VariantSpec, opset: int, ctx: JobContext) -> tuple[str, str]:
    """`trtlab variant --opset N`: the model at opset N, saved in the job's folder, and a note saying so. Its
    FP32 outputs are compared with the model's on one random sample where the input shapes are known."""
    from app.core.errors import TrtlabError
    from app.core.precision import raise_opset, save_model

    progress(ctx, 0.0, f"Raising the opset to {opset}…")
    try:
        feeds = prepare_samples(spec.with_(inputs=None, seed=0, samples=1), ctx).samples
    except TrtlabError:
        feeds = []  # dynamic dims not given: the converter's result is still fully checked, not run
    raised, note = raise_opset(onnx.load(spec.model), opset, feeds or None)
    if not note:
        return spec.model, f"the model is already at opset {opset} or newer"
    path = Path(getattr(ctx, "workdir", None) or Path(spec.out).parent) / f"{Path(spec.model).stem}.opset{opset}.onnx"
    save_model(raised, path)
    if not feeds:
        note += " (FP32 outputs not compared: give --shapes for the dynamic dims to compare them)"
    return str(path), note
