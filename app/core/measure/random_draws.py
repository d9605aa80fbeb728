"""Models that draw random numbers, in a comparison: the reference and each variant get the same draws where the
runtime allows it, else each candidate is judged against the noise floor.

Same seeds: each graph the compare job runs — the reference and every variant — is copied into the job's folder
with every random node's `seed` fixed (app.core.model.seed_random_ops, by `backends/tasks/common.py: seeded_graph`;
a seed the model sets is kept). The precision transforms keep random nodes FP32, so a variant's seeded node draws
exactly the reference's numbers, sample for sample (each Run call takes the next draws of a fresh session). The
model file itself is never changed.

`diagnose` and `fallback` match the draws the same way (`backends/tasks/common.py: random_draws`, `draws_rewrite`,
`judge_draws`); `bench` and `profile` run the seeded copy too, so the graph timed is the graph compared
(`timing_note`).

Noise floor: where the draws cannot match — a TensorRT engine ignores the seeds, another ONNX Runtime provider has
another generator — the reference runs a second time with other seeds, and an output that fails its tolerances
passes when the candidate is as close to the reference as the reference is to itself (within FLOOR_SLACK).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import onnx

from app.core.measure.tolerance import Tolerance
from app.core.model import RandomOp, describe_random_ops, find_random_ops, noise_inputs
from app.core.targets import Target

if TYPE_CHECKING:
    from app.core.measure.compare import CandidateReport, OutputMetrics

SAME_SEEDS = "same seeds"
NOISE_FLOOR = "noise floor"
SEEDED_BACKENDS = ("ort-cpu", "ort-cuda")  # ONNX Runtime's own kernels honour `seed`; TensorRT (ort-trt too) does not
FLOOR_SEED_BASE = 1     # the noise floor's second reference run: every random node drawn from other seeds
FLOOR_SLACK = 1.5       # a candidate within 1.5× the reference-vs-reference error passes (one other draw is noisy)
_DB_SLACK = 10 * math.log10(FLOOR_SLACK)
_UNIT_METRICS = ("cos", "top1", "top5", "det_iou", "mask_iou", "token_agreement")  # similarities whose best is 1


@dataclass
class Randomness:
    """The random nodes of the model a comparison runs and what the comparison does about them."""

    ops: list[RandomOp]
    scaled_by: dict[str, list[str]] = field(default_factory=dict)
    methods: dict[str, str] = field(default_factory=dict)      # candidate -> SAME_SEEDS | NOISE_FLOOR
    seeds: dict[str, dict[str, float]] = field(default_factory=dict)  # target -> {random node: seed} it ran with
    floor: dict[str, dict[str, object]] = field(default_factory=dict)  # output -> reference against itself
    copies: list[Path] = field(default_factory=list)  # the seeded graphs written, removed when the job is done

    def remove_copies(self) -> None:
        for path in self.copies:
            for f in (path, path.with_name(path.name + ".data")):
                f.unlink(missing_ok=True)
        self.copies.clear()

    @property
    def text(self) -> str:
        return describe_random_ops(self.ops)

    @property
    def method(self) -> str:
        """NOISE_FLOOR when any candidate was judged against it, else SAME_SEEDS."""
        return NOISE_FLOOR if NOISE_FLOOR in self.methods.values() else SAME_SEEDS

    def scale_text(self) -> str:
        if not self.scaled_by:
            return ""
        names = ", ".join(f"'{k}'" for k in self.scaled_by)
        return (f"; the noise is scaled by input{'s' if len(self.scaled_by) != 1 else ''} {names} (with the noise "
                "scale at zero the outputs compare without noise)")

    def to_json(self) -> dict[str, object]:
        """The compare JSON's `random_ops`."""
        if self.method == SAME_SEEDS:
            note = (f"{self.text}: the reference and every candidate drew the same numbers (the same seeds, set in "
                    "copies in the job's folder; the model file is unchanged)")
        else:
            floor_targets = ", ".join(t for t, m in self.methods.items() if m == NOISE_FLOOR)
            note = (f"{self.text}: {floor_targets} cannot draw the reference's numbers, so "
                    f"{'it was' if ',' not in floor_targets else 'they were'} judged against the noise floor (the "
                    "reference run again with other seeds)")
        return {"nodes": [op.name for op in self.ops], "ops": [op.to_json() for op in self.ops],
                "method": self.method if self.methods else None, "note": note + self.scale_text(),
                "targets": dict(self.methods), "noise_inputs": dict(self.scaled_by), "floor": self.floor or None}


def find_randomness(model_path: str) -> Randomness | None:
    """The model's random nodes, or None when it draws no random numbers."""
    model = onnx.load(model_path, load_external_data=False)
    ops = find_random_ops(model)
    return Randomness(ops, noise_inputs(model)) if ops else None


def same_draws(reference: Target, target: Target) -> bool:
    """Whether a target can draw exactly the reference's numbers: both on one ONNX Runtime provider whose kernels
    honour a random node's seed."""
    return target.backend == reference.backend and target.backend in SEEDED_BACKENDS


