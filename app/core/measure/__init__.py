"""Measurement: input samples (`InputSource`, `make_samples`, `resolve_input_shapes`) and the bundled sample
photos that feed image models (`sample_photos`, `photo_source_for`), comparing outputs (`compare_samples`,
`Tolerance`, `METRICS`), latency (`measure`, `Budget`), which precisions a backend really computes in
(`emulation`, `target_emulations`), the results gathered over a session, row by row (`ResultsState`), and the
scorecard's verdicts in words (`card_facts`, `task_verdict`, `caveats`). Other packages import these names from
here."""

from __future__ import annotations

from app.core.measure.answers import (
    DEFAULT_TASK_TOLERANCES,
    IMAGE_NOT_PROBABILITY,
    KIND_METRICS,
    SCORE_THRESHOLD,
    judge,
    sample_words,
    task_words,
)
from app.core.measure.compare import CandidateReport, OutputMetrics, compare_report_json, compare_samples
from app.core.measure.compute import PRECISION_WORDS, Emulation, device_of, emulation, target_emulations
from app.core.measure.inputs import InputSource, make_samples, resolve_input_shapes, source_shapes
from app.core.measure.kinds import KINDS, OutputKind, OutputKindError, infer_output_kinds, parse_output_kinds
from app.core.measure.latency import (
    Budget,
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
    answer_strips,
    decode_picture,
    input_picture,
    output_pictures,
    png_b64,
)
from app.core.measure.profile import NodeTime, Profile, parse_ort_profile
from app.core.measure.profile_diff import device_word, node_devices, node_shares, profile_delta, slower_reasons
from app.core.measure.results import COLUMNS, RANDOM_CALIBRATION, ResultsState
from app.core.measure.samples import SAMPLES_DIR, photo_source_for, sample_photos
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

__all__ = ["A_LITTLE_COS", "BAD", "COLUMNS", "DEFAULT_TASK_TOLERANCES", "ELEMENTWISE", "FAIR", "GOOD",
           "IMAGE_NOT_PROBABILITY", "KINDS", "KIND_METRICS", "MAX_OUTPUTS", "MAX_SAMPLES", "METRICS", "NEUTRAL",
           "PRECISION_WORDS", "RANDOM_CALIBRATION", "SAMPLES_DIR", "SCORE_THRESHOLD", "UNCHANGED_COS", "Budget",
           "CandidateReport", "CardFacts", "Emulation", "InputSource", "MeasureCancelled", "NodeTime", "OutputKind",
           "OutputKindError", "OutputMetrics", "Profile", "ResultsState", "Tolerance", "ToleranceError",
           "answer_strips", "answer_verdict", "card_facts", "caveats", "compare_report_json", "compare_samples",
           "cosine_text", "decode_picture", "default_timing_mode", "device_of", "device_word", "emulation",
           "fmt_metric", "infer_output_kinds", "input_picture", "judge", "make_samples", "measure", "median_ms",
           "node_devices", "node_shares", "output_pictures", "parse_ort_profile", "parse_output_kinds",
           "photo_source_for", "png_b64", "profile_delta", "resolve_input_shapes", "sample_photos", "sample_words",
           "slower_because", "slower_reasons", "source_shapes", "speed_reference", "speed_verdict", "speedups",
           "target_emulations", "task_verdict", "task_words"]
