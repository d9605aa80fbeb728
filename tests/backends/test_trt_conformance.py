"""Conformance with each installed TensorRT: every attribute the backend uses exists, a tiny model builds (FP32,
FP16 variant, INT8 Q/DQ variant) through trtlab's one build path with the layers that ran, and it runs with
outputs close to ONNX Runtime's where a GPU can run the engine.

The build tests run for real wherever TensorRT for RTX is installed (the `test` extra installs it; it builds
without a GPU). TensorRT 10/11 (`tensorrt`) needs a CUDA GPU to build; tests of it skip without it, and the run
tests skip without a GPU that can run the engine, each saying which of those is missing.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import onnx
import pytest

from app.backends.trt_flavour import RTX, TENSORRT, Flavour


def _installed(flavour: Flavour) -> bool:
    return any(importlib.util.find_spec(m) is not None for m in flavour.modules)


FLAVOURS = [
    pytest.param(TENSORRT, id="tensorrt", marks=pytest.mark.skipif(
        not _installed(TENSORRT), reason="TensorRT 10/11 (the tensorrt package) is not installed here; it needs an "
                                         "NVIDIA GPU to build, so CI exercises the shared build path with TensorRT "
                                         "for RTX")),
    pytest.param(RTX, id="rtx", marks=pytest.mark.skipif(
        not _installed(RTX), reason='TensorRT for RTX is not installed (pip install "trtlab[tensorrt-rtx]")')),
]

# (owner path, attribute) pairs the backend touches; a missing one is a version the code does not handle.
USED = [
    ("", "Builder"), ("", "OnnxParser"), ("", "Runtime"), ("", "ILogger"), ("", "IProgressMonitor"),
    ("", "IOutputAllocator"), ("", "IProfiler"), ("", "init_libnvinfer_plugins"), ("", "nptype"),
    ("NetworkDefinitionCreationFlag", "STRONGLY_TYPED"), ("MemoryPoolType", "WORKSPACE"),
    ("ProfilingVerbosity", "DETAILED"), ("BuilderFlag", "TF32"), ("LayerInformationFormat", "JSON"),
    ("TensorIOMode", "INPUT"), ("TensorIOMode", "OUTPUT"), ("ILogger.Severity", "WARNING"),
    ("OnnxParser", "parse_from_file"), ("OnnxParser", "get_error"), ("Builder", "create_network"),
    ("Builder", "create_builder_config"), ("Builder", "create_optimization_profile"),
    ("Builder", "build_serialized_network"), ("IBuilderConfig", "set_memory_pool_limit"),
    ("IBuilderConfig", "create_timing_cache"), ("IBuilderConfig", "set_timing_cache"),
    ("IBuilderConfig", "get_timing_cache"), ("IBuilderConfig", "clear_flag"),
    ("IBuilderConfig", "add_optimization_profile"), ("Runtime", "deserialize_cuda_engine"),
    ("ICudaEngine", "create_execution_context"), ("ICudaEngine", "create_engine_inspector"),
    ("ICudaEngine", "get_tensor_profile_shape"), ("ICudaEngine", "is_shape_inference_io"),
    ("IExecutionContext", "set_input_shape"), ("IExecutionContext", "set_tensor_address"),
    ("IExecutionContext", "execute_async_v3"), ("IExecutionContext", "infer_shapes"),
    ("IExecutionContext", "set_output_allocator"), ("IExecutionContext", "profiler"),
    ("IExecutionContext", "report_to_profiler"),
]
# What only the TensorRT for RTX path touches: compute-capability targets and the runtime cache.
USED_RTX = [
    ("ComputeCapability", "SM75"), ("ComputeCapability", "SM86"), ("ComputeCapability", "SM120"),
    ("ComputeCapability", "SM121"), ("IBuilderConfig", "set_compute_capability"),
    ("IBuilderConfig", "num_compute_capabilities"), ("ICudaEngine", "create_runtime_config"),
    ("IRuntimeConfig", "create_runtime_cache"), ("IRuntimeConfig", "set_runtime_cache"),
    ("IRuntimeCache", "serialize"), ("IRuntimeCache", "deserialize"),
]


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_every_attribute_the_backend_uses_exists(flavour):
    trt = flavour.import_module()
    missing = []
    for owner, attr in USED + (USED_RTX if flavour.portable else []):
        obj = trt
        for part in owner.split(".") if owner else []:
            obj = getattr(obj, part, None)
        if obj is None or not hasattr(obj, attr):
            missing.append(f"{owner + '.' if owner else ''}{attr}")
    assert not missing, f"{flavour.label} {trt.__version__} lacks: {missing}"
    assert flavour.version_problem(trt.__version__) == ""


def _tiny(path):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((8, 3, 3, 3)) * 0.2).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
                           helper.make_node("Relu", ["c"], ["y"], name="relu")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])], initializer=[w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    onnx.save(m, str(path))
    return path


def _needs_build_gpu(flavour: Flavour) -> None:
    """TensorRT 10/11 builds only on a CUDA GPU; TensorRT for RTX needs none."""
    if flavour.portable:
        return
    from app.backends.cuda_rt import CudaUnavailable, gpu_info

    try:
        gpu_info()
    except CudaUnavailable as exc:
        pytest.skip(f"TensorRT 10/11 builds only on a CUDA GPU: {exc.message}")


def _run_problem(flavour: Flavour) -> str:
    """Why no GPU here can run this flavour's engine ('' when one can)."""
    from app.backends.cuda_rt import CudaUnavailable, gpu_info

    if importlib.util.find_spec("cuda") is None:
        return "cuda-python is not installed, so trtlab cannot move buffers to a GPU"
    try:
        gpu = gpu_info()
    except CudaUnavailable as exc:
        return exc.message
    if flavour.portable:
        from app.core.engine.rtx import run_problem

        return run_problem((), gpu.compute_capability, gpu.name)
    return ""


