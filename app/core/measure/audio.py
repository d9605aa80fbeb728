"""Sound: waveform outputs (text-to-speech, denoisers, source separation) read as audio, judged by what a listener
hears, drawn, and carried as WAV; and trtlab's speech sample fed to a model's waveform input.

**Reading an output as audio** (`audio_reading`, rule 4 of ``app.core.measure.kinds``). A float output of rank 2
to 4 whose non-batch axes are one *long* axis — at least ``MIN_SAMPLES`` (4000) samples, a quarter of a second at
16 kHz — and others of at most ``MAX_CHANNELS`` (2) each (N×T, N×C×T, N×T×C, N×1×1×T), when one of these holds:

- the output's name says so: it holds ``audio``, ``wav`` (``waveform``), ``speech``, ``pcm`` or ``sound``; with
  such a name the long axis may also be unknown (a dynamic length before any run);
- the model has a waveform input: a float input of rank 1 to 3 whose non-batch axes are one long axis (at least
  ``MIN_SAMPLES``, or dynamic) and others of at most 2 (denoisers, separators, vocoders fed audio);
- the model has an integer input of rank 1 or 2, text or phoneme ids (text-to-speech), and the long axis is known.

Never: an output made by a Softmax, LogSoftmax or Sigmoid (probabilities per step or per sample, not a signal), by
a linear layer (MatMul, Gemm, Einsum, or an Add fed by one: vocabulary logits), or by a LayerNormalization, nor one
named as an embedding ("emb", "hidden", "feature"): those keep their own readings. The rule runs after the
detection and image rules and before the sequence rule, which would otherwise read an N×1×T waveform whose last op
is an Add (a residual denoiser) as one step over 16 000 "tokens". A rank-1 waveform output is read as audio only
when the user says so (``--output-kind NAME=audio``).

**The sample rate**: ``--output-kind NAME=audio:rate=22050``; else the model's metadata (``sample_rate``,
``sampling_rate``, ``sample_rate_hz``, ``samplerate`` or ``sr``); else ``DEFAULT_RATE`` (16 kHz) is assumed, which
the JSON says (``rate_known``). The rate sets the spectrogram's window and the speed the WAV plays at; SNR does not
depend on it.

**Judging** (`judge_audio`): the long axis is time; every other axis (batch, channels) gives one signal. Per
signal, ``audio_snr_db`` = 10·log10(Σ ref² / Σ (cand − ref)²), the error's energy against the reference's (a floor,
worst signal of every sample); ``lsd_db``, the log-spectral distance: the mean over frames of the root mean square
over frequencies of the difference of the two power spectra in dB, on a Hann-windowed STFT of about 32 ms
(``n_fft`` 512 at 16 kHz, 1024 at 22.05–44.1 kHz, hop a quarter of it), each spectrum floored at ``LSD_FLOOR_DB``
(80 dB) under the reference's loudest bin, so that what nobody hears (rounding noise in silence) counts for
nothing (a ceiling, worst signal). Defaults: ``audio_snr_db:15`` and ``lsd_db:5``, measured on DTLN, a real speech
denoiser, and on broken candidates: docs/precision.md ("Sound") gives the figures. A reference that is silent
(all zeros) on every sample has nothing to judge: the task says ``empty_reference`` and the output is judged
element-wise.

**Pictures** (`audio_pictures`): per sample, the waveform over its spectrogram (dB under the reference's loudest
bin, 80 dB of range) for the reference and the candidate, and the difference: the error waveform (cand − ref) on
its own scale, its largest value given beside it, over the |dB difference| of the spectrograms (bright: 20 dB).

**Sound**: the first signal of the first ``SOUND_SAMPLES`` (3) samples, reference and candidate, as 16-bit PCM
WAV (``wav_uri``, at most ``MAX_SECONDS``, 10 s, each), both scaled by the reference's peak when it is beyond ±1,
so a louder candidate still sounds louder.

**Speech input** (`waveform_input`, `speech_feed`). A model input of a float dtype shaped like a waveform — rank 1
(T), rank 2 (N×T) or rank 3 (N×C×T, C ≤ 2) with T ≥ ``MIN_SAMPLES`` (4000), or T ≥ ``MIN_INPUT_SAMPLES`` (160,
10 ms at 16 kHz: streaming models take short chunks) when its name says audio, wav, speech, pcm, sound, signal,
input_values, mix or noisy — is fed
``app/resources/samples/speech.wav``: five seconds of English synthesised by espeak-ng at 16 kHz (text, command and
licence in LICENSES.md there), resampled to the model's rate when it is known, the samples and batch items taking
successive stretches of it (looped when the input is longer). `feature_map_input` says when a one-channel 4-D input
is a spectrogram or a feature map rather than a picture (its name, or a frequency axis of a usual filter-bank or
STFT size), so that it is not fed photos.
"""

