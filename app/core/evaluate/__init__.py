"""Accuracy against a user's labelled dataset: one streaming accumulator per task — detection
(`DetectionAccumulator`: COCO mAP by pycocotools, per-class AP, matched IoU), classification
(`ClassificationAccumulator`), segmentation (`SegmentationAccumulator`), recognition (`RecognitionAccumulator`: CER
and WER by rapidfuzz) — each giving an `EvalResult`, per-image values (`PerImage`) and records that resampling
re-reads; a candidate against FP32 with paired bootstrap intervals (`compare_runs`, `paired_bootstrap`,
`PairResult`, `Difference`, `worst_images`); tolerances on the drop (`DropTolerance`). Preprocessing that fits
the model (`Preset`, `choose_preset`, `default_input_shape`; its `Transform` maps answers back onto the image) and the
step from outputs to a prediction in the original image (`predict`: `Detections`, `Classes`, `Mask`, `Text`), kept
per image and target in the answer cache (`AnswerStore`, `run_key`); what an accumulator scores (`truth_and_answer`,
`new_accumulator`); each image's value (`per_image_values`, `write_per_image`), the small-dataset note
(`dataset_notes`) and the pictures of a candidate's worst images (`worst_pictures`). Photos as a model's input by its
preset, for the sample-photo comparisons (`model_preprocess`, `photo_tensor`, `photo_source`, `fit_source`,
`preprocessing_json`). An evaluation split over a batch's workers (`shard_order`, `shard_doc`). Other packages import
these names from here."""

from __future__ import annotations

from app.core.evaluate.answers import (
    ANSWERS_VERSION,
    AnswerStore,
    answers_root,
    image_key,
    load_kinds,
    model_digest,
    run_key,
    run_parts,
    save_kinds,
)
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
from app.core.evaluate.photos import (
    PRESET_KEYS,
    fit_source,
    image_preset,
    model_preprocess,
    photo_source,
    photo_tensor,
    preprocessing_json,
    source_preset,
)
from app.core.evaluate.pictures import PANEL, WORST, losing, side_by_side, worst_pictures
from app.core.evaluate.predict import (
    DETECTION_FLOOR,
    Classes,
    Detections,
    Mask,
    PredictError,
    Prediction,
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
from app.core.evaluate.scoring import (
    Accumulator,
    classifier_names,
    new_accumulator,
    output_classes,
    truth_and_answer,
)
from app.core.evaluate.shards import shard_doc, shard_order
from app.core.evaluate.summary import SMALL_DATASET, dataset_notes, per_image_values, write_per_image
from app.core.evaluate.tolerance import DROP_METRICS, DropTolerance, DropToleranceError

__all__ = [
    "ANSWERS_VERSION", "DETECTION_FLOOR", "DROP_METRICS", "IGNORE_INDEX", "PANEL", "PRESET_KEYS", "PRESET_NAMES",
    "RESAMPLES", "SMALL_DATASET", "WORST", "Accumulator", "AnswerStore", "Boxes", "Classes",
    "ClassificationAccumulator", "DetectionAccumulator", "Detections", "Difference", "DropTolerance",
    "DropToleranceError", "EvalResult", "Evaluated", "EvaluationInputError", "Mask", "PairResult", "PerImage",
    "PredictError", "Prediction", "Preset", "PresetError", "RecognitionAccumulator", "Records",
    "SegmentationAccumulator", "Text", "Transform", "answers_root", "choose_preset", "classifier_names",
    "compare_runs", "ctc_greedy", "dataset_notes", "default_input_shape", "fit_source", "image_key", "image_preset",
    "load_kinds", "losing", "metadata_imgsz", "model_digest", "model_preprocess", "new_accumulator", "output_classes",
    "paired_bootstrap", "per_image_values", "photo_source", "photo_tensor", "predict", "predict_classes",
    "predict_detections", "predict_mask", "predict_text", "preprocessing_json", "run_key", "run_parts", "save_kinds",
    "shard_doc", "shard_order", "side_by_side", "source_preset", "truth_and_answer", "ultralytics", "worst_images",
    "worst_pictures", "write_per_image",
]
