"""HTML reports: one self-contained file (inline CSS and SVG plots, nothing loaded from anywhere) from a
session's results — a project's, the window's, or result JSON files. No Qt here: the CLI (`trtlab report`) and
the window (File ▸ Export Report…) both use it.

- `report` — `build_report(results, project, environment) -> str`, rendered with the Jinja2 templates of
  `templates/` (autoescaped).
- `results` — results as the report reads them (`ReportItem`), result files checked, kinds told from keys.
- `matrix` — `build_matrix_report(summary, links)`: a batch's models × precisions page linking each model's report.
- `tables`, `charts` — each section's data; `evaluation` — the "Accuracy on <dataset>" section of a `trtlab eval`
  result; `imports` — the "Imported TensorRT engines" section of `trtlab import` results and their comparisons;
  `svg` — the small charts; `words` — numbers in plain words.
"""

from __future__ import annotations

from app.reports.environment import current_environment
from app.reports.matrix import build_matrix_report
from app.reports.report import build_report
from app.reports.results import SHOWN_KINDS, ReportError, ReportItem, as_item, infer_kind, read_result_file

__all__ = ["SHOWN_KINDS", "ReportError", "ReportItem", "as_item", "build_matrix_report", "build_report",
           "current_environment", "infer_kind", "read_result_file"]
