"""The sample photos trtlab ships, and the image input source that feeds them to an image model.

Five public-domain/CC0 photos from scikit-image's sample data live in ``app/resources/samples`` (origin and
licences in LICENSES.md there), so that image models are compared on real pictures rather than random numbers.
:func:`photo_source_for` gives an "images" :class:`InputSource` to a model whose one input is an image (NCHW or
NHWC); the photos get the model's preset, as ``trtlab eval``'s images do (:func:`app.core.evaluate.photo_source`
and :func:`app.core.evaluate.fit_source` fill it from :func:`app.core.evaluate.choose_preset`):
a model whose metadata says Ultralytics exported it (YOLOv5/v8/11/26: ``author`` Ultralytics, or ``stride``,
``names`` and ``imgsz`` together) is fed letterboxed [0, 1] pixels with no mean/std, as Ultralytics trains them;
PaddleOCR's models get PaddleOCR's rules; the rest are resized and normalised with ImageNet's mean and std (3
channels) or left as is (1 channel). A one-channel input that is a spectrogram or a feature map gets no photos
(:func:`not_photos` says why).

A speech sample, ``speech.wav`` (synthesised by espeak-ng; LICENSES.md), feeds a model's waveform input instead:
:func:`speech_source_for` (the rules in :mod:`app.core.measure.audio`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import onnx

from app.core.measure.audio import SPEECH_SAMPLE, feature_map_input, waveform_input
from app.core.measure.images import IMAGE_EXTENSIONS
from app.core.measure.inputs import InputSource
from app.core.model import TensorInfo

SAMPLES_DIR: Path = Path(__file__).resolve().parents[2] / "resources" / "samples"
MIN_SIDE = 16  # smaller "images" are more likely feature maps or sequences than pictures
_FLOAT_DTYPES = ("float32", "float16", "bfloat16", "float64")
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def sample_photos() -> list[Path]:
    """The bundled photos, sorted by name (empty when the folder is missing from a broken install)."""
    if not SAMPLES_DIR.is_dir():
        return []
    return sorted(p for p in SAMPLES_DIR.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS)


def _layout(shape: tuple[int, ...]) -> tuple[str, int] | None:
    """(layout, channels) of a 4-D image shape with 1 or 3 channels and sides of at least MIN_SIDE."""
    if shape[1] in (1, 3) and min(shape[2], shape[3]) >= MIN_SIDE:
        return "NCHW", shape[1]
    if shape[3] in (1, 3) and min(shape[1], shape[2]) >= MIN_SIDE:
        return "NHWC", shape[3]
    return None


def unnormalised(metadata: Mapping[str, str] | None) -> str:
    """Why a model's photos get no mean/std ("" when they get ImageNet's): an Ultralytics export, which expects
    [0, 1] pixels."""
    meta = metadata or {}
    if "ultralytics" in meta.get("author", "").lower() or {"stride", "names", "imgsz"} <= set(meta):
        return "an Ultralytics export: [0, 1] pixels, no mean/std"
    return ""


def model_metadata(model: onnx.ModelProto) -> dict[str, str]:
    """A model's metadata_props as a mapping."""
    return {p.key: p.value for p in model.metadata_props}


def photo_source_for(infos: list[TensorInfo], shapes: dict[str, tuple[int, ...]],
                     metadata: Mapping[str, str] | None = None, folder: str | Path | None = None
                     ) -> InputSource | None:
    """An "images" source on the bundled photos (or `folder`'s images) for the model's image input, or None.

    ``infos`` are the model's inputs and ``shapes`` their resolved shapes (:func:`resolve_input_shapes`). The
    source's preprocessing is left to the model's preset (None): :func:`app.core.evaluate.photo_source` and
    :func:`app.core.evaluate.fit_source` fill it from the whole model (``metadata`` alone cannot tell a PaddleOCR
    model; it is not read here). None unless the model has exactly one input, of a float dtype, with a 4-D shape of
    1 or 3 channels on axis 1 (NCHW) or axis 3 (NHWC) and both sides at least 16; None for a one-channel input that
    is a spectrogram or a feature map (:func:`app.core.measure.audio.feature_map_input`, :func:`not_photos` says
    why); None too when no photo is installed.
    """
    if len(infos) != 1 or infos[0].dtype not in _FLOAT_DTYPES:
        return None
    info = infos[0]
    raw = shapes.get(info.name, info.shape)
    if raw is None or len(raw) != 4 or not all(isinstance(d, int) and d > 0 for d in raw):
        return None
    fitted = _layout(tuple(int(d) for d in raw))
    if fitted is None or (folder is None and not sample_photos()):
        return None
    layout, channels = fitted
    if channels == 1 and feature_map_input(info.name, [int(d) for d in raw], layout):
        return None  # a spectrogram or feature map: `not_photos` says why
    return InputSource(kind="images", path=str(folder if folder is not None else SAMPLES_DIR))


def not_photos(infos: list[TensorInfo], shapes: dict[str, tuple[int, ...]]) -> str:
    """Why a model's one-channel 4-D input is not fed photos (a spectrogram or a feature map), "" otherwise."""
    if len(infos) != 1:
        return ""
    raw = shapes.get(infos[0].name, infos[0].shape)
    if raw is None or len(raw) != 4 or not all(isinstance(d, int) and d > 0 for d in raw):
        return ""
    shape = tuple(int(d) for d in raw)
    fitted = _layout(shape)
    why = feature_map_input(infos[0].name, shape, fitted[0]) if fitted and fitted[1] == 1 else ""
    return f"not photos: input '{infos[0].name}' {'×'.join(map(str, shape))}: {why}" if why else ""


def speech_source_for(infos: list[TensorInfo], shapes: dict[str, tuple[int, ...]],
                      rate: int | None = None) -> InputSource | None:
    """An "audio" source on trtlab's speech sample (``speech.wav``: 16 kHz, resampled to `rate` when the model's
    rate is known) for a model with a waveform input (:func:`app.core.measure.audio.waveform_input`), or None."""
    found = [(i.name, shapes[i.name]) for i in infos if i.name in shapes
             and waveform_input(i.name, i.dtype, shapes[i.name]) is not None]
    if not found or not SPEECH_SAMPLE.is_file():
        return None
    name, shape = found[0]
    at = f"resampled to the model's {rate} Hz" if rate else "at its own 16 kHz (the model's rate is not known)"
    return InputSource(kind="audio", path=str(SPEECH_SAMPLE), rate=rate,
                       note=f"trtlab's speech sample {at}, fed to the waveform input '{name}' "
                            f"({'×'.join(map(str, shape))})")