from __future__ import annotations

import base64
import io
import math
import wave
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
from PIL import Image, ImageDraw

MIN_SAMPLES = 4000        # an output's long axis: a quarter of a second at 16 kHz
MAX_CHANNELS = 2          # the other non-batch axes of a waveform: mono or stereo
MIN_INPUT_SAMPLES = 160   # a waveform input: at least 10 ms at 16 kHz (streaming models take short chunks)
DEFAULT_RATE = 16000
SNR_CAP_DB = 999.0
LSD_FLOOR_DB = 80.0       # spectra are floored this far under the reference's loudest bin
SPECTROGRAM_RANGE_DB = 80.0
DIFF_RANGE_DB = 20.0      # the |dB difference| map: black 0, brightest 20 dB or more
MAX_SECONDS = 10.0        # a sound carried in the JSON: at most this long
SOUND_SAMPLES = 3         # samples whose sound is carried (their pictures go up to pictures.MAX_SAMPLES)
DEFAULT_TOLERANCES = ("audio_snr_db:15", "lsd_db:5")
SPEECH_SAMPLE: Path = Path(__file__).resolve().parents[2] / "resources" / "samples" / "speech.wav"
AUDIO_NAMES = ("audio", "wav", "speech", "pcm", "sound")
WAVE_INPUT_NAMES = AUDIO_NAMES + ("signal", "input_values", "mix", "noisy")
EMBEDDING_NAMES = ("emb", "hidden", "feature")
FEATURE_NAMES = ("mel", "spec", "fbank", "feat", "mfcc", "stft", "audio", "erb")
# Frequency axes of usual features: filter banks and MFCCs (13…128 bands), STFT bins (n_fft/2 + 1 for 256…1024)
FEATURE_SIZES = (13, 20, 23, 24, 26, 32, 40, 64, 80, 96, 128)
STFT_BINS = (129, 161, 201, 257, 513)
RATE_KEYS = ("sample_rate", "sampling_rate", "sample_rate_hz", "samplerate", "sr")
_NOT_A_SIGNAL = {"Softmax", "LogSoftmax", "Sigmoid", "LayerNormalization"}
_LINEAR = {"MatMul", "Gemm", "Einsum"}
_FLOAT = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE}
_INT = {onnx.TensorProto.INT64, onnx.TensorProto.INT32, onnx.TensorProto.INT16, onnx.TensorProto.INT8,
        onnx.TensorProto.UINT8, onnx.TensorProto.UINT16, onnx.TensorProto.UINT32, onnx.TensorProto.UINT64}
WAVE_COLOUR = (52, 101, 164)
ERROR_COLOUR = (204, 0, 0)
# A dark-to-bright map for spectrograms (magma's anchors): black silence, bright loud.
_SPECTRUM = np.array([[0, 0, 4], [81, 18, 124], [183, 55, 121], [252, 137, 97], [252, 253, 191]], np.float64)


# --------------------------------------------------------------------------------------------- reading an output
def _says_audio(name: str) -> bool:
    low = name.lower()
    return any(word in low for word in AUDIO_NAMES)


