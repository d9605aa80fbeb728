"""trtlab's TensorRT build path run for real against TensorRT for RTX (which builds without a GPU): network
creation, the parser and its errors, profiles (ranges and several), the build config, progress and Cancel, the
logger's severities, the build result, the engine cache, and the build job (with Cancel) in a child process."""

from __future__ import annotations

import importlib.util

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from app.backends.trt_build import (
    BuildCancelled,
    BuildFailed,
    build_engine,
    engine_layer_info,
    make_logger,
    network_flags,
    parser_issues,
    severity_level,
)
from app.backends.trt_flavour import RTX
from app.core.engine.inspector_json import parse_engine_info
from app.core.engine.progress import PhaseTracker
from tests.support.waiting import wait_for_event

pytestmark = pytest.mark.skipif(importlib.util.find_spec("tensorrt_rtx_bindings") is None,
                                reason='TensorRT for RTX is not installed (pip install "trtlab[tensorrt-rtx]")')


@pytest.fixture(scope="module")
def trt():
    return RTX.import_module()


@pytest.fixture()
def logs():
    return []


@pytest.fixture()
def logger(trt, logs):
    return make_logger(trt, lambda level, msg: logs.append((level, msg)))


def _save(tmp_path, name, nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    path = tmp_path / f"{name}.onnx"
    onnx.save(m, str(path))
    return str(path)


def _matmul(tmp_path, batch: object = "N") -> str:
    """x[N, 16] · W[16, 8] + b, Relu: a dynamic batch that needs a profile."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b")
    return _save(tmp_path, "mm", [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
                                  helper.make_node("Add", ["h", "b"], ["a"], name="bias"),
                                  helper.make_node("Relu", ["a"], ["y"], name="relu")],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 16])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 8])], [w, b])


def _dynamic_quant(tmp_path) -> str:
    """ONNX Runtime's dynamic quantization: DynamicQuantizeLinear + MatMulInteger, which TensorRT cannot import."""
    w = numpy_helper.from_array(np.arange(32, dtype=np.uint8).reshape(4, 8), "w_q")
    wz = numpy_helper.from_array(np.array(0, np.uint8), "w_zp")
    scale = numpy_helper.from_array(np.array([0.02], np.float32), "w_scale")
    return _save(tmp_path, "dq", [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="dql"),
        helper.make_node("MatMulInteger", ["xq", "w_q", "xz", "w_zp"], ["acc"], name="mmi"),
        helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT, name="cast"),
        helper.make_node("Mul", ["accf", "xs"], ["m1"], name="rescale_x"),
        helper.make_node("Mul", ["m1", "w_scale"], ["y"], name="rescale_w")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])], [w, wz, scale])


FIXED = [{"x": ((2, 16), (2, 16), (2, 16))}]


# --- network, logger -------------------------------------------------------------------------------------

def test_strongly_typed_flag_is_computed_from_the_enum(trt, logger):
    flags = network_flags(trt)
    assert flags == 1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED)
    network = trt.Builder(logger).create_network(flags)
    assert network is not None and network.num_layers == 0


def test_logger_severities_and_what_it_keeps(trt, logger, logs):
    s = trt.ILogger.Severity
    assert [severity_level(trt, v) for v in (s.INTERNAL_ERROR, s.ERROR, s.WARNING, s.INFO, s.VERBOSE)] == \
        ["error", "error", "warning", "info", "debug"]
    logger.log(s.ERROR, "Error Code 4: broken\n")
    logger.log(s.WARNING, "plain warning")
    logger.log(s.INFO, "Layer will fall back to FP32")          # notable: shown as a warning
    logger.log(s.WARNING, "WeightsContext.cpp:525: Empty initializer 848 was provided with non-empty data.")
    logger.log(s.ERROR, "[checkMacros.cpp::catchCudaError::250] Error Code 1: Cuda Runtime (cudaError 35: CUDA "
                        "driver version is insufficient for CUDA runtime version)")
    logger.log(s.VERBOSE, "chatter")                            # dropped
    logger.log(s.VERBOSE, "Layers:\nName: a, LayerType: kgen")   # dropped from the log, kept for the layers
    assert logs == [("error", "Error Code 4: broken"), ("warning", "plain warning"),
                    ("warning", "Layer will fall back to FP32"),
                    ("info", "WeightsContext.cpp:525: Empty initializer 848 was provided with non-empty data."),
                    ("info", "[checkMacros.cpp::catchCudaError::250] Error Code 1: Cuda Runtime (cudaError 35: CUDA "
                             "driver version is insufficient for CUDA runtime version)")]
    assert logger.errors == ["Error Code 4: broken"] and logger.notable == ["Layer will fall back to FP32"]
    assert logger.layer_dumps == ["Layers:\nName: a, LayerType: kgen"]


