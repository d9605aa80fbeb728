"""Detection heads split over several outputs, read as one detections answer.

Two families are decoded from the graph alone; the decoded rows are (x1, y1, x2, y2, score, class), down to half the
score threshold after class-wise NMS, and are judged as detections (``app.core.measure.answers``):

- ``gfl`` — per-level class scores and box regressions, as PicoDet, NanoDet and GFL export them (PaddleDetection's
  layout models): for each stride s of an H×W image input, a scores output N×A×C (A = ⌈H/s⌉·⌈W/s⌉ anchors, C class
  scores through a sigmoid or softmax) and a box output N×A×4(R+1): four distributions over R+1 bins (DFL). A box's
  distances to its anchor centre ((x + 0.5)·s, (y + 0.5)·s) are each distribution's expectation (softmax, then
  Σ p·bin) times s; with one value per side (4 columns) the value times s. At least two levels with the same C and
  the same box width are needed.
- ``pair`` — one boxes output N×A×4 (corners, as UltraFace and SSD exports decode them in the graph) and one scores
  output N×A×C over the same A, with A ≥ 1000 anchors (a dense head: SLANet's 501 structure-token steps with their
  cell boxes are no detector). When the scores come out of a softmax over C ≥ 2 columns, column 0 is the background
  (the SSD convention) and classes are columns 1…C−1.

- ``list`` — detections the model lists itself after its own NMS, in three outputs over the same K rows: boxes
  [N,]K×4 (corners), scores [N,]K and integer labels [N,]K (torchvision's Faster R-CNN, RetinaNet and SSD exports,
  RT-DETR's deploy export). Kept as listed (no NMS of trtlab's).

The first scores output leads: it carries the task metrics and the answers; the other outputs of the head are part
of it (their kind is ``tensor``, their ``part_of`` names the lead) and are not judged on their own. Families that
cannot be decoded from the graph alone (anchor-based heads with learned priors, heat-map face detectors such as
CenterFace, key-point heads) are left to the per-output rules, and the plausibility gate
(``app.core.measure.plausible``) drops any reading whose answer is implausible on the reference.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import onnx

from app.core.measure import kinds as per_output
from app.core.measure.answers import SCORE_THRESHOLD, decode_boxes, nms
from app.core.measure.kinds import OutputKind

STRIDES = (4, 8, 16, 32, 64, 128)
PAIR_MIN_ANCHORS = 1000  # dense heads: UltraFace has 4,420 anchors at 320×240, SSD300 8,732
_SCORE_OPS = {"Sigmoid", "Softmax"}
_FLOATS = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE}
_PASS = {"Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Cast", "Flatten", "Concat"}


def _score_op(name: str, prod: Mapping[str, onnx.NodeProto]) -> str:
    """The Sigmoid/Softmax that makes an output, past reshapes ("" when none does)."""
    node = prod.get(name)
    for _ in range(8):
        if node is None:
            return ""
        if node.op_type in _SCORE_OPS:
            return node.op_type
        if node.op_type not in _PASS or not node.input:
            return ""
        node = prod.get(node.input[0])
    return ""


def _stride(anchors: int, height: int, width: int) -> int | None:
    return next((s for s in STRIDES if math.ceil(height / s) * math.ceil(width / s) == anchors), None)


def split_heads(outputs: Mapping[str, Sequence[int | None]], image: tuple[int, int] | None,
                prod: Mapping[str, onnx.NodeProto]) -> dict[str, OutputKind]:
    """The outputs of a split detection head (``gfl`` or ``pair``) as their kinds: the lead's ``detections`` kind
    with the whole group, the others ``tensor`` with ``part_of``; {} when the outputs hold no such head."""
    rows: dict[str, tuple[int, int]] = {}  # output -> (anchors, values per anchor)
    for n, d in outputs.items():
        if len(d) == 3 and isinstance(d[1], int) and isinstance(d[2], int) and d[1] > 0 and d[2] > 0:
            rows[n] = (d[1], d[2])
    by_anchors: dict[int, list[str]] = {}
    for n, d in rows.items():
        by_anchors.setdefault(d[0], []).append(n)
    levels: list[tuple[int, str, str]] = []  # (anchors, scores, boxes)
    for anchors, names in by_anchors.items():
        scores = [n for n in names if _score_op(n, prod)]
        boxes = [n for n in names if n not in scores and rows[n][1] % 4 == 0]
        if len(scores) == 1 and len(boxes) == 1:
            levels.append((anchors, scores[0], boxes[0]))
    if not levels:
        return {}
    if image is not None and len(levels) >= 2:
        strided = sorted((s, sc, bx) for a, sc, bx in levels if (s := _stride(a, *image)) is not None)
        widths = {(rows[sc][1], rows[bx][1]) for _, sc, bx in strided}
        if len(strided) >= 2 and len(widths) == 1:
            bins = next(iter(widths))[1] // 4
            group = tuple(sc for _, sc, _ in strided) + tuple(bx for _, _, bx in strided)
            classes = next(iter(widths))[0]
            box_words = f"box distributions over {bins} bins" if bins > 1 else "box distances"
            lead = OutputKind("detections", layout="gfl", group=group, size=image,
                              strides=tuple(s for s, _, _ in strided),
                              reason=f"a split detection head (PicoDet/GFL): {len(strided)} levels of {classes} class "
                                     f"scores and {box_words}, strides {', '.join(str(s) for s, _, _ in strided)}")
            return _with_members(lead)
    if len(levels) == 1 and rows[levels[0][2]][1] == 4 and levels[0][0] >= PAIR_MIN_ANCHORS:
        _, sc, bx = levels[0]
        background = _score_op(sc, prod) == "Softmax" and rows[sc][1] >= 2
        lead = OutputKind("detections", layout="pair", group=(sc, bx), background=background,
                          reason=f"class scores with a boxes output ({bx}, corners)"
                                 + ("; column 0 of the softmax is the background" if background else ""))
        return _with_members(lead)
    return {}


def infer_output_kinds(model: onnx.ModelProto, output_dims: Mapping[str, Sequence[int | None]] | None = None,
                       input_dims: Mapping[str, Sequence[int | None]] | None = None,
                       user: Mapping[str, OutputKind] | None = None) -> dict[str, OutputKind]:
    """Every graph output's kind (``app.core.measure.kinds.infer_output_kinds``), with the outputs of a split
    detection head read together (the user's kinds are never regrouped)."""
    graph = model.graph
    prod = per_output.producers(graph)  # once for both: on a 50,000-node graph it takes 50 ms
    out = per_output.infer_output_kinds(model, output_dims, input_dims, user, prod=prod)
    free = {o.name: list((output_dims or {}).get(o.name)
                         or [x.dim_value or None for x in o.type.tensor_type.shape.dim])
            for o in graph.output if o.name not in (user or {})}
    image = per_output.image_input(per_output.declared_inputs(graph, input_dims))
    out.update(split_heads(free, image, prod))
    floats = {o.name for o in graph.output if o.type.tensor_type.elem_type in _FLOATS}
    if not any(k.group or k.part_of for k in out.values()):
        out.update(listed_detections(free, floats))
    return out


def listed_detections(outputs: Mapping[str, Sequence[int | None]], floats: set[str]) -> dict[str, OutputKind]:
    """Detections the model lists itself, after its own NMS, in three outputs over the same K: boxes [N,]K×4,
    scores [N,]K and integer labels [N,]K (torchvision's Faster R-CNN, RetinaNet and SSD exports; RT-DETR's deploy
    export) → ``detections:list``; {} when the outputs hold no such triple."""
    def known(d: Sequence[int | None]) -> tuple[int, ...] | None:
        dims = tuple(v for v in d if isinstance(v, int) and v > 0)
        return dims if len(dims) == len(d) else None

    shapes = {n: k for n, d in outputs.items() if (k := known(d)) is not None}
    for boxes, dims in shapes.items():
        if boxes not in floats or len(dims) not in (2, 3) or dims[-1] != 4:
            continue
        rows = dims[:-1]
        scores = [n for n, d in shapes.items() if n != boxes and d == rows and n in floats]
        labels = [n for n, d in shapes.items() if n != boxes and d == rows and n not in floats]
        if len(scores) == 1 and len(labels) == 1:
            lead = OutputKind("detections", layout="list", group=(scores[0], boxes, labels[0]),
                              reason=f"a list of detections in three outputs: boxes ({boxes}), scores "
                                     f"({scores[0]}) and labels ({labels[0]}) over {rows[-1]} rows")
            return _with_members(lead)
    return {}


def _with_members(lead: OutputKind) -> dict[str, OutputKind]:
    name = lead.group[0]
    out = {name: lead}
    for member in lead.group[1:]:
        out[member] = OutputKind("tensor", part_of=name, reason=f"part of the detection head read on {name}")
    return out


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _rows(boxes: np.ndarray, scores: np.ndarray, floor: float) -> np.ndarray:
    score, cls = scores.max(axis=1), scores.argmax(axis=1)
    found = np.column_stack([boxes, score, cls])
    return found[np.isfinite(score) & (score >= floor)]


def decode_group(kind: OutputKind, sample: Mapping[str, np.ndarray], floor: float = SCORE_THRESHOLD / 2
                 ) -> np.ndarray:
    """One sample's head decoded to rows [items, K, 6] (x1, y1, x2, y2, score, class) after class-wise NMS, padded
    with rows of score −1 to a common K."""
    arrays = [np.asarray(sample[n], dtype=np.float64) for n in kind.group]
    if kind.layout == "list" and arrays[0].ndim == 1:  # torchvision: one image, no batch axis
        arrays = [a[None] for a in arrays]
    items = arrays[0].shape[0]
    out = []
    for i in range(items):
        if kind.layout == "gfl":
            levels = len(kind.strides)
            found = []
            for s, scores, dist in zip(kind.strides, arrays[:levels], arrays[levels:], strict=True):
                h, w = math.ceil(kind.size[0] / s), math.ceil(kind.size[1] / s)
                yy, xx = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
                cx, cy = (xx.ravel() + 0.5) * s, (yy.ravel() + 0.5) * s
                reg = dist[i].reshape(len(cx), 4, -1)
                d = (_softmax(reg, 2) * np.arange(reg.shape[2])).sum(axis=2) if reg.shape[2] > 1 else reg[..., 0]
                d = d * s
                box = np.column_stack([cx - d[:, 0], cy - d[:, 1], cx + d[:, 2], cy + d[:, 3]])
                found.append(_rows(box, scores[i], floor))
            rows = np.concatenate(found) if found else np.zeros((0, 6))
        elif kind.layout == "list":  # the model's own list, its NMS done: kept as it is
            scores, boxes, labels = (a[i] for a in arrays)
            keep = np.isfinite(scores) & (scores >= floor)
            rows = np.column_stack([boxes[keep, :4], scores[keep], np.rint(labels[keep])])
            out.append(rows[np.argsort(-rows[:, 4], kind="stable")])
            continue
        else:
            scores, boxes = arrays[0][i], arrays[1][i]
            if kind.background:
                scores = scores[:, 1:]
            rows = _rows(boxes[:, :4], scores, floor)
        out.append(nms(rows) if len(rows) else np.zeros((0, 6)))
    k = max([len(r) for r in out] + [1])
    padded = np.full((items, k, 6), -1.0)
    for i, r in enumerate(out):
        padded[i, :len(r)] = r
    return padded


def detection_rows(kind: OutputKind, sample: Mapping[str, np.ndarray], name: str, floor: float = SCORE_THRESHOLD
                   ) -> list[np.ndarray]:
    """One sample's boxes per batch item as rows (x1, y1, x2, y2, score, class) in the input's pixels, score ≥ floor,
    best first, decoded as its kind reads them: raw YOLO heads and split heads through trtlab's class-wise NMS, lists
    the model made itself as they are. ``name``: the output read (a split head's lead)."""
    if kind.group:
        return [rows[rows[:, 4] >= floor] for rows in decode_group(kind, sample, floor)]
    return decode_boxes(sample[name], kind, floor)


def decoded(kind: OutputKind, samples: Sequence[Mapping[str, np.ndarray]]) -> tuple[OutputKind, list[np.ndarray]]:
    """A group's samples decoded, and the plain detections kind (xyxy, score 4, class 5) that reads them."""
    plain = replace(kind, box="xyxy", score_col=4, class_col=5)
    return plain, [decode_group(kind, s) for s in samples]