def _long_axis(dims: Sequence[int | None], start: int, unknown_ok: bool) -> int | None:
    """The one long axis among dims[start:] (the others at most MAX_CHANNELS), or None."""
    rest = list(range(start, len(dims)))
    long = [a for a in rest if dims[a] is None or (dims[a] or 0) >= MIN_SAMPLES]
    if len(long) != 1 or (dims[long[0]] is None and not unknown_ok):
        return None
    others = [dims[a] for a in rest if a != long[0]]
    return long[0] if all(v is not None and v <= MAX_CHANNELS for v in others) else None


def _graph_inputs(graph: onnx.GraphProto, dims: Mapping[str, Sequence[int | None]]
                  ) -> list[tuple[str, int, list[int | None]]]:
    """(name, element type, dims) of the graph's real inputs, dims from `dims` where given."""
    inits = {t.name for t in graph.initializer}
    out = []
    for vi in graph.input:
        if vi.name in inits:
            continue
        shape = dims.get(vi.name)
        if shape is None:
            shape = [d.dim_value or None for d in vi.type.tensor_type.shape.dim]
        out.append((vi.name, vi.type.tensor_type.elem_type, [v if isinstance(v, int) and v > 0 else None
                                                              for v in shape]))
    return out


def _linear_head(op: str, head: onnx.NodeProto | None, prod: Mapping[str, onnx.NodeProto]) -> bool:
    if op in _LINEAR:
        return True
    if op == "Add" and head is not None:
        return any((src := prod.get(i)) is not None and src.op_type in _LINEAR for i in head.input)
    return False


def audio_reading(name: str, dims: Sequence[int | None], graph: onnx.GraphProto,
                  inputs: Mapping[str, Sequence[int | None]], head: onnx.NodeProto | None,
                  prod: Mapping[str, onnx.NodeProto]) -> str | None:
    """Why a float output reads as a waveform (the rule in the module docstring), or None when it does not.
    `dims`: the output's dims (None where unknown); `head`: the op that makes it, past reshapes and casts."""
    rank = len(dims)
    op = head.op_type if head is not None else ""
    low = name.lower()
    if not 2 <= rank <= 4 or op in _NOT_A_SIGNAL or _linear_head(op, head, prod) \
            or any(word in low for word in EMBEDDING_NAMES):
        return None
    named = _says_audio(name)
    axis = _long_axis(dims, 1, unknown_ok=named)
    if axis is None:
        return None
    length = f"{dims[axis]} samples" if dims[axis] else "a waveform of dynamic length"
    channels = int(np.prod([v or 1 for a, v in enumerate(dims) if a not in (0, axis)]))
    what = f"{length}" + (f" × {channels} channels" if channels > 1 else "")
    if named:
        return f"a waveform ({what}) named as audio"
    for in_name, elem, in_dims in _graph_inputs(graph, inputs):
        if elem in _FLOAT and 1 <= len(in_dims) <= 3 and (
                (len(in_dims) == 1 and (in_dims[0] is None or in_dims[0] >= MIN_SAMPLES))
                or (len(in_dims) > 1 and _long_axis(in_dims, 1, unknown_ok=True) is not None)):
            return f"a waveform ({what}) from the waveform input '{in_name}'"
    if dims[axis] is not None:
        for in_name, elem, in_dims in _graph_inputs(graph, inputs):
            if elem in _INT and len(in_dims) in (1, 2):
                return f"a waveform ({what}) made from the ids in '{in_name}' (text to speech)"
    return None


def model_rate(model: onnx.ModelProto) -> int | None:
    """The sample rate a model's metadata states (``RATE_KEYS``), or None."""
    for prop in model.metadata_props:
        if prop.key.strip().lower() in RATE_KEYS:
            try:
                rate = int(float(prop.value))
            except ValueError:
                continue
            if 1000 <= rate <= 384000:
                return rate
    return None