def _variant(tmp_path, precision):
    from app.core.precision.plan import PrecisionPlan
    from app.core.precision.variants import build_variant

    path = _tiny(tmp_path / "tiny.onnx")
    calib = (lambda: ([{"x": np.random.default_rng(i).random((1, 3, 16, 16), dtype=np.float32)} for i in range(8)],
                      True))
    return path, build_variant(path, PrecisionPlan(default=precision), calib=calib, cache_dir=tmp_path / "cache")


def _build(flavour, variant_path):
    from app.backends.trt_build import build_engine, make_logger

    trt = flavour.import_module()
    logs: list[tuple[str, str]] = []
    logger = make_logger(trt, lambda level, msg: logs.append((level, msg)))
    inspect = not _run_problem(flavour)  # the inspector needs a GPU that can load the engine
    result = build_engine(variant_path, trt=trt, logger=logger, workspace_bytes=1 << 28,
                          timing_cache=None if not flavour.timing_cache else b"", inspect=inspect)
    return trt, logger, logs, result


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("precision, ran", [("fp32", "fp32"), ("fp16", "fp16"), ("int8", "int8")])
def test_tiny_model_builds_with_the_layers_that_ran(tmp_path, flavour, precision, ran):
    from app.core.engine.inspector_json import parse_engine_info
    from app.core.engine.onnx_map import map_to_onnx

    _needs_build_gpu(flavour)
    _, _, logs, result = _build(flavour, _variant(tmp_path, precision)[1].path)
    assert result.engine and result.trt_version == flavour.import_module().__version__
    assert not [m for level, m in logs if level == "error"], logs
    assert result.layer_info is not None and result.layer_source in ("inspector", "builder log")
    info = parse_engine_info(result.layer_info)
    graph = onnx.load(_variant(tmp_path, precision)[1].path).graph
    mapping = map_to_onnx(info.profile_layers(0), graph)
    assert "conv" in mapping.precision and "relu" in mapping.precision, mapping.precision
    # The convolution's own kernel ("conv_myl0_1" in RTX, "conv + relu" in TensorRT); helper layers around it
    # (casts, padding) may run in another type.
    kernels = [la for la in info.layers if la.name.startswith("conv")]
    assert kernels and {la.precision for la in kernels} == {ran}, [(la.name, la.precision) for la in info.layers]
    if flavour.portable:
        assert result.timing_cache == b""  # RTX keeps no timing cache
    else:
        assert result.timing_cache


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("precision, tol", [("fp32", 1e-4), ("fp16", 2e-2), ("int8", 1.5e-1)])
def test_tiny_model_runs_close_to_onnxruntime(tmp_path, flavour, precision, tol):
    import onnxruntime as ort

    from app.backends.trt_runtime import TrtSession

    _needs_build_gpu(flavour)
    problem = _run_problem(flavour)
    if problem:
        pytest.skip(f"no GPU here can run a {flavour.label} engine: {problem}")
    path, variant = _variant(tmp_path, precision)
    trt, logger, logs, result = _build(flavour, variant.path)
    x = np.random.default_rng(1).random((1, 3, 16, 16), dtype=np.float32)
    session = TrtSession(result.engine, logger, trt=trt)
    try:
        out = session.run({"x": x})["y"]
        records = session.profile_layers({"x": x}, runs=3)
    finally:
        session.close()
    assert records and all(ms >= 0 for _, ms in records)
    ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert out.shape == ref.shape and np.abs(out - ref).max() < tol, logs[-5:]