# --- parser ---------------------------------------------------------------------------------------------

def test_parser_errors_name_every_node_and_resolve_to_the_graph(trt, logger, tmp_path):
    from app.core.engine.parser_errors import explain, issue_from_fields, map_issues_to_graph

    path = _dynamic_quant(tmp_path)
    with pytest.raises(BuildFailed) as err:
        build_engine(path, trt=trt, logger=logger, timing_cache=None)
    issues = err.value.issues
    assert {i["node_name"] for i in issues} == {"dql", "mmi"} and all(i["code"] for i in issues)
    resolved = map_issues_to_graph([issue_from_fields(**i) for i in issues], onnx.load(path).graph)
    assert {r.key for r in resolved} == {"dql", "mmi"}
    message, fix = explain(resolved[0])
    assert "dql" in message or "mmi" in message
    assert fix
    assert "cannot import" in err.value.message or "refused" in err.value.message


def test_parser_issue_fields_drop_no_gpu_noise(trt, logger, tmp_path):
    network = trt.Builder(logger).create_network(network_flags(trt))
    parser = trt.OnnxParser(network, logger)
    assert not parser.parse_from_file(_dynamic_quant(tmp_path))
    for issue in parser_issues(parser):
        assert "cudaError" not in issue["desc"] and "cudaError" not in issue["text"]
        assert issue["node_operator"] in ("DynamicQuantizeLinear", "MatMulInteger")


# --- profiles, config, result ---------------------------------------------------------------------------

def test_a_profile_range_and_several_profiles_build(trt, logger, tmp_path):
    path = _matmul(tmp_path)
    one = build_engine(path, trt=trt, logger=logger, profiles=[{"x": ((1, 16), (4, 16), (8, 16))}], timing_cache=None)
    info = parse_engine_info(one.layer_info)
    (x,) = info.inputs
    assert x.dims == (-1, 16) and (x.profiles[0].min, x.profiles[0].opt, x.profiles[0].max) == \
        ((1, 16), (4, 16), (8, 16))
    two = build_engine(path, trt=trt, logger=logger, timing_cache=None,
                       profiles=[{"x": ((1, 16), (2, 16), (4, 16))}, {"x": ((16, 16), (16, 16), (16, 16))}])
    info2 = parse_engine_info(two.layer_info)
    assert info2.profiles == [0, 1] and len(info2.inputs[0].profiles) == 2
    assert info2.profile_layers(1) and all(la.name.endswith("[profile 1]") for la in info2.profile_layers(1))


def test_a_dynamic_input_without_a_profile_fails_with_the_fix(trt, logger, tmp_path):
    with pytest.raises(BuildFailed) as err:
        build_engine(_matmul(tmp_path), trt=trt, logger=logger, timing_cache=None)
    assert "no optimization profile" in err.value.message and "--profile" in err.value.fix
    assert not isinstance(err.value, BuildCancelled) and not getattr(err.value, "issues", None)


def test_build_config_settings_and_the_result(trt, logger, tmp_path):
    path = _matmul(tmp_path, 2)
    base = build_engine(path, trt=trt, logger=logger, profiles=FIXED, timing_cache=None)
    assert base.engine[:4] and base.trt_version == trt.__version__ == "1.7.1.116"
    assert base.timing_cache == b"" and base.layer_source == "builder log"
    layers = parse_engine_info(base.layer_info).layers
    assert layers and {"mm", "bias", "relu"} <= {n for la in layers for n in la.onnx_nodes}
    for kw in ({"workspace_bytes": 64 << 20}, {"optimization_level": 0}, {"optimization_level": 5},
               {"tf32": True}):
        assert build_engine(path, trt=trt, logger=logger, profiles=FIXED, timing_cache=None, **kw).engine
    targeted = build_engine(path, trt=trt, logger=logger, profiles=FIXED, timing_cache=None, targets=("8.6", "8.9"))
    assert targeted.engine and len(targeted.engine) != len(base.engine)  # fewer architectures in the plan


