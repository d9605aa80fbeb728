"""Each image's answer per target, kept on disk so that a second evaluation computes only what changed.

An answer (a :data:`Prediction` in the original image) is stored under ``<cache>/answers/<run[:2]>/<run>/`` as one
``.npz`` per image: ``<run>`` is the hash of what makes a target's answers (the model's bytes, the target, the plan's
value for ``B:plan``, the preset, the input shape, the output kinds, the backend options that change numbers, and for
INT8 the calibration's identity), the file's name the hash of the image (its resolved path, size and modification time).
A run's folder therefore holds one file per image (5,000 images: 5,000 files in one folder, nothing elsewhere), a
new candidate or a changed plan gets a folder of its own, and an edited image is a new name.

Every file is written atomically (a temp file in the same folder, then rename) and names its image and run inside:
a file that does not read back whole, or reads as another image's, is recomputed and overwritten, never trusted.
Files are read back with ``allow_pickle=False``. The output kinds the reference proved on the first image are kept
beside the answers (``kinds/<key>.json``), so that a candidate added later reads the model's outputs the same way.
Nothing is ever evicted: removing ``<cache>/answers`` (or any part of it) is always safe, it only costs time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import logging
import os
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from app.core.evaluate.predict import Classes, Detections, Mask, Prediction, Text
from app.core.fileio import atomic_write_bytes, atomic_write_text, cache_root, file_sha256
from app.core.measure import OutputKind

log = logging.getLogger(__name__)

ANSWERS_VERSION = 2  # raised when what a file holds changes meaning: older files are then never read
# 2: images resized in their 8-bit pixels (app.core.evaluate.presets: Preset.apply)
# Backend options that leave the numbers as they are (a thread count, which GPU): not part of a run's key.
NEUTRAL_OPTIONS = ("threads", "device_id")


def answers_root(root: Path | None = None) -> Path:
    """Where answers live: ``<root>/answers``, ``root`` by default trtlab's cache (``app.core.fileio.cache_root``)."""
    return (root if root is not None else cache_root()) / "answers"


def model_digest(path: str | os.PathLike[str]) -> str:
    """The model's identity: the SHA-256 of its bytes, and of each external data file's name, size and modification
    time beside it (hashing hundreds of MB of weights again on every run would cost more than the run saves)."""
    h = hashlib.sha256(file_sha256(path).encode())
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    folder = Path(path).resolve().parent
    places = sorted({e.value for t in model.graph.initializer for e in t.external_data if e.key == "location"})
    for place in places:
        try:
            st = (folder / place).stat()
        except OSError:
            continue
        h.update(f"{place}|{st.st_size}|{st.st_mtime_ns}".encode())
    return h.hexdigest()


