"""Judging answers, not tensors: what a candidate's outputs *mean* compared with the reference's, per output kind.

- detections / yolo: boxes with a score ≥ ``score_threshold`` (0.25) are matched to the reference's by class and
  IoU ≥ 0.5 (greedy, best IoU first). A box just under the threshold on one side still counts as found (the
  other side's boxes are matched down to half the threshold), so a score of 0.251 against 0.249 is no change.
  Two boxes of (almost) no width or height match when their corners agree within 1 % of their length (their IoU
  would be 0/0). ``matched``, ``missed`` (reference boxes not found), ``extra`` (candidate boxes not in the reference),
  ``mean_iou`` of the matches and the largest score change. Order never matters: a list that only reorders passes.
  Raw YOLO heads are decoded first (cx, cy, w, h → corners; score = class score, × objectness for v5; class-wise
  NMS at IoU 0.45, at most 300 boxes); a box that one side's NMS keeps and the other's suppresses, because its
  overlap with a matched box is within 0.1 of 0.45, counts as ``nms_boundary``, not as missed or extra.
- classes: ``top1`` (share of rows whose best label agrees) and ``top5`` (reference's best in the candidate's 5).
- image: ``mask_iou`` of masks thresholded at 0.5 (probability-like outputs: the reference stays within [0, 1]),
  worst over samples and channels, the union floored at 1 % of the picture (so a speck of a few pixels that
  flickers is no changed answer); ``psnr_db`` over the reference's value range, worst sample.
- sequence: arg-max per step; ``token_agreement`` (share of steps that agree) and ``edit_distance`` (largest
  Levenshtein distance between the decoded sequences; with CTC, repeats collapsed and blank 0 dropped).
- audio: ``audio_snr_db`` (the error's energy against the reference's) and ``lsd_db`` (log-spectral distance),
  worst signal (``app.core.measure.audio``).

Each judge also returns, per sample, the decoded answers that the pictures are drawn from (`answers`).

Nothing to judge is said: a sample whose reference answer is empty (no box scores above the threshold, a probability
mask with no pixel above 0.5, a text that decodes to nothing) is counted (``empty_samples`` of ``samples``). When
every sample is empty the answer cannot tell a good candidate from a bad one: the task is marked
``empty_reference`` with the reason in ``empty_reason``, its metrics decide nothing, and the output is judged
element-wise instead (``app.core.measure.compare``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TypedDict

import numpy as np

from app.core.measure.audio import DEFAULT_TOLERANCES as AUDIO_TOLERANCES
from app.core.measure.audio import judge_audio
from app.core.measure.audio import words as audio_words
from app.core.measure.kinds import OutputKind
from app.core.results import OutputResult, SampleFacts, Task

SCORE_THRESHOLD = 0.25
MATCH_IOU = 0.5
NMS_IOU = 0.45
NMS_MARGIN = 0.1
MAX_BOXES = 300
NMS_CANDIDATES = 3000
_NMS_MATRIX = 400  # up to this many boxes of a class, NMS computes their IoU matrix at once (faster below)
PSNR_CAP_DB = 999.0
PROB_EPS = 1e-3
MASK_UNION_FLOOR = 0.01
# What decides an output's pass/fail when the user gives no tolerance on its kind's metrics.
DEFAULT_TASK_TOLERANCES = {"detections": ("det_missed:0", "det_extra:0"), "yolo": ("det_missed:0", "det_extra:0"),
                           "classes": ("top1:0.99",), "image": ("mask_iou:0.9",), "sequence": ("edit_distance:0",),
                           "audio": AUDIO_TOLERANCES}
IMAGE_NOT_PROBABILITY = ("psnr_db:30",)
# The task metrics each kind has (the keys of OutputMetrics.task).
KIND_METRICS = {"detections": ("det_missed", "det_extra", "det_iou"), "yolo": ("det_missed", "det_extra", "det_iou"),
                "classes": ("top1", "top5"), "image": ("mask_iou", "psnr_db"),
                "sequence": ("token_agreement", "edit_distance"), "audio": ("audio_snr_db", "lsd_db")}


EMPTY_ADVICE = "give inputs that hold what this model finds (--inputs DIR, or a folder of images in the Run panel)"


def mark_empty(task: dict[str, object], empty: int, samples: int, why: str) -> None:
    """Record how many samples' reference answers were empty; all of them makes the task an empty reference
    (``why``: what was empty, e.g. "no box scores above 0.25")."""
    task["empty_samples"] = empty
    task["samples"] = samples
    if samples and empty == samples:
        task["empty_reference"] = True
        task["empty_reason"] = f"{why} on any of the {samples} samples" if samples > 1 else f"{why} on the sample"


def empty_reference(output: OutputResult | None) -> bool:
    """Whether an output's task had nothing to judge: the reference's answer was empty on every sample."""
    return output is not None and output.empty_reference


@dataclass
class TaskResult:
    """One output's task metrics (JSON keys of CLI.md's ``task``), values for tolerances, and decoded answers."""

    task: dict[str, object]
    values: dict[str, float | None]
    answers: list[dict[str, object]] = field(default_factory=list)  # per sample: {"ref": …, "cand": …}
    defaults: tuple[str, ...] = ()


class BoxMatch(TypedDict):
    """One image's boxes matched (``match_boxes``): counts, the matches' IoUs and score changes, the shown boxes."""

    matched: int
    missed: int
    extra: int
    ious: list[float]
    dscore: list[float]
    boundary: int
    ref: list[dict[str, object]]
    cand: list[dict[str, object]]


# --------------------------------------------------------------------------------------------- boxes
def _corners(b: np.ndarray, fmt: str) -> np.ndarray:
    if fmt == "cxcywh":
        cx, cy, w, h = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
        return np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
    return b[:, :4].astype(np.float64)


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of every box in a (M×4 corners) with every box in b (K×4)."""
    if len(a) == 0 or len(b) == 0:
        return np.zeros((len(a), len(b)))
    x1 = np.maximum(a[:, None, 0], b[None, :, 0])
    y1 = np.maximum(a[:, None, 1], b[None, :, 1])
    x2 = np.minimum(a[:, None, 2], b[None, :, 2])
    y2 = np.minimum(a[:, None, 3], b[None, :, 3])
    inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    area = lambda z: np.clip(z[:, 2] - z[:, 0], 0, None) * np.clip(z[:, 3] - z[:, 1], 0, None)
    union = area(a)[:, None] + area(b)[None, :] - inter
    iou = np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)
    # Two boxes of (almost) no width or height — a detector's box clipped at the border, a line — have an IoU that
    # rounding alone sends to 0: they are the same box when their corners agree to within 1 % of their length.
    def thin(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        sides = np.abs(z[:, 2:4] - z[:, 0:2])
        return sides.min(axis=1) <= 0.01 * sides.max(axis=1), sides.max(axis=1)

    thin_a, long_a = thin(a)
    thin_b, _ = thin(b)
    if thin_a.any() and thin_b.any():
        near = np.abs(a[:, None, :4] - b[None, :, :4]).max(axis=2) <= 0.01 * np.maximum(long_a, 1e-9)[:, None]
        iou = np.where(thin_a[:, None] & thin_b[None, :] & near, np.maximum(iou, 1.0), iou)
    return iou


def nms(boxes: np.ndarray, iou: float = NMS_IOU, limit: int = MAX_BOXES) -> np.ndarray:
    """Class-wise greedy NMS over rows (x1, y1, x2, y2, score, class); the kept rows by descending score: each box,
    best first, suppresses the lower-scored boxes of its class that it overlaps by ``iou`` or more.

    Up to ``_NMS_MATRIX`` boxes, their IoU matrix is computed at once (pairs of different classes set apart), then one
    greedy pass over its rows; beyond, class by class, one row at a time (memory stays small). Both keep the same."""
    order = np.argsort(-boxes[:, 4], kind="stable")[:NMS_CANDIDATES]
    boxes = boxes[order]
    if len(boxes) <= _NMS_MATRIX:
        keep = _greedy_matrix(boxes, iou)
    else:
        keep = [k for cls in np.unique(boxes[:, 5]) for k in _greedy_rows(boxes, np.flatnonzero(boxes[:, 5] == cls),
                                                                          iou)]
    kept = boxes[sorted(keep, key=lambda k: (-boxes[k, 4], k))]  # ties: in the order the scores sorted them
    return kept[:limit]


def _greedy_matrix(boxes: np.ndarray, iou: float) -> list[int]:
    """Boxes sorted by score: their IoU matrix at once, then the greedy pass over its rows."""
    matrix = iou_matrix(boxes[:, :4], boxes[:, :4])
    overlaps = ~(matrix < iou) & (boxes[:, None, 5] == boxes[None, :, 5])  # NaN boxes are suppressed, as below
    suppressed = np.zeros(len(boxes), bool)
    keep = []
    for i in range(len(boxes)):
        if not suppressed[i]:
            keep.append(i)
            suppressed[i + 1:] |= overlaps[i, i + 1:]
    return keep


def _greedy_rows(boxes: np.ndarray, idx: np.ndarray, iou: float) -> list[int]:
    """Many boxes: the best left against the rest, one row at a time (memory stays small)."""
    keep = []
    while idx.size:
        keep.append(int(idx[0]))
        if idx.size == 1:
            break
        overlap = iou_matrix(boxes[idx[:1], :4], boxes[idx[1:], :4])[0]
        idx = idx[1:][overlap < iou]
    return keep


def decode_boxes(sample: np.ndarray, kind: OutputKind, floor: float) -> list[np.ndarray]:
    """Per batch item, rows (x1, y1, x2, y2, score, class) with score ≥ floor, highest score first."""
    arr = np.asarray(sample, dtype=np.float64)
    if arr.ndim == 2:
        arr = arr[None]
    out = []
    for item in arr:
        if kind.kind == "yolo":
            rows = item.T if kind.layout == "v8" else item
            box = _corners(rows[:, :4], "cxcywh")
            if kind.layout == "v5":
                obj = rows[:, 4]
                cls_scores = rows[:, 5:] if rows.shape[1] > 5 else np.ones((len(rows), 1))
                score, cls = obj * cls_scores.max(axis=1), cls_scores.argmax(axis=1)
            else:
                score, cls = rows[:, 4:].max(axis=1), rows[:, 4:].argmax(axis=1)
            found = np.column_stack([box, score, cls])
            found = nms(found[np.isfinite(score) & (score >= floor)])
        else:
            score = item[:, kind.score_col]
            cls = item[:, kind.class_col] if kind.class_col is not None and kind.class_col < item.shape[1] \
                else np.zeros(len(item))
            found = np.column_stack([_corners(item[:, :4], kind.box), score, np.rint(cls)])
            found = found[np.isfinite(score) & (score >= floor)]
            found = found[np.argsort(-found[:, 4], kind="stable")]
        out.append(found)
    return out


def _near_kept(boxes: np.ndarray, i: int, kept: set[int]) -> bool:
    """Whether box i overlaps a matched box of its class almost as much as NMS suppresses."""
    others = [k for k in kept if k != i and boxes[k, 5] == boxes[i, 5]]
    return bool(others) and float(iou_matrix(boxes[i:i + 1, :4], boxes[others, :4]).max()) >= NMS_IOU - NMS_MARGIN


def match_boxes(ref: np.ndarray, cand: np.ndarray, threshold: float, nms_done: bool = False) -> BoxMatch:
    """Match one image's boxes (both decoded down to half the threshold): counts, IoUs and each box's status.

    ``nms_done``: trtlab ran the NMS (raw YOLO heads); a box kept on one side and suppressed on the other because
    its overlap with a matched box sits at NMS's threshold (within ``NMS_MARGIN``) is an NMS-boundary box, not a
    missed or extra detection (the same hysteresis as for scores)."""
    iou = iou_matrix(ref[:, :4], cand[:, :4])
    iou[ref[:, None, 5] != cand[None, :, 5]] = 0.0
    pairs = sorted(((iou[i, j], i, j) for i, j in zip(*np.nonzero(iou >= MATCH_IOU), strict=True)), reverse=True)
    r_of: dict[int, int] = {}
    c_of: dict[int, int] = {}
    for _, i, j in pairs:
        if i not in r_of and j not in c_of:
            r_of[int(i)], c_of[int(j)] = int(j), int(i)
    shown_r = [i for i in range(len(ref)) if ref[i, 4] >= threshold or i in r_of and cand[r_of[i], 4] >= threshold]
    shown_c = [j for j in range(len(cand)) if cand[j, 4] >= threshold or j in c_of and ref[c_of[j], 4] >= threshold]
    missed = [i for i in range(len(ref)) if ref[i, 4] >= threshold and i not in r_of]
    extra = [j for j in range(len(cand)) if cand[j, 4] >= threshold and j not in c_of]
    boundary = 0
    if nms_done:
        flicker_r = {i for i in missed if _near_kept(ref, i, set(r_of))}
        flicker_c = {j for j in extra if _near_kept(cand, j, set(c_of))}
        boundary = len(flicker_r) + len(flicker_c)
        missed = [i for i in missed if i not in flicker_r]
        extra = [j for j in extra if j not in flicker_c]
    matched = [i for i in shown_r if i in r_of]
    ious = [float(iou[i, r_of[i]]) for i in matched]
    dscore = [abs(float(ref[i, 4] - cand[r_of[i], 4])) for i in matched]
    status_r = ["missed" if i in missed else "matched" if i in r_of else "boundary" for i in shown_r]
    status_c = ["extra" if j in extra else "matched" if j in c_of else "boundary" for j in shown_c]
    return {"matched": len(matched), "missed": len(missed), "extra": len(extra), "ious": ious, "dscore": dscore,
            "boundary": boundary,
            "ref": [_box_json(ref[i], s) for i, s in zip(shown_r, status_r, strict=True)],
            "cand": [_box_json(cand[j], s) for j, s in zip(shown_c, status_c, strict=True)]}


def _box_json(row: np.ndarray, status: str) -> dict[str, object]:
    return {"box": [round(float(v), 2) for v in row[:4]], "score": round(float(row[4]), 4), "class": int(row[5]),
            "status": status}


def judge_detections(ref: list[np.ndarray], cand: list[np.ndarray], kind: OutputKind,
                     threshold: float = SCORE_THRESHOLD) -> TaskResult:
    matched = missed = extra = boundary = empty = 0
    ious: list[float] = []
    dscore: list[float] = []
    answers: list[dict[str, object]] = []
    for r, c in zip(ref, cand, strict=True):
        # One answer per sample (its first image's boxes, drawn on the photo), its counts over all its images.
        counts = {"matched": 0, "missed": 0, "extra": 0}
        ref_boxes = decode_boxes(r, kind, threshold / 2)
        empty += not any(bool((rb[:, 4] >= threshold).any()) for rb in ref_boxes)
        for i, (rb, cb) in enumerate(zip(ref_boxes, decode_boxes(c, kind, threshold / 2), strict=True)):
            m = match_boxes(rb, cb, threshold, nms_done=kind.kind == "yolo" or bool(kind.group))
            matched, missed, extra = matched + m["matched"], missed + m["missed"], extra + m["extra"]
            counts["matched"] += m["matched"]
            counts["missed"] += m["missed"]
            counts["extra"] += m["extra"]
            boundary += m["boundary"]
            ious += m["ious"]
            dscore += m["dscore"]
            if i == 0:
                answers.append({"ref": m["ref"], "cand": m["cand"]})
        answers[-1].update(counts, ref_empty=not any(bool((rb[:, 4] >= threshold).any()) for rb in ref_boxes))
    mean_iou = float(np.mean(ious)) if ious else None
    task: dict[str, object] = {
        "matched": matched, "missed": missed, "extra": extra, "mean_iou": mean_iou, "score_threshold": threshold,
        "max_score_change": max(dscore) if dscore else None, "nms_boundary": boundary}
    mark_empty(task, empty, len(ref), f"no box scores above {threshold:g}")
    values = {"det_missed": float(missed), "det_extra": float(extra), "det_iou": mean_iou if ious else 1.0}
    return TaskResult(task, values, answers, DEFAULT_TASK_TOLERANCES[kind.kind])


# --------------------------------------------------------------------------------------------- classes
def _rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x.reshape(-1, x.shape[-1]) if x.ndim >= 2 else x.reshape(1, -1)


def judge_classes(ref: list[np.ndarray], cand: list[np.ndarray], top: int = 5) -> TaskResult:
    r, c = np.concatenate([_rows(x) for x in ref]), np.concatenate([_rows(x) for x in cand])
    best = r.argmax(axis=1)
    top1 = float(np.mean(best == c.argmax(axis=1)))
    k = min(top, r.shape[1])
    top5 = float(np.mean((np.argsort(-c, axis=1)[:, :k] == best[:, None]).any(axis=1))) if r.shape[1] > 5 else None
    answers = []
    for rs, cs in zip(ref, cand, strict=True):
        rr, cc = _rows(rs)[0], _rows(cs)[0]
        answers.append({"ref": _topk(rr, k), "cand": _topk(cc, k), "top1": bool(rr.argmax() == cc.argmax())})
    return TaskResult({"top1": top1, "top5": top5}, {"top1": top1, "top5": top5}, answers,
                      DEFAULT_TASK_TOLERANCES["classes"])


def _topk(row: np.ndarray, k: int) -> list[list[float]]:
    idx = np.argsort(-row, kind="stable")[:k]
    return [[int(i), round(float(row[i]), 5)] for i in idx]


# --------------------------------------------------------------------------------------------- images
def planes(x: np.ndarray, kind: OutputKind) -> np.ndarray:
    """An image output as (items, H, W) planes: every batch item's every channel."""
    a = np.asarray(x)
    if kind.layout == "nhwc" and a.ndim == 4:
        a = np.moveaxis(a, -1, 1)
    if a.ndim == 2:
        a = a[None]
    return a.reshape(-1, a.shape[-2], a.shape[-1])


def probability_like(ref: list[np.ndarray]) -> bool:
    lo = min(float(np.nanmin(r)) for r in ref)
    hi = max(float(np.nanmax(r)) for r in ref)
    return lo >= -PROB_EPS and hi <= 1 + PROB_EPS


def mask_iou(r: np.ndarray, c: np.ndarray) -> float:
    """IoU of the masks at 0.5, its union floored at 1 % of the picture: a mask of a few pixels that loses two of them
    has not changed its answer (for masks over 1 % of the picture this is the plain IoU)."""
    a, b = r > 0.5, c > 0.5
    union = max(int(np.count_nonzero(a | b)), MASK_UNION_FLOOR * a.size)
    return 1.0 - int(np.count_nonzero(a ^ b)) / union


def psnr_db(r: np.ndarray, c: np.ndarray) -> float:
    r64, c64 = r.astype(np.float64), c.astype(np.float64)
    ok = np.isfinite(r64) & np.isfinite(c64)
    if not ok.any():
        return -PSNR_CAP_DB
    peak = float(r64[ok].max() - r64[ok].min()) or 1.0
    mse = float(np.mean((r64[ok] - c64[ok]) ** 2))
    return PSNR_CAP_DB if mse == 0 else min(PSNR_CAP_DB, 10 * math.log10(peak * peak / mse))


def judge_image(ref: list[np.ndarray], cand: list[np.ndarray], kind: OutputKind) -> TaskResult:
    prob = probability_like(ref)
    ious, psnrs = [], []
    answers: list[dict[str, object]] = []
    empty = 0
    for r, c in zip(ref, cand, strict=True):
        rp, cp = planes(r, kind), planes(c, kind)
        empty += prob and not bool((rp > 0.5).any())
        s_iou = [mask_iou(a, b) for a, b in zip(rp, cp, strict=True)] if prob else []
        s_psnr = [psnr_db(a, b) for a, b in zip(rp, cp, strict=True)]
        ious += s_iou
        psnrs += s_psnr
        answers.append({"mask_iou": min(s_iou) if s_iou else None, "psnr_db": min(s_psnr),
                        "ref_empty": prob and not bool((rp > 0.5).any())})
    worst_iou = min(ious) if ious else None
    worst_psnr = min(psnrs) if psnrs else None
    task: dict[str, object] = {"mask_iou": worst_iou, "psnr_db": worst_psnr, "probability": prob}
    if prob:
        mark_empty(task, empty, len(ref), "an empty mask (no pixel above 0.5)")
    defaults = DEFAULT_TASK_TOLERANCES["image"] if prob else IMAGE_NOT_PROBABILITY
    return TaskResult(task, {"mask_iou": worst_iou, "psnr_db": worst_psnr}, answers, defaults)


# --------------------------------------------------------------------------------------------- sequences
def tokens(x: np.ndarray, kind: OutputKind) -> np.ndarray:
    """Arg-max per step as (items, steps)."""
    a = np.asarray(x)
    if kind.layout == "tnv" and a.ndim == 3:
        a = np.swapaxes(a, 0, 1)
    if a.ndim == 2:
        a = a[None]
    return a.reshape(-1, a.shape[-2], a.shape[-1]).argmax(axis=-1)


def collapse(seq: np.ndarray, ctc: bool) -> list[int]:
    """CTC reading: repeats merged, blank 0 dropped (or the arg-max sequence as it is)."""
    if not ctc:
        return [int(t) for t in seq]
    out, prev = [], None
    for t in seq:
        t = int(t)
        if t != prev and t != 0:
            out.append(t)
        prev = t
    return out


def edit_distance(a: list[int], b: list[int]) -> int:
    """Levenshtein distance between two token lists."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y))
        prev = cur
    return prev[-1]


def judge_sequence(ref: list[np.ndarray], cand: list[np.ndarray], kind: OutputKind) -> TaskResult:
    agree = total = worst = empty = 0
    answers = []
    for r, c in zip(ref, cand, strict=True):
        rt, ct = tokens(r, kind), tokens(c, kind)
        empty += all(not collapse(a, kind.ctc) for a in rt)
        agree += int(np.count_nonzero(rt == ct))
        total += rt.size
        here = 0
        for a, b in zip(rt, ct, strict=True):
            here = max(here, edit_distance(collapse(a, kind.ctc), collapse(b, kind.ctc)))
        worst = max(worst, here)
        answers.append({"ref": collapse(rt[0], kind.ctc), "cand": collapse(ct[0], kind.ctc), "edit_distance": here,
                        "ref_empty": all(not collapse(a, kind.ctc) for a in rt)})
    ratio = agree / total if total else None
    task: dict[str, object] = {"token_agreement": ratio, "edit_distance": worst, "ctc": kind.ctc}
    mark_empty(task, empty, len(ref), "a text that decodes to nothing (every step blank)")
    return TaskResult(task, {"token_agreement": ratio, "edit_distance": float(worst)}, answers,
                      DEFAULT_TASK_TOLERANCES["sequence"])


def judge(kind: OutputKind, ref: list[np.ndarray], cand: list[np.ndarray]) -> TaskResult | None:
    """The task metrics of one output of a task kind over every sample; None for embedding/tensor outputs or when
    the shapes do not fit the kind (the element-wise metrics are then all there is)."""
    try:
        if kind.kind in ("detections", "yolo"):
            return judge_detections(ref, cand, kind)
        if kind.kind == "classes":
            return judge_classes(ref, cand)
        if kind.kind == "image":
            return judge_image(ref, cand, kind)
        if kind.kind == "sequence":
            return judge_sequence(ref, cand, kind)
        if kind.kind == "audio":
            return TaskResult(*judge_audio(ref, cand, kind.rate), defaults=AUDIO_TOLERANCES)
    except (IndexError, ValueError) as exc:
        return TaskResult({"error": f"this output does not read as {kind.text()}: {exc}"}, {}, [])
    return None


def task_words(output: OutputResult | None) -> str:
    """An output's answer verdict in words, from its task metrics ("" for outputs judged element-wise)."""
    task = output.task if output is not None else None
    if output is None or task is None:
        return ""
    if task.empty_reference:
        return f"no answer to compare: {task.empty_reason or 'the reference answer is empty'}"
    words = _task_words(output.kind, task)
    if words and task.empty_samples:
        words += f"; {task.empty_samples} of {task.samples} sample(s) hold no answer to compare"
    return words


def _task_words(kind: str, task: Task) -> str:
    if task.failed_to_read:
        return task.error
    if kind in ("detections", "yolo"):
        missed, extra, matched = task.missed or 0, task.extra_boxes or 0, task.matched or 0
        if not missed and not extra:
            iou = task.mean_iou
            return f"same boxes: {matched} matched" + (f", IoU {iou:.3f}" if iou is not None else "")
        return f"{missed} box(es) missed, {extra} extra ({matched} matched)"
    if kind == "image":
        if task.mask_iou is not None:
            return f"masks overlap {task.mask_iou:.1%} (worst IoU)"
        return f"PSNR {task.psnr_db:.1f} dB (worst)" if task.psnr_db is not None else ""
    if kind == "classes":
        top1 = task.top1
        return "" if top1 is None else ("top-1 label unchanged" if top1 >= 1 else f"top-1 agrees on {top1:.0%}")
    if kind == "sequence":
        dist = task.edit_distance or 0
        agree = task.token_agreement
        return "same text" if not dist else f"text differs: edit distance {dist}" + (
            f" ({agree:.1%} of steps agree)" if agree is not None else "")
    if kind == "audio":
        return audio_words(task.audio_snr_db, task.lsd_db)
    return ""


def sample_words(kind: str, answer: SampleFacts | None) -> str:
    """One sample's answer verdict in words (its per-sample facts from a judge), "" when there are none."""
    a = answer
    if a is None:
        return ""
    if a.ref_empty:
        return "this sample: the reference found nothing to compare"
    if kind in ("detections", "yolo") and a.matched is not None:
        if not a.missed and not a.extra_boxes:
            return f"this sample: same boxes ({a.matched} matched)"
        return f"this sample: {a.missed or 0} missed, {a.extra_boxes or 0} extra ({a.matched} matched)"
    if kind == "image" and a.mask_iou is not None:
        return f"this sample: masks overlap {a.mask_iou:.1%}"
    if kind == "image" and a.psnr_db is not None:
        return f"this sample: PSNR {a.psnr_db:.1f} dB"
    if kind == "classes" and a.top1 is not None:
        return "this sample: same top-1 label" if a.top1 else "this sample: the top-1 label changed"
    if kind == "sequence" and a.edit_distance is not None:
        return "this sample: same text" if not a.edit_distance else \
            f"this sample: text differs (edit distance {a.edit_distance})"
    if kind == "audio" and a.audio_snr_db is not None:
        return "this sample: " + audio_words(a.audio_snr_db, a.lsd_db)
    return ""
