"""What the Results view holds: comparisons and benchmarks gathered over a session, one row per candidate.

A new comparison or benchmark adds its candidates; a re-run of a candidate replaces its own
row. Comparisons against another reference are not comparable with the earlier ones: they replace them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from app.core.measure.answers import empty_reference, task_words
from app.core.measure.compute import Emulation, target_emulations
from app.core.measure.latency import speed_reference, speedups
from app.core.results import (
    AnswerPictures,
    Answers,
    BenchResult,
    CandidateResult,
    CompareResult,
    EvalCandidate,
    EvaluationResult,
    KindInfo,
    OutputAnswers,
    OutputResult,
    Placement,
    PlotData,
    RandomOps,
)
from app.core.targets import Target

RANDOM_CALIBRATION = "CALIBRATED ON RANDOM DATA"
RANDOM_NOTE = "random numbers: "      # a compare note on the model's random nodes (random_draws.py)
NOISE_FLOOR_NOTE = "noise floor"      # a candidate judged against, or set beside, the reference's noise floor
# app.core.measure.latency's jitter warning (always its last part): grouped over targets, its advice said once
_JITTER = re.compile(r"latency varies a lot between runs \(CoV ([\d.]+%) > ([\d.]+%)\): (.+)$")


def _fmt(v: object, digits: int = 3) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        if math.isinf(v):
            return "∞"
        return f"{v:.{digits}g}"
    return str(v)


@dataclass
class Row:
    """One scorecard row, in plain words."""

    label: str
    target: str
    verdict: str = "—"
    passed: bool | None = None
    speed: str = "—"
    speed_tip: str = ""
    latency: str = "—"
    worst: str = "—"
    nan: str = "—"
    note: str = ""
    worst_tip: str = ""

    def cells(self) -> list[str]:
        return [self.label, self.verdict, self.speed, self.latency, self.worst, self.nan, self.note]


# A dataset evaluation's metrics as people write them, and which ones each task shows (the first is the main one).
METRIC_NAMES = {"map50": "mAP50", "map": "mAP", "mean_iou": "mean IoU", "top1": "top-1", "top5": "top-5",
                "miou": "mIoU", "dice": "Dice", "cer": "CER", "wer": "WER", "exact": "exact match"}
TASK_METRICS = {"detection": ("map50", "map", "mean_iou"), "classification": ("top1", "top5"),
                "segmentation": ("miou", "dice"), "recognition": ("cer", "wer", "exact")}


def metric_name(metric: str) -> str:
    return METRIC_NAMES.get(metric, metric)


def shown_metrics(doc: EvaluationResult) -> list[str]:
    """The evaluation's metrics worth a column, the main one first."""
    measured = doc.reference.metrics
    order = [doc.main_metric, *TASK_METRICS.get(doc.dataset.task, ())] if doc.main_metric else \
        list(TASK_METRICS.get(doc.dataset.task, ()))
    shown = [m for m in dict.fromkeys(order) if m and m in measured]
    return shown or list(measured)


def main_metric(doc: EvaluationResult) -> str:
    shown = shown_metrics(doc)
    return shown[0] if shown else ""


def points(fraction: float) -> str:
    """A difference of fractions in percentage points, signed, with a true minus: "−1.4"."""
    return f"{fraction * 100:+.1f}".replace("-", "−")


def _value(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}"


def metric_change(doc: EvaluationResult, cand: EvalCandidate, metric: str, interval: bool = True) -> str:
    """``0.512 → 0.498 (−1.4 pts, 95 % CI −2.0 … −0.8)``; the interval left out with `interval` False."""
    text = f"{_value(doc.reference.metrics.get(metric))} → {_value(cand.metrics.get(metric))}"
    delta = cand.delta.get(metric)
    if delta is None:
        return text
    ci = cand.interval(metric) if interval else None
    ci_text = f", 95 % CI {points(ci[0])} … {points(ci[1])}" if ci is not None else ""
    return f"{text} ({points(delta)} pts{ci_text})"


