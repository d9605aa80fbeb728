"""A batch's matrix as one HTML page: models × backend/precision/GPU kind, each cell's speed-up and worst cosine,
coloured; each model linking to its own report (app.reports.report). Same rules as every report: one file, nothing
loaded from anywhere, autoescaped."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from app.core.results import BatchCell, BatchSummary


def build_matrix_report(summary: BatchSummary | Mapping[str, Any], links: Mapping[str, str] | None = None, *,
                        matrix: str = "", failures: list[dict] | None = None, title: str = "") -> str:
    """The matrix page of a batch `summary` (app.batch.batch_summary, or its JSON); `links` maps a model's path to
    its report's href (relative to the page)."""
    from app.reports.report import _jinja

    if not isinstance(summary, BatchSummary):
        summary = BatchSummary.from_json(summary)
    cells = summary.cells
    columns: list[tuple[str, str, str]] = []
    for c in cells:
        key = (c.backend, c.precision, c.gpu or "")
        if key not in columns:
            columns.append(key)
    models = list(dict.fromkeys(c.model for c in cells))
    by_key = {(c.model, c.backend, c.precision, c.gpu or ""): c for c in cells}
    rows = []
    for model in models:
        rows.append({"name": Path(model).stem, "href": (links or {}).get(model, ""),
                     "cells": [_cell(by_key.get((model, *col))) for col in columns]})
    jobs = summary.jobs
    counts = {"total": jobs.total, "done": jobs.done, "failed": jobs.failed}
    return _jinja().get_template("matrix.html.j2").render(
        title=title or f"trtlab batch: {Path(matrix).stem or 'matrix'}", matrix=matrix, counts=counts,
        when=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), rows=rows, failures=failures or [],
        columns=[{"backend": b, "precision": p, "gpu": g} for b, p, g in columns])


def _cell(c: BatchCell | None) -> dict[str, str]:
    if c is None:
        return {"css": "empty", "main": "—", "small": "", "tooltip": "not in the matrix"}
    if c.failed:
        kinds = ", ".join(f.kind for f in c.failed)
        return {"css": "bad", "main": f"failed: {kinds}", "small": "",
                "tooltip": "; ".join(f"{f.kind}: {f.error}" for f in c.failed)}
    main = f"{c.speedup:.2f}×" if c.speedup is not None else (
        f"{c.median_ms:.3f} ms" if c.median_ms is not None else "")
    small = f"cos {c.cosine:.6f}" if c.cosine is not None else ""
    if c.built:
        layers = c.engine_layers or {}
        small = (small + " · " if small else "") + "engine: " + ", ".join(
            f"{n} {p}" for p, n in sorted(layers.items(), key=lambda kv: -kv[1]))
    if c.eval_metric is not None:  # accuracy on the model's dataset
        small = (small + " · " if small else "") + c.accuracy_text()
    not_run = c.not_run
    if c.passed is False:
        css = "bad"
    elif not_run:
        css = "empty"
    elif c.speedup is not None and c.speedup < 1.0:
        css = "slower"
    else:
        css = "good"
    if not main and not small:
        main = "not run" if not_run else "reference"
    elif not main and c.eval_metric is not None:  # an evaluation only: its change in points is the headline
        main = "reference" if c.eval_delta is None else \
            f"{c.eval_metric} {c.eval_delta * 100:+.1f} pts".replace("-", "−")
    tip = f"{c.backend}:{c.precision}" + (" — tolerance NOT met" if c.passed is False else "")
    if c.worst_layer:
        tip += f"; worst layer {c.worst_layer}"
    return {"css": css, "main": main, "small": small, "tooltip": tip}
