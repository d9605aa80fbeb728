"""`trtlab report SWEEP.json`: the "Speed as it scales" section of a real sweep on the CPU, one point of which ran
out of memory: the table, both log-log plots (a p50 line and p99 band per target, the out-of-memory value marked),
the knees and the scorecard line."""

from __future__ import annotations

import json
import re

import pytest

from app.backends.ort import OrtSession
from app.backends.tasks import sweep
from app.backends.tasks.speed_specs import SweepSpec
from app.core.results import SweepResult
from app.reports.speed import Line, loglog
from tests.cli.runner import trtlab


@pytest.fixture(scope="module")
def report(orientation, tmp_path_factory):
    """A sweep of FP32 and FP16 over batch 1, 2, 4, 8 where FP32 runs out of memory at batch 4, and its report."""
    real_open, real_runner = sweep.open_ort_session, OrtSession.timed_runner
    fp32_sessions: set[int] = set()

    def opening(target, path, spec, profile_prefix=None):
        session = real_open(target, path, spec, profile_prefix=profile_prefix)
        if target.precision == "fp32":
            fp32_sessions.add(id(session))
        return session

    def runner(self, feeds, mode):
        if next(iter(feeds.values())).shape[0] == 4 and id(self) in fp32_sessions:
            raise RuntimeError("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Failed to allocate memory for requested "
                               "buffer of size 411041792")
        return real_runner(self, feeds, mode)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sweep, "open_ort_session", opening)
        mp.setattr(OrtSession, "timed_runner", runner)
        spec = SweepSpec(model=str(orientation), sweep_targets=("ort-cpu:fp32", "ort-cpu:fp16"),
                         values=(1, 2, 4, 8), warmup="1", iterations="4")
        data = sweep.sweep_task(spec, None)
    folder = tmp_path_factory.mktemp("sweep_report")
    path = folder / "sweep.json"
    path.write_text(json.dumps({**data, "kind": "sweep", "model": str(orientation)}), encoding="utf-8")
    out = folder / "r.html"
    r = trtlab("report", path, "-o", out)
    assert r.returncode == 0, r.stderr
    assert "(1 sweep)" in r.stdout
    return SweepResult.from_json(data), out.read_text(encoding="utf-8")


def _section(html: str) -> str:
    start = html.index('<section id="sweep"')
    return html[start:html.index("</section>", start)]


def test_the_section_has_a_row_per_point_with_its_status(report):
    doc, html = report
    section = _section(html)
    assert "<h2>Speed as it scales</h2>" in section and '<a href="#sweep">Speed as it scales</a>' in html
    rows = re.findall(r"<tr><td class=\"mono nowrap\">.*?</tr>", section)
    assert len(rows) == 8
    assert sum("out of memory at batch 4" in r for r in rows) == 1
    assert sum("skipped: out of memory at a smaller value" in r for r in rows) == 1
    p = doc.point("ort-cpu:fp16", 8)
    assert p is not None and p.status == "ok"
    assert f"{p.latency_ms.median:.3f}" in section and f"{p.throughput_per_s:,.1f}" in section
    assert "peak resident memory" in section


def test_both_plots_are_log_log_with_a_line_and_band_per_target(report):
    doc, html = report
    section = _section(html)
    plots = re.findall(r"<svg class=\"chart\".*?</svg>", section, re.S)
    assert len(plots) == 2
    latency, throughput = plots
    assert "Latency against batch" in latency and "Throughput against batch" in throughput
    assert "batch (log scale)" in latency and "(log)" in throughput
    # FP32 has two measured points (a line and a band), FP16 four: a band each in the latency plot only.
    assert latency.count('fill-opacity="0.16"') == 2 and throughput.count('fill-opacity="0.16"') == 0
    for plot in plots:
        assert plot.count('stroke-width="2.2"') == 2  # one line per target
        assert "OOM at 4" in plot
        for tick in ("1", "2", "4", "8"):
            assert f">{tick}</text>" in plot


def test_the_knees_and_the_scorecard_name_the_best_batch(report):
    doc, html = report
    for target in doc.targets:
        knee = doc.knees[target]
        assert f"best {knee.best_throughput_per_s:,.1f} items/s at batch {knee.best_value}" in html
    assert "ort-cpu:fp32 over batch 1–8" in html and "; out of memory at batch 4" in html
    if doc.why:
        assert "Why half precision is not faster" in html and "no fast FP16 kernels" in html


def test_a_plot_with_no_measured_point_says_so():
    chart = str(loglog([Line("ort-cuda:fp16", "#333", marks=[(128.0, "OOM")])], x_label="batch", y_label="ms",
                       title="Latency"))
    assert "no point was measured" in chart


def test_a_rate_axis_reads_in_short_numbers():
    """150k rather than 1.5e5 on the throughput axis; the sizes on the x axis stay as they are."""
    from app.core.measure import short_number

    assert [short_number(v) for v in (950.0, 1200.0, 150_000.0, 2e6, 0.5)] == ["950", "1.2k", "150k", "2M", "0.5"]