def dataset_line(doc: EvaluationResult | None, target: str) -> str:
    """A candidate's main metric on the dataset, ``mAP50 0.512 → 0.498 (−1.4 pts)``; "" when it was not
    evaluated."""
    if doc is None:
        return ""
    cand = next((c for c in doc.candidates if c.name == target), None)
    metric = main_metric(doc)
    if cand is None or not metric:
        return ""
    return f"{metric_name(metric)} {metric_change(doc, cand, metric, interval=False)}"


COLUMNS = ["Variant", "Verdict", "Speed-up", "Median latency", "Worst output", "NaN / Inf", "Note"]


class ResultsState:
    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.reference: str | None = None              # the comparisons' reference
        self.candidates: dict[str, CandidateResult] = {}     # candidate name -> its result
        self.plots: dict[str, Mapping[str, PlotData]] = {}   # candidate name -> output -> plot data
        self.random: dict[str, bool] = {}              # candidate name -> compared on random input data
        self.samples: dict[str, int] = {}              # candidate name -> samples compared
        self.notes: dict[str, list[str]] = {}          # target -> notes of its runs
        self.bench: dict[str, BenchResult] = {}        # target -> its benchmark
        self.bench_reference: str | None = None        # the reference of the latest benchmark
        self.plan_precisions: dict[str, frozenset[str]] = {}  # `B:plan` target -> precisions its plan used
        self.answers: Answers | None = None            # the comparisons' answers as pictures, merged
        self.inputs_text: dict[str, str] = {}          # candidate name -> what its inputs were, in words
        self.kinds: dict[str, KindInfo] = {}           # output -> its kind (the compare result's `output_kinds`)
        self.random_ops: RandomOps | None = None       # the latest comparison's random nodes
        self.placement: dict[str, Placement] = {}      # target -> where its nodes ran in the comparison
        self.evaluation: EvaluationResult | None = None  # the latest evaluation on a labelled dataset
        self._colors: dict[str, int] = {}

    @property
    def empty(self) -> bool:
        return not self.candidates and not self.bench and self.evaluation is None

    def add_evaluation(self, doc: EvaluationResult) -> None:
        """The latest evaluation on a dataset replaces the one before (each is a whole picture of the dataset)."""
        self.evaluation = doc
        for c in doc.candidates:
            self._color(c.name)

    def dataset_line(self, target: str) -> str:
        return dataset_line(self.evaluation, target)

    # ----------------------------------------------------------------- data in
    def add_compare(self, doc: CompareResult, plan_precisions: Iterable[str] = ()) -> list[str]:
        """Adds a comparison; returns the candidates dropped because they had another reference."""
        ref = doc.reference
        dropped: list[str] = []
        if self.reference is not None and ref != self.reference:
            dropped = list(self.candidates)
            self.candidates, self.plots, self.random, self.samples = {}, {}, {}, {}
        self.reference = ref
        for c in doc.candidates:
            name = c.name
            self.candidates[name] = c  # a dict keeps the first position of a key: a re-run stays in its row
            self.plots[name] = doc.plots.get(name, {})
            self.random[name] = doc.random_data
            self.samples[name] = doc.samples
            self.inputs_text[name] = doc.inputs
            self._color(name)
        self._remember_plan([c.name for c in doc.candidates], plan_precisions)
        self.notes.update({k: list(v) for k, v in doc.notes.items()})
        self._merge_answers(doc.answers, dropped)
        self.kinds.update(doc.output_kinds)
        self.random_ops = doc.random_ops
        self.placement.update(doc.placement)
        return dropped

    def _merge_answers(self, answers: Answers | None, dropped: list[str]) -> None:
        """A comparison's pictures: its inputs replace earlier ones when they differ (earlier pictures then go)."""
        if answers is None:
            return
        if dropped or self.answers is None or answers.inputs != self.answers.inputs:
            self.answers = answers.replace(outputs={})
        outs: dict[str, OutputAnswers] = dict(self.answers.outputs)
        for name, entry in answers.outputs.items():
            mine = outs.get(name)
            if mine is None:
                outs[name] = entry
                continue
            merged: dict[str, AnswerPictures] = {**mine.candidates, **entry.candidates}
            outs[name] = mine.replace(ref=entry.ref or mine.ref, ref_sound=entry.ref_sound or mine.ref_sound,
                                      candidates=merged)
        self.answers = self.answers.replace(outputs=outs, photos=answers.photos)

    def kind_of(self, output: str) -> str:
        info = self.kinds.get(output)
        return info.kind if info is not None else ""

    def output_entry(self, candidate: str, output: str) -> OutputResult | None:
        """A candidate's result for one output."""
        c = self.candidates.get(candidate)
        return c.output(output) if c is not None else None

    def add_bench(self, doc: BenchResult, reference: str | None = None, plan_precisions: Iterable[str] = ()) -> None:
        """Adds one target's benchmark; ``reference``: the target the speed-ups of its benchmark are relative to
        (the first benchmarked one when not said)."""
        target = doc.backend
        self.bench[target] = doc
        if reference:
            self.bench_reference = reference
        elif self.bench_reference is None:
            self.bench_reference = target
        self.notes[target] = list(doc.notes)
        self._remember_plan([target], plan_precisions)
        self._color(target)

    def _remember_plan(self, targets: list[str], precisions: Iterable[str]) -> None:
        got = frozenset(precisions)
        for t in targets:
            if Target.read(t).needs_plan:
                self.plan_precisions[t] = got

    def _color(self, target: str) -> int:
        return self._colors.setdefault(target, len(self._colors))

    def color_index(self, target: str) -> int:
        return self._color(target)

    # ----------------------------------------------------------------- reading
    def display_reference(self) -> str:
        return self.reference or self.bench_reference or ""

    def speed_reference(self) -> str:
        """What the speed-ups are relative to (app.core.measure.latency.speed_reference, the one rule)."""
        return speed_reference(self.bench, self.reference or "", self.bench_reference or "")

    def emulations(self, target: str) -> list[Emulation]:
        return target_emulations(target, self.plan_precisions.get(target, ()))

    def speedups(self) -> dict[str, float]:
        """Median-latency ratios to the speed reference (> 1: faster), for every benchmarked target."""
        return {t: s for t, s in speedups(self.bench, self.speed_reference()).items() if s is not None}

    def rows(self) -> list[Row]:
        """The reference first, then the candidates in the order they first ran, then targets only benchmarked."""
        ref = self.display_reference()
        rows: dict[str, Row] = {}
        if ref:
            rows[ref] = Row(f"{ref} (reference)", ref, verdict="reference")
        for name, c in self.candidates.items():
            key = name if name != ref else f"{name} (candidate)"
            rows[key] = self._compare_row(key, name, c)
        for t in self.bench:
            if t not in rows:
                rows[t] = Row(t, t, verdict="not compared")
        out = list(rows.values())
        for row in out:
            self._speed_cells(row)
        if self.evaluation is not None:
            out = self._evaluation_rows(out, self.evaluation)
        return out

    def _evaluation_rows(self, rows: list[Row], doc: EvaluationResult) -> list[Row]:
        """Each evaluated candidate's main metric on the dataset beside its verdict; a row of its own (and one for
        the evaluation's reference) where it was only evaluated."""
        by_target = {r.target: r for r in rows}
        if not rows:
            ref = doc.reference.name
            by_target[ref] = Row(f"{ref} (reference)", ref, verdict="reference")
            rows.append(by_target[ref])
        for c in doc.candidates:
            line = f"dataset {dataset_line(doc, c.name)}"
            row = by_target.get(c.name)
            if row is None:
                row = Row(c.name, c.name, passed=c.passed, verdict=("✓ " if c.passed else "✗ ") + line)
                rows.append(row)
            else:
                row.verdict += f" · {line}"
        return rows

    def _compare_row(self, label: str, name: str, c: CandidateResult) -> Row:
        outputs = c.outputs
        worst = min(outputs, key=lambda o: o.cosine if o.cosine is not None else -2) if outputs else None
        row = Row(label, name, passed=c.passed)
        row.verdict = "✓ Same answers" if c.passed else "✗ Answers differ"
        tasks = [o for o in outputs if o.judged_by_answer]
        if tasks and all(empty_reference(o) for o in tasks):  # nothing to judge by the answer: the values decided
            row.verdict = ("✓ Values close" if c.passed else "✗ Values differ") + " (no answer to compare)"
        if self.emulations(name):
            row.verdict += " (indicative)"
        judged = [o for o in outputs if o.task is not None]
        if judged:
            bad = next((o for o in judged if not o.passed), judged[0])
            row.worst = task_words(bad) + (f" ({bad.name})" if len(outputs) > 1 else "")
            row.worst_tip = (f"Output {bad.name} ({bad.kind}): {task_words(bad)}; cosine "
                             f"{_fmt(bad.cosine, 6)}, max |Δ| {_fmt(bad.max_abs, 6)}")
            row.nan = f"{sum(o.nan for o in outputs)} / {sum(o.inf for o in outputs)}"
        elif worst is not None:
            cos = "—" if worst.cosine is None else f"{worst.cosine:.6f}"
            row.worst = f"cos {cos} · max |Δ| {_fmt(worst.max_abs)}"
            row.worst_tip = f"Worst output: {worst.name}, cosine {cos}, max |Δ| {_fmt(worst.max_abs, 6)}"
            if len(outputs) > 1:
                row.worst += f" ({worst.name})"
            row.nan = f"{sum(o.nan for o in outputs)} / {sum(o.inf for o in outputs)}"
        return row

    def _speed_cells(self, row: Row) -> None:
        t = row.target
        doc = self.bench.get(t)
        notes = [e.sentence for e in self.emulations(t)]
        if any(RANDOM_CALIBRATION in n for n in self.notes.get(t, [])):
            notes.append("INT8 calibrated on random data")
        if doc is None:
            row.note = "; ".join(notes)
            return
        median = doc.latency_ms.median
        row.latency = f"{median:.3f} ms" if median is not None else "—"
        if doc.unstable and doc.cov is not None:
            notes.append(f"latency unstable (CoV {doc.cov:.1%})")
        row.note = "; ".join(notes)
        speed = self.speedups()
        ref = self.speed_reference()
        emulated = self.emulations(t)
        if t not in speed:
            row.speed = "—"
            row.speed_tip = f"Benchmark {ref or 'the reference'} too to see a speed-up."
        elif emulated:
            row.speed = f"n/a ({emulated[0].short})"
            row.speed_tip = emulated[0].sentence + "."
        elif t == ref:
            row.speed = "1.00× (reference)"
        else:
            s = speed[t]
            row.speed = f"{s:.2f}× faster" if s >= 1 else f"{1 / s:.2f}× slower"
            row.speed_tip = f"Median latency {ref}: {self.bench[ref].latency_ms.median or 0:.3f} ms, {t}: " \
                            f"{median or 0:.3f} ms (ratio {s:.3f})."
            ref_mode = self.bench[ref].mode
            if ref_mode and doc.mode and doc.mode != ref_mode:
                row.speed_tip += (f" Timed {doc.mode.replace('_', '-')} against the reference's "
                                  f"{ref_mode.replace('_', '-')}: not like for like.")

    def headline(self) -> str:
        parts = []
        if self.candidates:
            ok = sum(c.passed for c in self.candidates.values())
            n = len(self.candidates)
            parts.append(f"{ok} of {n} candidate{'s' if n != 1 else ''} give{'s' if n == 1 else ''} the same answers "
                         f"as {self.reference}")
        speed = {t: s for t, s in self.speedups().items() if t != self.speed_reference() and not self.emulations(t)}
        if speed:
            best = max(speed, key=speed.__getitem__)
            s = speed[best]
            parts.append(f"fastest: {best}, {s:.2f}× the reference's speed" if s >= 1 else
                         f"none is faster than {self.speed_reference()} (best: {best}, {1 / s:.2f}× slower)")
        if self.evaluation is not None and self.evaluation.candidates:
            doc = self.evaluation
            ok = sum(c.passed for c in doc.candidates)
            said = f"on the dataset, {ok} of {len(doc.candidates)} within tolerance of {doc.reference.name}"
            parts.append(said if parts else said[0].upper() + said[1:])
        return "; ".join(parts) if parts else "Run a comparison or a benchmark to see results here."

    def warnings(self) -> list[str]:
        """What a reader must know before trusting the rows, most important first."""
        warn = []
        if any(self.random.values()):
            warn.append("These results come from random input data: accuracy on real inputs may differ. Choose an "
                        "input folder for a real measure.")
        seen = []
        for t in [*self.candidates, *self.bench]:
            for e in self.emulations(t):
                if e.sentence not in seen:
                    seen.append(e.sentence)
        warn += [f"{s}." for s in seen]
        for t, ns in self.notes.items():
            if (t in self.candidates or t in self.bench) and any(RANDOM_CALIBRATION in n for n in ns):
                warn.append(f"{t}: INT8 calibrated on random data — its scales and errors say little about real "
                            "inputs. An input folder calibrates it too.")
        warn += self._random_warnings()
        return warn + self._bench_warnings()

    def _random_warnings(self) -> list[str]:
        """A model that draws random numbers: how its draws were matched (the reference's note), and each candidate
        whose draws could not match and what judged it (random_draws.py writes these notes)."""
        ref = [n for n in self.notes.get(self.reference or "", []) if n.startswith(RANDOM_NOTE)]
        out = [n[0].upper() + n[1:] for n in ref[:1]]
        for t in self.candidates:
            out += [f"{t}: {n}" for n in self.notes.get(t, []) if t != self.reference and (
                n.startswith(NOISE_FLOOR_NOTE) or (n.startswith(RANDOM_NOTE) and " the same seeds " not in n))]
        return out

    def _bench_warnings(self) -> list[str]:
        """The benchmarks' warnings, each said once for all the targets it concerns."""
        jitter: dict[str, list[str]] = {}   # advice -> "target CoV"
        other: dict[str, list[str]] = {}    # warning -> targets
        limit = ""
        for t, d in self.bench.items():
            text = d.warning
            m = _JITTER.search(text)
            if m:
                jitter.setdefault(m.group(3), []).append(f"{t} {m.group(1)}")
                limit, text = m.group(2), text[:m.start()].rstrip("; ")
            if text:
                other.setdefault(text, []).append(t)
        out = [f"Latency varies a lot between runs (CoV above {limit}: {', '.join(items)}): {advice}."
               for advice, items in jitter.items()]
        return out + [f"{', '.join(ts)}: {text}." for text, ts in other.items()]

    def outputs(self) -> list[str]:
        """Output names, in the model's order, of every compared candidate."""
        names: list[str] = []
        for c in self.candidates.values():
            names += [o.name for o in c.outputs if o.name not in names]
        return names

    def compare_doc(self) -> CompareResult | None:
        """The gathered comparisons as one compare result (None before any)."""
        if not self.candidates:
            return None
        return CompareResult(reference=self.reference or "", candidates=tuple(self.candidates.values()),
                             plots=dict(self.plots), notes={k: tuple(v) for k, v in self.notes.items()},
                             random_data=any(self.random.values()), answers=self.answers,
                             samples=max(self.samples.values(), default=0),
                             inputs=next((t for t in self.inputs_text.values() if t), ""),
                             output_kinds=dict(self.kinds), random_ops=self.random_ops,
                             placement=dict(self.placement))