# --------------------------------------------------------------------------------------------- judging
def signals(x: np.ndarray) -> np.ndarray:
    """An audio output as (signals, T): its longest non-batch axis is time, every other axis a signal."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 0:
        return a.reshape(1, 1)
    if a.ndim == 1:
        return a[None]
    axis = 1 + int(np.argmax(a.shape[1:]))
    return np.moveaxis(a, axis, -1).reshape(-1, a.shape[axis])


def snr_db(ref: np.ndarray, cand: np.ndarray) -> float:
    """10·log10 of the reference's energy over the error's (capped at ±SNR_CAP_DB)."""
    r, c = np.nan_to_num(ref.astype(np.float64)), np.nan_to_num(cand.astype(np.float64))
    signal, noise = float(np.sum(r * r)), float(np.sum((c - r) ** 2))
    if noise == 0:
        return SNR_CAP_DB
    if signal == 0:
        return -SNR_CAP_DB
    return max(-SNR_CAP_DB, min(SNR_CAP_DB, 10 * math.log10(signal / noise)))


def fft_size(rate: int) -> int:
    """About 32 ms, a power of two: 512 at 16 kHz, 1024 at 22.05–44.1 kHz, 256 at 8 kHz."""
    return int(2 ** max(6, round(math.log2(0.032 * max(rate, 1000)))))


def power_spectrogram(x: np.ndarray, rate: int) -> np.ndarray:
    """|STFT|² of one signal, (frames, bins): Hann window of `fft_size(rate)`, hop a quarter of it."""
    n = fft_size(rate)
    hop = n // 4
    sig = np.nan_to_num(np.asarray(x, dtype=np.float64))
    if sig.size < n:
        sig = np.pad(sig, (0, n - sig.size))
    count = 1 + (sig.size - n) // hop
    idx = np.arange(n)[None, :] + hop * np.arange(count)[:, None]
    frames = sig[idx] * np.hanning(n + 2)[1:-1]  # periodic-like window with no zero ends
    return np.abs(np.fft.rfft(frames, axis=1)) ** 2


def _db(power: np.ndarray, floor: float) -> np.ndarray:
    return 10 * np.log10(np.maximum(power, floor))


def lsd_db(ref: np.ndarray, cand: np.ndarray, rate: int) -> float:
    """Log-spectral distance in dB: per frame, the RMS over bins of the dB difference, averaged over frames; both
    spectra floored LSD_FLOOR_DB under the reference's loudest bin."""
    pr, pc = power_spectrogram(ref, rate), power_spectrogram(cand, rate)
    peak = float(pr.max())
    if peak <= 0:
        return 0.0 if float(pc.max()) <= 0 else SNR_CAP_DB
    floor = peak * 10 ** (-LSD_FLOOR_DB / 10)
    d = _db(pr, floor) - _db(pc, floor)
    return float(np.mean(np.sqrt(np.mean(d * d, axis=1))))


def judge_audio(ref: Sequence[np.ndarray], cand: Sequence[np.ndarray], rate: int | None
                ) -> tuple[dict[str, object], dict[str, float | None], list[dict[str, object]]]:
    """(task, values for tolerances, per-sample answers) of an audio output over every sample: the worst SNR and LSD
    over every signal; a silent reference on every sample marks the task ``empty_reference``."""
    sr = rate or DEFAULT_RATE
    snrs: list[float] = []
    lsds: list[float] = []
    answers: list[dict[str, object]] = []
    silent = 0
    seconds = 0.0
    for r, c in zip(ref, cand, strict=True):
        rs, cs = signals(r), signals(c)
        if rs.shape != cs.shape:
            raise ValueError(f"the candidate's waveform has shape {list(np.shape(c))}, the reference's "
                             f"{list(np.shape(r))}")
        s_snr = [snr_db(a, b) for a, b in zip(rs, cs, strict=True)]
        s_lsd = [lsd_db(a, b, sr) for a, b in zip(rs, cs, strict=True)]
        quiet = not np.any(np.nan_to_num(rs))
        silent += quiet
        seconds = max(seconds, rs.shape[-1] / sr)
        snrs += s_snr
        lsds += s_lsd
        answers.append({"audio_snr_db": min(s_snr), "lsd_db": max(s_lsd), "ref_empty": quiet})
    snr, lsd = (min(snrs) if snrs else None), (max(lsds) if lsds else None)
    task: dict[str, object] = {"audio_snr_db": snr, "lsd_db": lsd, "rate": sr, "rate_known": rate is not None,
                               "seconds": round(seconds, 3), "empty_samples": silent, "samples": len(answers)}
    if answers and silent == len(answers):
        task["empty_reference"] = True
        task["empty_reason"] = "the reference is silent" + (f" on all {silent} samples" if silent > 1 else "")
    return task, {"audio_snr_db": snr, "lsd_db": lsd}, answers


