"""`trtlab tune`: a runtime's own settings (CUDA graphs, NHWC, cuDNN's algorithm search and workspace, the graph
optimisation level; the CPU's threads and execution mode) tried on one target, each combination timed in several
sessions and kept only where its answers equal the default settings'.

The search is one setting at a time from the target's own settings, then the winners together: every value of a
setting that was faster alone, combined (a full grid of the CUDA provider's settings is 96 combinations, each timed in
several sessions). Several sessions per combination because ONNX Runtime's CUDA provider picks cuDNN algorithms per
session: one session's time is one draw of that choice, not the setting's speed."""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from app.backends import BackendUnavailable, Target
from app.backends.tasks.common import (
    Prepared,
    open_ort_session,
    output_kinds,
    prepare_samples,
    progress,
    variant_path,
)
from app.backends.tasks.specs import takes
from app.backends.tasks.speed_specs import TuneSpec
from app.core.targets import KNOBS

if TYPE_CHECKING:
    from app.core.measure import OutputKind
    from app.jobs import JobContext

# Settings tried when none are named: the knobs; `inter_threads` only matters in parallel mode, so it is
# tried only when asked for.
DEFAULT_KNOBS = {"ort-cuda": ("cuda_graph", "nhwc", "conv_algo", "conv_workspace", "opt"),
                 "ort-cpu": ("threads", "mode", "opt")}
FASTER = 0.97   # a setting "wins" alone when its median is at least 3 % under the base's


@dataclass
class _Trial:
    target: Target
    status: str = "ok"
    sessions_ms: list[float] = field(default_factory=list)
    verdict: str = ""
    message: str = ""

    @property
    def median_ms(self) -> float | None:
        return statistics.median(self.sessions_ms) if self.sessions_ms else None

    def to_json(self, base_ms: float | None) -> dict:
        median = self.median_ms
        spread = ((max(self.sessions_ms) - min(self.sessions_ms)) / median
                  if median and len(self.sessions_ms) > 1 else None)
        doc: dict = {"target": self.target.name, "knobs": self.target.settings, "status": self.status,
                     "median_ms": _r(median), "sessions_ms": [_r(t) for t in self.sessions_ms], "spread": _r(spread),
                     "speedup": _r(base_ms / median) if base_ms and median else None}
        doc.update({k: v for k, v in (("verdict", self.verdict), ("message", self.message)) if v})
        return doc


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 4)


