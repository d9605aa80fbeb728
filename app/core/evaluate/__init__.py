"""Accuracy against a user's labelled dataset: one streaming accumulator per task — detection
(`DetectionAccumulator`: COCO mAP by pycocotools, per-class AP, matched IoU), classification
(`ClassificationAccumulator`), segmentation (`SegmentationAccumulator`), recognition (`RecognitionAccumulator`: CER
and WER by rapidfuzz) — each giving an `EvalResult`, per-image values (`PerImage`) and records that resampling
re-reads; a candidate against FP32 with paired bootstrap intervals (`compare_runs`, `paired_bootstrap`,
`PairResult`, `Difference`, `worst_images`); tolerances on the drop (`DropTolerance`). Preprocessing that fits
the model (`Preset`, `choose_preset`, `default_input_shape`; its `Transform` maps answers back onto the image) and the
step from outputs to a prediction in the original image (`predict`: `Detections`, `Classes`, `Mask`, `Text`). Other
packages import these names from here."""

from __future__ import annotations

from app.core.evaluate.bootstrap import (
    RESAMPLES,
    Difference,
    Evaluated,
    PairResult,
    compare_runs,
    paired_bootstrap,
    worst_images,
)
from app.core.evaluate.coco_map import Boxes, DetectionAccumulator
from app.core.evaluate.metrics import (
    IGNORE_INDEX,
    ClassificationAccumulator,
    EvalResult,
    EvaluationInputError,
    PerImage,
    RecognitionAccumulator,
    Records,
    SegmentationAccumulator,
)
from app.core.evaluate.predict import (
    DETECTION_FLOOR,
    Classes,
    Detections,
    Mask,
    PredictError,
    Text,
    ctc_greedy,
    predict,
    predict_classes,
    predict_detections,
    predict_mask,
    predict_text,
)
from app.core.evaluate.presets import (
    PRESET_NAMES,
    Preset,
    PresetError,
    Transform,
    choose_preset,
    default_input_shape,
    metadata_imgsz,
    ultralytics,
)
from app.core.evaluate.tolerance import DROP_METRICS, DropTolerance, DropToleranceError

__all__ = [
    "DETECTION_FLOOR", "DROP_METRICS", "IGNORE_INDEX", "PRESET_NAMES", "RESAMPLES", "Boxes", "Classes",
    "ClassificationAccumulator", "DetectionAccumulator", "Detections", "Difference", "DropTolerance",
    "DropToleranceError", "EvalResult", "Evaluated", "EvaluationInputError", "Mask", "PairResult", "PerImage",
    "PredictError", "Preset", "PresetError", "RecognitionAccumulator", "Records", "SegmentationAccumulator", "Text",
    "Transform", "choose_preset", "compare_runs", "ctc_greedy", "default_input_shape", "metadata_imgsz",
    "paired_bootstrap", "predict", "predict_classes", "predict_detections", "predict_mask",
    "predict_text", "ultralytics", "worst_images",
]
