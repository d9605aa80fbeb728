"""What the Results view holds: comparisons and benchmarks gathered over a session, one row per candidate.

A new comparison or benchmark adds its candidates; a re-run of a candidate replaces its own
row. Comparisons against another reference are not comparable with the earlier ones: they replace them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from app.core.measure.answers import empty_reference, task_words
from app.core.measure.compute import Emulation, target_emulations
from app.core.measure.latency import speed_reference, speedups

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


COLUMNS = ["Variant", "Verdict", "Speed-up", "Median latency", "Worst output", "NaN / Inf", "Note"]


class ResultsState:
    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.reference: str | None = None              # the comparisons' reference
        self.candidates: dict[str, dict] = {}          # candidate name -> its entry of the compare JSON
        self.plots: dict[str, dict] = {}               # candidate name -> output -> plot data
        self.random: dict[str, bool] = {}              # candidate name -> compared on random input data
        self.samples: dict[str, int] = {}              # candidate name -> samples compared
        self.notes: dict[str, list[str]] = {}          # target -> notes of its runs
        self.bench: dict[str, dict] = {}               # target -> bench JSON
        self.bench_reference: str | None = None        # the reference of the latest benchmark
        self.plan_precisions: dict[str, frozenset[str]] = {}  # `B:plan` target -> precisions its plan used
        self.answers: dict = {}                        # the compare JSON's "answers", merged over comparisons
        self.inputs_text: dict[str, str] = {}          # candidate name -> what its inputs were, in words
        self.kinds: dict[str, dict] = {}               # output -> its kind (the compare JSON's "output_kinds")
        self._colors: dict[str, int] = {}

    @property
    def empty(self) -> bool:
        return not self.candidates and not self.bench

    # ----------------------------------------------------------------- data in
    def add_compare(self, doc: dict, plan_precisions: Iterable[str] = ()) -> list[str]:
        """Adds a compare JSON; returns the candidates dropped because they had another reference."""
        ref = str(doc.get("reference") or "")
        dropped: list[str] = []
        if self.reference is not None and ref != self.reference:
            dropped = list(self.candidates)
            self.candidates, self.plots, self.random, self.samples = {}, {}, {}, {}
        self.reference = ref
        plots = doc.get("plots") or {}
        for c in doc.get("candidates", []):
            name = c["name"]
            self.candidates[name] = c  # a dict keeps the first position of a key: a re-run stays in its row
            self.plots[name] = plots.get(name, {})
            self.random[name] = bool(doc.get("random_data"))
            self.samples[name] = int(doc.get("samples") or 0)
            self.inputs_text[name] = str(doc.get("inputs") or "")
            self._color(name)
        self._remember_plan([c["name"] for c in doc.get("candidates", [])], plan_precisions)
        self.notes.update({k: list(v) for k, v in (doc.get("notes") or {}).items()})
        self._merge_answers(doc.get("answers") or {}, dropped)
        self.kinds.update(doc.get("output_kinds") or {})
        return dropped

    def _merge_answers(self, answers: dict, dropped: list[str]) -> None:
        """A comparison's pictures: its inputs replace earlier ones when they differ (earlier pictures then go)."""
        if not answers:
            return
        if dropped or answers.get("inputs") != self.answers.get("inputs"):
            self.answers = {"inputs": answers.get("inputs") or [], "outputs": {}}
        outs = self.answers.setdefault("outputs", {})
        for name, entry in (answers.get("outputs") or {}).items():
            mine = outs.setdefault(name, {"kind": entry.get("kind"), "ref": entry.get("ref"), "candidates": {}})
            mine["ref"] = entry.get("ref") or mine.get("ref")
            if entry.get("ref_sound"):  # audio outputs: the reference's sound
                mine["ref_sound"] = entry["ref_sound"]
            mine["candidates"].update(entry.get("candidates") or {})

    def kind_of(self, output: str) -> str:
        return str((self.kinds.get(output) or {}).get("kind") or "")

    def output_entry(self, candidate: str, output: str) -> dict | None:
        """A candidate's entry for one output in the compare JSON."""
        return next((o for o in (self.candidates.get(candidate) or {}).get("outputs") or [] if o["name"] == output),
                    None)

    def add_bench(self, doc: dict, reference: str | None = None, plan_precisions: Iterable[str] = ()) -> None:
        """Adds one target's bench JSON; ``reference``: the target the speed-ups of its benchmark are
        relative to (the first benchmarked one when not said)."""
        target = str(doc["backend"])
        self.bench[target] = doc
        if reference:
            self.bench_reference = reference
        elif self.bench_reference is None:
            self.bench_reference = target
        self.notes[target] = list(doc.get("notes") or [])
        self._remember_plan([target], plan_precisions)
        self._color(target)

    def _remember_plan(self, targets: list[str], precisions: Iterable[str]) -> None:
        got = frozenset(precisions)
        for t in targets:
            if t.endswith(":plan"):
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
        return out

    def _compare_row(self, label: str, name: str, c: dict) -> Row:
        outputs = c.get("outputs") or []
        worst = min(outputs, key=lambda o: o["cosine"] if o.get("cosine") is not None else -2) if outputs else None
        row = Row(label, name, passed=bool(c.get("passed")))
        row.verdict = "✓ Same answers" if c.get("passed") else "✗ Answers differ"
        tasks = [o for o in outputs if o.get("task") and "error" not in o["task"]]
        if tasks and all(empty_reference(o) for o in tasks):  # nothing to judge by the answer: the values decided
            row.verdict = ("✓ Values close" if c.get("passed") else "✗ Values differ") + " (no answer to compare)"
        if self.emulations(name):
            row.verdict += " (indicative)"
        judged = [o for o in outputs if o.get("task")]
        if judged:
            bad = next((o for o in judged if not o.get("passed", True)), judged[0])
            row.worst = task_words(bad) + (f" ({bad['name']})" if len(outputs) > 1 else "")
            row.worst_tip = (f"Output {bad['name']} ({bad.get('kind')}): {task_words(bad)}; cosine "
                             f"{_fmt(bad.get('cosine'), 6)}, max |Δ| {_fmt(bad.get('max_abs'), 6)}")
            row.nan = f"{sum(o.get('nan', 0) for o in outputs)} / {sum(o.get('inf', 0) for o in outputs)}"
        elif worst is not None:
            cos = "—" if worst.get("cosine") is None else f"{worst['cosine']:.6f}"
            row.worst = f"cos {cos} · max |Δ| {_fmt(worst.get('max_abs'))}"
            row.worst_tip = f"Worst output: {worst['name']}, cosine {cos}, max |Δ| {_fmt(worst.get('max_abs'), 6)}"
            if len(outputs) > 1:
                row.worst += f" ({worst['name']})"
            row.nan = f"{sum(o.get('nan', 0) for o in outputs)} / {sum(o.get('inf', 0) for o in outputs)}"
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
        median = (doc.get("latency_ms") or {}).get("median")
        row.latency = f"{median:.3f} ms" if median is not None else "—"
        if doc.get("unstable") and doc.get("cov") is not None:
            notes.append(f"latency unstable (CoV {doc['cov']:.1%})")
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
            row.speed_tip = f"Median latency {ref}: {self.bench[ref]['latency_ms']['median']:.3f} ms, {t}: " \
                            f"{median:.3f} ms (ratio {s:.3f})."
            ref_mode = self.bench[ref].get("mode")
            if ref_mode and doc.get("mode") and doc["mode"] != ref_mode:
                row.speed_tip += (f" Timed {doc['mode'].replace('_', '-')} against the reference's "
                                  f"{ref_mode.replace('_', '-')}: not like for like.")

    def headline(self) -> str:
        parts = []
        if self.candidates:
            ok = sum(bool(c.get("passed")) for c in self.candidates.values())
            n = len(self.candidates)
            parts.append(f"{ok} of {n} candidate{'s' if n != 1 else ''} give{'s' if n == 1 else ''} the same answers "
                         f"as {self.reference}")
        speed = {t: s for t, s in self.speedups().items() if t != self.speed_reference() and not self.emulations(t)}
        if speed:
            best = max(speed, key=speed.__getitem__)
            s = speed[best]
            parts.append(f"fastest: {best}, {s:.2f}× the reference's speed" if s >= 1 else
                         f"none is faster than {self.speed_reference()} (best: {best}, {1 / s:.2f}× slower)")
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
            text = str(d.get("warning") or "")
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
            names += [o["name"] for o in c.get("outputs") or [] if o["name"] not in names]
        return names

    def compare_doc(self) -> dict | None:
        """The gathered comparisons in the compare JSON's shape (None before any)."""
        if not self.candidates:
            return None
        return {"reference": self.reference, "candidates": list(self.candidates.values()), "plots": dict(self.plots),
                "notes": dict(self.notes), "random_data": any(self.random.values()), "answers": dict(self.answers),
                "samples": max(self.samples.values(), default=0),
                "inputs": next((t for t in self.inputs_text.values() if t), ""),
                "output_kinds": dict(self.kinds)}