def words(snr: float | None, lsd: float | None) -> str:
    """"sound: SNR 34.2 dB, LSD 0.8 dB" ("" without the metrics)."""
    if snr is None:
        return ""
    return f"sound: SNR {fmt_db(float(snr))}" + (f", LSD {float(lsd):.1f} dB" if lsd is not None else "")


def fmt_db(v: float) -> str:
    if v >= SNR_CAP_DB:
        return "identical (no error)"
    return f"{v:.1f} dB"


def perfect(snr: float | None) -> bool:
    """Whether no one would hear a change: SNR ≥ 40 dB (an error 1 % of the signal's amplitude)."""
    return snr is not None and snr >= 40


# --------------------------------------------------------------------------------------------- pictures and sound
WIDTH, WAVE_H, SPEC_H = 320, 72, 128


def _wave_strip(x: np.ndarray, scale: float, colour: tuple[int, int, int]) -> Image.Image:
    """The waveform, min to max per column, on ±scale."""
    img = Image.new("RGB", (WIDTH, WAVE_H), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    mid = WAVE_H / 2
    draw.line([(0, mid), (WIDTH, mid)], fill=(210, 210, 210))
    sig = np.nan_to_num(np.asarray(x, dtype=np.float64))
    if sig.size == 0:
        return img
    edges = np.linspace(0, sig.size, WIDTH + 1).astype(np.int64)
    for col in range(WIDTH):
        part = sig[edges[col]:max(edges[col + 1], edges[col] + 1)]
        lo, hi = float(part.min()), float(part.max())
        y1 = mid - np.clip(hi / scale, -1, 1) * (mid - 2)
        y2 = mid - np.clip(lo / scale, -1, 1) * (mid - 2)
        draw.line([(col, y1), (col, max(y1, y2))], fill=colour)
    return img


def _spectrum_colours(v: np.ndarray) -> np.ndarray:
    t = np.clip(np.nan_to_num(v), 0, 1) * (len(_SPECTRUM) - 1)
    i = np.minimum(t.astype(np.int64), len(_SPECTRUM) - 2)
    f = (t - i)[..., None]
    return (_SPECTRUM[i] * (1 - f) + _SPECTRUM[i + 1] * f).astype(np.uint8)


def _spec_strip(levels: np.ndarray) -> Image.Image:
    """Levels in [0, 1] per (frame, bin) as a picture: time across, low frequencies at the bottom."""
    img = Image.fromarray(_spectrum_colours(levels.T[::-1]))
    return img.resize((WIDTH, SPEC_H), Image.Resampling.BILINEAR)


def _stack(top: Image.Image, bottom: Image.Image) -> Image.Image:
    out = Image.new("RGB", (WIDTH, WAVE_H + 2 + SPEC_H), (255, 255, 255))
    out.paste(top, (0, 0))
    out.paste(bottom, (0, WAVE_H + 2))
    return out


def audio_pictures(ref: np.ndarray, cand: np.ndarray, rate: int | None
                   ) -> tuple[Image.Image, Image.Image, Image.Image, float]:
    """One sample's first signal: the reference's and the candidate's waveform over spectrogram, the difference
    (error waveform over |dB difference|), and the largest |cand − ref|."""
    sr = rate or DEFAULT_RATE
    r, c = signals(ref)[0], signals(cand)[0]
    r, c = np.nan_to_num(r), np.nan_to_num(c[: r.size])
    scale = float(np.max(np.abs(r))) or 1.0
    pr, pc = power_spectrogram(r, sr), power_spectrogram(c, sr)
    floor = max(float(pr.max()), 1e-30) * 10 ** (-SPECTROGRAM_RANGE_DB / 10)
    top = 10 * math.log10(max(float(pr.max()), 1e-30))
    lr, lc = _db(pr, floor), _db(pc, floor)
    level = lambda db: (db - (top - SPECTROGRAM_RANGE_DB)) / SPECTROGRAM_RANGE_DB  # noqa: E731
    err = c - r
    pics = [_stack(_wave_strip(r, scale, WAVE_COLOUR), _spec_strip(level(lr))),
            _stack(_wave_strip(c, scale, WAVE_COLOUR), _spec_strip(level(lc))),
            _stack(_wave_strip(err, float(np.max(np.abs(err))) or 1.0, ERROR_COLOUR),
                   _spec_strip(np.abs(lr - lc) / DIFF_RANGE_DB))]
    return pics[0], pics[1], pics[2], float(np.max(np.abs(err))) if err.size else 0.0


def wav_bytes(x: np.ndarray, rate: int, scale: float = 1.0, seconds: float = MAX_SECONDS) -> bytes:
    """One signal as a mono 16-bit PCM WAV file: at most `seconds` long, x / scale clipped to ±1."""
    sig = np.nan_to_num(np.asarray(x, dtype=np.float64).ravel())[: max(1, int(seconds * rate))]
    pcm = (np.clip(sig / (scale or 1.0), -1.0, 1.0) * 32767).round().astype("<i2")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(int(rate))
        w.writeframes(pcm.tobytes())
    return buf.getvalue()


def wav_uri(x: np.ndarray, rate: int, scale: float = 1.0) -> str:
    """`wav_bytes` as a data URI: ``data:audio/wav;base64,…``."""
    return "data:audio/wav;base64," + base64.b64encode(wav_bytes(x, rate, scale)).decode("ascii")


def sounds(ref: np.ndarray, cand: np.ndarray, rate: int | None) -> tuple[str, str]:
    """The reference's and the candidate's first signal as WAV data URIs, on one scale (the reference's peak when
    it is beyond ±1)."""
    sr = rate or DEFAULT_RATE
    r, c = signals(ref)[0], signals(cand)[0]
    scale = max(1.0, float(np.max(np.abs(np.nan_to_num(r)))) if r.size else 1.0)
    return wav_uri(r, sr, scale), wav_uri(c, sr, scale)


def wav_from_uri(uri: str) -> bytes:
    """The WAV file inside a ``data:audio/wav;base64,`` URI (b"" for anything else)."""
    prefix = "data:audio/wav;base64,"
    if not isinstance(uri, str) or not uri.startswith(prefix):
        return b""
    try:
        return base64.b64decode(uri[len(prefix):], validate=True)
    except ValueError:
        return b""


# --------------------------------------------------------------------------------------------- speech input
_FLOAT_DTYPES = ("float32", "float16", "bfloat16", "float64")


def waveform_input(name: str, dtype: str, shape: Sequence[int]) -> int | None:
    """The time axis of an input that takes a waveform (rule in the module docstring), or None."""
    if dtype not in _FLOAT_DTYPES or not 1 <= len(shape) <= 3:
        return None
    dims = [int(d) for d in shape]
    if len(dims) == 3 and dims[1] > MAX_CHANNELS:
        return None
    need = MIN_INPUT_SAMPLES if any(w in name.lower() for w in WAVE_INPUT_NAMES) else MIN_SAMPLES
    return len(dims) - 1 if dims[-1] >= need else None


def feature_map_input(name: str, shape: Sequence[int], layout: str) -> str:
    """Why a one-channel 4-D input is a spectrogram or feature map, not a picture ("" when nothing says so):
    its name holds mel, spec, fbank, feat, mfcc, stft, audio or erb, or its last spatial axis — frequency, in the usual
    T×F order — is a filter-bank size (13…128 bands) shorter than the time axis, or an STFT's n_fft/2 + 1 bins
    (129, 161, 201, 257, 513: no picture is that wide)."""
    if len(shape) != 4:
        return ""
    channels, (t, f) = (shape[1], shape[2:4]) if layout == "NCHW" else (shape[3], shape[1:3])
    if channels != 1:
        return ""
    word = next((w for w in FEATURE_NAMES if w in name.lower()), "")
    if word:
        return f"its name says '{word}': a spectrogram or feature map"
    if f in STFT_BINS or (f in FEATURE_SIZES and t > f):
        return f"{t}×{f} with one channel: {t} frames of {f} frequency bands, a spectrogram or feature map"
    return ""


def read_wav(path: str | Path) -> tuple[np.ndarray, int]:
    """A PCM WAV file (8, 16, 24 or 32 bit) as mono float32 in [-1, 1] (channels averaged), and its rate."""
    with wave.open(str(path), "rb") as w:
        width, channels, rate = w.getsampwidth(), w.getnchannels(), w.getframerate()
        raw = w.readframes(w.getnframes())
    x: np.ndarray
    if width == 1:
        x = (np.frombuffer(raw, np.uint8).astype(np.float32) - 128) / 128
    elif width == 3:
        b = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
        x = ((b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)) << 8 >> 8).astype(np.float32) / 2 ** 23
    else:
        dt = {2: "<i2", 4: "<i4"}[width]
        x = np.frombuffer(raw, dt).astype(np.float32) / float(2 ** (8 * width - 1))
    return x.reshape(-1, channels).mean(axis=1).astype(np.float32), rate


