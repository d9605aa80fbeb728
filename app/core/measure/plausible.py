"""Kinds that prove themselves: a task reading of an output (boxes, masks, text) is kept only when the FP32
reference's answer, read that way, is one the model could mean.

An inferred reading is dropped to ``tensor`` (judged element-wise; the reason names what was implausible) when,
on the reference's outputs:

- detections / yolo: the scores are not probabilities (below −0.01 or above 1.01: logits or box distributions read
  as scores); more than half of a raw head's anchors score above the threshold (a real head has a few objects among
  thousands of anchors); more than ``MAX_BOXES_PER_IMAGE`` boxes per image on average after NMS (PicoDet's class
  scores and distance distributions read as YOLOv5 rows give ~300 "boxes" per photo); the class column holds values
  that are not class numbers (fractions, negatives); most boxes have a negative width or height;
- image: probability masks that are on at every pixel of every sample (a constant map is no mask);
- sequence: arg-max tokens beyond the labels file given for it.

A reading the user chose (``--output-kind``) is never dropped: its answer is judged as asked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from app.core.measure.answers import SCORE_THRESHOLD, decode_boxes, planes, probability_like, tokens
from app.core.measure.kinds import TASK_KINDS, OutputKind

MAX_BOXES_PER_IMAGE = 250
ANCHORS_ON_MAX = 0.5
SCORE_EPS = 0.01
CLASS_EPS = 1e-3


def _scores(item: np.ndarray, kind: OutputKind) -> np.ndarray:
    """The score values a reading uses, of one batch item (v5: objectness and class scores, each a probability)."""
    if kind.kind == "yolo":
        rows = item.T if kind.layout == "v8" else item
        return rows[:, 4:]
    return item[:, kind.score_col]


def _anchor_scores(item: np.ndarray, kind: OutputKind) -> np.ndarray:
    """Each anchor's score as the decoder ranks it: the best class score, × objectness for v5."""
    rows = item.T if kind.layout == "v8" else item
    if kind.layout == "v5":
        classes = rows[:, 5:] if rows.shape[1] > 5 else np.ones((len(rows), 1))
        return np.asarray(rows[:, 4] * classes.max(axis=1))
    return np.asarray(rows[:, 4:].max(axis=1))


def _not_probabilities(scores: np.ndarray) -> str:
    scores = scores[np.isfinite(scores)]
    if scores.size and (scores.min() < -SCORE_EPS or scores.max() > 1 + SCORE_EPS):
        return f"its scores run from {scores.min():.3g} to {scores.max():.3g}: not probabilities"
    return ""


def _boxes_implausible(ref: Sequence[np.ndarray], kind: OutputKind, scores_checked: bool = False) -> str:
    items = [np.asarray(r, dtype=np.float64) for r in ref]
    items = [i[None] if i.ndim == 2 else i for i in items]
    if any(i.ndim != 3 for i in items):
        return f"a rank-{items[0].ndim} output has no rows of boxes"
    if not scores_checked and (why := _not_probabilities(
            np.concatenate([_scores(it, kind).ravel() for item in items for it in item]))):
        return why
    if kind.kind == "yolo":
        on = max(float(np.mean(_anchor_scores(it, kind) >= SCORE_THRESHOLD)) for item in items for it in item)
        if on > ANCHORS_ON_MAX:
            return f"{on:.0%} of its anchors score above {SCORE_THRESHOLD:g}: a detector finds a few objects"
    found = [b for r in ref for b in decode_boxes(r, kind, SCORE_THRESHOLD)]
    per_image = float(np.mean([len(b) for b in found])) if found else 0.0
    if per_image > MAX_BOXES_PER_IMAGE:
        return f"{per_image:.0f} boxes per image above {SCORE_THRESHOLD:g}: more than a detector means"
    kept = np.concatenate(found) if found else np.zeros((0, 6))
    if kind.kind == "detections" and kind.class_col is not None and len(kept):
        cls = np.concatenate([it[:, kind.class_col] for item in items for it in item
                              if kind.class_col < it.shape[1]] or [np.zeros(0)])
        cls = cls[np.isfinite(cls)]
        if cls.size and (cls.min() < 0 or np.abs(cls - np.rint(cls)).max() > CLASS_EPS):
            return (f"column {kind.class_col} holds {cls.min():.3g}…{cls.max():.3g}, not class numbers "
                    "(give the columns: detections:score=N,class=N|none)")
    if len(kept) >= 4:
        bad = float(np.mean((kept[:, 2] < kept[:, 0]) | (kept[:, 3] < kept[:, 1])))
        if bad > 0.5:
            return f"{bad:.0%} of its boxes have a negative width or height (give the box format: detections:cxcywh)"
    return ""


def implausible(kind: OutputKind, ref: Sequence[np.ndarray]) -> str:
    """Why reading an output as ``kind`` is implausible on the reference's values ("" when the reading holds)."""
    if not ref:
        return ""
    try:
        if kind.kind in ("detections", "yolo"):
            return _boxes_implausible(ref, kind)
        if kind.kind == "image" and probability_like(list(ref)):
            if all(bool((planes(r, kind) > 0.5).all()) for r in ref):
                return "its masks are on at every pixel of every sample: a constant map, not a mask"
        if kind.kind == "sequence" and kind.labels:
            from app.core.measure.pictures import read_labels

            labels = read_labels(kind.labels) or []
            top = max(int(tokens(r, kind).max()) for r in ref)
            if labels and top >= len(labels):
                return f"its token {top} is beyond the {len(labels)} labels given"
    except (IndexError, ValueError) as exc:
        return f"it does not read as {kind.text()} ({exc})"
    return ""


def head_implausible(kind: OutputKind, reference: Sequence[Mapping[str, np.ndarray]]) -> str:
    """Why a split detection head's reading (app.core.measure.heads) is implausible on the reference ("" if not)."""
    from app.core.measure.heads import decoded

    try:
        scores = kind.group[:len(kind.strides) or 1]
        why = _not_probabilities(np.concatenate([np.asarray(s[n], np.float64).ravel() for s in reference
                                                 for n in scores]))
        if why:
            return why
        plain, rows = decoded(kind, reference)
        return _boxes_implausible(rows, plain, scores_checked=True)
    except (IndexError, KeyError, ValueError) as exc:
        return f"it does not read as {kind.text()} ({exc})"


def prove_kinds(kinds: Mapping[str, OutputKind], reference: Sequence[Mapping[str, np.ndarray]]
                ) -> dict[str, OutputKind]:
    """Every inferred task reading checked on the reference's outputs (one mapping per sample); an implausible one
    becomes ``tensor``, its ``dropped`` naming the reading and its reason saying why (a split head's other outputs
    with it)."""
    out: dict[str, OutputKind] = dict(kinds)
    for name, kind in kinds.items():
        if kind.user or kind.kind not in TASK_KINDS or not reference:
            continue
        if kind.group:
            why = head_implausible(kind, reference)
        else:
            why = implausible(kind, [np.asarray(s[name]) for s in reference if name in s])
        if why:
            out[name] = replace(OutputKind("tensor"), dropped=kind.text(),
                                reason=f"read as {kind.text()} at first ({kind.reason}), dropped: {why}")
            for member in kind.group[1:]:
                out[member] = OutputKind("tensor", reason=f"its head's reading was dropped ({why})")
    return out
