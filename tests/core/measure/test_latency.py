"""Latency statistics, budgets, device-time values, cancel and the instability warning."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from app.core.measure.latency import (
    Budget,
    BudgetError,
    LatencyStats,
    MeasureCancelled,
    default_timing_mode,
    measure,
    speed_reference,
    speedup,
    speedups,
)


def test_stats_on_known_times():
    s = LatencyStats.from_times(np.arange(1, 11, dtype=np.float64), mode="end_to_end", warmup=2, batch=4)
    assert (s.min, s.max, s.mean, s.median) == (1, 10, 5.5, 5.5)
    assert (s.p90, s.p95, s.p99) == pytest.approx((9.1, 9.55, 9.91))
    assert s.std == pytest.approx(3.0276503540974917) and s.cov == pytest.approx(3.0276503540974917 / 5.5)
    assert s.throughput_per_s == pytest.approx(4 * 1000 / 5.5)
    assert s.unstable and "CoV 55.0%" in s.warning
    doc = json.loads(json.dumps(s.to_json(), allow_nan=False))
    assert {"mode", "warmup", "iterations", "latency_ms", "cov", "throughput_per_s"} <= set(doc)
    assert set(doc["latency_ms"]) == {"min", "mean", "median", "p90", "p95", "p99", "max", "std"}
    assert doc["iterations"] == 10 and doc["warmup"] == 2 and doc["mode"] == "end_to_end"


def test_budget_parse():
    assert Budget.parse("200") == Budget(count=200)
    assert Budget.parse("3s") == Budget(seconds=3.0) and Budget.parse("0.5s") == Budget(seconds=0.5)
    assert Budget.parse("500ms") == Budget(seconds=0.5) and Budget.parse(50) == Budget(count=50)
    for bad in ("abc", "-1", "0s", "3 minutes", ""):
        with pytest.raises(BudgetError) as e:
            Budget.parse(bad)
        assert "3s" in e.value.fix


def test_count_budget_runs_exactly():
    calls = []
    s = measure(lambda: calls.append(1), Budget(count=3), Budget(count=12), mode="end_to_end")
    assert len(calls) == 15 and s.warmup == 3 and s.iterations == 12 and len(s.times_ms) == 12
    assert s.min >= 0 and s.mode == "end_to_end"


def test_time_budget_and_host_timing():
    def fn() -> None:
        time.sleep(0.002)

    t0 = time.perf_counter()
    s = measure(fn, Budget(count=0), Budget(seconds=0.1), mode="end_to_end")
    elapsed = time.perf_counter() - t0
    # The budget is spent, and no more runs than 0.1 s of 2 ms sleeps hold (no upper bound on the wall clock: a busy
    # machine only makes fewer runs fit).
    assert elapsed >= 0.1 and 1 <= s.iterations <= 50 and s.warmup == 0
    assert s.min >= 2.0  # wall time around a 2 ms sleep


def test_device_time_return_value_is_used():
    values = iter([5.0] * 3 + [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    s = measure(lambda: next(values), Budget(count=3), Budget(count=10), mode="device_only", batch=8)
    np.testing.assert_array_equal(s.times_ms, np.ones(10))
    assert s.median == 1.0 and s.throughput_per_s == 8000.0 and s.mode == "device_only"
    assert not s.unstable and s.warning == ""


def test_cancel_stops_measurement():
    calls = []

    def fn() -> None:
        calls.append(1)
        time.sleep(0.01)

    with pytest.raises(MeasureCancelled, match="cancelled during timing"):
        measure(fn, Budget(count=2), Budget(count=10_000), mode="end_to_end", cancel=lambda: len(calls) > 5)
    assert len(calls) < 40  # polled every 0.1 s, not after 10 000 runs
    with pytest.raises(MeasureCancelled, match="before it started"):
        measure(fn, Budget(count=1), Budget(count=1), mode="end_to_end", cancel=lambda: True)


def test_progress_reports_fractions():
    seen: list[tuple[float, str]] = []
    measure(lambda: 1.0, Budget(count=1), Budget(count=5), mode="device_only",
            progress=lambda f, m: seen.append((f, m)))
    assert seen and seen[-1][0] == 1.0 and all(0 <= f <= 1 for f, _ in seen)


def test_instability_and_few_iterations_warnings():
    jitter = iter([1.0, 2.0] * 20)
    s = measure(lambda: next(jitter), Budget(count=0), Budget(count=20), mode="device_only")
    assert s.unstable and "varies a lot" in s.warning and s.cov > 0.025
    few = measure(lambda: 1.0, Budget(count=0), Budget(count=3), mode="device_only")
    assert few.unstable and "only 3 iteration(s)" in few.warning
    steady = measure(lambda: 1.0, Budget(count=0), Budget(count=20), mode="device_only")
    assert not steady.unstable and steady.cov == 0.0


def test_speedup_is_median_based():
    ref = LatencyStats.from_times(np.array([10.0, 10.0, 100.0]), mode="end_to_end", warmup=0)
    cand = LatencyStats.from_times(np.array([5.0, 5.0, 5.0]), mode="end_to_end", warmup=0)
    assert speedup(ref, cand) == 2.0


def test_speedups_are_median_ratios_to_the_reference_and_none_where_unknown():
    from app.core.measure import median_ms, speedups
    from app.core.results import BenchResult

    benches = {t: BenchResult.from_json(d) for t, d in {
        "ort-cpu:fp32": {"latency_ms": {"median": 2.0}}, "ort-cpu:fp16": {"latency_ms": {"median": 4.0}},
        "trt:fp16": {"latency_ms": {"median": 0.5}}, "trt:int8": {"error": "did not build"}}.items()}
    assert speedups(benches, "ort-cpu:fp32") == {"ort-cpu:fp32": 1.0, "ort-cpu:fp16": 0.5, "trt:fp16": 4.0,
                                                 "trt:int8": None}
    assert set(speedups(benches, "not-benchmarked").values()) == {None}
    assert median_ms(benches["trt:int8"]) is None and median_ms(None) is None


def test_one_rule_picks_what_speed_ups_are_relative_to():
    """The Results table, the scorecard and the report all call speed_reference: the comparison's reference where
    it was benchmarked, else the benchmarks' own reference, else the first FP32 benchmark, else the first."""
    from app.core.results import BenchResult

    bench = {t: BenchResult.from_json({"latency_ms": {"median": m}}) for t, m in
             (("ort-cuda:fp16", 1.0), ("ort-cpu:fp32", 8.0), ("ort-cuda:fp32", 2.0))}
    assert speed_reference(bench, "ort-cuda:fp32", "ort-cpu:fp32") == "ort-cuda:fp32"
    assert speed_reference(bench, "trt:fp32", "ort-cpu:fp32") == "ort-cpu:fp32"  # compared against, not timed
    assert speed_reference(bench, "trt:fp32") == "ort-cpu:fp32"  # the first FP32 benchmark
    assert speed_reference({"ort-cuda:fp16": bench["ort-cuda:fp16"]}) == "ort-cuda:fp16"
    assert speed_reference({}) == ""
    assert speedups(bench, speed_reference(bench, "ort-cuda:fp32")) == {
        "ort-cuda:fp16": 2.0, "ort-cpu:fp32": 0.25, "ort-cuda:fp32": 1.0}


def test_a_benchmark_times_device_work_on_a_gpu_and_the_whole_call_on_the_cpu():
    assert default_timing_mode("ort-cpu") == default_timing_mode("ort-cpu:int8") == "end_to_end"
    assert {default_timing_mode(b) for b in ("ort-cuda", "ort-trt:fp16", "trt", "trt-rtx:plan")} == {"device_only"}
