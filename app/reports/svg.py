"""Small inline SVG charts for the HTML report: horizontal bar charts, step histograms and scatters, and for a
dataset's accuracy bars around zero and a confusion heat map.

No plotting library: the report must be one self-contained file, so each chart is an `<svg>` element written
here, with readable tick labels and axis titles. Every text is escaped; the result is `Markup`, safe to insert
into an autoescaped template as is.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

# Colour per series, in order (colour-blind friendly Tableau-like set); the reference is drawn dark.
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f")
REFERENCE_COLOR = "#333333"
FONT = "font-family=\"system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif\""
WIDTH = 760
_CHAR_W = 7.0  # width of a 12 px character, for laying out labels without a font engine


def color(k: int) -> str:
    return PALETTE[k % len(PALETTE)]


def fmt_num(v: float) -> str:
    """A tick or value label: short, no float noise (0.1 not 0.10000000000000001)."""
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e5 or a < 1e-3:
        m, e = f"{v:.1e}".split("e")
        return f"{m.rstrip('0').rstrip('.')}e{int(e)}"
    return f"{v:.4g}"


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] (1, 2, 5 × 10^k steps)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0, 1.0]
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step + 1e-9)
    ticks = []
    for k in range(first, first + 100):  # multiples of the step, up to the first at or above hi
        ticks.append(round(k * step, 12))
        if k * step >= hi - step * 1e-9:
            break
    return ticks


def _t(x: float, y: float, text: str, *, size: int = 12, anchor: str = "start", weight: str = "normal",
       fill: str = "#333", rotate: bool = False, baseline: str = "") -> str:
    transform = f' transform="rotate(-90 {x:.1f} {y:.1f})"' if rotate else ""
    base = f' dominant-baseline="{baseline}"' if baseline else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" font-weight="{weight}" '
            f'fill="{fill}"{base}{transform}>{escape(text)}</text>')


def _svg(width: float, height: float, body: list[str], title: str) -> Markup:
    # No xmlns: inline SVG in HTML needs none, and the report names no address at all.
    return Markup(f'<svg class="chart" viewBox="0 0 {width:.0f} {height:.0f}" '
                  f'width="{width:.0f}" height="{height:.0f}" role="img" aria-label="{escape(title)}" {FONT}>'
                  f'<title>{escape(title)}</title>' + "".join(body) + "</svg>")


def _legend(items: Sequence[tuple[str, str, bool]], x0: float, y0: float, width: float) -> tuple[list[str], float]:
    """Colour swatches and names, wrapped over lines within ``width``; returns the elements and the height."""
    out, x, y = [], x0, y0
    for name, col, dashed in items:
        w = 26 + len(name) * _CHAR_W
        if x > x0 and x + w > x0 + width:
            x, y = x0, y + 18
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        out.append(f'<line x1="{x:.1f}" y1="{y - 4:.1f}" x2="{x + 18:.1f}" y2="{y - 4:.1f}" stroke="{col}" '
                   f'stroke-width="3"{dash}/>')
        out.append(_t(x + 22, y, name))
        x += w + 14
    return out, (y - y0 + 18) if items else 0.0


# ------------------------------------------------------------------------------------------------- bar charts
def hbar_chart(rows: Sequence[tuple[str, Sequence[float | None]]], series: Sequence[str], *, x_label: str,
               title: str, ref_value: float | None = None, ref_label: str = "", value_suffix: str = "",
               value_fmt: Callable[[float], str] = fmt_num) -> Markup:
    """Horizontal bars, one group per row label, one bar per series (median/p90/p99…), each value written at
    its bar's end; ``ref_value`` draws a dashed vertical line (speed-up 1×)."""
    label_w = min(260.0, max(_CHAR_W * max((len(r[0]) for r in rows), default=4) + 16, 80.0))
    left, right, top = label_w, 70.0, 8.0
    legend, legend_h = _legend([(s, color(k), False) for k, s in enumerate(series)], left, top + 12,
                               WIDTH - left - right) if len(series) > 1 else ([], 0.0)
    top += legend_h + 6
    bar_h, gap = 16.0, 12.0
    group_h = bar_h * len(series) + gap
    plot_h = group_h * len(rows)
    values = [v for _, vs in rows for v in vs if v is not None and math.isfinite(v)]
    hi = max(values + ([ref_value] if ref_value else []) + [1e-12])
    ticks = nice_ticks(0.0, hi)
    x_max = ticks[-1]
    pw = WIDTH - left - right
    sx = lambda v: left + pw * (v / x_max if x_max else 0)  # noqa: E731
    body = list(legend)
    for tv in ticks:
        x = sx(tv)
        body.append(f'<line x1="{x:.1f}" y1="{top:.1f}" x2="{x:.1f}" y2="{top + plot_h:.1f}" stroke="#e3e3e3"/>')
        body.append(_t(x, top + plot_h + 16, fmt_num(tv), anchor="middle"))
    for g, (label, vs) in enumerate(rows):
        y0 = top + g * group_h + gap / 2
        body.append(_t(left - 8, y0 + bar_h * len(series) / 2, label, anchor="end", baseline="middle"))
        for k, v in enumerate(vs):
            y = y0 + k * bar_h
            if v is None or not math.isfinite(v):
                body.append(_t(left + 4, y + bar_h / 2, "—", baseline="middle", fill="#888"))
                continue
            body.append(f'<rect x="{left:.1f}" y="{y + 1:.1f}" width="{max(sx(v) - left, 1):.1f}" '
                        f'height="{bar_h - 2:.1f}" fill="{color(k)}"/>')
            body.append(_t(sx(v) + 4, y + bar_h / 2, f"{value_fmt(v)}{value_suffix}", size=11, baseline="middle"))
    body.append(f'<line x1="{left:.1f}" y1="{top:.1f}" x2="{left:.1f}" y2="{top + plot_h:.1f}" stroke="#666"/>')
    if ref_value is not None:
        x = sx(ref_value)
        body.append(f'<line x1="{x:.1f}" y1="{top - 4:.1f}" x2="{x:.1f}" y2="{top + plot_h:.1f}" stroke="#333" '
                    'stroke-dasharray="4 3"/>')
        if ref_label:  # beside the line, on the side with room
            room = WIDTH - right - x > len(ref_label) * _CHAR_W
            body.append(_t(x + 4 if room else x - 4, top + plot_h - 4, ref_label, size=11, fill="#333",
                           anchor="start" if room else "end"))
    body.append(_t(left + pw / 2, top + plot_h + 36, x_label, size=13, anchor="middle"))
    return _svg(WIDTH, top + plot_h + 46, body, title)


