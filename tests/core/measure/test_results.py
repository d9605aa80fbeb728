"""What the Results view holds, gathered over a session: rows, warnings and speed-ups from the compare and bench
JSON."""

from __future__ import annotations

import numpy as np

from app.core.results import BenchResult, CompareResult


def test_benchmark_warnings_are_said_once_with_advice_for_the_cpu():
    """Jittery CPU runs: one line naming every target with its CoV, and CPU advice (not GPU clocks)."""
    from app.core.measure.latency import LatencyStats
    from app.core.measure.results import ResultsState

    state = ResultsState()
    for target, spread in (("ort-cpu:fp32", 1.0), ("ort-cpu:int8", 2.0)):
        stats = LatencyStats.from_times(np.array([1.0, 1.0 + spread] * 10), mode="end_to_end", warmup=0,
                                        device="cpu")
        state.add_bench(BenchResult.from_json({"backend": target, **stats.to_json()}), reference="ort-cpu:fp32")
    jitter = [w for w in state.warnings() if "varies a lot" in w]
    assert len(jitter) == 1 and "ort-cpu:fp32" in jitter[0] and "ort-cpu:int8" in jitter[0]
    assert "pin the threads" in jitter[0] and "GPU" not in jitter[0]
    assert state.speedups()["ort-cpu:fp32"] == 1.0 and state.rows()[0].speed == "1.00× (reference)"


def _compare_doc(reference: str, *candidates: tuple[str, bool]) -> CompareResult:
    """A compare result (app.core.measure.compare.compare_report_json's JSON, read) for a one-output model."""
    return CompareResult.from_json({"reference": reference, "samples": 2, "random_data": False, "notes": {},
            "candidates": [{"name": name, "passed": ok,
                            "outputs": [{"name": "y", "cosine": 0.9999 if ok else 0.9, "max_abs": 0.01,
                                         "nan": 0, "inf": 0}]} for name, ok in candidates],
            "plots": {}})


def test_a_plan_is_indicative_where_its_precisions_are_emulated():
    from app.core.measure.results import ResultsState

    state = ResultsState()
    state.add_compare(_compare_doc("ort-cpu:fp32", ("ort-cpu:plan", True)), plan_precisions={"fp32", "fp16"})
    plan = next(r for r in state.rows() if r.target == "ort-cpu:plan")
    assert plan.verdict == "✓ Same answers (indicative)" and "computes FP16 as FP32" in plan.note
    # The same plan name with an INT8-only plan: the CPU computes INT8, the verdict stands as it is.
    state.add_compare(_compare_doc("ort-cpu:fp32", ("ort-cpu:plan", False)), plan_precisions={"fp32", "int8"})
    plan = next(r for r in state.rows() if r.target == "ort-cpu:plan")
    assert plan.verdict == "✗ Answers differ" and plan.note == ""
    assert len(state.rows()) == 2  # the re-run replaced its own row


def test_a_comparison_against_another_reference_replaces_the_earlier_ones():
    from app.core.measure.results import ResultsState

    state = ResultsState()
    assert state.add_compare(_compare_doc("ort-cpu:fp32", ("ort-cpu:fp16", True), ("ort-cpu:int8", False))) == []
    assert "1 of 2 candidates give the same answers" in state.headline()
    dropped = state.add_compare(_compare_doc("ort-cuda:fp32", ("ort-cuda:fp16", True)))
    assert dropped == ["ort-cpu:fp16", "ort-cpu:int8"]
    assert [r.label for r in state.rows()] == ["ort-cuda:fp32 (reference)", "ort-cuda:fp16"]
    assert "1 of 1 candidate gives the same answers as ort-cuda:fp32" in state.headline()
