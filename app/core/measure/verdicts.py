"""The guided comparison's scorecard in words: per precision, how much faster than FP32 and whether the answers
changed (`card_facts`, from the typed compare and bench results), and the caveats to read
before trusting the cards. The window draws them (app.ui.results.scorecard)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.core.measure.answers import EMPTY_ADVICE, empty_reference, task_words
from app.core.measure.audio import perfect as audio_perfect
from app.core.measure.compute import PRECISION_WORDS, target_emulations
from app.core.measure.latency import median_ms, speed_reference, speedups
from app.core.measure.profile_diff import slower_reasons
from app.core.measure.results import RANDOM_CALIBRATION, dataset_line
from app.core.results import BenchResult, CompareResult, EvaluationResult, OutputResult
from app.core.targets import Target

# The answer verdict's thresholds, on the cosine similarity of the worst output to FP32's, in one place.
# 0.9999 is what FP16 rounding alone gives on a healthy network (outputs agree to ~4 significant digits, no
# decision changes); 0.99 is where INT8 of a well-calibrated model usually lands (small shifts, top-1 kept);
# below it the outputs move enough for decisions to change, and the precision needs a closer look.
UNCHANGED_COS = 0.9999
A_LITTLE_COS = 0.99
# Within 5% of FP32's median the difference is within the noise of a short benchmark: "about as fast".
SAME_SPEED = 0.05

# A verdict's tone: the window colours it (the words say the same).
GOOD, FAIR, BAD, NEUTRAL = "good", "fair", "bad", "neutral"


@dataclass
class CardFacts:
    """What one precision's card says, in words and numbers."""

    target: str
    precision: str
    speed: str                 # "2.1× faster", "1.3× slower", "about as fast", "n/a here", "not measured"
    speed_tone: str
    speed_detail: str          # the medians behind it, or why there is no number
    ratio: float | None        # FP32's median / this target's median (> 1: faster)
    answers: str               # "Answers unchanged" / "changed a little" / "changed a lot"
    answers_tone: str
    answers_detail: str        # "cosine 0.99998 · top-1 agreement 100%"
    cosine: float | None       # of the worst output
    top1: float | None
    output: str                # the worst output (its histogram is shown)
    dataset: str = ""          # its main metric on a labelled dataset, "mAP50 0.512 → 0.498 (−1.4 pts)"; "": none
    dataset_tone: str = NEUTRAL


def answer_verdict(cosine: float | None, nonfinite: int = 0) -> tuple[str, str]:
    """The answers' verdict and its tone from the worst output's cosine; NaN/Inf that FP32 did not have is
    always "a lot"."""
    if cosine is None or nonfinite:
        return "Answers changed a lot", BAD
    if cosine >= UNCHANGED_COS:
        return "Answers unchanged", GOOD
    if cosine >= A_LITTLE_COS:
        return "Answers changed a little", FAIR
    return "Answers changed a lot", BAD


def cosine_text(cosine: float | None) -> str:
    """Enough digits to tell 0.9999 from 0.99999; never "1.000000" for what is not exactly 1."""
    if cosine is None:
        return "—"
    if cosine >= 1.0:
        return "1 (identical)"
    text = f"{cosine:.6f}"
    return "> 0.999999" if text == "1.000000" else text


def speed_verdict(ratio: float) -> tuple[str, str]:
    if abs(ratio - 1.0) < SAME_SPEED:
        return f"About as fast ({ratio:.1f}×)", NEUTRAL
    if ratio >= 1.0:
        return f"{ratio:.1f}× faster", GOOD
    return f"{1 / ratio:.1f}× slower", BAD


def card_facts(compare: CompareResult | None, bench: Mapping[str, BenchResult], reference: str,
               evaluation: EvaluationResult | None = None) -> list[CardFacts]:
    """One card per compared candidate, in the order compared; `bench`: target -> its bench JSON. Speed-ups are
    relative to `speed_reference` (the comparison's `reference` wherever it was benchmarked). A candidate that
    `evaluation` scored on a labelled dataset says its main metric there too."""
    reference = speed_reference(bench, reference)
    ref_median = median_ms(bench.get(reference))
    ratios = speedups(bench, reference)
    out = []
    for c in compare.candidates if compare is not None else ():
        target = c.name
        precision = Target.read(target).precision
        outputs = c.outputs
        worst = min(outputs, key=lambda o: -2.0 if o.cosine is None else o.cosine) if outputs else None
        cosine = worst.cosine if worst is not None else None
        nonfinite = sum(o.new_nonfinite for o in outputs)
        answers, answers_tone = answer_verdict(cosine, nonfinite)
        tops = [o.top1 for o in outputs if o.top1 is not None]
        top1 = min(tops) if tops else None
        parts = ["cosine " + cosine_text(cosine)]
        judged = task_verdict(outputs, nonfinite)
        if judged is not None:
            answers, answers_tone, words = judged
            parts.insert(0, words)
        elif top1 is not None:
            parts.append(f"top-1 agreement {top1:.0%}")
        if nonfinite:
            parts.append(f"{nonfinite} new NaN/Inf")
        median = median_ms(bench.get(target))
        emulated = target_emulations(target)
        ratio = ratios.get(target)
        if emulated:
            e = emulated[0]
            speed, speed_tone = "Speed: n/a here", NEUTRAL
            word = PRECISION_WORDS.get(precision, precision)
            speed_detail = (f"This computer only imitates {word}: {e.backend} {e.how}, so its time says nothing "
                            f"about {word}'s real speed. A GPU with TensorRT measures it.")
        elif ratio is None:
            speed, speed_tone = "Speed not measured", NEUTRAL
            speed_detail = "The benchmark did not finish for this precision or for FP32."
        else:
            speed, speed_tone = speed_verdict(ratio)
            speed_detail = f"{median:.3f} ms per run, FP32 {ref_median:.3f} ms (medians)"
            ref_bench, cand_bench = bench.get(reference), bench.get(target)
            why = slower_because(ref_bench, cand_bench) if ratio < 1 - SAME_SPEED and ref_bench and cand_bench \
                else ""
            if why:
                speed_detail += f". Slower because {why}"
        facts = CardFacts(target, precision, speed, speed_tone, speed_detail, ratio, answers, answers_tone,
                          " · ".join(parts), cosine, top1, worst.name if worst is not None else "")
        scored = next((e for e in evaluation.candidates if e.name == target), None) if evaluation else None
        if scored is not None:
            facts.dataset = dataset_line(evaluation, target)
            facts.dataset_tone = GOOD if scored.passed else BAD
        out.append(facts)
    return out