# ------------------------------------------------------------------------------------------------- histograms
@dataclass
class Series:
    """One histogram outline: ``edges`` (len n + 1) and ``counts`` (len n)."""

    name: str
    edges: Sequence[float]
    counts: Sequence[float]
    color: str
    dashed: bool = False
    filled: bool = True


def _log_ticks(lo: float, hi: float) -> list[float]:
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    step = max(1, math.ceil((b - a) / 7))
    return [10.0 ** e for e in range(a, b + 1, step)]


def histogram(series: Sequence[Series], *, x_label: str, y_label: str, title: str, log_x: bool = False,
              height: float = 260.0) -> Markup:
    """Step outlines of binned counts on shared axes (log x for |differences| spanning decades)."""
    keep = [s for s in series if len(s.counts) and len(s.edges) == len(s.counts) + 1]
    left, right, top = 64.0, 20.0, 8.0
    legend, legend_h = _legend([(s.name, s.color, s.dashed) for s in keep], left, top + 12, WIDTH - left - right)
    top += legend_h + 6
    edges = [e for s in keep for e in s.edges if not log_x or e > 0]
    lo, hi = (min(edges), max(edges)) if edges else (0.0, 1.0)
    if log_x:
        ticks = _log_ticks(lo, hi)
        lo, hi = min(lo, ticks[0]), max(hi, ticks[-1])
        fx = math.log10
    else:
        ticks = nice_ticks(lo, hi, 6)
        ticks = [t for t in ticks if lo <= t <= hi] or ticks
        fx = float
    y_ticks = nice_ticks(0.0, max([float(c) for s in keep for c in s.counts] + [1.0]), 4)
    pw, ph = WIDTH - left - right, height
    flo, fhi = fx(lo), fx(hi)
    sx = lambda v: left + pw * ((fx(v) - flo) / (fhi - flo) if fhi > flo else 0.5)  # noqa: E731
    sy = lambda c: top + ph * (1 - c / y_ticks[-1])  # noqa: E731
    body = list(legend)
    for tv in y_ticks:
        y = sy(tv)
        body.append(f'<line x1="{left:.1f}" y1="{y:.1f}" x2="{left + pw:.1f}" y2="{y:.1f}" stroke="#e3e3e3"/>')
        body.append(_t(left - 6, y, fmt_num(tv), anchor="end", baseline="middle"))
    for tv in ticks:
        x = sx(tv)
        body.append(f'<line x1="{x:.1f}" y1="{top + ph:.1f}" x2="{x:.1f}" y2="{top + ph + 5:.1f}" stroke="#666"/>')
        body.append(_t(x, top + ph + 18, fmt_num(tv), anchor="middle"))
    for s in keep:
        pts = []
        for k, c in enumerate(s.counts):
            a, b = s.edges[k], s.edges[k + 1]
            if log_x and a <= 0:
                continue
            pts += [(sx(a), sy(float(c))), (sx(b), sy(float(c)))]
        if not pts:
            continue
        path = f"M{pts[0][0]:.1f},{sy(0):.1f} " + " ".join(f"L{x:.1f},{y:.1f}" for x, y in pts) + \
            f" L{pts[-1][0]:.1f},{sy(0):.1f}"
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        fill = f'fill="{s.color}" fill-opacity="0.18"' if s.filled else 'fill="none"'
        body.append(f'<path d="{path}" {fill} stroke="{s.color}" stroke-width="2"{dash}/>')
    body.append(f'<rect x="{left:.1f}" y="{top:.1f}" width="{pw:.1f}" height="{ph:.1f}" fill="none" stroke="#666"/>')
    body.append(_t(left + pw / 2, top + ph + 38, x_label, size=13, anchor="middle"))
    body.append(_t(16, top + ph / 2, y_label, size=13, anchor="middle", rotate=True))
    return _svg(WIDTH, top + ph + 48, body, title)


