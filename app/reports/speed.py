"""The "Speed as it scales" section of a `trtlab bench --sweep` result: each target's latency and throughput at
every value of the swept dimension (a table), two log-log plots (latency with its p50 line and a p99 band;
throughput), one colour per target, points that ran out of memory or failed marked, the knee named, and why a
half-precision target is not faster than FP32."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from app.core.measure import RATE_NOTE, rate_unit, short_number
from app.core.results import SweepResult
from app.reports import svg
from app.reports.results import ReportItem
from app.reports.svg import WIDTH, fmt_num

_OOM = "#c0392b"
_MEMORY = {"device": "GPU memory in use after the point's runs less before its session",
           "process": "the process's peak resident memory above its level before the point's session"}


@dataclass
class Line:
    """One target in a plot: its values, its (lower, middle, upper) numbers per value, where it ran out of memory
    or failed, and its knee."""

    name: str
    color: str
    xs: list[float] = field(default_factory=list)
    ys: list[float] = field(default_factory=list)
    band: list[float] = field(default_factory=list)  # the upper edge (p99) per x; [] : no band
    marks: list[tuple[float, str]] = field(default_factory=list)  # (value, "OOM" | "failed")
    knee: float | None = None


def sweep_sections(items: Sequence[ReportItem], colors: dict[str, str]) -> list[dict[str, Any]]:
    """One section per sweep result, in order."""
    return [sweep_section(i.result, colors, k) for k, i in enumerate(items) if isinstance(i.result, SweepResult)]


def _dim(doc: SweepResult) -> str:
    return "batch" if doc.is_batch and not doc.input else f"{doc.input or 'every input'}:{doc.axis}"


def sweep_section(doc: SweepResult, colors: dict[str, str], index: int = 0) -> dict[str, Any]:
    """The section's data: facts, a row per point, the knees and the reasons, and the two plots."""
    for t in doc.targets:
        colors.setdefault(t, svg.color(len(colors)))
    dim = _dim(doc)
    rate = rate_unit(doc.is_batch)
    rows = []
    for t in doc.targets:
        for p in doc.series(t):
            rows.append({"target": t, "value": p.value, "p50": _num(p.latency_ms.median, ".3f"),
                         "p99": _num(p.latency_ms.p99, ".3f"), "throughput": _num(p.throughput_per_s, ",.1f"),
                         "memory": _num(p.peak_memory_mb, ",.1f"), "status": p.status,
                         "text": p.message if p.status != "ok" else ("unstable" if p.unstable else "ok"),
                         "color": colors[t]})
    knees = []
    for t in doc.targets:
        k = doc.knees.get(t)
        if k is None:
            continue
        best = (f"best {_num(k.best_throughput_per_s, ',.1f')} {rate} at {dim} {k.best_value}"
                if k.best_value is not None else "no measured point")
        where = f"the knee is at {dim} {k.value}" if k.value is not None else "no knee"
        knees.append({"target": t, "text": f"{where}; {best}. {k.reason[:1].upper()}{k.reason[1:]}."})
    sources = sorted({p.memory_source for p in doc.points if p.memory_source})
    lat_lines = [_line(doc, t, colors[t], latency=True) for t in doc.targets]
    thr_lines = [_line(doc, t, colors[t], latency=False) for t in doc.targets]
    return {
        "id": f"sweep-{index}" if index else "sweep",
        "title": "Speed as it scales" + (f" ({index + 1})" if index else ""),
        "facts": f"{', '.join(doc.targets)} at {dim} = {', '.join(map(str, doc.values))} ({doc.mode} timing)"
                 + (f" · {doc.device}" if doc.device else ""),
        "dim": dim, "rate": rate, "rows": rows, "knees": knees,
        "why": [{"target": t, "text": w} for t, w in doc.why.items()],
        "memory": "; ".join(f"{_MEMORY[s]}" for s in sources if s in _MEMORY),
        "notes": list(doc.notes) + ([] if doc.is_batch else [RATE_NOTE]),
        "plots": [loglog(lat_lines, x_label=dim, y_label="latency (ms): p50 line, p99 band",
                         title=f"Latency against {dim}"),
                  loglog(thr_lines, x_label=dim, y_label=f"throughput ({rate})",
                         title=f"Throughput against {dim}")],
    }