def caveats(compare: CompareResult | None, bench: Mapping[str, BenchResult]) -> list[str]:
    """What the audience should know before trusting the cards, in a few words each."""
    out = []
    if compare is not None and compare.random_data:
        out.append("Compared on random inputs: real data may differ (give a folder of your own inputs to measure it).")
    notes = [n for ns in (compare.notes.values() if compare is not None else ()) for n in ns]
    notes += [n for d in bench.values() for n in d.notes]
    if any(RANDOM_CALIBRATION in n for n in notes):
        out.append("INT8 was calibrated on random data: calibrated on real data, its answers usually change less.")
    random_ops = compare.random_ops if compare is not None else None
    if random_ops is not None and random_ops.method:
        out.append("The model draws random numbers: " + ("every precision drew the same ones (the same seeds)."
                                                         if random_ops.method == "same seeds" else
                                                         "some targets draw their own, judged against the noise "
                                                         "floor (the reference run again with other seeds)."))
    placements = compare.placement if compare is not None else {}
    gpu_cpu = sorted({t for t, d in bench.items() if d.placement is not None and d.placement.fallback_nodes}
                     | {t for t, p in placements.items() if p.fallback_nodes})
    if gpu_cpu:
        out.append(f"{', '.join(gpu_cpu)}: some nodes ran on the CPU, not the GPU (trtlab profile names them).")
    empty = sorted({o.name for c in (compare.candidates if compare is not None else ()) for o in c.outputs
                    if empty_reference(o)})
    if empty:
        what = "photos" if compare is not None and not compare.random_data else "inputs"
        out.append(f"The reference found nothing to compare on these {what} ({', '.join(empty)}): {EMPTY_ADVICE}.")
    if any(d.unstable for d in bench.values()):
        out.append("Run times varied between runs (other programs were busy): small speed differences may be "
                   "noise.")
    return out


def slower_because(reference: BenchResult, candidate: BenchResult) -> str:
    """What the profiler saw that makes a candidate slower than its reference, in words ("" when it saw nothing):
    nodes on the CPU in a GPU session and their copies, casts added, or more kernels to launch
    (`slower_reasons`, on the placement compare and bench record)."""
    if candidate.placement is None:
        return ""
    ref = reference.placement.to_json() if reference.placement is not None else {}
    return "; ".join(slower_reasons(ref, candidate.placement.to_json()))


def _perfect(o: OutputResult) -> bool:
    """Whether a task output's answer is unchanged, not merely within its tolerance."""
    t, kind = o.task, o.kind
    if t is None:
        return True
    if kind in ("detections", "yolo"):
        return not t.missed and not t.extra_boxes
    if kind == "image":
        return (t.mask_iou >= 0.98) if t.mask_iou is not None else (t.psnr_db or 0) >= 40
    if kind == "classes":
        return (t.top1 or 0) >= 1
    if kind == "sequence":
        return not t.edit_distance
    if kind == "audio":
        return audio_perfect(t.audio_snr_db)
    return True


def task_verdict(outputs: Sequence[OutputResult], nonfinite: int = 0) -> tuple[str, str, str] | None:
    """The answers' verdict from the outputs judged by what they mean (boxes, masks, labels, text); None when no
    output has task metrics. Failing its tolerance is "a lot"; within it but not identical, "a little"."""
    judged = [o for o in outputs if o.judged_by_answer and not empty_reference(o)]
    if not judged:
        empty = [o for o in outputs if empty_reference(o)]
        if not empty:
            return None
        # Nothing to judge by the answer: said so, and the element-wise verdict (cosine) decides the tone.
        shown = next((o for o in empty if not o.passed), empty[0])
        reason = (shown.task.empty_reason if shown.task is not None else "") or task_words(shown)
        words = reason + (f" ({shown.name})" if len(outputs) > 1 else "") + "; the values decide"
        bad = nonfinite or any(not o.passed for o in outputs)
        return "No answer to compare", BAD if bad else NEUTRAL, words
    # An output with nothing to judge by its answer still fails by its element-wise verdict.
    failed = [o for o in outputs if o.judged_by_answer and not o.passed]
    shown = failed[0] if failed else next((o for o in judged if not _perfect(o)), judged[0])
    words = task_words(shown) + (f" ({shown.name})" if len(outputs) > 1 else "")
    if failed or nonfinite:
        return "Answers changed a lot", BAD, words
    if all(_perfect(o) for o in judged):
        return "Answers unchanged", GOOD, words
    return "Answers changed a little", FAIR, words
