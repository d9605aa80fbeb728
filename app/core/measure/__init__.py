"""Measurement: input samples (`InputSource`, `make_samples`, `resolve_input_shapes`) and the bundled sample
photos that feed image models (`sample_photos`, `photo_source_for`), comparing outputs (`compare_samples`,
`Tolerance`, `METRICS`), latency (`measure`, `Budget`), which precisions a backend really computes in
(`emulation`, `target_emulations`), models that draw random numbers (`find_randomness`, `judge_by_floor`: the
same draws or the noise floor), the results gathered over a session, row by row (`ResultsState`), and the
scorecard's verdicts in words (`card_facts`, `task_verdict`, `caveats`). Other packages import these names from
here."""

from __future__ import annotations

from app.core.measure.answers import (
    DEFAULT_TASK_TOLERANCES,
    EMPTY_ADVICE,
    IMAGE_NOT_PROBABILITY,
    KIND_METRICS,
    SCORE_THRESHOLD,
    empty_reference,
    judge,
    sample_words,
    task_words,
)
from app.core.measure.audio import model_rate, wav_bytes, wav_from_uri
from app.core.measure.compare import CandidateReport, OutputMetrics, compare_report_json, compare_samples
from app.core.measure.compute import PRECISION_WORDS, Emulation, device_of, emulation, target_emulations
from app.core.measure.heads import detection_rows, infer_output_kinds
from app.core.measure.images import RESIZE_RULES, ImagePreprocess, PhotoTensor, read_image
from app.core.measure.inputs import InputSource, make_samples, resolve_input_shapes, source_shapes
from app.core.measure.kinds import KINDS, OutputKind, OutputKindError, dictionary_labels, parse_output_kinds
from app.core.measure.latency import (
    Budget,
    LatencyStats,
    MeasureCancelled,
    default_timing_mode,
    measure,
    median_ms,
    speed_reference,
    speedups,
)
from app.core.measure.pictures import (
    MAX_OUTPUTS,
    MAX_SAMPLES,
    answer_labels,
    answer_strips,
    decode_picture,
    input_picture,
    output_pictures,
    png_b64,
)
from app.core.measure.plausible import implausible, prove_kinds
from app.core.measure.profile import NodeTime, Profile, parse_ort_profile
from app.core.measure.profile_diff import (
    device_word,
    node_devices,
    node_shares,
    points_delta,
    profile_delta,
    slower_reasons,
)
from app.core.measure.random_draws import (
    FLOOR_SEED_BASE,
    FLOOR_SLACK,
    NOISE_FLOOR,
    SAME_SEEDS,
    Randomness,
    find_randomness,
    floor_summary,
    floor_text,
    judge_by_floor,
    same_draws,
    target_note,
    timing_json,
    timing_note,
)
from app.core.measure.results import (
    COLUMNS,
    METRIC_NAMES,
    RANDOM_CALIBRATION,
    ResultsState,
    dataset_line,
    main_metric,
    metric_change,
    metric_name,
    shown_metrics,
)
from app.core.measure.samples import (
    SAMPLES_DIR,
    model_metadata,
    not_photos,
    photo_source_for,
    sample_photos,
    speech_source_for,
)
from app.core.measure.sweep import (
    FP16_WORTH,
    KNEE_GAIN,
    RATE_NOTE,
    SweepAxis,
    SweepError,
    base_shapes,
    batch_shapes,
    error_line,
    find_knee,
    is_out_of_memory,
    items_per_s,
    needs_why,
    parse_sweep,
    parse_values,
    rate_unit,
    shapes_at,
    short_number,
    swept_inputs,
    why_not_faster,
)
from app.core.measure.tolerance import ELEMENTWISE, METRICS, Tolerance, ToleranceError, fmt_metric
from app.core.measure.verdicts import (
    A_LITTLE_COS,
    BAD,
    FAIR,
    GOOD,
    NEUTRAL,
    UNCHANGED_COS,
    CardFacts,
    answer_verdict,
    card_facts,
    caveats,
    cosine_text,
    slower_because,
    speed_verdict,
    task_verdict,
)

__all__ = ["A_LITTLE_COS", "BAD", "COLUMNS", "DEFAULT_TASK_TOLERANCES", "ELEMENTWISE", "EMPTY_ADVICE", "FAIR",
           "FLOOR_SEED_BASE", "FLOOR_SLACK", "FP16_WORTH", "GOOD", "IMAGE_NOT_PROBABILITY", "KINDS", "KIND_METRICS",
           "KNEE_GAIN", "MAX_OUTPUTS", "MAX_SAMPLES", "METRICS", "METRIC_NAMES", "NEUTRAL", "NOISE_FLOOR",
           "PRECISION_WORDS", "RANDOM_CALIBRATION", "RATE_NOTE", "RESIZE_RULES", "SAME_SEEDS", "SAMPLES_DIR",
           "SCORE_THRESHOLD",
           "UNCHANGED_COS", "Budget", "CandidateReport", "CardFacts", "Emulation", "ImagePreprocess", "InputSource",
           "LatencyStats", "MeasureCancelled", "NodeTime", "OutputKind", "OutputKindError", "OutputMetrics",
           "PhotoTensor", "Profile",
           "Randomness", "ResultsState", "SweepAxis", "SweepError", "Tolerance", "ToleranceError", "answer_labels",
           "answer_strips", "answer_verdict", "base_shapes", "batch_shapes", "card_facts", "caveats",
           "compare_report_json",
           "compare_samples", "cosine_text", "dataset_line", "decode_picture", "default_timing_mode", "detection_rows",
           "device_of", "device_word", "dictionary_labels", "empty_reference", "emulation", "error_line", "find_knee",
           "find_randomness", "floor_summary", "floor_text", "fmt_metric", "implausible", "infer_output_kinds",
           "input_picture", "is_out_of_memory", "items_per_s", "judge", "judge_by_floor", "main_metric",
           "make_samples", "measure", "median_ms", "metric_change", "metric_name", "model_metadata", "model_rate",
           "needs_why", "node_devices", "node_shares", "not_photos", "output_pictures", "parse_ort_profile",
           "parse_output_kinds", "parse_sweep", "parse_values", "photo_source_for", "png_b64", "points_delta",
           "profile_delta", "prove_kinds", "rate_unit", "read_image", "resolve_input_shapes", "same_draws",
           "sample_photos", "sample_words", "shapes_at", "short_number", "shown_metrics", "slower_because",
           "slower_reasons", "source_shapes",
           "speech_source_for", "speed_reference", "speed_verdict", "speedups", "swept_inputs", "target_emulations",
           "target_note", "task_verdict", "task_words", "timing_json", "timing_note", "wav_bytes", "wav_from_uri",
           "why_not_faster"]
