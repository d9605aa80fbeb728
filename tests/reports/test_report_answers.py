"""The report's Answers section and its words per output kind: the pictures of a real compare (U²-Net-p's masks, a
YOLOv8-style head's boxes) inline as PNG/JPEG data URIs, each candidate's verdict in words, the comparison tables
and the scorecard saying what happened to the answers; results made before answers existed still render, and
anything in a result's answers that is not an inline PNG or JPEG picture is dropped."""

from __future__ import annotations

import copy
import json
import re
from html import unescape

import pytest

from app.backends.tasks.specs import CompareSpec
from app.core.project import Project, ProjectResult, load_project, save_project
from app.core.results import OutputResult, Task
from app.jobs import run_inline
from app.reports import build_report, read_result_file
from app.reports.answers import fmt_pct, fmt_share, scorecard_phrase, text_diff, verdict_words
from tests.detector_models import save, yolov8_head_model

IMG = re.compile(r'<img [^>]*src="([^"]*)"')


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def _section(html: str, name: str) -> str:
    m = re.search(rf'<section id="{name}">(.*?)</section>', html, re.S)
    assert m, f"no {name} section"
    return m.group(1)


@pytest.fixture(scope="module")
def u2_json(u2netp_compare, tmp_path_factory) -> dict:
    """The compare result as `trtlab compare --json` writes it, read back."""
    path = tmp_path_factory.mktemp("u2") / "compare.json"
    path.write_text(json.dumps(u2netp_compare.data), encoding="utf-8")
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def u2_report(u2_json, tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("u2r") / "compare.json"
    path.write_text(json.dumps(u2_json), encoding="utf-8")
    return build_report([read_result_file(path)], None, {})


def test_the_masks_are_shown_inline_with_each_candidate_s_verdict(u2_json, u2_report):
    section = _section(u2_report, "answers")
    text = _text(section)
    assert '<a href="#answers">Answers</a>' in u2_report
    assert '<img class="photo" src="data:image/jpeg;base64,' in section  # the input photos
    assert '<img src="data:image/png;base64,' in section  # the masks
    answers = u2_json["answers"]
    for name, entry in answers["outputs"].items():
        assert f"Output {name} image" in text
        for uri in entry["ref"]:
            assert f'src="{uri}"' in section
        for cand in u2_json["candidates"]:
            drawn = entry["candidates"][cand["name"]]
            for uri in drawn["cand"] + drawn["diff"]:
                assert f'src="{uri}"' in section
            task = next(o for o in cand["outputs"] if o["name"] == name)["task"]
            assert f"mask IoU {fmt_share(task['mask_iou'])}" in text  # the candidate's verdict on this output
            for sample in drawn["per_sample"]:
                assert f"mask IoU {fmt_share(sample['mask_iou'])}" in text
            assert len(drawn["diff_max"]) == len(drawn["diff"])
    assert re.search(r"max \|Δ\| \d", text)
    shown = len(answers["outputs"])
    rows = len(answers["inputs"])
    per_row = 2 + 2 * len(u2_json["candidates"])  # photo, reference, then each candidate's mask and |difference|
    assert len(IMG.findall(section)) == shown * rows * per_row
    assert "answer |difference|" in text and "FP32 on ort-cpu reference" in text
    not_drawn = [n for n, k in u2_json["output_kinds"].items() if n not in answers["outputs"] and k["kind"] == "image"]
    if not_drawn:
        assert f"Not drawn: {', '.join(not_drawn)}" in text


def test_the_scorecard_and_the_tables_say_what_the_masks_did(u2_json, u2_report):
    card = _text(_section(u2_report, "scorecard"))
    n = len(u2_json["output_kinds"])
    for cand in u2_json["candidates"]:
        worst = min(o["task"]["mask_iou"] for o in cand["outputs"])
        verdict = "unchanged" if cand["passed"] else "differ"
        precision = cand["name"].partition(":")[2].upper()
        assert f"{precision} on ort-cpu: answers {verdict} (masks overlap {fmt_pct(worst)}, the worst of {n} " \
               "outputs)" in card
    table = _section(u2_report, "comparison")
    text = _text(table)
    assert text.count("The answer: an image (a mask or a map)") == n
    assert 'Read as an image (a mask or a map) (<span class="mono">image:nchw</span>): 1 channel(s) of 320×320' in table
    assert "judged by mask_iou:0.9" in text
    for cand in u2_json["candidates"]:
        for o in cand["outputs"]:
            status = "pass" if o["task"]["mask_iou"] >= 0.9 else "fail"
            assert f'<td class="num {status}">{o["task"]["mask_iou"]:.4g}</td>' in table


def test_a_result_from_before_answers_renders_without_the_section(u2_json):
    old = copy.deepcopy(u2_json)
    for key in ("answers", "output_kinds", "kind"):
        old.pop(key, None)
    for cand in old["candidates"]:
        cand.pop("unused_tolerances", None)
        for o in cand["outputs"]:
            for key in ("kind", "kind_spec", "task", "judged_by"):
                o.pop(key, None)
    html = build_report([old], None, {})
    assert 'id="answers"' not in html and 'href="#answers"' not in html and "<img" not in html
    table = _section(html, "comparison")
    assert "The answer" not in table and "Read as" not in table
    for cand in old["candidates"]:  # judged element by element, as such results were
        o = cand["outputs"][0]
        status = "pass" if o["cosine"] >= 0.99 else "fail"
        assert f'<td class="num {status}">{_fmt_cos(o["cosine"])}</td>' in table
    card = _text(_section(html, "scorecard"))
    assert "FP16 on ort-cpu: answers " in card and "(cosine " in card and "masks" not in card


def _fmt_cos(v: float) -> str:
    from app.reports.words import fmt_cos

    return fmt_cos(v)


def test_anything_but_an_inline_png_or_jpeg_is_dropped(u2_json):
    doc = copy.deepcopy(u2_json)
    answers = doc["answers"]
    first = next(iter(answers["outputs"]))
    entry = answers["outputs"][first]
    fp16 = entry["candidates"]["ort-cpu:fp16"]
    bad = {"http://example.invalid/photo.png", "javascript:alert(1)", "file:///etc/passwd",
           "data:image/svg+xml;base64,PHN2Zy8+", "data:text/html;base64,PGI+", 'data:image/png;base64,AA" onerror="x',
           "/tmp/mask.png"}
    answers["inputs"][0] = "http://example.invalid/photo.png"
    entry["ref"][0] = "javascript:alert(1)"
    fp16["cand"][0] = "data:image/svg+xml;base64,PHN2Zy8+"
    fp16["diff"][0] = 'data:image/png;base64,AA" onerror="x'
    fp16["cand"][1] = "data:text/html;base64,PGI+"
    fp16["diff"][1] = "data:image/png;base64,"
    entry["ref"][1] = {"src": "file:///etc/passwd"}
    answers["inputs"][1] = "/tmp/mask.png"
    doc["answers"]["outputs"]["evil"] = {"kind": "image", "ref": ["http://example.invalid/a.png"],
                                         "candidates": {"ort-cpu:fp16": {"cand": ["file:///etc/passwd"]}}}
    html = build_report([doc], None, {})
    section = _section(html, "answers")
    srcs = IMG.findall(section)
    assert srcs and all(re.fullmatch(r"data:image/(png|jpeg);base64,[A-Za-z0-9+/]+={0,2}", s) for s in srcs)
    for b in bad:
        assert b not in html and unescape(b) not in unescape(html), b
    assert "onerror" not in html and "Output evil" not in _text(section)
    good = build_report([u2_json], None, {})
    # The bad pictures and nothing else: two input photos on each output's rows, six answers of the first output
    assert len(IMG.findall(_section(good, "answers"))) == len(srcs) + 2 * len(u2_json["answers"]["outputs"]) + 6


def test_at_most_six_samples_per_output(u2_json):
    doc = copy.deepcopy(u2_json)
    answers = doc["answers"]
    answers["inputs"] = answers["inputs"] * 4
    for entry in answers["outputs"].values():
        entry["ref"] = entry["ref"] * 4
        for c in entry["candidates"].values():
            for key in ("cand", "diff", "diff_max", "per_sample"):
                c[key] = c[key] * 4
    doc["samples"] = len(answers["inputs"])
    html = build_report([doc], None, {})
    section = _section(html, "answers")
    for name in answers["outputs"]:
        block = section.split(f'<span class="mono">{name}</span>', 1)[1].split("</table>", 1)[0]
        assert re.findall(r'<td class="idx num">(\d+)</td>', block) == [str(k) for k in range(1, 7)]
    assert f"the first 6 of {doc['samples']} samples" in _text(section)


def test_a_project_keeps_the_answers_and_its_report_shows_them(u2netp_compare, model_paths, tmp_path):
    project = Project(model=str(model_paths["u2netp"]), results=[u2netp_compare])
    loaded = load_project(save_project(project, tmp_path / "u2.trtlab"))
    assert loaded.results[0].data["answers"] == u2netp_compare.data["answers"]
    assert loaded.results[0].data["output_kinds"] == u2netp_compare.data["output_kinds"]
    section = _section(build_report(loaded.results, loaded, {}), "answers")
    uri = next(iter(u2netp_compare.data["answers"]["outputs"].values()))["ref"][0]
    assert f'src="{uri}"' in section


@pytest.fixture(scope="module")
def yolo_compare(tmp_path_factory) -> ProjectResult:
    model = save(yolov8_head_model(), tmp_path_factory.mktemp("y8"), "y8.onnx")
    spec = CompareSpec(model=str(model), candidates=("ort-cpu:fp16",), samples=2)
    r = run_inline(spec.job_spec(spec.kind))
    assert r.status == "done", (r.error, r.log_tail)
    return ProjectResult.make(spec.kind, spec.to_json(), r.data)


def test_boxes_are_drawn_and_counted(yolo_compare):
    data = yolo_compare.data
    out = data["candidates"][0]["outputs"][0]
    assert out["kind"] == "yolo"
    task = out["task"]
    html = build_report([yolo_compare], None, {})
    text = _text(_section(html, "answers"))
    head, _ = verdict_words("yolo", Task.from_json(task))
    assert head in text
    if not task["missed"] and not task["extra"]:
        assert head == f"same boxes: {task['matched']} matched"
        assert f"answers unchanged (boxes unchanged: {task['matched']} matched)" in _text(_section(html, "scorecard"))
    assert "The reference's boxes (green) on the photo" in text and "(magenta)" in text
    table = _text(_section(html, "comparison"))
    assert "The answer: a raw YOLO detection head" in table
    for label in ("Boxes matched", "Boxes missed", "Boxes added", "Mean IoU of matched boxes", "Score threshold"):
        assert label in table, label
    assert table.index("Boxes matched") < table.index("Cosine similarity")


def test_verdicts_in_words_per_kind():
    def words(kind, task):
        return verdict_words(kind, None if task is None else Task.from_json(task))

    assert words("detections", {"matched": 12, "missed": 0, "extra": 0, "mean_iou": 0.97,
                                "nms_boundary": 0})[0] == "same boxes: 12 matched"
    head, detail = words("yolo", {"matched": 10, "missed": 2, "extra": 1, "mean_iou": 0.9, "nms_boundary": 1})
    assert head == "2 missed, 1 extra (10 matched)" and detail == "mean IoU 0.90 · 1 box at the NMS boundary"
    assert words("image", {"mask_iou": 0.9941, "psnr_db": 40.4, "probability": True}) == (
        "mask IoU 0.99", "PSNR 40.4 dB")
    assert words("image", {"mask_iou": None, "psnr_db": 31.25, "probability": False}) == ("PSNR 31.2 dB", "")
    assert words("classes", {"top1": 1.0, "top5": None}) == ("top-1 agrees", "")
    assert words("classes", {"top1": 0.6, "top5": 1.0})[0] == "top-1 agrees on 60 % of rows"
    assert words("sequence", {"token_agreement": 0.95, "edit_distance": 3}) == (
        "text differs: edit distance 3", "95 % of steps agree")
    assert words("sequence", {"token_agreement": 1.0, "edit_distance": 0})[0] == "same text"
    assert words("tensor", None) == ("", "")
    assert words("image", {"error": "no planes"})[0] == "not read as image"
    # never "1" or "100 %" short of 1, never rounded up
    assert (fmt_share(0.9999), fmt_pct(0.9999), fmt_pct(0.29), fmt_share(0.29), fmt_pct(0.004)) == (
        "0.99", "99 %", "29 %", "0.29", "< 1 %")


def test_scorecard_phrases_per_kind():
    def out(kind, task, **kw):
        return OutputResult.from_json({"name": kind, "kind": kind, "task": task, **kw})

    assert scorecard_phrase([out("yolo", {"matched": 12, "missed": 0, "extra": 0})]) == "boxes unchanged: 12 matched"
    assert scorecard_phrase([out("detections", {"matched": 9, "missed": 2, "extra": 1})]) == \
        "boxes changed: 2 missed, 1 extra"
    assert scorecard_phrase([out("image", {"mask_iou": 0.994})]) == "masks overlap 99 %"
    assert scorecard_phrase([out("classes", {"top1": 1.0})]) == "labels unchanged"
    assert scorecard_phrase([out("sequence", {"edit_distance": 0})]) == "text unchanged"
    assert scorecard_phrase([out("classes", {"top1": 1.0}), out("tensor", None, cosine=0.999)]) \
        == "labels unchanged; other outputs cosine 0.9990"
    assert scorecard_phrase([out("embedding", None, cosine=0.99)]) is None  # the old wording stays
    assert scorecard_phrase([out("image", {"error": "not an image"})]) is None


def test_text_differences_are_marked():
    parts = text_diff("6 7 8 17", "6 2 8")
    assert [(p["text"], p["how"]) for p in parts] == [("6", "same"), ("7", "gone"), ("2", "changed"), ("8", "same"),
                                                      ("17", "gone")]
    assert "".join(p["text"] + p["sep"] for p in text_diff("cat", "cat")) == "cat"  # labels: no spaces added


def test_the_legend_and_the_defaults_match_what_compare_uses():
    from app.core.measure import IMAGE_NOT_PROBABILITY, answers, pictures
    from app.reports.answers import PICTURE_COLOURS

    drawn = {"ref": pictures.REF_COLOUR, "cand": pictures.CAND_COLOUR, "missed": pictures.MISSED_COLOUR,
             "extra": pictures.EXTRA_COLOUR}
    hexes = {k: "#" + "".join(f"{c:02x}" for c in rgb) for k, rgb in drawn.items()}
    assert {k: c for k, (_, c) in PICTURE_COLOURS.items()} == hexes
    assert IMAGE_NOT_PROBABILITY == answers.IMAGE_NOT_PROBABILITY


def test_each_output_is_marked_by_the_tolerances_that_judged_it():
    def output(name, kind, task, judged, **metrics):
        return {"name": name, "shape": [1, 4], "kind": kind, "kind_spec": kind, "task": task, "judged_by": judged,
                "passed": True, "failures": [], "cosine": 0.95, "top1": None, **metrics}

    doc = {"kind": "compare", "reference": "ort-cpu:fp32", "samples": 1, "tolerances": ["cos:0.9", "mask_iou:0.95"],
           "candidates": [{"name": "ort-cpu:fp16", "passed": True, "tolerances": ["cos:0.9", "mask_iou:0.95"],
                           "unused_tolerances": ["mask_iou:0.95"],
                           "outputs": [output("label", "classes", {"top1": 1.0, "top5": None}, ["top1:0.99"]),
                                       output("feat", "tensor", None, ["cos:0.9"])]}],
           "output_kinds": {"label": {"kind": "classes", "spec": "classes", "reason": "4 class scores", "user": False},
                            "feat": {"kind": "tensor", "spec": "tensor", "reason": "set by you", "user": True}}}
    html = build_report([doc], None, {})
    table = _section(html, "comparison")
    label, feat = table.split('<span class="mono">feat</span>')
    assert '<td class="num pass">100.0%</td>' in label and '<td class="num ">0.9500</td>' in label
    assert '<td class="num pass">0.9500</td>' in feat and "Judged element by element" in _text(feat)
    text = _text(table)
    assert "judged by cos:0.9, top1:0.99" in text and "mask_iou:0.95 judged no output" in text
    card = _text(_section(html, "scorecard"))
    assert "FP16 on ort-cpu: answers unchanged (labels unchanged; other outputs cosine 0.9500)" in card
