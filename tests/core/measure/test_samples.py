"""The bundled sample photos and the image source fitted to a model's image input."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from app.core.evaluate import photo_source, photo_tensor
from app.core.measure import InputSource, make_samples, resolve_input_shapes, sample_photos
from app.core.measure.images import read_image
from app.core.measure.samples import IMAGENET_MEAN, IMAGENET_STD, SAMPLES_DIR
from app.core.model import graph_inputs, value_info_to_tensor_info

PHOTOS = ("astronaut.jpg", "chelsea.jpg", "coffee.jpg", "rocket.jpg", "text.jpg")


def _infos(model: onnx.ModelProto):
    return [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]


def _identity_model(tiny_model, *inputs: onnx.ValueInfoProto) -> onnx.ModelProto:
    nodes = [helper.make_node("Identity", [i.name], [f"{i.name}_out"]) for i in inputs]
    outputs = [helper.make_tensor_value_info(f"{i.name}_out", i.type.tensor_type.elem_type, None) for i in inputs]
    return tiny_model.build(nodes=nodes, inputs=list(inputs), outputs=outputs, initializers=[])


def _fit(model: onnx.ModelProto, user: dict | None = None) -> InputSource | None:
    infos = _infos(model)
    return photo_source(model, infos, resolve_input_shapes(infos, user or {}))


def test_the_photos_exist_and_decode():
    photos = sample_photos()
    assert [p.name for p in photos] == sorted(PHOTOS)
    assert all(p.parent == SAMPLES_DIR for p in photos)
    for photo in photos:
        img = read_image(photo)
        assert img.ndim == 3 and img.shape[2] == 3, photo.name  # RGB, the text page too
        assert 16 <= min(img.shape[:2]) and max(img.shape[:2]) <= 640, photo.name
        assert img.std() > 10, f"{photo.name} is nearly flat"


def test_every_photo_has_its_licence():
    licences = (SAMPLES_DIR / "LICENSES.md").read_text(encoding="utf-8")
    for name in PHOTOS:
        assert f"`{name}`" in licences, name
    assert "scikit-image" in licences and "0.26.0" in licences
    assert "LICENSES.md" not in [p.name for p in sample_photos()]  # only images are photos


def test_u2netp_gets_nchw_imagenet(model_paths):
    source = _fit(onnx.load(model_paths["u2netp"]))
    assert source is not None and source.kind == "images" and source.path == str(SAMPLES_DIR)
    pre = source.preprocess
    assert (pre.layout, pre.color, pre.size) == ("NCHW", "RGB", None)
    assert pre.scale == pytest.approx(1 / 255)
    assert pre.mean == IMAGENET_MEAN and pre.std == IMAGENET_STD


def test_nhwc_and_grey_models(tiny_model):
    nhwc = _identity_model(tiny_model, helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 64, 64, 3]))
    source = _fit(nhwc)
    assert source is not None and source.preprocess.layout == "NHWC"
    grey = _identity_model(tiny_model, helper.make_tensor_value_info("img", TensorProto.FLOAT, ["N", 1, 32, 48]))
    source = _fit(grey, {"img": (2, 1, 32, 48)})
    assert source is not None and source.preprocess.layout == "NCHW"
    assert source.preprocess.mean == (0.0,) and source.preprocess.std == (1.0,)
    (s,) = make_samples(grey, _infos(grey), {"img": (2, 1, 32, 48)}, source, samples=1, photos=photo_tensor)
    assert s["img"].shape == (2, 1, 32, 48) and 0.0 <= s["img"].min() and s["img"].max() <= 1.0


def test_no_photos_for_models_that_do_not_take_one_image(tiny_model):
    two = _identity_model(tiny_model, helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 3, 64, 64]),
                          helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 3, 64, 64]))
    assert _fit(two) is None
    for dtype, shape in ((TensorProto.INT32, [1, 3, 64, 64]),  # not float
                         (TensorProto.FLOAT, [1, 3, 8, 8]),  # too small to be a picture
                         (TensorProto.FLOAT, [1, 5, 64, 64]),  # five channels
                         (TensorProto.FLOAT, [1, 64, 3])):  # not 4-D
        model = _identity_model(tiny_model, helper.make_tensor_value_info("x", dtype, shape))
        assert _fit(model) is None, shape


def test_magika_gets_no_photos(model_paths):
    assert _fit(onnx.load(model_paths["magika_standard_v3_3"]), {"bytes": (1, 2048)}) is None


def test_u2netp_samples_are_the_photos(model_paths):
    model = onnx.load(model_paths["u2netp"])
    infos = _infos(model)
    shapes = resolve_input_shapes(infos, {})
    source = photo_source(model, infos, shapes)
    photos = make_samples(model, infos, shapes, source, samples=5, photos=photo_tensor)
    assert len(photos) == 5 and len(make_samples(model, infos, shapes, source, samples=2, photos=photo_tensor)) == 2
    assert len(make_samples(model, infos, shapes, source, samples=0, photos=photo_tensor)) == 5  # every photo
    arrays = [s["input.1"] for s in photos]
    assert all(a.shape == (1, 3, 320, 320) and a.dtype == np.float32 for a in arrays)
    (noise,) = make_samples(model, infos, shapes, InputSource("random", seed=0), samples=1)
    # ImageNet-normalised photos centre near 0 and go below it; U[0, 1) noise has mean 0.5 and no negatives.
    assert all(abs(float(a.mean()) - float(noise["input.1"].mean())) > 0.1 for a in arrays)
    assert all(float(a.min()) < -1.0 for a in arrays)
    assert not np.allclose(arrays[0], arrays[1])
    # The first photo (astronaut.jpg), decoded and normalised by hand.
    first = read_image(sample_photos()[0])
    assert first.shape[:2] == (512, 512)
    centre = (first[256, 256] / 255 - np.array(IMAGENET_MEAN)) / np.array(IMAGENET_STD)
    np.testing.assert_allclose(arrays[0][0, :, 160, 160], centre, atol=0.15)


def test_an_ultralytics_export_gets_pixels_without_mean_and_std():
    """YOLOv8/11/26 exports carry Ultralytics' metadata and are trained on [0, 1] pixels: ImageNet's mean/std would
    shift every photo and the detector would find less."""
    from app.core.measure.samples import unnormalised
    from app.core.model import TensorInfo

    info = TensorInfo("images", "float32", (1, 3, 320, 320))
    shapes = {"images": (1, 3, 320, 320)}
    plain = photo_source({"author": "Ultralytics", "task": "detect"}, [info], shapes)
    assert plain is not None and plain.preprocess is not None
    assert plain.preprocess.mean == (0.0, 0.0, 0.0) and plain.preprocess.std == (1.0, 1.0, 1.0)
    assert plain.preprocess.resize == "letterbox" and plain.preprocess.pad == 114 and plain.preprocess.preset == "yolo"
    assert "Ultralytics" in plain.describe()
    assert unnormalised({"stride": "32", "names": "{0: 'face'}", "imgsz": "[320, 320]"})
    other = photo_source({"character": "text\ntitle"}, [info], shapes)
    assert other is not None and other.preprocess is not None and other.preprocess.mean == (0.485, 0.456, 0.406)
