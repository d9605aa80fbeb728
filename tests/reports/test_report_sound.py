"""An audio output in the report: its pictures (waveform over spectrogram, the difference) and, under the reference's
and each candidate's, an `<audio controls>` holding the sound as an inline WAV, which headless Chromium decodes
(each element's duration is the sound's)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path

import pytest

from app.backends.tasks.specs import CompareSpec
from app.core.project import ProjectResult
from app.jobs import run_inline
from app.reports import build_report
from tests.audio_models import denoiser_model

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
# Once every <audio> has its metadata (or failed), the page writes [duration, error code, src type] per element.
PROBE = r"""<script>window.addEventListener('load', () => {
  const all = [...document.querySelectorAll('audio')];
  const done = () => document.body.setAttribute('data-audio', JSON.stringify(all.map(
    a => [a.duration, a.error ? a.error.code : 0, a.src.split(',')[0]])));
  let left = all.length;
  if (!left) done();
  for (const a of all) {
    const one = () => { if (--left === 0) done(); };
    if (a.readyState >= 1) one(); else { a.addEventListener('loadedmetadata', one); a.addEventListener('error', one); }
  }
});</script>"""


@pytest.fixture(scope="module")
def denoiser_compare(tmp_path_factory) -> ProjectResult:
    path = denoiser_model(tmp_path_factory.mktemp("sound") / "denoiser.onnx")
    spec = CompareSpec(model=str(path), candidates=("ort-cpu:fp16",), samples=2)
    result = run_inline(spec.job_spec("compare"))
    assert result.status == "done", result.error
    return ProjectResult.make("compare", spec.to_json(), result.data, "compare job")


def test_the_report_carries_each_sound_as_an_audio_element(denoiser_compare):
    html = build_report([denoiser_compare], None, {})
    tags = re.findall(r'<audio controls preload="metadata" src="(data:[^"]+)"', html)
    assert len(tags) == 4 and all(t.startswith("data:audio/wav;base64,") for t in tags)  # 2 samples × (FP32, FP16)
    text = re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))
    assert "SNR" in text and "LSD" in text and "a waveform (sound)" in text and "Play each sound" in text


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_chromium_decodes_every_sound(denoiser_compare, tmp_path):
    page = tmp_path / "sound.html"
    page.write_text(build_report([denoiser_compare], None, {}).replace("</body>", PROBE + "</body>"),
                    encoding="utf-8")
    r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-extensions", "--autoplay-policy=no-user-gesture-required",
                        "--virtual-time-budget=5000", "--dump-dom", Path(page).as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    m = re.search(r'data-audio="([^"]*)"', r.stdout)
    assert m, "the probe did not finish: " + r.stdout[-500:]
    sounds = json.loads(unescape(m.group(1)))
    assert len(sounds) == 4
    for duration, error, src in sounds:
        assert error == 0 and src == "data:audio/wav;base64" and duration == pytest.approx(1.0, abs=1e-3)
