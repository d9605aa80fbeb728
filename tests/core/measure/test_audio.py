"""Audio: waveform outputs read as audio (and only those), judged by SNR and log-spectral distance, drawn and carried
as WAV; trtlab's speech sample fed to waveform inputs; spectrogram inputs kept from photos."""

from __future__ import annotations

import io
import math
import wave

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from app.backends.tasks.specs import CompareSpec
from app.core.measure import (
    InputSource,
    Tolerance,
    ToleranceError,
    compare_samples,
    infer_output_kinds,
    judge,
    make_samples,
    not_photos,
    photo_source_for,
    resolve_input_shapes,
    sample_words,
    speech_source_for,
    task_words,
    wav_from_uri,
)
from app.core.measure.audio import (
    SPEECH_SAMPLE,
    feature_map_input,
    lsd_db,
    read_wav,
    resample,
    snr_db,
    wav_uri,
    waveform_input,
)
from app.core.measure.kinds import OutputKind, OutputKindError
from app.core.model.tensors import graph_inputs, value_info_to_tensor_info
from app.core.results import OutputResult, SampleFacts
from app.jobs import run_inline
from tests.audio_models import denoiser_model, tts_model

RATE = 16000


def _sine(seconds: float = 1.0, hz: float = 440.0) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return (0.5 * np.sin(2 * np.pi * hz * t)).astype(np.float64)


def _noise_at(x: np.ndarray, snr: float, seed: int = 0) -> np.ndarray:
    n = np.random.default_rng(seed).standard_normal(x.size)
    return n * math.sqrt(np.sum(x * x) / np.sum(n * n) / 10 ** (snr / 10))


def _infos(model: onnx.ModelProto):
    return [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]


# ----------------------------------------------------------------------------------------------- judging
@pytest.mark.parametrize("snr", [10.0, 20.0, 34.2, 60.0])
def test_a_sine_plus_known_noise_has_that_snr(snr):
    x = _sine()
    task = judge(OutputKind("audio"), [x[None]], [(x + _noise_at(x, snr))[None]]).task
    assert task["audio_snr_db"] == pytest.approx(snr, abs=1e-6)
    assert task["rate"] == RATE and task["rate_known"] is False and task["seconds"] == 1.0


def test_lsd_grows_with_the_noise_and_is_zero_for_the_same_sound():
    x = _sine(hz=300) + _sine(hz=1200) * 0.3
    assert lsd_db(x, x, RATE) == 0.0 and snr_db(x, x) == 999.0
    quiet, loud = lsd_db(x, x + _noise_at(x, 60), RATE), lsd_db(x, x + _noise_at(x, 10), RATE)
    assert quiet < loud and loud > 10
    # A gain of -1 dB moves every bin that is not under the floor by 1 dB: on broadband sound the LSD says 1 dB,
    # the SNR 19.3 dB
    b = _noise_at(x, 0, seed=5)
    assert lsd_db(b, b * 10 ** (-1 / 20), RATE) == pytest.approx(1.0, abs=0.01)
    assert snr_db(b, b * 10 ** (-1 / 20)) == pytest.approx(19.27, abs=0.01)


def test_the_defaults_pass_a_small_error_and_fail_a_broken_output():
    x = _sine(hz=220) + _noise_at(_sine(hz=220), 30, seed=3)  # a broadband reference, as speech is
    kind = OutputKind("audio")
    small = compare_samples([{"y": x[None, None]}], [{"y": (x + _noise_at(x, 50, seed=1))[None, None]}], "c",
                            kinds={"y": kind}).outputs[0]
    assert small.judged_by == ["audio_snr_db:15", "lsd_db:5"] and small.passed, small.failures
    for broken in (np.zeros_like(x), np.roll(x, 128), -x, x + _noise_at(x, 10, seed=2)):
        m = compare_samples([{"y": x[None, None]}], [{"y": broken[None, None]}], "c", kinds={"y": kind}).outputs[0]
        assert not m.passed and any(f.startswith(("audio_snr_db", "lsd_db")) for f in m.failures), m.failures


def test_each_signal_is_judged_and_the_worst_one_counts():
    x = np.stack([_sine(hz=300), _sine(hz=500)])  # N×C×T: two channels
    c = x.copy()
    c[1] += _noise_at(x[1], 15)
    r = judge(OutputKind("audio"), [x[None]], [c[None]])
    assert r.task["audio_snr_db"] == pytest.approx(15, abs=1e-6)
    assert r.answers[0]["audio_snr_db"] == pytest.approx(15, abs=1e-6)
    out = OutputResult.from_json({"name": "y", "kind": "audio", "task": r.task})
    assert task_words(out).startswith("sound: SNR 15.0 dB, LSD ")
    assert sample_words("audio", SampleFacts.from_json(r.answers[0])).startswith("this sample: sound: SNR 15.0 dB")


