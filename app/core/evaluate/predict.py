"""From a model's outputs for one image to the answer a labelled dataset is scored against, in the ORIGINAL image.

The outputs are read as their kinds say (``app.core.measure``: ``infer_output_kinds``) and decoded with the same
decoders that judge answers in a comparison:

- **detections** (``detections``, ``yolo``, split heads): boxes x1, y1, x2, y2 with scores and class ids, decoded
  down to a low score (0.001, as mAP wants every ranked box), through the NMS the kind calls for (trtlab's class-wise
  NMS for raw YOLO heads and split heads, none for lists the model made itself), then mapped back through the
  preset's :class:`Transform` (letterbox included) and clipped to the image; a box that lay wholly in the padding is
  dropped.
- **classes**: the top-5 class ids and their scores.
- **masks** (``image``): one channel above 0.5 (above 0 when the values are logits, not within [0, 1]), resized
  back to the original size as scores first; several channels: the arg-max class per pixel, resized nearest.
- **text** (``sequence``): CTC greedy decoding — the arg-max per step, repeats merged, blank 0 dropped — read with
  the model's own dictionary (token i is dictionary entry i − 1; the last token is the space PaddleOCR appends) or
  the output's labels file; token ids joined by spaces when there is neither.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from app.core.errors import InputError
from app.core.evaluate.presets import Transform
from app.core.measure import OutputKind, answer_labels, detection_rows

DETECTION_FLOOR = 0.001
TOP_K = 5
PREDICTED_KINDS = ("detections", "yolo", "classes", "image", "sequence")


class PredictError(InputError):
    title = "Cannot read the model's answer"


@dataclass(frozen=True)
class Detections:
    """Boxes in the original image's pixels (N×4 x1, y1, x2, y2), their scores and class ids, best first."""

    boxes: np.ndarray
    scores: np.ndarray
    classes: np.ndarray

    def __len__(self) -> int:
        return len(self.scores)


@dataclass(frozen=True)
class Classes:
    """The top-k class ids, best first, and their scores."""

    top: tuple[int, ...]
    scores: tuple[float, ...]


@dataclass(frozen=True)
class Mask:
    """A class id per pixel of the original image (H×W; 0/1 for a one-channel mask) and the model's channel count."""

    labels: np.ndarray
    channels: int


@dataclass(frozen=True)
class Text:
    """The decoded text, the tokens it came from, and the mean probability of the kept steps (None for logits)."""

    text: str
    tokens: tuple[int, ...]
    confidence: float | None = None


Prediction = Detections | Classes | Mask | Text


def predict(outputs: Mapping[str, np.ndarray], kinds: Mapping[str, OutputKind], transform: Transform, *,
            output: str | None = None, floor: float = DETECTION_FLOOR) -> Prediction:
    """One image's answer from the model's outputs: from ``output``, or the first output (in the kinds' order) of a
    kind that makes one. ``transform`` is the one the preset's ``apply`` returned for this image."""
    name = output if output is not None else next(
        (n for n, k in kinds.items() if k.kind in PREDICTED_KINDS and not k.part_of), None)
    if name is None or name not in kinds:
        raise PredictError("None of the model's outputs reads as boxes, classes, a mask or text." if name is None
                           else f"The model has no output named '{name}'.",
                           fix="Set the output's kind (e.g. --output-kind output0=yolo).")
    kind = kinds[name]
    if kind.kind in ("detections", "yolo"):
        return predict_detections(outputs, name, kind, transform, floor)
    if kind.kind == "classes":
        return predict_classes(outputs[name])
    if kind.kind == "image":
        return predict_mask(outputs[name], kind, transform)
    if kind.kind == "sequence":
        return predict_text(outputs[name], kind)
    raise PredictError(f"Output '{name}' is read as {kind.kind}, which has no answer to score.",
                       fix="Set its kind to detections, yolo, classes, image or sequence.")


def predict_detections(outputs: Mapping[str, np.ndarray], name: str, kind: OutputKind, transform: Transform,
                       floor: float = DETECTION_FLOOR) -> Detections:
    """The first image's boxes, decoded as the kind reads them and mapped back onto the original image."""
    rows = detection_rows(kind, outputs, name, floor)
    found = rows[0] if rows else np.zeros((0, 6))
    boxes = transform.boxes_to_original(found[:, :4])
    inside = (boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])
    return Detections(boxes[inside], found[inside, 4].astype(np.float64), found[inside, 5].astype(np.int64))


def predict_classes(scores: np.ndarray, k: int = TOP_K) -> Classes:
    """The first row's top-k class ids, best first (ties in index order)."""
    a = np.asarray(scores, np.float64)
    row = a.reshape(-1, a.shape[-1])[0] if a.ndim >= 1 and a.size else np.zeros(0)
    top = np.argsort(-row, kind="stable")[:k]
    return Classes(tuple(int(i) for i in top), tuple(float(row[i]) for i in top))


def predict_mask(array: np.ndarray, kind: OutputKind, transform: Transform) -> Mask:
    """The first image's mask on the original image's pixels."""
    a = np.asarray(array, np.float32)
    if kind.layout == "nhwc" and a.ndim == 4:
        a = np.moveaxis(a, -1, 1)
    planes = a[0] if a.ndim == 4 else a[:1] if a.ndim == 3 else a[None]  # (C, H, W)
    if len(planes) == 1:
        plane = planes[0]
        lo, hi = float(np.nanmin(plane)), float(np.nanmax(plane))
        cut = 0.5 if lo >= -1e-3 and hi <= 1 + 1e-3 else 0.0  # probabilities, or logits (sigmoid 0.5 = logit 0)
        back = transform.mask_to_original(np.nan_to_num(plane), nearest=False)
        return Mask((back > cut).astype(np.int64), 1)
    return Mask(transform.mask_to_original(planes.argmax(axis=0).astype(np.int64)), len(planes))


def ctc_greedy(steps: np.ndarray) -> tuple[list[int], float | None]:
    """CTC greedy reading of T×V scores: the arg-max per step, repeats merged, blank 0 dropped; and the mean top
    score of the kept steps when the scores are probabilities (None otherwise)."""
    s = np.asarray(steps, np.float64)
    best = s.argmax(axis=-1)
    keep = (best != 0) & np.concatenate([[True], best[1:] != best[:-1]])
    probs = float(s.min()) >= -1e-6 and float(s.max()) <= 1 + 1e-6
    conf = float(s.max(axis=-1)[keep].mean()) if probs and keep.any() else (0.0 if probs else None)
    return [int(t) for t in best[keep]], conf


def predict_text(array: np.ndarray, kind: OutputKind, labels: Sequence[str] | None = None) -> Text:
    """The first item's text: CTC greedy decoding (or the arg-max as it is for ``noctc``), read with ``labels``, else
    the output's labels file or the model's own dictionary (``answer_labels``)."""
    a = np.asarray(array, np.float32)
    if kind.layout == "tnv" and a.ndim == 3:
        a = np.swapaxes(a, 0, 1)
    steps = a[0] if a.ndim == 3 else a
    if kind.ctc:
        tokens, conf = ctc_greedy(steps)
    else:
        tokens, conf = [int(t) for t in steps.argmax(axis=-1)], None
    names = list(labels) if labels is not None else answer_labels(kind)
    if names:
        text = "".join(names[t] if 0 <= t < len(names) else "?" for t in tokens)
    else:
        text = " ".join(str(t) for t in tokens)
    return Text(text, tuple(tokens), conf)