def image_key(path: str | os.PathLike[str]) -> str:
    """An image's identity: its resolved path, size and modification time (ns); a changed file is a new key."""
    resolved = Path(path).resolve()
    st = resolved.stat()
    return hashlib.sha256(f"{resolved}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:40]


def run_key(parts: Mapping[str, Any]) -> str:
    """The hash of what makes a target's answers (canonical JSON, keys sorted)."""
    text = json.dumps({"version": ANSWERS_VERSION, **parts}, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def run_parts(*, model: str, target: str, plan: object, preset: Mapping[str, Any],
              shape: tuple[int, ...], output_kinds: Mapping[str, str], options: Mapping[str, Any],
              calibration: Mapping[str, Any] | None) -> dict[str, Any]:
    """The parts of a run's key: ``model`` its digest, ``target`` backend:precision, ``plan`` the plan's value
    (``PrecisionPlan.key``; ``B:plan`` targets only), ``calibration`` the INT8 calibration's identity (INT8 and plan
    targets only)."""
    return {"model": model, "target": target, "plan": plan, "preset": dict(preset), "shape": list(shape),
            "output_kinds": dict(output_kinds),
            "options": {k: v for k, v in options.items()
                        if k not in NEUTRAL_OPTIONS and not (k == "tf32" and not v)},  # strict FP32 is the default
            "calibration": calibration}


def encode(prediction: Prediction) -> dict[str, np.ndarray]:
    """A prediction as named arrays (no objects: read back without pickle)."""
    if isinstance(prediction, Detections):  # as they are: read back, the metrics come out bit for bit the same
        return {"kind": np.array("detections"), "boxes": np.asarray(prediction.boxes).reshape(-1, 4),
                "scores": np.asarray(prediction.scores), "classes": np.asarray(prediction.classes)}
    if isinstance(prediction, Classes):
        return {"kind": np.array("classes"), "top": np.asarray(prediction.top, np.int64),
                "scores": np.asarray(prediction.scores, np.float64)}
    if isinstance(prediction, Mask):
        labels = np.asarray(prediction.labels)
        small = labels.astype(np.uint8 if labels.size == 0 or int(labels.max()) < 256 else np.int64)
        return {"kind": np.array("mask"), "labels": small, "channels": np.array(prediction.channels, np.int64)}
    return {"kind": np.array("text"), "text": np.array(prediction.text), "tokens": np.asarray(prediction.tokens,
                                                                                          np.int64),
            "confidence": np.array(np.nan if prediction.confidence is None else prediction.confidence)}


def decode(arrays: Mapping[str, np.ndarray]) -> Prediction:
    """The prediction :func:`encode` wrote; KeyError or ValueError where the arrays are not one."""
    kind = str(arrays["kind"])
    if kind == "detections":
        return Detections(arrays["boxes"].reshape(-1, 4), arrays["scores"].reshape(-1), arrays["classes"].reshape(-1))
    if kind == "classes":
        return Classes(tuple(int(v) for v in arrays["top"]), tuple(float(v) for v in arrays["scores"]))
    if kind == "mask":
        return Mask(arrays["labels"].astype(np.int64), int(arrays["channels"]))
    if kind == "text":
        conf = float(arrays["confidence"])
        return Text(str(arrays["text"]), tuple(int(v) for v in arrays["tokens"]), None if np.isnan(conf) else conf)
    raise ValueError(f"unknown answer kind {kind!r}")


class AnswerStore:
    """One run's answers (``folder`` is ``<answers>/<run[:2]>/<run>``): read, written, counted."""

    def __init__(self, root: Path, run: str) -> None:
        self.root = root
        self.run = run
        self.folder = root / run[:2] / run

    def path(self, image: str | os.PathLike[str]) -> Path:
        return self.folder / f"{image_key(image)}.npz"

    def load(self, image: str | os.PathLike[str]) -> Prediction | None:
        """The image's stored answer; None where there is none, or it does not read back whole as this image's."""
        try:
            key = image_key(image)
            data = (self.folder / f"{key}.npz").read_bytes()
        except OSError:
            return None
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                arrays = {name: z[name] for name in z.files}
            if str(arrays.pop("image")) != key or str(arrays.pop("run")) != self.run:
                raise ValueError("the file names another image or run")
            return decode(arrays)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            log.warning("Recomputing the answer for %s: its cached file is unreadable (%s)", image, exc)
            return None

    def save(self, image: str | os.PathLike[str], prediction: Prediction) -> None:
        """Stored atomically (not flushed to disk: a file a crash left short is unreadable, so :meth:`load`
        recomputes it); a mask compressed (others are a few hundred bytes)."""
        key = image_key(image)
        buffer = io.BytesIO()
        arrays: dict[str, Any] = {"image": np.array(key), "run": np.array(self.run), **encode(prediction)}
        (np.savez_compressed if isinstance(prediction, Mask) else np.savez)(buffer, **arrays)
        atomic_write_bytes(self.folder / f"{key}.npz", buffer.getbuffer(), durable=False)

    def save_notes(self, notes: list[str]) -> None:
        """What the run's session said about the target (read back when every answer comes from the cache)."""
        try:
            atomic_write_text(self.folder / "notes.json", json.dumps(list(notes)))
        except OSError as exc:
            log.warning("Could not keep the notes of %s (%s)", self.folder, exc)

    def load_notes(self) -> list[str]:
        try:
            notes = json.loads((self.folder / "notes.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        return [str(n) for n in notes] if isinstance(notes, list) else []


def save_kinds(root: Path, key: str, kinds: Mapping[str, OutputKind]) -> None:
    """The output kinds proved for a model and input (``key``), beside the answers."""
    atomic_write_text(root / "kinds" / f"{key}.json",
                      json.dumps({name: dataclasses.asdict(k) for name, k in kinds.items()}, sort_keys=True))


def load_kinds(root: Path, key: str) -> dict[str, OutputKind]:
    """The kinds :func:`save_kinds` kept; empty where there are none or they do not read back."""
    try:
        data = json.loads((root / "kinds" / f"{key}.json").read_text(encoding="utf-8"))
        kinds = {}
        for name, fields in data.items():
            values: dict[str, Any] = {f: tuple(tuple(x) if isinstance(x, list) else x for x in v)
                                      if isinstance(v, list) else v for f, v in fields.items()}
            kinds[str(name)] = OutputKind(**values)
        return kinds
    except (OSError, ValueError, TypeError, AttributeError):
        return {}
