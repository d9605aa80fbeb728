"""Conformance with the installed TensorRT: every attribute the backend uses exists, and a tiny model builds
and runs (FP32, FP16 variant, INT8 Q/DQ variant) with outputs close to ONNX Runtime's.

Runs only where `import tensorrt` works and a CUDA GPU is present; elsewhere it skips with the reason.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import onnx
import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("tensorrt") is None, reason="tensorrt not installed")

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


def test_every_attribute_the_backend_uses_exists():
    import tensorrt as trt

    missing = []
    for owner, attr in USED:
        obj = trt
        for part in owner.split(".") if owner else []:
            obj = getattr(obj, part, None)
        if obj is None or not hasattr(obj, attr):
            missing.append(f"{owner + '.' if owner else ''}{attr}")
    assert not missing, f"TensorRT {trt.__version__} lacks: {missing}"


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


@pytest.mark.parametrize("precision, tol", [("fp32", 1e-4), ("fp16", 2e-2), ("int8", 1.5e-1)])
def test_tiny_model_builds_and_runs_close_to_onnxruntime(tmp_path, precision, tol):
    import onnxruntime as ort
    import tensorrt as trt

    from app.backends.cuda_rt import CudaUnavailable, gpu_info
    from app.backends.trt_build import build_engine, make_logger
    from app.backends.trt_runtime import TrtSession
    from app.core.precision import PrecisionPlan
    from app.core.variants import build_variant

    try:
        gpu_info()
    except CudaUnavailable as exc:
        pytest.skip(exc.message)
    path = _tiny(tmp_path / "tiny.onnx")
    x = np.random.default_rng(1).random((1, 3, 16, 16), dtype=np.float32)
    calib = (lambda: ([{"x": np.random.default_rng(i).random((1, 3, 16, 16), dtype=np.float32)} for i in range(8)],
                      True))
    variant = build_variant(path, PrecisionPlan(default=precision), calib=calib, cache_dir=tmp_path / "cache")
    logs = []
    logger = make_logger(trt, lambda level, msg: logs.append((level, msg)))
    result = build_engine(variant.path, logger=logger, workspace_bytes=1 << 28)
    session = TrtSession(result.engine, logger)
    try:
        out = session.run({"x": x})["y"]
        records = session.profile_layers({"x": x}, runs=3)
    finally:
        session.close()
    assert records and all(ms >= 0 for _, ms in records)
    ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert out.shape == ref.shape and np.abs(out - ref).max() < tol, logs[-5:]
    assert result.layer_info is not None and result.timing_cache