def resample(x: np.ndarray, src: int, dst: int) -> np.ndarray:
    """Band-limited resampling by the FFT (the spectrum cut or zero-padded to the new length)."""
    if src == dst or x.size == 0:
        return x.astype(np.float32)
    n = max(1, round(x.size * dst / src))
    spec = np.fft.rfft(x.astype(np.float64))
    keep = n // 2 + 1
    out_spec = np.zeros(keep, np.complex128)
    m = min(keep, spec.size)
    out_spec[:m] = spec[:m]
    return (np.fft.irfft(out_spec, n) * (n / x.size)).astype(np.float32)


def speech(rate: int | None = None, path: str | Path = SPEECH_SAMPLE) -> tuple[np.ndarray, int]:
    """The speech sample at `rate` (its own rate when None), and that rate."""
    x, own = read_wav(path)
    target = rate or own
    return resample(x, own, target), target


def speech_feed(shape: Sequence[int], axis: int, dtype: np.dtype, index: int, wave_data: np.ndarray) -> np.ndarray:
    """An input array of `shape` filled with stretches of `wave_data` along `axis`: batch item b of sample `index`
    starts (index·batch + b)·T samples in (looped), every channel the same."""
    shape = tuple(int(d) for d in shape)
    t = shape[axis]
    batch = shape[0] if len(shape) > 1 else 1
    out = np.zeros(shape, np.float32)
    for b in range(batch):
        start = (index * batch + b) * t
        idx = (start + np.arange(t)) % max(1, wave_data.size)
        piece = wave_data[idx] if wave_data.size else np.zeros(t, np.float32)
        if len(shape) == 1:
            out[:] = piece
        elif len(shape) == 2:
            out[b] = piece
        else:
            out[b] = piece[None, :]
    return out.astype(dtype)