def _line(doc: SweepResult, target: str, color: str, *, latency: bool) -> Line:
    line = Line(target, color)
    for p in doc.series(target):
        y = p.latency_ms.median if latency else p.throughput_per_s
        if p.status == "ok" and _positive(y):
            line.xs.append(float(p.value))
            line.ys.append(float(y))  # type: ignore[arg-type]
            if latency:
                top = p.latency_ms.p99
                line.band.append(float(top) if _positive(top) else float(y))  # type: ignore[arg-type]
        elif p.status in ("oom", "failed"):
            line.marks.append((float(p.value), "OOM" if p.status == "oom" else "failed"))
    knee = doc.knees.get(target)
    if not latency and knee is not None and knee.value is not None:
        line.knee = float(knee.value)
    return line


def _positive(v: float | None) -> bool:
    return isinstance(v, int | float) and math.isfinite(v) and v > 0


def _num(v: float | None, spec: str) -> str:
    return "—" if v is None else format(v, spec)


def _log_range(values: Sequence[float]) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    if hi <= lo:
        lo, hi = lo / 2, hi * 2
    pad = (math.log10(hi) - math.log10(lo)) * 0.06
    return 10 ** (math.log10(lo) - pad), 10 ** (math.log10(hi) + pad)


def _ticks(lo: float, hi: float, given: Sequence[float] = ()) -> list[float]:
    """Tick values on a log axis: the values given where few (the sweep's own), else 1, 2, 5 × 10^k."""
    inside = sorted({v for v in given if lo <= v <= hi})
    if 1 < len(inside) <= 12:
        return inside
    steps = (1.0, 2.0, 5.0) if math.log10(hi / lo) < 3 else (1.0,)
    out = [m * 10.0 ** e for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
           for m in steps]
    ticks = [t for t in out if lo <= t <= hi]
    if len(ticks) < 3:  # less than a decade: round steps between the ends
        ticks = [t for t in svg.nice_ticks(lo, hi, 4) if lo <= t <= hi and t > 0]
    return ticks if len(ticks) >= 2 else [lo, hi]


def sweep_scorecard(items: Sequence[ReportItem]) -> list[dict[str, str]]:
    """A scorecard line per swept target: its best throughput and where, its knee, where it ran out of memory."""
    lines = []
    for item in items:
        doc = item.result
        if not isinstance(doc, SweepResult):
            continue
        dim, rate = _dim(doc), rate_unit(doc.is_batch)
        for t in doc.targets:
            k = doc.knees.get(t)
            oom = next((p for p in doc.series(t) if p.status == "oom"), None)
            if k is None or k.best_value is None:
                text, status = f"{t} over {dim} {doc.values[0]}–{doc.values[-1]}: no point was measured", "fail"
            else:
                text = (f"{t} over {dim} {doc.values[0]}–{doc.values[-1]}: best {_num(k.best_throughput_per_s, ',.0f')}"
                        f" {rate} at {dim} {k.best_value}"
                        + (f", the knee at {dim} {k.value}" if k.value is not None else ", no knee yet"))
                status = "info"
            if oom is not None:
                text += f"; out of memory at {dim} {oom.value}"
            lines.append({"text": text, "status": status})
    return lines


