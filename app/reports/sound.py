"""Audio outputs in the report: their sound as ``<audio controls>`` with the WAV inline, and their verdict in words
("SNR 34.2 dB", "LSD 0.8 dB"). Only ``data:audio/wav;base64,`` URIs of valid base64 are taken, so the page plays
what the result carries and points at no other file."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from app.core.results import SampleFacts, Task
from app.reports.words import fmt_snr

SOUND_PREFIX = "data:audio/wav;base64,"
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
LEGEND = ("Each picture is the first channel's waveform over its spectrogram (dark: 80 dB under the reference's "
          "loudest sound, bright: loudest); the |difference| is the candidate's error waveform on its own scale "
          "(its largest value under it) over the spectrograms' difference in dB (bright: 20 dB or more). Play "
          "each sound under its picture.")


def sound(value: object) -> str | None:
    """A WAV data URI as the page may play it, else None."""
    if not isinstance(value, str) or not value.startswith(SOUND_PREFIX) or len(value) == len(SOUND_PREFIX):
        return None
    return value if _BASE64.fullmatch(value, len(SOUND_PREFIX)) else None


def _number(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or math.isnan(v):
        return None
    return float(v)


def answer_words(task: Task) -> tuple[str, str]:
    """("SNR 34.2 dB", "LSD 0.8 dB · at 16 kHz (assumed)") for an audio output's task."""
    snr, lsd = _number(task.audio_snr_db), _number(task.lsd_db)
    if snr is None:
        return "", ""
    rate = _number(task.rate)
    at = f"at {rate / 1000:g} kHz" + ("" if task.rate_known else " (assumed)") if rate else ""
    return f"SNR {fmt_snr(snr)}", " · ".join(p for p in (f"LSD {lsd:.1f} dB" if lsd is not None else "", at) if p)


def phrase(tasks: Sequence[Task]) -> str:
    """The scorecard's phrase for a candidate's audio outputs: "sound at SNR 34.2 dB" ("" when none)."""
    snrs = [v for t in tasks if (v := _number(t.audio_snr_db)) is not None]
    if not snrs:
        return ""
    return f"sound at SNR {fmt_snr(min(snrs))}" + (f", the worst of {len(snrs)} outputs" if len(snrs) > 1 else "")


def sample_note(per_sample: SampleFacts | None) -> str:
    if per_sample is None or (snr := _number(per_sample.audio_snr_db)) is None:
        return ""
    lsd = _number(per_sample.lsd_db)
    return f"SNR {fmt_snr(snr)}" + (f", LSD {lsd:.1f} dB" if lsd is not None else "")
