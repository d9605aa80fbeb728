"""Measurement: input samples (`InputSource`, `make_samples`, `resolve_input_shapes`), comparing outputs
(`compare_samples`, `Tolerance`, `METRICS`), latency (`measure`, `Budget`), and which precisions a backend really
computes in (`emulation`, `target_emulations`). Other packages import these names from here."""

from __future__ import annotations

from app.core.measure.compare import METRICS, CandidateReport, Tolerance, compare_report_json, compare_samples
from app.core.measure.compute import Emulation, device_of, emulation, target_emulations
from app.core.measure.inputs import InputSource, make_samples, resolve_input_shapes, source_shapes
from app.core.measure.latency import Budget, measure

__all__ = ["METRICS", "Budget", "CandidateReport", "Emulation", "InputSource", "Tolerance", "compare_report_json",
           "compare_samples", "device_of", "emulation", "make_samples", "measure", "resolve_input_shapes",
           "source_shapes", "target_emulations"]
