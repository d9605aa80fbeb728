"""`trtlab tune`: a runtime's own settings (CUDA graphs, NHWC, cuDNN's algorithm search and workspace, the graph
optimisation level; the CPU's threads and execution mode) tried on one target, each combination timed in several
sessions and kept only where its answers equal the default settings'.

The search is one setting at a time from the target's own settings, then the winners together: every value of a
setting that was faster alone, combined (a full grid of the CUDA provider's settings is 96 combinations, each timed in
several sessions). Several sessions per combination because ONNX Runtime's CUDA provider picks cuDNN algorithms per
session: one session's time is one draw of that choice, not the setting's speed. The sessions are timed in turns
(every combination's first, then every one's second, …) so that a change in the machine's load weighs on all alike."""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
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
    runner = _Runner(spec, prep, path, ctx, (len(singles) + 2) * spec.sessions)
    # Sessions in turns: every combination's first session, then every one's second, … so that a machine whose load
    # changes during the tune weighs on every combination alike (its first session also checks its answers).
    default, trials = _Trial(base), [_Trial(t) for t in singles]
    reference = runner.session(default, None, None)
    if default.status != "ok":
        raise BackendUnavailable(f"{base.name} did not run with its own settings: {default.message}",
                                 fix="Check that the target runs (trtlab bench) before tuning it.")
    kinds = output_kinds(spec, prep, reference)
    for t in trials:
        runner.session(t, reference, kinds)
    for _ in range(spec.sessions - 1):
        for t in (default, *trials):
            runner.session(t)
    base_ms = default.median_ms
    # The winners together: each setting's fastest value that beat the base alone, when two or more settings won;
    # timed in turns with the base's own settings again, its speed-up is against those sessions.
    winners: dict[str, tuple[float, str]] = {}
    for t in trials:
        if t.status == "ok" and t.median_ms is not None and base_ms and t.median_ms < FASTER * base_ms:
            (k, v), = ((k, v) for k, v in t.target.settings.items() if base.settings.get(k) != v)
            if k not in winners or t.median_ms < winners[k][0]:
                winners[k] = (t.median_ms, v)
    if len(winners) > 1:
        combined = _Trial(base.with_knobs({**base.settings, **{k: v for k, (_, v) in winners.items()}}))
        runner.session(combined, reference, kinds)
        for _ in range(spec.sessions - 1):
            runner.session(combined)
        trials.append(combined)
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
            "device": "gpu" if not base.on_cpu else "cpu", "variant": _kept(path, ctx)}


def _kept(path: str, ctx: JobContext | None) -> str:
    """The graph the tune ran, where it stays: "" for a variant built in the job's folder (trtlab's cache could not
    be written), which goes with the job."""
    workdir = getattr(ctx, "workdir", None)
    if workdir and Path(path).resolve().is_relative_to(Path(workdir).resolve()):
        return ""
    return str(path)


class _Runner:
    """One session of a combination at a time: its first checks the answers against the reference's (the default
    settings' outputs) and every session adds its median time."""

    def __init__(self, spec: TuneSpec, prep: Prepared, path: str, ctx: JobContext | None, total: int) -> None:
        self.spec, self.prep, self.path, self.ctx, self.total = spec, prep, path, ctx, total
        self.done = 0
        self.notes: list[str] = []

    def session(self, trial: _Trial, reference: list[dict[str, np.ndarray]] | None = None,
                kinds: dict[str, OutputKind] | None = None) -> list[dict[str, np.ndarray]]:
        """Time one more session of `trial` (nothing once it failed); its first session runs the samples and, with
        a `reference`, keeps it only where `compare`'s verdict passes. Returns the first session's outputs."""
        from app.core.measure import Budget, MeasureCancelled, compare_samples, device_of, measure

        spec, prep, ctx, target = self.spec, self.prep, self.ctx, trial.target
        first = not trial.sessions_ms
        self.done += 1
        if trial.status != "ok":
            return []
        progress(ctx, (self.done - 1) / self.total, f"{target.name}: session {len(trial.sessions_ms) + 1} of "
                                                    f"{spec.sessions} ({self.done} of {self.total})")
        outputs: list[dict[str, np.ndarray]] = []
        batch = next(iter(prep.shapes.values()), (1,))[0] if prep.shapes else 1
        try:
            session = open_ort_session(target, self.path, spec)
        except BackendUnavailable as exc:
            trial.status, trial.message = "refused", exc.message
            return []
        try:
            if first:
                outputs = [session.run(feeds) for feeds in prep.samples]
                if reference is not None:
                    report = compare_samples(reference, outputs, target.name, kinds=kinds)
                    trial.verdict = "PASS" if report.passed else f"FAIL: {report.worst}"
                    if not report.passed:
                        trial.status = "answers_differ"
                        return outputs
                self.notes += [n for n in session.notes if n not in self.notes]
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
            return outputs
        finally:
            session.close()
        if stats.median is not None:
            trial.sessions_ms.append(float(stats.median))
        return outputs