def loglog(lines: Sequence[Line], *, x_label: str, y_label: str, title: str, height: float = 280.0) -> Markup:
    """Lines on log-log axes, one colour each, a shaded band above a line where it has one (p99 over p50), a
    cross at the top for each value that ran out of memory or failed, a ring around the knee."""
    left, right, top = 74.0, 24.0, 8.0
    legend, legend_h = svg._legend([(ln.name, ln.color, False) for ln in lines], left, top + 12,
                                   WIDTH - left - right)
    top += legend_h + 6
    if any(ln.marks for ln in lines):
        top += 16  # room for the out-of-memory labels above the plot
    xs = [x for ln in lines for x in ln.xs] + [x for ln in lines for x, _ in ln.marks]
    ys = [y for ln in lines for y in (*ln.ys, *ln.band)]
    pw, ph = WIDTH - left - right, height
    body = list(legend)
    if not xs or not ys:
        body.append(svg._t(left + pw / 2, top + ph / 2, "no point was measured", anchor="middle", fill="#666"))
        return svg._svg(WIDTH, top + ph + 48, body, title)
    x_lo, x_hi = _log_range(xs)
    y_lo, y_hi = _log_range(ys)
    lx, ly = math.log10, math.log10
    sx = lambda v: left + pw * (lx(v) - lx(x_lo)) / (lx(x_hi) - lx(x_lo))  # noqa: E731
    sy = lambda v: top + ph * (1 - (ly(v) - ly(y_lo)) / (ly(y_hi) - ly(y_lo)))  # noqa: E731
    for tv in _ticks(y_lo, y_hi):
        y = sy(tv)
        body.append(f'<line x1="{left:.1f}" y1="{y:.1f}" x2="{left + pw:.1f}" y2="{y:.1f}" stroke="#e3e3e3"/>')
        body.append(svg._t(left - 6, y, short_number(tv), anchor="end", baseline="middle"))
    for tv in _ticks(x_lo, x_hi, sorted(set(xs))):
        x = sx(tv)
        body.append(f'<line x1="{x:.1f}" y1="{top:.1f}" x2="{x:.1f}" y2="{top + ph:.1f}" stroke="#f0f0f0"/>')
        body.append(f'<line x1="{x:.1f}" y1="{top + ph:.1f}" x2="{x:.1f}" y2="{top + ph + 5:.1f}" stroke="#666"/>')
        body.append(svg._t(x, top + ph + 18, fmt_num(tv), anchor="middle"))
    for ln in lines:
        pts = list(zip(ln.xs, ln.ys, strict=True))
        if ln.band and len(pts) > 1:
            upper = " ".join(f"L{sx(x):.1f},{sy(b):.1f}" for x, b in zip(ln.xs, ln.band, strict=True))
            lower = " ".join(f"L{sx(x):.1f},{sy(y):.1f}" for x, y in reversed(pts))
            body.append(f'<path d="M{upper[1:]} {lower} Z" fill="{ln.color}" fill-opacity="0.16" stroke="none"/>')
        if ln.band:
            for x, y, b in zip(ln.xs, ln.ys, ln.band, strict=True):  # each point's p99 as a tick above it
                body.append(f'<line x1="{sx(x):.1f}" y1="{sy(y):.1f}" x2="{sx(x):.1f}" y2="{sy(b):.1f}" '
                            f'stroke="{ln.color}" stroke-opacity="0.5"/>')
        if len(pts) > 1:
            path = " ".join(f"{'M' if k == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}" for k, (x, y) in enumerate(pts))
            body.append(f'<path d="{path}" fill="none" stroke="{ln.color}" stroke-width="2.2"/>')
        for x, y in pts:
            body.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3.2" fill="{ln.color}"/>')
        if ln.knee is not None and ln.knee in ln.xs:
            ky = ln.ys[ln.xs.index(ln.knee)]
            body.append(f'<circle cx="{sx(ln.knee):.1f}" cy="{sy(ky):.1f}" r="8" fill="none" stroke="{ln.color}" '
                        'stroke-width="1.6"/>')
            body.append(svg._t(sx(ln.knee) + 10, sy(ky) + 14, "knee", size=11, fill=ln.color))
        for x, what in ln.marks:
            cx, cy = sx(x), top + 8
            body.append(f'<path d="M{cx - 5:.1f},{cy - 5:.1f} L{cx + 5:.1f},{cy + 5:.1f} M{cx - 5:.1f},'
                        f'{cy + 5:.1f} L{cx + 5:.1f},{cy - 5:.1f}" stroke="{ln.color}" stroke-width="2.4"/>')
            body.append(f'<line x1="{cx:.1f}" y1="{top:.1f}" x2="{cx:.1f}" y2="{top + ph:.1f}" stroke="{_OOM}" '
                        'stroke-dasharray="3 3" stroke-opacity="0.6"/>')
            body.append(svg._t(cx, top - 6, f"{what} at {fmt_num(x)}", size=11, anchor="middle", fill=_OOM))
    body.append(f'<rect x="{left:.1f}" y="{top:.1f}" width="{pw:.1f}" height="{ph:.1f}" fill="none" stroke="#666"/>')
    body.append(svg._t(left + pw / 2, top + ph + 38, f"{x_label} (log scale)", size=13, anchor="middle"))
    body.append(svg._t(16, top + ph / 2, f"{y_label} (log)", size=13, anchor="middle", rotate=True))
    return svg._svg(WIDTH, top + ph + 48, body, title)