def target_note(randomness: Randomness, reference: Target, target: Target) -> str:
    """The note a target's results carry about the random nodes."""
    if target == reference and reference.backend not in SEEDED_BACKENDS:
        return (f"random numbers: {randomness.text}: {reference.backend} does not take their seeds, so candidates "
                "are judged against the noise floor" + randomness.scale_text())
    if target == reference:
        return (f"random numbers: {randomness.text} seeded alike in the reference and every ONNX Runtime variant "
                "(copies in the job's folder; the model file is unchanged)" + randomness.scale_text())
    if randomness.methods.get(target.name) == SAME_SEEDS:
        mine, ref = randomness.seeds.get(target.name, {}), randomness.seeds.get(reference.name, {})
        if mine != ref:
            missing = sorted(set(ref) - set(mine))
            return ("random numbers: this variant's random nodes differ from the reference's ("
                    + (", ".join(missing[:3]) + " not found" if missing else "other seeds")
                    + "), so its draws may differ")
        return f"random numbers: the same seeds as the reference, so {randomness.text} drew the same numbers"
    return (f"random numbers: {target.backend} cannot draw the reference's numbers ({randomness.text}): judged "
            f"against the noise floor, the reference run again with other seeds; an output passes within "
            f"{FLOOR_SLACK:g}× the reference's difference from itself")


def timing_note(randomness: Randomness, target: Target) -> str:
    """The note a timed or profiled target carries about the random nodes: the graph run is the seeded copy that
    `compare` judges (timing does not depend on the draws), or an engine that ignores the seeds."""
    if target.backend not in SEEDED_BACKENDS:
        return (f"random numbers: {randomness.text}: {target.backend} does not take their seeds; the timing does not "
                "depend on the draws")
    return (f"random numbers: the seeds of {randomness.text} fixed as `compare` fixes them, so this runs the graph "
            "compare judges (a copy in the job's folder; the model file is unchanged); the timing does not depend on "
            "the draws")


def timing_json(randomness: Randomness, target: Target) -> dict[str, object]:
    """A timed or profiled target's `random_ops`: the random nodes, whether the graph run had their seeds fixed (a
    TensorRT engine ignores them) and the seeds, and the note."""
    seeded = target.backend in SEEDED_BACKENDS
    return {"nodes": [op.name for op in randomness.ops], "seeded": seeded,
            "seeds": randomness.seeds.get(target.name) if seeded else None, "note": timing_note(randomness, target)}


def floor_summary(floor: CandidateReport) -> dict[str, dict[str, object]]:
    """The noise floor per output: how far the reference is from itself with other draws."""
    return {o.name: {"cosine": o.cosine, "mean_abs": o.mean_abs, "max_abs": o.max_abs, "passed": o.passed,
                     "shape_mismatch": o.shape_mismatch or None} for o in floor.outputs}


FLOOR_USABLE_COS = 0.9  # a noise floor below this hides any precision's error: no verdict is drawn from it


def judge_by_floor(report: CandidateReport, floor: CandidateReport) -> list[str]:
    """Judge a candidate's failing outputs against the noise floor (in place); returns a note per output judged.

    An output passes when every tolerance it fails is met within FLOOR_SLACK of the floor's value for it: an error
    metric at most 1.5× the floor's, a similarity's distance from 1 at most 1.5× the floor's, a dB metric within
    1.8 dB. Outputs whose shape, type or finiteness differ, and outputs the reference meets against itself, keep
    their verdict: there the difference is the candidate's, not the noise's. Nor is an output judged whose floor is
    below a cosine of FLOOR_USABLE_COS: noise that large would hide any precision's error (a floor at cos 0.34
    passes a candidate down to cos 0.01), so its failure stands, with the reason."""
    by_name = {o.name: o for o in floor.outputs}
    notes = []
    for m in report.outputs:
        f = by_name.get(m.name)
        if m.passed or f is None:
            continue
        where = floor_text(f)
        if f.passed:
            notes.append(f"{m.name}: fails, while the reference with other draws passes ({where}): the difference "
                         "is the candidate's, not the noise's")
            continue
        if m.shape_mismatch or m.dtype_mismatch or m.new_nonfinite or f.shape_mismatch:
            notes.append(f"{m.name}: not judged against the noise floor ({where}): "
                         + (m.shape_mismatch or m.dtype_mismatch or "new NaN/Inf values"
                            if (m.shape_mismatch or m.dtype_mismatch or m.new_nonfinite) else
                            "the reference's own shape changes with its draws"))
            continue
        if f.cosine is not None and f.cosine < FLOOR_USABLE_COS:
            notes.append(f"{m.name}: not judged: other draws alone move the reference this far ({where}), more than "
                         "a precision's rounding would; compare on one provider (the same seeds) or with the noise "
                         "scaled to 0")
            continue
        tols = [Tolerance.parse(t) for t in m.judged_by]
        failing = [t for t in tols if t.check(m) is not None]
        other = [x for x in m.failures if x not in {t.check(m) for t in failing}]
        if other or not failing or not all(_within(t.metric, m.value(t.metric), f.value(t.metric), t.floor)
                                            for t in failing):
            notes.append(f"{m.name}: beyond the noise floor ({where})")
            continue
        m.failures, m.passed = [], True
        notes.append(f"{m.name}: within the noise floor ({where}): passes")
    report.passed = bool(report.outputs) and all(o.passed for o in report.outputs)
    return notes


def _within(metric: str, cand: float | None, floor: float | None, higher_is_better: bool) -> bool:
    if cand is None or floor is None or not math.isfinite(floor):
        return False
    if metric.endswith("_db"):
        return cand >= floor - _DB_SLACK
    if higher_is_better:
        if metric in _UNIT_METRICS:
            return 1.0 - cand <= FLOOR_SLACK * (1.0 - floor)
        return cand >= floor / FLOOR_SLACK
    return cand <= FLOOR_SLACK * floor


def floor_text(f: OutputMetrics) -> str:
    if f.shape_mismatch:
        return "the reference's output shape changes with other draws"
    cos = f"cos {f.cosine:.4f}" if f.cosine is not None else "cos —"
    mean = f", mean |Δ| {f.mean_abs:.3g}" if f.mean_abs is not None else ""
    return f"the reference against itself with other draws: {cos}{mean}"
