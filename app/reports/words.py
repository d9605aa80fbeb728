"""Numbers and targets in plain words, as the report writes them."""

from __future__ import annotations

import math

from app.core.targets import Target

PRECISION_WORDS = {"fp32": "FP32", "fp16": "FP16", "bf16": "BF16", "int8": "INT8", "plan": "the plan",
                   "mixed": "mixed"}
# A tolerance's metric name -> the key of a compare output's metric
TOL_METRICS = {"cos": "cosine", "max_abs": "max_abs", "mean_abs": "mean_abs", "max_rel": "max_rel",
               "snr_db": "snr_db", "top1": "top1"}
# Metrics that must stay at or above their tolerance (the others at or below): element-wise keys and the task
# metrics' tolerance names
HIGHER_IS_BETTER = {"cosine", "cos", "snr_db", "top1", "top5", "det_iou", "mask_iou", "psnr_db", "token_agreement",
                    "audio_snr_db"}


def target_words(target: str) -> str:
    """"ort-cpu:fp16" -> "FP16 on ort-cpu"; "trt:plan" -> "the plan on trt"."""
    t = Target.read(target)
    return f"{PRECISION_WORDS.get(t.precision, t.precision.upper())} on {t.backend}"


def precision_of(target: str) -> str:
    return Target.read(target).precision


def backend_of(target: str) -> str:
    return Target.read(target).backend


def fmt(v: object, digits: int = 4) -> str:
    """A metric value for a table: 4 significant digits, ∞ and — for infinite and missing values."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "∞" if v > 0 else "−∞"
        if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e6):
            return f"{v:.{digits - 1}e}"
        return f"{v:.{digits}g}"
    return str(v)


def fmt_cos(c: object) -> str:
    """A cosine with the digits that tell it from 1: 0.99998, 0.9999998, 0.9884 (never rounded up to 1)."""
    if not isinstance(c, int | float) or isinstance(c, bool) or math.isnan(c):
        return "—"
    if c >= 1.0:
        return "1"
    gap = 1.0 - c
    digits = max(4, -math.floor(math.log10(gap)) + 1) if gap > 0 else 4
    return f"{c:.{min(digits, 12)}f}"


def fmt_snr(v: object) -> str:
    if not isinstance(v, int | float) or isinstance(v, bool):
        return "—"
    if v >= 999.0 or math.isinf(v):
        return "∞ (identical)" if v > 0 else "−∞"
    return f"{v:.1f} dB"


def fmt_metric(key: str, v: object) -> str:
    if key == "cosine":
        return fmt_cos(v)
    if key == "snr_db":
        return fmt_snr(v)
    if key == "top1" and isinstance(v, float):
        return f"{v:.1%}"
    return fmt(v)


def speed_words(ratio: float, reference: str) -> str:
    """1.8 -> "1.8× faster than FP32 on ort-cpu"; 0.5 -> "2× slower than …"."""
    ref = target_words(reference)
    if ratio >= 1.0:
        return f"{times(ratio)} faster than {ref}"
    return f"{times(1 / ratio)} slower than {ref}"


def times(ratio: float) -> str:
    """1.8 -> "1.8×", 1.05 -> "1.05×", 12.4 -> "12×"."""
    if ratio >= 10:
        return f"{ratio:.0f}×"
    return f"{ratio:.2f}".rstrip("0").rstrip(".") + "×"


def passes(metric_key: str, value: object, threshold: float) -> bool | None:
    """Whether a metric value meets a tolerance (None when the value is missing)."""
    if not isinstance(value, int | float) or isinstance(value, bool) or math.isnan(value):
        return None
    if metric_key in HIGHER_IS_BETTER:
        return value >= threshold
    return value <= threshold


# A dataset metric (`trtlab eval`) in words: key -> (name, what it means); every one is a fraction.
EVAL_METRICS = {
    "map50": ("mAP@0.5", "mean average precision of the boxes at IoU 0.5 (COCO); higher is better"),
    "map": ("mAP@0.5:0.95", "mean average precision averaged over IoU 0.5 to 0.95 (COCO); higher is better"),
    "mean_iou": ("mean IoU of matched boxes", "how well the found boxes overlap the true ones; higher is better"),
    "top1": ("top-1 accuracy", "images whose best class is the true one; higher is better"),
    "top5": ("top-5 accuracy", "images whose true class is among the five best; higher is better"),
    "miou": ("mean IoU", "overlap of the predicted and true masks, averaged over classes; higher is better"),
    "dice": ("mean Dice", "Dice coefficient of the masks, averaged over classes; higher is better"),
    "cer": ("character error rate", "characters wrong, missing or extra per true character; lower is better"),
    "wer": ("word error rate", "words wrong, missing or extra per true word; lower is better"),
    "exact": ("lines read exactly", "lines whose text is read without any mistake; higher is better"),
}
# Error rates: a rise is the loss
LOWER_IS_BETTER = {"cer", "wer"}
# The per-image metric (`EvaluationResult.per_image_metric`) in words, and which way is better
PER_IMAGE_WORDS = {"correct": "correct (1) or wrong (0)", "f1": "F1 of the image's boxes",
                   "miou": "mean IoU of the image's masks", "cer": "character error rate of the line"}
# Each class's own metric in `per_class`, in the order tried, in words
PER_CLASS_METRICS = (("ap50", "AP@0.5"), ("accuracy", "accuracy"), ("iou", "IoU"), ("ap", "AP@0.5:0.95"))


def eval_metric_words(key: str) -> str:
    """"map50" -> "mAP@0.5"; a metric it does not know keeps its name."""
    return EVAL_METRICS.get(key, (key, ""))[0]


def points(fraction: float) -> str:
    """A difference of fractions in percentage points: 0.012 -> "+1.2", −0.004 -> "−0.4"."""
    return f"{fraction * 100:+.1f}".replace("-", "−")