# ------------------------------------------------------------------------------------------------- scatter
def scatter(series: Sequence[tuple[str, Sequence[float], Sequence[float], str]], *, x_label: str, y_label: str,
            title: str, size: float = 340.0) -> Markup:
    """Points (x, y) per series with the dotted y = x diagonal: on it, the candidate equals the reference."""
    keep = [(n, xs, ys, c) for n, xs, ys, c in series if len(xs)]
    left, right, top = 70.0, 20.0, 8.0
    width = left + size + right + 200
    legend, legend_h = _legend([(n, c, False) for n, _, _, c in keep], left, top + 12, size + 200)
    top += legend_h + 6
    finite = [v for _, xs, ys, _ in keep for v in (*xs, *ys) if math.isfinite(v)]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    ticks = nice_ticks(lo, hi, 5)
    lo, hi = ticks[0], ticks[-1]
    s = lambda v: (v - lo) / (hi - lo) * size if hi > lo else size / 2  # noqa: E731
    body = list(legend)
    for tv in ticks:
        x, y = left + s(tv), top + size - s(tv)
        body.append(f'<line x1="{x:.1f}" y1="{top:.1f}" x2="{x:.1f}" y2="{top + size:.1f}" stroke="#eee"/>')
        body.append(f'<line x1="{left:.1f}" y1="{y:.1f}" x2="{left + size:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        body.append(_t(x, top + size + 16, fmt_num(tv), anchor="middle"))
        body.append(_t(left - 6, y, fmt_num(tv), anchor="end", baseline="middle"))
    body.append(f'<line x1="{left:.1f}" y1="{top + size:.1f}" x2="{left + size:.1f}" y2="{top:.1f}" stroke="#999" '
                'stroke-dasharray="2 3"/>')
    for _, xs, ys, col in keep:
        for x, y in zip(xs, ys, strict=False):
            if math.isfinite(x) and math.isfinite(y):
                body.append(f'<circle cx="{left + s(x):.1f}" cy="{top + size - s(y):.1f}" r="2.2" fill="{col}" '
                            'fill-opacity="0.7"/>')
    body.append(f'<rect x="{left:.1f}" y="{top:.1f}" width="{size:.1f}" height="{size:.1f}" fill="none" '
                'stroke="#666"/>')
    body.append(_t(left + size / 2, top + size + 36, x_label, size=13, anchor="middle"))
    body.append(_t(18, top + size / 2, y_label, size=13, anchor="middle", rotate=True))
    return _svg(width, top + size + 46, body, title)


# ------------------------------------------------------------------------------------------------- dataset accuracy
def diverging_bars(rows: Sequence[tuple[str, Sequence[float | None]]], series: Sequence[tuple[str, str]], *,
                   x_label: str, title: str, value_suffix: str = "") -> Markup:
    """Horizontal bars from a zero line, one group per row label and one bar per (name, colour) series: below
    zero to the left, above to the right, each value written beside its bar's end."""
    label_w = min(260.0, max(_CHAR_W * max((len(r[0]) for r in rows), default=4) + 16, 80.0))
    left, right, top = label_w, 20.0, 8.0
    legend, legend_h = _legend([(n, c, False) for n, c in series], left, top + 12,
                               WIDTH - left - right) if len(series) > 1 else ([], 0.0)
    top += legend_h + 6
    bar_h, gap = 14.0, 10.0
    group_h = bar_h * len(series) + gap
    plot_h = group_h * len(rows)
    values = [v for _, vs in rows for v in vs if v is not None and math.isfinite(v)]
    reach = max([abs(v) for v in values] + [1e-9])
    ticks = nice_ticks(-reach, reach, 6)
    lo, hi = ticks[0], ticks[-1]
    pad = 56.0  # room for the values written beyond the longest bars
    pw = WIDTH - left - right - 2 * pad
    sx = lambda v: left + pad + pw * ((v - lo) / (hi - lo) if hi > lo else 0.5)  # noqa: E731
    body = list(legend)
    for tv in ticks:
        x = sx(tv)
        body.append(f'<line x1="{x:.1f}" y1="{top:.1f}" x2="{x:.1f}" y2="{top + plot_h:.1f}" stroke="#e3e3e3"/>')
        body.append(_t(x, top + plot_h + 16, fmt_num(tv), anchor="middle"))
    zero = sx(0.0)
    for g, (label, vs) in enumerate(rows):
        y0 = top + g * group_h + gap / 2
        body.append(_t(left - 8, y0 + bar_h * len(series) / 2, label, anchor="end", baseline="middle"))
        for k, v in enumerate(vs):
            y = y0 + k * bar_h
            if v is None or not math.isfinite(v):
                body.append(_t(zero + 4, y + bar_h / 2, "—", baseline="middle", fill="#888"))
                continue
            x = sx(v)
            body.append(f'<rect class="bar" x="{min(x, zero):.1f}" y="{y + 1:.1f}" width="{max(abs(x - zero), 1):.1f}" '
                        f'height="{bar_h - 2:.1f}" fill="{series[k][1]}"/>')
            text = signed(v) + value_suffix
            body.append(_t(x - 4 if v < 0 else x + 4, y + bar_h / 2, text, size=11, baseline="middle",
                           anchor="end" if v < 0 else "start"))
    body.append(f'<line x1="{zero:.1f}" y1="{top - 4:.1f}" x2="{zero:.1f}" y2="{top + plot_h:.1f}" stroke="#333"/>')
    body.append(_t(left + pad + pw / 2, top + plot_h + 36, x_label, size=13, anchor="middle"))
    return _svg(WIDTH, top + plot_h + 46, body, title)


def signed(v: float) -> str:
    """A change with its sign and one decimal: +1.8, −8.4, 0; one smaller than 0.05 keeps two digits (+0.011)."""
    if v == 0:
        return "0"
    text = f"{v:+.1f}" if abs(v) >= 0.05 else f"{v:+.2g}"
    return text.replace("-", "−")


def _mix(fraction: float, to: tuple[int, int, int]) -> str:
    """White blended towards ``to`` by ``fraction`` (0 white, 1 the colour)."""
    f = min(max(fraction, 0.0), 1.0)
    r, g, b = (round(255 + (c - 255) * f) for c in to)
    return f"#{r:02x}{g:02x}{b:02x}"


_RIGHT = (31, 94, 160)    # the diagonal: answers that are right
_WRONG = (200, 72, 40)    # elsewhere: one class taken for another


def heatmap(counts: Sequence[Sequence[int]], labels: Sequence[str], *, title: str, row_title: str = "truth",
            col_title: str = "prediction", percent: bool = False) -> Markup:
    """A confusion matrix: one cell per (row, column) pair, rows the truth and columns the prediction, shaded by
    its share of the row (the diagonal blue, the rest orange), each cell's count written in it (``percent``: its
    share of the row instead, for pixel counts), and its numbers in a tooltip."""
    n = len(labels)
    cell = min(44.0, max(16.0, 560.0 / max(n, 1)))
    label_w = min(200.0, max(_CHAR_W * max((len(s) for s in labels), default=2) + 12, 40.0))
    font = 11 if cell >= 24 else 9
    left, top = 26.0 + label_w, 24.0 + label_w  # the column labels stand rotated above the cells
    width, height = left + cell * n + max(20.0, label_w * 0.5), top + cell * n + 12
    rows_total = [sum(int(v) for v in row) for row in counts]
    body = [_t(left + cell * n / 2, 14, f"{col_title} →", size=13, anchor="middle"),
            _t(12, top + cell * n / 2, f"← {row_title}", size=13, anchor="middle", rotate=True)]
    for i, name in enumerate(labels):
        body.append(_t(left - 6, top + cell * (i + 0.5), name, size=font + 1, anchor="end", baseline="middle"))
        x = left + cell * (i + 0.5)
        body.append(f'<text x="{x:.1f}" y="{top - 6:.1f}" font-size="{font + 1}" text-anchor="start" fill="#333" '
                    f'dominant-baseline="middle" transform="rotate(-60 {x:.1f} {top - 6:.1f})">{escape(name)}</text>')
    for i, row in enumerate(counts):
        for j, v in enumerate(row):
            v = int(v)
            share = v / rows_total[i] if rows_total[i] else 0.0
            fill = _mix(share, _RIGHT if i == j else _WRONG) if v else "#ffffff"
            x, y = left + cell * j, top + cell * i
            tip = (f"{row_title} {labels[i]}, {col_title} {labels[j]}: {v:,}"
                   + (f" ({share:.0%} of {labels[i]})" if rows_total[i] else ""))
            body.append(f'<rect class="cell" data-row="{escape(labels[i])}" data-col="{escape(labels[j])}" '
                        f'data-count="{v}" x="{x:.1f}" y="{y:.1f}" width="{cell:.1f}" height="{cell:.1f}" '
                        f'fill="{fill}" stroke="#d0d0d0"><title>{escape(tip)}</title></rect>')
            if cell >= 16 and (v or i == j):
                text = f"{share:.0%}" if percent else (f"{v:,}" if v < 10_000 else fmt_num(v))
                body.append(_t(x + cell / 2, y + cell / 2, text, size=font, anchor="middle", baseline="middle",
                               fill="#fff" if share > 0.55 else "#222"))
    body.append(f'<rect x="{left:.1f}" y="{top:.1f}" width="{cell * n:.1f}" height="{cell * n:.1f}" fill="none" '
                'stroke="#666"/>')
    return _svg(width, height, body, title)


def paired_scatter(series: Sequence[tuple[str, Sequence[float], Sequence[float], str]], *, x_label: str,
                   y_label: str, title: str, size: float = 340.0) -> Markup:
    """Per-image values (x the reference's, y the candidate's) per series with the y = x diagonal. Images at the
    same point are one circle whose area grows with their number; where there are few such points (a 0/1 metric)
    the number is written on it and the series are set side by side so that none hides another."""
    keep = [(n, xs, ys, c) for n, xs, ys, c in series if len(xs)]
    left, right, top = 70.0, 20.0, 8.0
    width = left + size + right + 200
    legend, legend_h = _legend([(n, c, False) for n, _, _, c in keep], left, top + 12, size + 200)
    top += legend_h + 6
    finite = [v for _, xs, ys, _ in keep for v in (*xs, *ys) if math.isfinite(v)]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    ticks = nice_ticks(lo, hi, 5)
    lo, hi = ticks[0], ticks[-1]
    groups: list[dict[tuple[float, float], int]] = []
    for _, xs, ys, _ in keep:
        g: dict[tuple[float, float], int] = {}
        for x, y in zip(xs, ys, strict=False):
            if math.isfinite(x) and math.isfinite(y):
                g[(round(x, 9), round(y, 9))] = g.get((round(x, 9), round(y, 9)), 0) + 1
        groups.append(g)
    # Few distinct points holding many images (a 0/1 metric), or series on the same points: circles sized by
    # their number, which is written, the series side by side
    shared: dict[tuple[float, float], int] = {}
    for g in groups:
        for xy, n in g.items():
            shared[xy] = shared.get(xy, 0) + n
    stacked = any(n > 1 for n in shared.values()) and sum(len(g) for g in groups) <= 60
    radius = lambda n: (min(4.0 + 2.0 * math.sqrt(n), 16.0) if stacked  # noqa: E731
                        else 2.4 if n == 1 else min(2.4 + 1.6 * math.sqrt(n), 12.0))
    r_max = max((radius(n) for g in groups for n in g.values()), default=2.4)
    step = 2 * r_max + 6 if stacked and len(keep) > 1 else 0.0  # series side by side at a shared point
    inset = step * (len(keep) - 1) / 2 + r_max + 4  # points at the axes' ends stay inside the frame
    s = lambda v: inset + (v - lo) / (hi - lo) * (size - 2 * inset) if hi > lo else size / 2  # noqa: E731
    body = list(legend)
    for tv in ticks:
        x, y = left + s(tv), top + size - s(tv)
        body.append(f'<line x1="{x:.1f}" y1="{top:.1f}" x2="{x:.1f}" y2="{top + size:.1f}" stroke="#eee"/>')
        body.append(f'<line x1="{left:.1f}" y1="{y:.1f}" x2="{left + size:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        body.append(_t(x, top + size + 16, fmt_num(tv), anchor="middle"))
        body.append(_t(left - 6, y, fmt_num(tv), anchor="end", baseline="middle"))
    body.append(f'<line class="diagonal" x1="{left + s(lo):.1f}" y1="{top + size - s(lo):.1f}" '
                f'x2="{left + s(hi):.1f}" y2="{top + size - s(hi):.1f}" stroke="#999" stroke-dasharray="2 3"/>')
    for k, ((_, _, _, col), g) in enumerate(zip(keep, groups, strict=True)):
        shift = (k - (len(keep) - 1) / 2) * step
        for (x, y), n in g.items():
            cx, cy = left + s(x) + shift, top + size - s(y)
            r = radius(n)
            body.append(f'<circle class="point" data-count="{n}" cx="{cx:.1f}" cy="{cy:.1f}" r="{r:.1f}" '
                        f'fill="{col}" fill-opacity="0.75"/>')
            if stacked:  # the number of images at the point, in the circle or above it
                inside = r >= 9
                body.append(_t(cx, cy if inside else cy - r - 4, f"{n}", size=10, anchor="middle",
                               baseline="middle" if inside else "", fill="#fff" if inside else col,
                               weight="bold"))
    body.append(f'<rect x="{left:.1f}" y="{top:.1f}" width="{size:.1f}" height="{size:.1f}" fill="none" '
                'stroke="#666"/>')
    body.append(_t(left + size / 2, top + size + 36, x_label, size=13, anchor="middle"))
    body.append(_t(18, top + size / 2, y_label, size=13, anchor="middle", rotate=True))
    return _svg(width, top + size + 46, body, title)