def test_a_silent_reference_has_nothing_to_judge():
    z = np.zeros((1, 8000))
    r = judge(OutputKind("audio"), [z, z], [z, z + 0.1])
    assert r.task["empty_reference"] is True and "silent" in str(r.task["empty_reason"])


def test_shapes_that_differ_are_an_error_not_a_crash():
    r = judge(OutputKind("audio"), [np.zeros((1, 8000))], [np.zeros((1, 4000))])
    assert r is not None and "does not read as audio" in str(r.task["error"])


def test_tolerances_and_rate_option():
    assert str(Tolerance.parse("audio_snr_db:25")) == "audio_snr_db:25" and Tolerance.parse("lsd:2").metric == "lsd_db"
    assert Tolerance.parse("lsd_db:2").floor is False and Tolerance.parse("audio_snr_db:20").floor is True
    with pytest.raises(ToleranceError, match="out of range"):
        Tolerance.parse("lsd_db:-1")
    k = OutputKind.parse("audio:rate=22050")
    assert (k.kind, k.rate, k.text()) == ("audio", 22050, "audio:rate=22050")
    assert OutputKind.parse("audio").text() == "audio" and OutputKind.parse("audio").rate is None
    for bad in ("audio:rate=fast", "audio:rate=12", "audio:nchw"):
        with pytest.raises(OutputKindError) as info:
            OutputKind.parse(bad)
        assert "rate=" in (info.value.fix or "")


# ----------------------------------------------------------------------------------------------- inference
def test_a_denoiser_output_reads_as_audio(tmp_path):
    model = onnx.load(denoiser_model(tmp_path / "den.onnx"))
    kinds = infer_output_kinds(model)
    assert kinds["enhanced"].kind == "audio" and "waveform input 'noisy'" in kinds["enhanced"].reason
    assert kinds["enhanced"].rate is None
    # Its last op is an Add: without the audio rule the sequence rule would read it as 1 step of 16000 tokens
    rated = infer_output_kinds(onnx.load(denoiser_model(tmp_path / "rated.onnx", rate=22050)))
    assert rated["enhanced"].text() == "audio:rate=22050"


def test_a_tts_output_reads_as_audio_from_its_phoneme_ids(tmp_path):
    kinds = infer_output_kinds(onnx.load(tts_model(tmp_path / "tts.onnx")))
    assert kinds["output"].kind == "audio" and "text to speech" in kinds["output"].reason


def _graph_model(out_name: str, out_dims: list, op: str, in_type: int, in_dims: list) -> onnx.ModelProto:
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"])] if op == "MatMul" else []
    last = "m" if op == "MatMul" else "x"
    nodes.append(helper.make_node(op if op != "MatMul" else "Identity", [last], [out_name]))
    inits = [numpy_helper.from_array(np.zeros((8, out_dims[-1]), np.float32), "w")] if op == "MatMul" else []
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", in_type, in_dims)],
                              [helper.make_tensor_value_info(out_name, TensorProto.FLOAT, out_dims)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(("name", "out_dims", "op", "in_type", "in_dims", "kind"), [
    ("y", [1, 16000], "Relu", TensorProto.FLOAT, [1, 16000], "audio"),           # N×T from a waveform input
    ("y", [1, 2, 16000], "Tanh", TensorProto.FLOAT, [1, 2, 16000], "audio"),     # stereo
    ("wav", [1, 1, None], "Tanh", TensorProto.FLOAT, [1, 80, None], "audio"),     # dynamic length, named
    ("probs", [1, 16000], "Sigmoid", TensorProto.FLOAT, [1, 16000], "classes"),  # probabilities: not a signal
    ("y", [1, 16000], "Relu", TensorProto.FLOAT, [1, 100, 30], "tensor"),        # no waveform input, no name
    ("y", [1, 3, 16000], "Relu", TensorProto.FLOAT, [1, 3, 16000], "tensor"),    # 3 channels: not a waveform
    ("y", [1, 3999], "Relu", TensorProto.FLOAT, [1, 3999], "tensor"),            # too short to be sound
    ("audio_emb", [1, 16000], "Relu", TensorProto.FLOAT, [1, 16000], "embedding"),  # an embedding keeps its name
])
def test_the_rule_reads_waveforms_and_leaves_the_rest(name, out_dims, op, in_type, in_dims, kind):
    got = infer_output_kinds(_graph_model(name, out_dims, op, in_type, in_dims))[name]
    assert got.kind == kind, got.reason


def test_vocabulary_logits_of_a_text_model_are_not_audio():
    """ids → N×30522 logits from a linear layer: classes, though the row is long and the input holds ids."""
    m = _graph_model("logits", [1, 30522], "MatMul", TensorProto.FLOAT, [1, 8])
    m.graph.input[0].type.tensor_type.elem_type = TensorProto.INT64
    assert infer_output_kinds(m)["logits"].kind == "classes"


# ----------------------------------------------------------------------------------------------- sound and pictures
def test_a_wav_uri_decodes_to_its_samples_and_rate():
    x = _sine(2.0)
    uri = wav_uri(x, 22050)
    assert uri.startswith("data:audio/wav;base64,")
    with wave.open(io.BytesIO(wav_from_uri(uri))) as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()) == (1, 2, 22050, x.size)
        back = np.frombuffer(w.readframes(x.size), "<i2") / 32767
    assert np.max(np.abs(back - x)) < 1e-4
    assert wav_from_uri("data:image/png;base64,AAAA") == b"" and wav_from_uri("data:audio/wav;base64,@@") == b""
    long = wav_uri(np.zeros(RATE * 30), RATE)  # at most 10 s are carried
    with wave.open(io.BytesIO(wav_from_uri(long))) as w:
        assert w.getnframes() == 10 * RATE


