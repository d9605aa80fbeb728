"""The report's plots, from the results' data: difference and value histograms and the reference-candidate scatter
of a comparison, latency and speed-up bars of the benchmarks, engine layers per precision."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

from app.core.results import BenchResult, CompareResult, PlotData
from app.reports import svg
from app.reports.results import ReportItem
from app.reports.words import target_words


def compare_plots(item: ReportItem, colors: dict[str, str]) -> list[dict[str, Any]]:
    """Per output: the |difference| histograms (log x), the value histograms and the scatter, where the result
    has their data (a comparison made by the window or a project keeps it; `--json` files may not)."""
    result = item.result_as(CompareResult)
    plots = result.plots
    reference = result.reference or "reference"
    outputs: list[str] = []
    for per_output in plots.values():
        for name in per_output:
            if name not in outputs:
                outputs.append(name)
    out = []
    for name in outputs:
        charts: list[Markup] = []
        diff: list[svg.Series] = []
        identical: list[str] = []
        for cand, per_output in plots.items():
            data = _plot(per_output, name).abs_diff
            if not data or len(data) != 2:
                continue
            edges, counts = list(data[0]), list(data[1])
            zeros = int(counts[0]) if edges and edges[0] == 0 and counts else 0
            e, c = edges[1:], counts[1:]
            total = zeros + int(sum(c))
            if not c or sum(c) == 0:
                identical.append(cand)
                continue
            label = cand + (f" ({zeros / total:.0%} identical)" if zeros else "")
            diff.append(svg.Series(label, e, c, colors.get(cand, svg.color(len(diff)))))
        if diff:
            charts.append(svg.histogram(diff, x_label="|candidate − reference| (log scale)", y_label="values",
                                        title=f"How far {name} moved from the reference", log_x=True))
        values: list[svg.Series] = []
        for cand, per_output in plots.items():
            sides = _plot(per_output, name).values  # each side's histogram
            if sides is None:
                continue
            if not values and (ref := sides.ref) is not None:
                edges, counts = list(ref[0]), list(ref[1])
                values.append(svg.Series(f"{reference} (reference)", edges, counts, svg.REFERENCE_COLOR, filled=False))
            if (mine := sides.cand) is not None:
                edges, counts = list(mine[0]), list(mine[1])
                values.append(svg.Series(cand, edges, counts, colors.get(cand, svg.color(len(values))), dashed=True,
                                         filled=False))
        if values:
            charts.append(svg.histogram(values, x_label=f"value of {name}", y_label="values",
                                        title=f"Values of {name}: reference and candidates"))
        points = [(cand, _plot(per_output, name).scatter) for cand, per_output in plots.items()]
        series = [(cand, list(p[0]), list(p[1]), colors.get(cand, svg.color(k))) for k, (cand, p) in enumerate(points)
                  if p and len(p) == 2 and len(p[0])]
        if series:
            charts.append(svg.scatter(series, x_label=f"reference ({reference})", y_label="candidate",
                                      title=f"{name}: reference (x) against candidate (y)"))
        if charts or identical:
            out.append({"output": name, "charts": charts, "identical": identical})
    return out


def _plot(per_output: Mapping[str, PlotData], name: str) -> PlotData:
    """One candidate's plots of an output (none: empty)."""
    return per_output.get(name) or PlotData()


def bench_charts(benches: dict[str, BenchResult], speedups: dict[str, float | None], reference: str,
                 colors: dict[str, str]) -> list[Markup]:
    rows = [(t, [b.latency_ms.median, b.latency_ms.p90, b.latency_ms.p99]) for t, b in benches.items()]
    modes = sorted({b.mode.replace("_", "-") for b in benches.values() if b.mode})
    charts = [svg.hbar_chart(rows, ["median", "p90", "p99"], x_label=f"latency per run (ms, {' / '.join(modes)})",
                             title="Latency per run: median, p90 and p99", value_suffix=" ms")]
    if reference and len(benches) > 1:
        # Targets whose speed means nothing (an emulated precision) have no bar; the caveats say why.
        sp_rows = [(t, [speedups[t]]) for t in benches if t != reference and speedups.get(t) is not None]
        if sp_rows:
            charts.append(svg.hbar_chart(sp_rows, ["speed-up"], x_label=f"speed-up over {target_words(reference)} "
                                         "(median latency ratio; > 1 is faster)", title="Speed-up over the reference",
                                         ref_value=1.0, ref_label="1× = as fast", value_suffix="×",
                                         value_fmt=lambda v: f"{v:.3g}"))
    return charts


def engine_chart(counts: list[tuple[str, int]]) -> Markup | None:
    if not counts:
        return None
    return svg.hbar_chart([(p, [n]) for p, n in counts], ["layers"], x_label="engine layers",
                          title="Engine layers per precision that ran")
