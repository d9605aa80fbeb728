"""A real browser renders the report: headless Chromium shows every section's text, loads no resource at all
(the page's own Resource Timing entries, read after its load event, are empty), decodes every answer picture (inline
PNG and JPEG data URIs, the only thing a src may hold) and paints the plots and the pictures."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path

import pytest

from app.reports import build_report, current_environment

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium); "
                                                          "CI installs it in .ci/run")
# After the load event, the page writes onto <body> what it fetched over the network (Resource Timing entries:
# images, fonts, CSS, scripts; file:// loads are not timed) and everything in it that points at another file: an
# element's src or non-anchor href (an inline PNG or JPEG picture, a data URI, points nowhere), a CSS url() or
# @import; and, per <img>, its decoded size and whether it is complete.
PROBE = r"""<script>window.addEventListener('load', () => {
  const fetched = performance.getEntriesByType('resource').map(e => e.name);
  const inline = v => v.startsWith('data:image/png;base64,') || v.startsWith('data:image/jpeg;base64,');
  const refs = [...document.querySelectorAll('[src], [href]')].map(e => e.getAttribute('src') || e.getAttribute('href'))
    .filter(v => !v.startsWith('#') && !inline(v));
  for (const sheet of document.styleSheets) for (const rule of sheet.cssRules)
    if (/url\(|@import/.test(rule.cssText)) refs.push(rule.cssText);
  document.body.setAttribute('data-resources', JSON.stringify(fetched.concat(refs)));
  document.body.setAttribute('data-images', JSON.stringify([...document.images].map(
    i => [i.naturalWidth, i.naturalHeight, i.complete, i.src.split(',')[0]])));
});</script>"""


def _chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-extensions", *args], capture_output=True, text=True, timeout=120)


def _dump(page: Path) -> tuple[str, list[str]]:
    r = _chromium("--virtual-time-budget=3000", "--dump-dom", page.as_uri())
    assert r.returncode == 0, r.stderr[-2000:]
    m = re.search(r'data-resources="([^"]*)"', r.stdout)
    assert m, "the probe did not run: " + r.stdout[:500]
    return r.stdout, json.loads(unescape(m.group(1)))


def _images(dom: str) -> list[list]:
    """Per <img> of the probed page: natural width and height, complete, its src up to the first comma."""
    m = re.search(r'data-images="([^"]*)"', dom)
    assert m, "the probe did not run"
    return json.loads(unescape(m.group(1)))


def _probed(html: str, path: Path) -> Path:
    path.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def report_file(real_results, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("browser") / "report.html"
    path.write_text(build_report(list(real_results.values()), None, current_environment()), encoding="utf-8")
    return path


def test_the_probe_sees_resources_when_there_are_some(tmp_path):
    (tmp_path / "dot.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>')
    page = tmp_path / "with_resources.html"
    svg = "data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciLz4="
    page.write_text("<!DOCTYPE html><html><head><style>p { background: url(dot.svg); }</style></head><body><p>x</p>"
                    f'<img src="dot.svg"><img src="http://example.invalid/a.png"><img src="{svg}">'
                    f"{PROBE}</body></html>")
    dom, resources = _dump(page)
    # So an empty list below means nothing was fetched and nothing points outside the file.
    assert "http://example.invalid/a.png" in resources and "dot.svg" in resources
    assert svg in resources  # only PNG and JPEG data URIs count as inline pictures
    assert any("url(" in r for r in resources)
    assert len(_images(dom)) == 3


def test_chromium_shows_every_section_and_fetches_nothing(report_file, real_results, tmp_path):
    dom, resources = _dump(_probed(report_file.read_text(encoding="utf-8"), tmp_path / "probed.html"))
    assert resources == []
    text = re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", dom)))
    for heading in ("Scorecard", "Answers", "Precision comparison", "Differences from the reference",
                    "Latency and speed-up", "Per-layer diagnosis", "Fallback search", "Environment", "Reproduce"):
        assert heading in text, heading
    # The orientation's answers: each input photo (JPEG) and each candidate's top labels (PNG), all decoded
    answers = real_results["compare"].data["answers"]
    drawn = answers["outputs"]["fetch_name_0"]["candidates"]
    images = _images(dom)
    expected = sum(1 for p in answers["inputs"] if p) + sum(len(c["cand"]) for c in drawn.values())
    assert len(images) == expected > 0
    assert all(w > 0 and h > 0 and done for w, h, done, _ in images), images
    assert {src for *_, src in images} == {"data:image/png;base64", "data:image/jpeg;base64"}
    assert "FP16 on ort-cpu: answers" in text and real_results["diagnose"].data["worst"] in text
    if "build" in real_results:
        assert "Engine layers and precisions" in text
    assert dom.count("<svg") >= 5


def test_chromium_paints_the_page(report_file, tmp_path):
    from PySide6.QtGui import QColor, QImage

    shot = tmp_path / "report.png"
    r = _chromium("--hide-scrollbars", f"--screenshot={shot}", "--window-size=1280,2400", report_file.as_uri())
    assert r.returncode == 0 and shot.is_file(), r.stderr[-2000:]
    img = QImage(str(shot))
    assert (img.width(), img.height()) == (1280, 2400)
    colors = {img.pixelColor(x, y).name() for x in range(0, 1280, 4) for y in range(0, 2400, 4)}
    assert QColor("#e6f4ea").name() in colors or QColor("#fce8e6").name() in colors  # scorecard verdict rows
    assert QColor("#4e79a7").name() in colors  # the first series' colour: bars and outlines are drawn
    assert QColor("#2ecc71").name() in colors  # the answers' pictures: the reference's score bars are painted


def test_chromium_decodes_every_mask_and_difference_map(u2netp_compare, tmp_path):
    """U²-Net-p's answers: per output drawn, the input photos, the reference's masks and each candidate's mask and
    |difference| map, every one decoded by the browser."""
    html = build_report([u2netp_compare], None, {})
    dom, resources = _dump(_probed(html, tmp_path / "u2netp.html"))
    assert resources == []
    answers = u2netp_compare.data["answers"]
    expected = sum(min(6, len(answers["inputs"])) + len(o["ref"]) + sum(len(c["cand"]) + len(c["diff"])
                                                                     for c in o["candidates"].values())
                   for o in answers["outputs"].values())
    images = _images(dom)
    assert len(images) == expected > 0
    assert all(w > 0 and h > 0 and done for w, h, done, _ in images), images
    assert "max |Δ|" in dom and "mask IoU" in dom
