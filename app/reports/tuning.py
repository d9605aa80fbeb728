"""The report's "Runtime settings tuned" section: each `trtlab tune` result as a table of the combinations tried
(median over the sessions, spread, speed-up, the answers' verdict), the choice on top, and a scorecard line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.core.results import TuneResult, TuneTrial
from app.reports.results import ReportItem

_STATUS = {"ok": "", "refused": "refused by ONNX Runtime", "answers_differ": "answers changed", "failed": "failed"}


def _row(t: TuneTrial, chosen: str) -> dict[str, Any]:
    settings = ", ".join(f"{k}={v}" for k, v in t.knobs.items()) or "its own settings"
    return {"settings": settings, "median": "—" if t.median_ms is None else f"{t.median_ms:.3f}",
            "spread": "—" if t.spread is None else f"±{50 * t.spread:.1f} %",
            "speedup": "—" if t.speedup is None else f"{t.speedup:.2f}×",
            "verdict": _STATUS.get(t.status, t.status) + (f": {t.message or t.verdict}" if t.status != "ok" else
                                                          t.verdict or "the reference"),
            "status": "pass" if t.target == chosen else "fail" if t.status != "ok" else "",
            "chosen": t.target == chosen}


def _choice(doc: TuneResult) -> str:
    if doc.best == doc.default.target or doc.best_speedup is None:
        return f"No setting beat {doc.target}'s own settings with the answers unchanged."
    return (f"{doc.best}: {doc.best_speedup:.2f}× {doc.target}'s own settings at batch {doc.batch}, answers "
            "unchanged.")


def tune_sections(items: Sequence[ReportItem]) -> list[dict[str, Any]]:
    """One section per tune result, in the items' order."""
    out = []
    for k, item in enumerate(i for i in items if isinstance(i.result, TuneResult)):
        doc = item.result
        assert isinstance(doc, TuneResult)
        out.append({"id": f"tune-{k}", "title": f"Runtime settings tuned: {doc.target} at batch {doc.batch}",
                    "facts": f"batch {doc.batch}, {doc.mode.replace('_', '-')} timing, {doc.sessions} sessions per "
                             "combination (the median of their medians; the spread is the slowest less the fastest)",
                    "choice": _choice(doc), "rows": [_row(t, doc.best) for t in (doc.default, *doc.trials)],
                    "notes": list(doc.notes)})
    return out


def tune_scorecard(items: Sequence[ReportItem]) -> list[dict[str, str]]:
    """A scorecard line per tune: the setting chosen and its speed-up."""
    return [{"text": f"Tuned: {_choice(i.result)}", "status": "info"} for i in items
            if isinstance(i.result, TuneResult)]