# ----------------------------------------------------------------------------------------------- speech input
def test_the_speech_sample_is_short_16khz_mono_speech_with_its_licence():
    x, rate = read_wav(SPEECH_SAMPLE)
    assert rate == 16000 and 3 <= x.size / rate <= 8 and SPEECH_SAMPLE.stat().st_size < 200_000
    assert 0.05 < float(np.sqrt(np.mean(x * x))) and float(np.max(np.abs(x))) <= 1.0
    licences = (SPEECH_SAMPLE.parent / "LICENSES.md").read_text(encoding="utf-8")
    assert "`speech.wav`" in licences and "espeak-ng -v en-us" in licences and "CC0" in licences
    y = resample(x, 16000, 22050)
    assert abs(y.size - round(x.size * 22050 / 16000)) <= 1
    assert float(np.sqrt(np.mean(y * y))) == pytest.approx(float(np.sqrt(np.mean(x * x))), rel=0.02)


def test_a_waveform_input_is_fed_the_speech_sample(tmp_path):
    model = onnx.load(denoiser_model(tmp_path / "den.onnx", samples=8000))
    infos = _infos(model)
    shapes = resolve_input_shapes(infos, {})
    source = speech_source_for(infos, shapes)
    assert source is not None and source.kind == "audio" and source.path == str(SPEECH_SAMPLE)
    assert "speech sample" in source.describe() and "'noisy'" in source.describe()
    assert InputSource.from_json(source.to_json()) == source
    samples = make_samples(model, infos, shapes, source, samples=2)
    speech, _ = read_wav(SPEECH_SAMPLE)
    assert samples[0]["noisy"].dtype == np.float32 and samples[0]["noisy"].shape == (1, 8000)
    assert np.array_equal(samples[0]["noisy"][0], speech[:8000])
    assert np.array_equal(samples[1]["noisy"][0], speech[8000:16000])  # the next stretch
    rated = speech_source_for(infos, shapes, 22050)
    assert rated is not None and rated.rate == 22050 and "22050 Hz" in rated.describe()


@pytest.mark.parametrize(("name", "dtype", "shape", "axis"), [
    ("x", "float32", (1, 16000), 1), ("x", "float32", (16000,), 0), ("x", "float32", (2, 1, 8000), 2),
    ("x", "float32", (1, 512), None), ("audio_chunk", "float32", (1, 512), 1), ("x", "int64", (1, 16000), None),
    ("x", "float32", (1, 3, 16000), None), ("x", "float32", (1, 3, 224, 224), None),
])
def test_which_inputs_take_a_waveform(name, dtype, shape, axis):
    assert waveform_input(name, dtype, shape) == axis