def test_turing_refuses_an_fp32_gemm_and_the_failure_is_explained(trt, logger, tmp_path):
    with pytest.raises(BuildFailed) as err:
        build_engine(_matmul(tmp_path, 2), trt=trt, logger=logger, profiles=FIXED, timing_cache=None,
                     targets=("7.5",))
    assert "FP32 GEMM is not supported" in err.value.message and "Turing" in err.value.message
    assert "7.5" in err.value.fix and logger.errors


def test_no_gpu_can_load_the_plan_so_the_inspector_gives_nothing(trt, logger, tmp_path):
    from app.backends.trt_env import rtx_environment
    from app.core.engine.rtx import run_problem

    gpus = rtx_environment().gpus
    if gpus and not run_problem((), gpus[0].compute_capability):
        pytest.skip(f"this machine's GPU ({gpus[0].name}) can load RTX engines")
    plan = build_engine(_matmul(tmp_path, 2), trt=trt, logger=logger, profiles=FIXED, timing_cache=None).engine
    assert engine_layer_info(trt, logger, plan) is None  # deserialize returns None here: no exception


# --- progress and Cancel --------------------------------------------------------------------------------

def test_progress_reaches_the_tracker(trt, logger, model_paths):
    sent: list[tuple[float, str]] = []
    tracker = PhaseTracker(lambda f, m: sent.append((f, m)), title="Building", min_interval=0.0)
    build_engine(str(model_paths["u2netp"]), trt=trt, logger=logger, timing_cache=None, tracker=tracker,
                 inspect=False)
    assert len(sent) > 10 and sent[-1][0] == 1.0
    assert any("Building engine" in m for _, m in sent) and all(0.0 <= f <= 1.0 for f, _ in sent)


def test_cancel_stops_the_build_within_a_fraction_of_a_second(trt, logger, model_paths):
    steps = [0]

    class Stopper(PhaseTracker):
        def step_complete(self, phase_name: str, step: int) -> bool:
            steps[0] += 1
            if steps[0] == 200:
                self.cancel()
            return super().step_complete(phase_name, step)

    tracker = Stopper()
    with pytest.raises(BuildCancelled):
        build_engine(str(model_paths["u2netp"]), trt=trt, logger=logger, timing_cache=None, tracker=tracker,
                     inspect=False)
    assert tracker.cancel_delivered_at is not None
    assert steps[0] < 400  # TensorRT stopped calling back soon after it was told


# --- the engine cache and the job -----------------------------------------------------------------------

def test_ensure_engine_caches_on_version_and_targets(tmp_path):
    from app.backends.trt import ensure_engine
    from app.core.engine.cache import BuildConfig
    from app.core.engine.profiles import OptimizationProfile

    path = _matmul(tmp_path, 2)
    config = BuildConfig(profiles=[OptimizationProfile.from_json({"inputs": [
        {"name": "x", "min": [2, 16], "opt": [2, 16], "max": [2, 16]}]})], targets=("8.6",))
    first = ensure_engine(path, config, None, root=tmp_path / "engines", flavour=RTX)
    assert not first.cached and first.meta["flavour"] == "rtx" and first.meta["targets"] == ["8.6"]
    assert first.layer_source == "builder log" and first.layer_info and first.meta["layer_source"] == "builder log"
    again = ensure_engine(path, config, None, root=tmp_path / "engines", flavour=RTX)
    assert again.cached and again.path == first.path and again.layer_info == first.layer_info
    other = ensure_engine(path, BuildConfig(profiles=config.profiles), None, root=tmp_path / "engines", flavour=RTX)
    assert not other.cached and other.path != first.path
    assert not list((tmp_path / "engines").glob("timing/*"))  # RTX keeps no timing cache


def test_cancel_from_the_job_runner_stops_the_build(model_paths, tmp_path):
    from app.jobs import JobRunner, JobSpec

    # Targets of its own: an engine other tests built would come from the engine cache, with no build to cancel.
    params = {"model": str(model_paths["u2netp"]), "target": "trt-rtx:int8", "calib_samples": 2,
              "options": {"targets": ["8.9", "12.0"]}}
    handle = JobRunner(grace=10.0).start(JobSpec(func="app.backends.tasks.build:build_task", params=params, title="b"))
    wait_for_event(handle, lambda ev: ev.kind == "progress" and "TensorRT for RTX engine" in (ev.message or ""), 120,
                   "the engine build to start")
    handle.cancel()
    result = handle.wait(timeout=120)
    assert result.status == "cancelled", (result.status, result.error, result.log_tail[-5:])
    # Stopped by its cancel flag within the 10 s grace: no terminate, no kill.
    assert result.exit_reason == "stopped after cancel", result.exit_reason