def values_to_try(backend: str, knob: str, current: str | None) -> list[str]:
    """The values of one setting to try against the current one (a thread count: 1, 2, half and all the cores)."""
    allowed = KNOBS[backend][knob]
    if allowed == ("a count",):
        cores = os.cpu_count() or 1
        return [str(n) for n in sorted({1, 2, max(1, cores // 2), cores}) if str(n) != current and n <= cores]
    default = current or allowed[0]
    return [v for v in allowed if v != default]


@takes(TuneSpec)
def tune_task(spec: TuneSpec, ctx: JobContext | None) -> dict:
    """`trtlab tune`: the target's settings tried, answers checked against its own settings', the fastest kept."""
    base = spec.target
    prep = prepare_samples(spec, ctx)
    progress(ctx, 0.0, f"Preparing {base.name}…")
    path, notes = variant_path(prep.model_path, base.base, ctx, spec)
    knobs = spec.knobs or DEFAULT_KNOBS.get(base.backend, tuple(KNOBS[base.backend]))
    singles = [base.with_knobs({**base.settings, k: v}) for k in knobs for v in values_to_try(base.backend, k,
                                                                                              base.settings.get(k))]
    total = len(singles) + 2
    runner = _Runner(spec, prep, path, ctx, total)
    default, reference = runner.trial(base, None, None)
    if default.status != "ok":
        raise BackendUnavailable(f"{base.name} did not run with its own settings: {default.message}",
                                 fix="Check that the target runs (trtlab bench) before tuning it.")
    kinds = output_kinds(spec, prep, reference)
    base_ms = default.median_ms
    trials = [runner.trial(t, reference, kinds)[0] for t in singles]
    # The winners together: each setting's fastest value that beat the base alone, when two or more settings won.
    winners: dict[str, tuple[float, str]] = {}
    for t in trials:
        if t.status == "ok" and t.median_ms is not None and base_ms and t.median_ms < FASTER * base_ms:
            (k, v), = ((k, v) for k, v in t.target.settings.items() if base.settings.get(k) != v)
            if k not in winners or t.median_ms < winners[k][0]:
                winners[k] = (t.median_ms, v)
    if len(winners) > 1:
        combined = base.with_knobs({**base.settings, **{k: v for k, (_, v) in winners.items()}})
        trials.append(runner.trial(combined, reference, kinds)[0])
    kept = [t for t in trials if t.status == "ok" and t.median_ms is not None]
    best = min(kept, key=lambda t: t.median_ms or 0.0, default=None)
    if best is None or base_ms is None or (best.median_ms or 0.0) >= base_ms:
        best = default  # nothing beat the target's own settings: they are the choice
    progress(ctx, 1.0, "Tuned")
    batch = next(iter(prep.shapes.values()), (1,))[0] if prep.shapes else 1
    best_ms = best.median_ms
    return {"target": base.name, "batch": int(batch or 1), "mode": spec.mode, "sessions": spec.sessions,
            "default": default.to_json(base_ms), "trials": [t.to_json(base_ms) for t in trials],
            "best": best.target.name, "best_speedup": _r(base_ms / best_ms) if base_ms and best_ms else None,
            "shapes": {k: list(v) for k, v in prep.shapes.items()}, "notes": notes + runner.notes,
            "device": "gpu" if not base.on_cpu else "cpu"}


class _Runner:
    """Times one combination in `spec.sessions` sessions; the first session's answers are checked."""

    def __init__(self, spec: TuneSpec, prep: Prepared, path: str, ctx: JobContext | None, total: int) -> None:
        self.spec, self.prep, self.path, self.ctx, self.total = spec, prep, path, ctx, total
        self.done = 0
        self.notes: list[str] = []

    def trial(self, target: Target, reference: list[dict[str, np.ndarray]] | None,
              kinds: dict[str, OutputKind] | None) -> tuple[_Trial, list[dict[str, np.ndarray]]]:
        from app.core.measure import Budget, MeasureCancelled, compare_samples, device_of, measure

        spec, prep, ctx = self.spec, self.prep, self.ctx
        trial, outputs = _Trial(target), []
        batch = next(iter(prep.shapes.values()), (1,))[0] if prep.shapes else 1
        for k in range(spec.sessions):
            progress(ctx, (self.done + k / spec.sessions) / self.total,
                     f"{target.name}: session {k + 1} of {spec.sessions} ({self.done + 1} of {self.total})")
            try:
                session = open_ort_session(target, self.path, spec)
            except BackendUnavailable as exc:
                trial.status, trial.message = "refused", exc.message
                break
            try:
                if k == 0:
                    outputs = [session.run(feeds) for feeds in prep.samples]
                    if reference is not None:
                        report = compare_samples(reference, outputs, target.name, kinds=kinds)
                        trial.verdict = "PASS" if report.passed else f"FAIL: {report.worst}"
                        if not report.passed:
                            trial.status = "answers_differ"
                            break
                    for note in session.notes:
                        if note not in self.notes:
                            self.notes.append(note)
                fn = session.timed_runner(prep.samples[0], spec.mode)
                stats = measure(fn, Budget.parse(spec.warmup), Budget.parse(spec.iterations), mode=spec.mode,
                                batch=int(batch or 1), cancel=ctx.cancelled if ctx is not None else None,
                                device=device_of(target.backend))
            except MeasureCancelled:
                if ctx is not None:
                    ctx.check_cancelled()
                raise
            except Exception as exc:  # noqa: BLE001 - a setting that breaks a run is a result, not the end of the tune
                text = str(exc).strip()
                trial.status, trial.message = "failed", text.splitlines()[0][:300] if text else repr(exc)
                break
            finally:
                session.close()
            if stats.median is not None:
                trial.sessions_ms.append(float(stats.median))
        self.done += 1
        return trial, outputs
