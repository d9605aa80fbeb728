"""An audio output in the window: its Answers show the waveform and spectrogram of each side, with a Play button for
the reference's and each candidate's sound; a machine that cannot play sound gets the buttons disabled, with a
tooltip that says why."""

from __future__ import annotations

import shutil

import pytest

from app.ui.results.sound import SoundOutput, find_output
from tests.audio_models import denoiser_model
from tests.ui.conftest import open_and_wait, run_jobs_and_wait


def _compare_denoiser(qtbot, window, tmp_path):
    open_and_wait(qtbot, window, denoiser_model(tmp_path / "denoiser.onnx"))
    panel = window.run_panel
    assert panel.outputs_box.combos["enhanced"].currentText() == "auto (audio)"
    for name, cb in panel.checks.items():
        cb.setChecked(name == "ort-cpu")
    panel.set_precisions(["fp16"])
    run_jobs_and_wait(qtbot, window, panel.compare_button.click)
    return window.results_view.answers_view


def test_play_buttons_are_disabled_with_the_reason_where_no_sound_can_play(qtbot, window, tmp_path):
    answers = _compare_denoiser(qtbot, window, tmp_path)
    answers.player.output = SoundOutput(why_not="This machine has no sound output: no sound device (/dev/snd) and "
                                                "no sound server (PulseAudio or PipeWire) was found.")
    answers._draw()
    assert [p.has_picture() for p in answers.pictures] == [True, True]  # FP32's and FP16's waveform + spectrogram
    assert [b.text() for b in answers.play_buttons] == ["▶ Play", "▶ Play"]
    assert [b.property("who") for b in answers.play_buttons] == ["ort-cpu:fp32 (reference)", "ort-cpu:fp16"]
    for button in answers.play_buttons:
        assert not button.isEnabled() and "no sound output" in button.toolTip()
    assert "sound: SNR" in window.results_view.answers_view.grid.itemAtPosition(1, 1).widget().text()


@pytest.mark.skipif(shutil.which("sleep") is None, reason="needs `sleep` for a stand-in player")
def test_play_runs_the_player_and_a_second_click_stops(qtbot, window, tmp_path):
    answers = _compare_denoiser(qtbot, window, tmp_path)
    player = tmp_path / "player.sh"  # a player that plays for a while, then ends
    player.write_text(f"#!/bin/sh\nexec {shutil.which('sleep')} 30\n")
    player.chmod(0o755)
    answers.player.output = SoundOutput("command", str(player))
    answers._draw()
    ref, cand = answers.play_buttons
    assert ref.isEnabled() and cand.isEnabled() and "Play ort-cpu:fp16's sound" in cand.toolTip()
    cand.click()
    assert answers.player.playing == cand.property("sound") and cand.text() == "■ Stop" and ref.text() == "▶ Play"
    ref.click()  # another sound stops the first
    assert answers.player.playing == ref.property("sound") and cand.text() == "▶ Play"
    ref.click()
    assert answers.player.playing is None and ref.text() == "▶ Play"
    played = list(answers.player._folder.glob("*.wav")) if answers.player._folder else []
    assert len(played) == 2 and all(p.read_bytes()[:4] == b"RIFF" for p in played)


def test_this_machine_says_whether_it_can_play():
    out = find_output()
    assert out.available or out.why_not