def _one_input(name: str, dims: list) -> onnx.ModelProto:
    graph = helper.make_graph([helper.make_node("Relu", [name], ["y"])], "g",
                              [helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(("name", "dims", "photos", "why"), [
    ("x", [1, 1, 149, 64], False, "149 frames of 64 frequency bands"),   # N×1×T×F log-mel
    ("x", [1, 96, 64, 1], False, "96 frames of 64"),                     # NHWC, VGGish-like
    ("log_mel", [1, 1, 64, 64], False, "its name says 'mel'"),
    ("x", [1, 1, 64, 64], True, ""),                                     # a square grey picture stays a picture
    ("x", [1, 1, 32, 100], True, ""),                                    # a text-line recogniser's grey crop
    ("x", [1, 3, 149, 64], True, ""),                                    # three channels: a photo
])
def test_spectrogram_inputs_are_not_fed_photos(name, dims, photos, why):
    model = _one_input(name, dims)
    infos = _infos(model)
    shapes = resolve_input_shapes(infos, {})
    assert (photo_source_for(infos, shapes) is not None) is photos
    note = not_photos(infos, shapes)
    assert (why in note and note.startswith("not photos")) if why else note == ""


def test_the_job_says_which_rule_kept_photos_away(tmp_path):
    from app.backends.tasks.common import default_source

    path = tmp_path / "mel.onnx"
    onnx.save(_one_input("x", [1, 1, 149, 64]), str(path))
    source = default_source(CompareSpec(model=str(path), candidates=("ort-cpu:fp16",)))
    assert source.kind == "random" and "not photos" in source.describe() and "frequency bands" in source.describe()


def test_a_real_spectrogram_input_reads_as_one(models_dir):
    """plcmos_v2's degraded_audio [N,1,frames,257] (257 STFT bins) and deepfilternet3's feat_erb [1,1,S,32]."""
    assert "'audio'" in feature_map_input("degraded_audio", (1, 1, 200, 257), "NCHW")
    assert feature_map_input("x", (1, 1, 200, 257), "NCHW").startswith("200×257")
    assert "'feat'" in feature_map_input("feat_erb", (1, 1, 100, 32), "NCHW")
    path = models_dir / "plcmos_v2.onnx"
    if not path.is_file():
        pytest.skip(f"plcmos_v2.onnx is not in {models_dir}")
    plcmos = onnx.load(str(path), load_external_data=False)
    infos = _infos(plcmos)
    assert [i.name for i in infos] == ["degraded_audio", "rater_embed"]
    degraded = next(i for i in infos if i.name == "degraded_audio")
    assert feature_map_input(degraded.name, (1, 1, 200, 257), "NCHW")
    assert waveform_input("rater_embed", "float32", (1, 64)) is None  # 64 values are no waveform


# ----------------------------------------------------------------------------------------------- the compare job
def test_fp16_of_a_denoiser_is_judged_by_its_sound(tmp_path):
    path = denoiser_model(tmp_path / "den.onnx")
    result = run_inline(CompareSpec(model=str(path), candidates=("ort-cpu:fp16",), samples=2).job_spec("compare"))
    assert result.status == "done", result.error
    data = result.data
    assert "speech sample" in data["inputs"] and data["random_data"] is False
    assert data["output_kinds"]["enhanced"]["kind"] == "audio"
    out = data["candidates"][0]["outputs"][0]
    assert out["kind"] == "audio" and out["judged_by"] == ["audio_snr_db:15", "lsd_db:5"] and out["passed"]
    assert out["task"]["audio_snr_db"] > 50 and out["task"]["lsd_db"] < 0.5
    entry = data["answers"]["outputs"]["enhanced"]
    cand = entry["candidates"]["ort-cpu:fp16"]
    assert len(entry["ref"]) == len(cand["cand"]) == len(cand["diff"]) == 2
    assert all(u.startswith("data:image/jpeg;base64,") for u in entry["ref"] + cand["cand"] + cand["diff"])
    assert len(entry["ref_sound"]) == len(cand["sound"]) == 2
    with wave.open(io.BytesIO(wav_from_uri(cand["sound"][1]))) as w:
        assert (w.getframerate(), w.getnframes()) == (16000, 16000)
    assert "this sample: sound: SNR" in sample_words("audio", SampleFacts.from_json(cand["per_sample"][0]))


def test_a_sound_of_another_length_is_said_in_time():
    """A TTS voice whose FP16 durations moved by one 256-sample frame: the failure says so in samples and ms."""
    from app.core.measure import compare_samples

    ref = [{"o": np.sin(np.arange(27648) / 10).astype(np.float32)[None, None, None]}]
    cand = [{"o": np.sin(np.arange(27904) / 10).astype(np.float32)[None, None, None]}]
    (out,) = compare_samples(ref, cand, "c", kinds={"o": OutputKind.parse("audio:rate=22050")}).outputs
    assert not out.passed
    assert out.failures[0] == ("the sound is 256 samples (12 ms at 22050 Hz) longer than the reference's (27648 "
                               "samples): its timing changed")
