"""Output comparison of a candidate against a reference: error metrics, pass/fail, plot data.

Definitions (all per output, over every sample's values taken together):
- ``diff = cand - ref``; ``max_abs``, ``mean_abs``, ``median_abs``, ``p99_abs`` are statistics of ``|diff|``.
- ``rel = |diff| / max(|ref|, REL_EPS)``: the floor keeps values where the reference is (near) zero from
  dividing by zero; 1e-6 sits below any meaningful float32 activation and above float32 round-off of
  zero-centred sums, so ``max_rel`` stays finite and readable.
- ``cosine`` and ``snr_db = 10 log10(Σref² / Σdiff²)`` are accumulated in float64 chunk by chunk.
  An SNR of ±infinity (identical outputs, or an all-zero reference) is written as ±``SNR_CAP_DB`` so
  that the JSON stays valid; other non-finite floats become null.
- NaN/Inf are counted on both sides (``nan``/``inf`` for the candidate, ``ref_nan``/``ref_inf``) and the
  positions where either side is not finite are left out of every error statistic. A candidate NaN/Inf
  where the reference is finite always fails the output.
- ``median_abs``/``p99_abs`` are exact up to ``EXACT_QUANTILES_MAX`` compared values; above that they are
  read from a 128-bins-per-octave histogram of the float32 bit patterns (within 0.8 % of the exact value)
  so that no full sort or full-size copy is needed.
- ``top1`` (``top5``): share of rows whose arg-max (reference top-1 in the candidate's top 5) agrees, for
  class-score outputs ``[N, C]`` with ``C >= 2`` (``C > 5`` for top-5); null otherwise.
- Each output has a kind (``app.core.measure.kinds``). For image, classes, detections, yolo and sequence outputs
  the answer decides: their task metrics (``app.core.measure.answers``) are judged by the user's tolerances on
  those metrics, else by the kind's defaults (no box missed or added, masks IoU ≥ 0.9, top-1 agreement ≥ 0.99,
  the same decoded text); the element-wise metrics stay as detail. Embedding and tensor outputs are judged
  element-wise: by the user's tolerances, else ``DEFAULT_TOLERANCES`` (cosine ≥ 0.99). Element-wise tolerances apply
  only to outputs judged element-wise (set an output's kind to tensor to hold it to them); a candidate NaN/Inf
  where the reference is finite always fails, whatever the kind.
- A detection head split over several outputs (``app.core.measure.heads``) is judged once, as the boxes decoded from
  all its outputs, on its lead output; its other outputs keep their element-wise metrics as detail and are not judged
  on their own (a missing output or a new NaN/Inf still fails them).
- An output whose reference answer is empty on every sample (``task.empty_reference``: no box, an empty mask, no
  text) has nothing to judge by its answer: it is judged element-wise, and its ``judged_by`` says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from app.core.measure.answers import KIND_METRICS, judge
from app.core.measure.kinds import OutputKind
from app.core.measure.tolerance import DEFAULT_TOLERANCES, ELEMENTWISE, METRICS, Tolerance, fmt_metric

REL_EPS = 1e-6
SNR_CAP_DB = 999.0
EXACT_QUANTILES_MAX = 1 << 22
VALUE_HIST_EXACT_MAX = 1 << 21
VALUE_SAMPLE = 1 << 20
SCATTER_POINTS = 5000
VALUE_BINS = 100
_CHUNK = 1 << 17  # elements per step: the float64 work buffers stay in the L2 cache
_MBITS = 7  # mantissa bits kept in the |diff| histogram: 128 bins per octave
_SHIFT = 23 - _MBITS
_NBINS = 1 << (8 + _MBITS)
_ABS_HIST_FLOOR = 2.0 ** -40  # ≈ 9.1e-13: plot bins start here at the lowest
@dataclass
class OutputMetrics:
    name: str
    shape: list[int]
    max_abs: float | None = None
    mean_abs: float | None = None
    median_abs: float | None = None
    p99_abs: float | None = None
    max_rel: float | None = None
    mean_rel: float | None = None
    cosine: float | None = None
    snr_db: float | None = None
    nan: int = 0
    inf: int = 0
    ref_nan: int = 0
    ref_inf: int = 0
    top1: float | None = None
    top5: float | None = None
    dtype: str = ""
    ref_dtype: str = ""
    dtype_mismatch: str = ""
    shape_mismatch: str = ""
    count: int = 0  # values per side
    compared: int = 0  # values finite on both sides, which the statistics use
    exact_equal: int = 0
    new_nonfinite: int = 0  # candidate NaN/Inf where the reference is finite
    quantiles: str = "exact"
    passed: bool = True
    failures: list[str] = field(default_factory=list)
    kind: str = "tensor"
    kind_spec: str = "tensor"
    task: dict[str, object] | None = None
    task_values: dict[str, float | None] = field(default_factory=dict)
    answers: list[dict[str, object]] = field(default_factory=list)  # per sample, for the pictures (not in to_json)
    judged_by: list[str] = field(default_factory=list)  # the tolerances that decided this output's pass/fail

    def value(self, metric: str) -> float | None:
        """A metric's value for tolerances: element-wise attributes, else this output's task values."""
        if metric in self.task_values:
            return self.task_values[metric]
        attr = METRICS[metric][0]
        return getattr(self, attr, None) if metric in ELEMENTWISE or metric in ("top1", "top5") else None

    def to_json(self) -> dict[str, object]:
        """The CLI.md `compare` output keys (first), then extras."""
        snr = self.snr_db
        if snr is not None and math.isinf(snr):
            snr = math.copysign(SNR_CAP_DB, snr)
        f = _json_float
        return {"name": self.name, "shape": self.shape, "max_abs": f(self.max_abs), "mean_abs": f(self.mean_abs),
                "median_abs": f(self.median_abs), "p99_abs": f(self.p99_abs), "max_rel": f(self.max_rel),
                "mean_rel": f(self.mean_rel), "cosine": f(self.cosine), "snr_db": f(snr), "nan": self.nan,
                "inf": self.inf, "ref_nan": self.ref_nan, "ref_inf": self.ref_inf, "top1": f(self.top1),
                "top5": f(self.top5), "dtype": self.dtype, "ref_dtype": self.ref_dtype,
                "dtype_mismatch": self.dtype_mismatch or None, "shape_mismatch": self.shape_mismatch or None,
                "count": self.count, "compared": self.compared, "exact_equal": self.exact_equal,
                "new_nonfinite": self.new_nonfinite, "quantiles": self.quantiles, "passed": self.passed,
                "failures": list(self.failures), "kind": self.kind, "kind_spec": self.kind_spec,
                "task": _json_task(self.task), "judged_by": list(self.judged_by)}


def _json_task(task: dict[str, object] | None) -> dict[str, object] | None:
    if task is None:
        return None
    return {k: (_json_float(v) if isinstance(v, float) else v) for k, v in task.items()}


def _json_float(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


Hist = tuple[np.ndarray, np.ndarray]


@dataclass
class CandidateReport:
    name: str
    passed: bool
    outputs: list[OutputMetrics]
    histograms: dict[str, Hist] = field(default_factory=dict)  # |diff|: edges [0, lo, … log-spaced …]
    value_hist: dict[str, dict[str, Hist]] = field(default_factory=dict)  # {"ref": …, "cand": …}, shared edges
    scatter: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # (ref, cand) subsample
    tolerances: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)  # the user's tolerances that judged no output (wrong kind)

    @property
    def worst(self) -> str:
        """One line for a scorecard: the first failure, else the output with the lowest cosine."""
        for o in self.outputs:
            if o.failures:
                return f"{o.name}: {o.failures[0]}"
        if not self.outputs:
            return "no outputs"
        o = min(self.outputs, key=lambda m: m.cosine if m.cosine is not None else 2.0)
        if o.cosine is None:
            return f"{o.name}: no finite values to compare"
        return f"{o.name}: cos {fmt_metric('cos', o.cosine)}, max |Δ| {o.max_abs:.3g}"

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "passed": self.passed, "outputs": [o.to_json() for o in self.outputs],
                "worst": self.worst, "tolerances": self.tolerances, "unused_tolerances": self.unused}


class _Accumulator:
    """Running error statistics over chunks of (ref, cand) values of one output."""

    def __init__(self, keep_exact: bool) -> None:
        self.n = self.excluded = self.zeros = self.new_nonfinite = 0
        self.nan = self.inf = self.ref_nan = self.ref_inf = 0
        self.max_abs = self.max_rel = 0.0
        self.sum_abs = self.sum_rel = self.r2 = self.c2 = self.d2 = 0.0
        self.hist = np.zeros(_NBINS, np.int64)
        self.kept: list[np.ndarray] | None = [] if keep_exact else None
        self.b64 = np.empty(_CHUNK, np.float64)
        self.keys = np.empty(_CHUNK, np.uint32)  # preallocated: big temporaries cost an mmap each
        self.work: dict[np.dtype, tuple[np.ndarray, np.ndarray]] = {}

    def _dot64(self, x: np.ndarray) -> float:
        b = self.b64[:x.size]
        b[...] = x
        return float(np.dot(b, b))

    def add(self, r: np.ndarray, c: np.ndarray) -> None:
        r2, c2 = self._dot64(r), self._dot64(c)
        if not math.isfinite(r2 + c2):  # a NaN/Inf (or a value over 1e154) is in the chunk
            fr, fc = np.isfinite(r), np.isfinite(c)
            rn, cn = int(np.isnan(r).sum()), int(np.isnan(c).sum())
            self.ref_nan, self.ref_inf = self.ref_nan + rn, self.ref_inf + int(r.size - fr.sum()) - rn
            self.nan, self.inf = self.nan + cn, self.inf + int(c.size - fc.sum()) - cn
            self.new_nonfinite += int((fr & ~fc).sum())
            both = fr & fc
            self.excluded += int(r.size - both.sum())
            r, c = r[both], c[both]
            r2, c2 = self._dot64(r), self._dot64(c)
        n = r.size
        if n == 0:
            return
        if r.dtype not in self.work:
            self.work[r.dtype] = (np.empty(_CHUNK, r.dtype), np.empty(_CHUNK, r.dtype))
        d, t = (w[:n] for w in self.work[r.dtype])
        np.subtract(c, r, out=d)
        self.d2 += self._dot64(d)
        self.r2 += r2
        self.c2 += c2
        np.abs(d, out=d)
        self.max_abs = max(self.max_abs, float(d.max()))
        self.sum_abs += float(np.add.reduce(d))
        np.abs(r, out=t)
        np.maximum(t, REL_EPS, out=t)
        np.divide(d, t, out=t)
        self.max_rel = max(self.max_rel, float(t.max()))
        self.sum_rel += float(np.add.reduce(t))
        d32 = d if d.dtype == np.float32 else d.astype(np.float32)
        # Positive float32 bit patterns sort like their values: the top bits are a log-scale bin index.
        keys = np.right_shift(d32.view(np.uint32), _SHIFT, out=self.keys[:n])
        self.hist += np.bincount(keys, minlength=_NBINS)
        self.zeros += n - int(np.count_nonzero(d))
        self.n += n
        if self.kept is not None:
            self.kept.append(d.copy())

    def quantiles(self, qs: tuple[float, ...]) -> tuple[list[float], str]:
        if self.kept is not None:
            return [float(v) for v in np.quantile(np.concatenate(self.kept), qs)], "exact"
        cum = np.cumsum(self.hist)
        out = []
        for q in qs:
            pos = q * (self.n - 1)
            lo, frac = int(math.floor(pos)), pos - math.floor(pos)
            a, b = _rank_value(self.hist, cum, lo), _rank_value(self.hist, cum, min(lo + 1, self.n - 1))
            out.append(a + frac * (b - a))
        return out, "histogram, within 0.8%"

    def plot_hist(self) -> Hist:
        """|diff| counts on log bins: [0, lo) holds exact zeros (and anything below 2^-40), then ≤ 120 bins.

        Edges are those fine-histogram edges nearest to a geometric series, so counts stay exact and the
        spacing is log-uniform to within 1/128 of an octave.
        """
        nz = np.flatnonzero(self.hist[1:]) + 1
        if nz.size == 0:
            return np.array([0.0, _ABS_HIST_FLOOR]), np.array([self.n], np.int64)
        k_lo = max(int(nz[0]) >> _MBITS << _MBITS, _key_of(_ABS_HIST_FLOOR))  # start on a whole octave
        k_hi = max(int(nz[-1]) + 1, k_lo + 1)
        fine = _edges(np.arange(k_lo, k_hi + 1))
        octaves = math.log2(fine[-1] / fine[0])
        per = 1 << _MBITS  # plot bins per octave: as many as fit in 120 bins
        while octaves * per > 120 and per > 1:
            per //= 2
        targets = fine[0] * 2.0 ** (np.arange(math.ceil(octaves * per - 1e-9) + 1) / per)
        idx = np.unique(np.concatenate([[0], np.searchsorted(fine, targets).clip(0, fine.size - 1), [fine.size - 1]]))
        counts = np.add.reduceat(self.hist[k_lo:k_hi], idx[:-1])
        return np.concatenate([[0.0], fine[idx]]), np.concatenate([[self.hist[:k_lo].sum()], counts]).astype(np.int64)

    def finish(self, m: OutputMetrics) -> None:
        m.compared, m.exact_equal, m.new_nonfinite = self.n, self.zeros, self.new_nonfinite
        m.nan, m.inf, m.ref_nan, m.ref_inf = self.nan, self.inf, self.ref_nan, self.ref_inf
        if self.n == 0:
            return
        m.max_abs, m.mean_abs = self.max_abs, self.sum_abs / self.n
        m.max_rel, m.mean_rel = self.max_rel, self.sum_rel / self.n
        (m.median_abs, m.p99_abs), m.quantiles = self.quantiles((0.5, 0.99))
        nr, nc = math.sqrt(self.r2), math.sqrt(self.c2)
        if nr == 0 or nc == 0:
            m.cosine = 1.0 if nr == nc else 0.0
        else:  # 1 - cos from the diff: stays accurate when cos is within 1e-9 of 1
            m.cosine = max(-1.0, min(1.0, 1.0 - (self.d2 - (nr - nc) ** 2) / (2 * nr * nc)))
        if self.d2 == 0:
            m.snr_db = math.inf
        else:
            m.snr_db = 10 * math.log10(self.r2 / self.d2) if self.r2 > 0 else -math.inf


def _key_of(value: float) -> int:
    """The |diff| histogram bin of a value."""
    return int(np.array([value], np.float32).view(np.uint32)[0] >> _SHIFT)


def _edges(keys: np.ndarray) -> np.ndarray:
    """Lower edges (values) of |diff| histogram bins."""
    return (keys.astype(np.uint32) << _SHIFT).view(np.float32).astype(np.float64)


def _rank_value(hist: np.ndarray, cum: np.ndarray, rank: int) -> float:
    b = int(np.searchsorted(cum, rank, side="right"))
    before = int(cum[b - 1]) if b else 0
    lo, hi = _edges(np.array([b, b + 1]))
    return float(lo + (hi - lo) * (rank - before + 0.5) / int(hist[b]))


def _work_dtype(a: np.dtype, b: np.dtype) -> np.dtype:
    small = (np.float32, np.float16)
    if a.kind == "f" and b.kind == "f" and a.type in small and b.type in small:
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def _flat(arr: np.ndarray) -> np.ndarray:
    return np.asarray(arr).reshape(-1)


def _gather(parts: list[np.ndarray], idx: np.ndarray) -> np.ndarray:
    """Values at sorted global indices of the concatenation of ``parts``, without concatenating."""
    starts = np.cumsum([0] + [p.size for p in parts])
    seg = np.searchsorted(starts, idx, side="right") - 1
    return np.concatenate([parts[s][idx[seg == s] - starts[s]] for s in range(len(parts))] or [np.zeros(0)])


def _class_agreement(ref: list[np.ndarray], cand: list[np.ndarray]) -> tuple[float | None, float | None]:
    if any(r.ndim != 2 or r.shape[1] < 2 for r in ref):
        return None, None
    r, c = np.concatenate(ref), np.concatenate(cand)
    best = r.argmax(axis=1)
    top1 = float(np.mean(best == c.argmax(axis=1)))
    if r.shape[1] <= 5:
        return top1, None
    top5 = np.argpartition(-c, 5, axis=1)[:, :5]
    return top1, float(np.mean((top5 == best[:, None]).any(axis=1)))


def _compare_output(name: str, ref: list[np.ndarray], cand: list[np.ndarray | None],
                    report: CandidateReport, seed: int) -> OutputMetrics:
    m = OutputMetrics(name, list(ref[0].shape), dtype=str(getattr(cand[0], "dtype", "")), ref_dtype=str(ref[0].dtype))
    m.count = sum(int(r.size) for r in ref)
    present = [c for c in cand if c is not None]
    if len(present) != len(cand):
        m.failures.append("the candidate has no output with this name")
        return m
    shapes = [(tuple(r.shape), tuple(c.shape)) for r, c in zip(ref, present, strict=True)]
    if any(a != b for a, b in shapes):
        a, b = next((a, b) for a, b in shapes if a != b)
        m.shape_mismatch = f"shape {list(b)} differs from the reference's {list(a)}"
        m.failures.append(m.shape_mismatch)
    if any(c.dtype != r.dtype for r, c in zip(ref, present, strict=True)):
        m.dtype_mismatch = f"dtype {m.dtype} differs from the reference's {m.ref_dtype}"
        m.failures.append(m.dtype_mismatch)
    if any(int(r.size) != int(c.size) for r, c in zip(ref, present, strict=True)):
        return m  # nothing element-wise to compare
    dt = _work_dtype(ref[0].dtype, present[0].dtype)
    rs, cs = [_flat(r) for r in ref], [_flat(c) for c in present]
    acc = _Accumulator(keep_exact=m.count <= EXACT_QUANTILES_MAX)
    for r, c in zip(rs, cs, strict=True):
        for i in range(0, r.size, _CHUNK):  # converted chunk by chunk: no full-size float64 copies
            acc.add(r[i:i + _CHUNK].astype(dt, copy=False), c[i:i + _CHUNK].astype(dt, copy=False))
    acc.finish(m)
    if m.new_nonfinite:
        m.failures.append(f"{m.new_nonfinite} NaN/Inf value(s) where the reference is finite")
    if not m.shape_mismatch:
        m.top1, m.top5 = _class_agreement(ref, present)
    if m.compared:
        report.histograms[name] = acc.plot_hist()
        _plot_samples(name, rs, cs, m.count, report, seed, dt)
    return m


def _plot_samples(name: str, rs: list[np.ndarray], cs: list[np.ndarray], total: int, report: CandidateReport,
                  seed: int, dt: np.dtype) -> None:
    rng = np.random.default_rng(seed)
    if total <= VALUE_HIST_EXACT_MAX:
        r, c, scale = np.concatenate(rs), np.concatenate(cs), 1.0
    else:  # value distributions of big outputs are estimated from a seeded sample, counts scaled up
        idx = np.sort(rng.integers(0, total, VALUE_SAMPLE))  # with replacement: no costly de-duplication
        r, c, scale = _gather(rs, idx), _gather(cs, idx), total / idx.size
    r, c = r.astype(dt, copy=False), c.astype(dt, copy=False)
    fr, fc = r[np.isfinite(r)], c[np.isfinite(c)]
    if fr.size or fc.size:
        both = np.concatenate([fr, fc]).astype(np.float64)  # float32 edges fail on a range of a few ulps
        edges = np.histogram_bin_edges(both, bins=VALUE_BINS, range=(float(both.min()), float(both.max())))
        report.value_hist[name] = {side: (edges, np.rint(np.histogram(v, bins=edges)[0] * scale).astype(np.int64))
                                   for side, v in (("ref", fr), ("cand", fc))}
    ok = np.flatnonzero(np.isfinite(r) & np.isfinite(c))
    pick = ok if ok.size <= SCATTER_POINTS else ok[np.sort(rng.choice(ok.size, SCATTER_POINTS, replace=False))]
    report.scatter[name] = (r[pick].astype(np.float64), c[pick].astype(np.float64))


def compare_samples(reference: list[dict[str, np.ndarray]], candidate: list[dict[str, np.ndarray]], name: str,
                    tolerances: list[Tolerance] | tuple[Tolerance, ...] = (), *, seed: int = 0,
                    kinds: Mapping[str, OutputKind] | None = None) -> CandidateReport:
    """Compare a candidate's outputs with the reference's, sample by sample, aggregated per output; ``kinds`` says
    what each output means (missing names are judged element-wise)."""
    tols = list(tolerances)
    report = CandidateReport(name, True, [], tolerances=[str(t) for t in tols or DEFAULT_TOLERANCES])
    if len(reference) != len(candidate):
        raise ValueError(f"{len(reference)} reference samples but {len(candidate)} candidate samples")
    for out in (reference[0] if reference else {}):
        ref = [np.asarray(s[out]) for s in reference]
        cand = [np.asarray(s[out]) if out in s else None for s in candidate]
        m = _compare_output(out, ref, cand, report, seed)
        kind = (kinds or {}).get(out) or OutputKind("tensor")
        m.kind, m.kind_spec = kind.kind, kind.text()
        if kind.kind == "audio" and m.shape_mismatch:  # a sound of another length: say it in time, not in dims
            _sound_length(m, ref, cand, kind)
        if kind.part_of:  # one output of a split detection head: judged as the boxes read on its lead
            m.passed = not m.failures
            report.outputs.append(m)
            continue
        if not m.failures and kind.kind in KIND_METRICS:
            present = [c for c in cand if c is not None]  # all of them: a missing output is a failure
            if kind.group:
                kind, ref, present = _decoded_head(kind, reference, candidate)
            result = judge(kind, ref, present)
            if result is not None:
                m.task, m.task_values, m.answers = result.task, result.values, result.answers
                if result.task.get("empty_reference"):  # nothing to judge: the element-wise metrics decide
                    m.task_values = {}
                if "error" in result.task:
                    m.failures.append(str(result.task["error"]))
        judged_by = _judged_by(m, kind, tols, result_defaults(m))
        m.judged_by = [str(t) for t in judged_by]
        m.failures.extend(f for t in judged_by if (f := t.check(m)) is not None and f not in m.failures)
        m.passed = not m.failures
        report.outputs.append(m)
    report.passed = bool(report.outputs) and all(o.passed for o in report.outputs)
    used = {j for o in report.outputs for j in o.judged_by}
    report.unused = [str(t) for t in tols if str(t) not in used]
    return report


def _sound_length(m: OutputMetrics, ref: list[np.ndarray], cand: list[np.ndarray | None], kind: OutputKind) -> None:
    """A waveform whose length changed (a TTS voice's durations moved): its failure in samples and milliseconds."""
    pair = next(((r, c) for r, c in zip(ref, cand, strict=True) if c is not None and r.shape != c.shape), None)
    if pair is None or pair[0].ndim != pair[1].ndim:
        return
    r, c = pair
    axis = int(np.argmax(r.shape))
    delta = int(c.shape[axis]) - int(r.shape[axis])
    rate = kind.rate or 16000
    words = (f"the sound is {abs(delta)} samples ({abs(delta) / rate * 1000:.0f} ms at {rate} Hz"
             f"{'' if kind.rate else ', assumed'}) {'longer' if delta > 0 else 'shorter'} than the reference's "
             f"({r.shape[axis]} samples): its timing changed")
    m.failures[m.failures.index(m.shape_mismatch)] = words
    m.shape_mismatch = words


def _decoded_head(kind: OutputKind, reference: list[dict[str, np.ndarray]], candidate: list[dict[str, np.ndarray]]
                  ) -> tuple[OutputKind, list[np.ndarray], list[np.ndarray]]:
    """A split detection head's boxes on both sides (app.core.measure.heads), and the kind that reads them."""
    from app.core.measure.heads import decoded

    plain, ref = decoded(kind, reference)
    _, cand = decoded(kind, candidate)
    return plain, ref, cand


def result_defaults(m: OutputMetrics) -> tuple[str, ...]:
    """The kind's default task tolerances for this output (image: IoU for probabilities, else PSNR)."""
    from app.core.measure.answers import DEFAULT_TASK_TOLERANCES, IMAGE_NOT_PROBABILITY

    if m.task is None:
        return ()
    if m.kind == "image" and not m.task.get("probability"):
        return IMAGE_NOT_PROBABILITY
    return DEFAULT_TASK_TOLERANCES.get(m.kind, ())


def _judged_by(m: OutputMetrics, kind: OutputKind, tols: list[Tolerance], defaults: tuple[str, ...]
               ) -> list[Tolerance]:
    """The tolerances one output is judged by. An output whose answer was judged (image, classes, detections, yolo,
    sequence): the user's tolerances on its kind's task metrics, else the kind's defaults. Any other output: the
    user's element-wise (and top-1/top-5) tolerances, else cosine ≥ 0.99. To hold a task output to an element-wise
    tolerance, set its kind to tensor."""
    judged = m.task is not None and "error" not in m.task and not m.task.get("empty_reference")
    own = KIND_METRICS.get(kind.kind, ()) if judged else ()
    if own:
        mine = [t for t in tols if t.metric in own]
        return mine or [Tolerance.parse(d) for d in defaults]
    mine = [t for t in tols if t.metric in ELEMENTWISE or t.metric in ("top1", "top5")]
    return mine or list(DEFAULT_TOLERANCES)


def compare_report_json(reference_name: str, samples: int, candidates: list[CandidateReport]) -> dict:
    """The `trtlab compare --json` document (CLI.md keys, plus how the numbers were computed)."""
    return {"reference": reference_name, "samples": samples, "candidates": [c.to_json() for c in candidates],
            "rel_eps": REL_EPS, "snr_cap_db": SNR_CAP_DB,
            "method": "rel = |cand-ref| / max(|ref|, rel_eps); NaN/Inf positions excluded from error statistics; "
                      f"SNR of ±infinity written as ±{SNR_CAP_DB:g} dB"}
