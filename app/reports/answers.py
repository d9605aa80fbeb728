"""The answers in words and pictures: what each output means (its kind), each candidate's verdict on it in plain
words ("same boxes: 12 matched", "mask IoU 0.99", "top-1 agrees"), the scorecard's phrase per kind ("boxes
unchanged", "masks overlap 99 %") and the Answers section: per output, a row per sample with the input photo, the
reference's picture and each candidate's (image outputs: with the |difference| map), from a compare result's
"answers" (pictures made by `app.core.measure.pictures`).

Pictures go into the page inline, as `<img src="data:…">`: only PNG and JPEG data URIs are taken, anything else in
the result is dropped, so the report never points at another file or the network. Audio outputs' sounds go in the
same way, as `<audio controls src="data:audio/wav;base64,…">` (`app.reports.sound`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from app.core.results import (
    AnswerPictures,
    CandidateResult,
    CompareResult,
    KindInfo,
    OutputAnswers,
    OutputResult,
    SampleFacts,
    Task,
    TextPair,
)
from app.reports.results import ReportItem
from app.reports.sound import LEGEND as SOUND_LEGEND
from app.reports.sound import answer_words as sound_words
from app.reports.sound import phrase as sound_phrase
from app.reports.sound import sample_note as sound_note
from app.reports.sound import sound
from app.reports.words import fmt, fmt_snr, target_words

MAX_SAMPLES = 6  # samples shown per output
PICTURE_PREFIXES = ("data:image/png;base64,", "data:image/jpeg;base64,")
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
TASK_KINDS = ("image", "classes", "detections", "yolo", "sequence", "audio")
KIND_WORDS = {"image": "an image (a mask or a map)", "classes": "class scores", "detections": "detected boxes",
              "yolo": "a raw YOLO detection head", "sequence": "a token sequence", "embedding": "an embedding",
              "tensor": "a plain tensor", "audio": "a waveform (sound)"}
# What each kind's pictures show, and the colours of the reference's and the candidate's parts (pictures.py's)
_LEGENDS = {
    "image": "Each picture is the output's first plane on the reference's scale (white 1, black 0 for a probability "
             "map); the |difference| map runs from dark (no difference) to bright (its largest value, written "
             "under it).",
    "detections": "The reference's boxes {ref} on the photo; on each candidate's picture its boxes {cand} over the "
                  "reference's, a box it missed {missed} and one it added {extra}.",
    "classes": "Each candidate's picture lists the reference's top labels: the reference's score {ref} over the "
               "candidate's {cand}.",
}
_LEGENDS["yolo"] = _LEGENDS["detections"]
_LEGENDS["audio"] = SOUND_LEGEND
# The colours app.core.measure.pictures draws with (REF_COLOUR, CAND_COLOUR, MISSED_COLOUR, EXTRA_COLOUR)
PICTURE_COLOURS = {"ref": ("green", "#2ecc71"), "cand": ("orange", "#ff9f1c"), "missed": ("red", "#e74c3c"),
                   "extra": ("magenta", "#c73dff")}


def picture(value: object) -> str | None:
    """A PNG or JPEG data URI as the page may show it, else None (other schemes, other types, damaged base64)."""
    if not isinstance(value, str):
        return None
    prefix = next((p for p in PICTURE_PREFIXES if value.startswith(p)), None)
    if prefix is None or len(value) == len(prefix) or not _BASE64.fullmatch(value, len(prefix)):
        return None
    return value


def _number(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or math.isnan(v):
        return None
    return float(v)


def _floor(v: float, digits: int) -> float:
    scale = 10 ** digits
    return math.floor(v * scale + 1e-9) / scale  # 0.29 * 100 is 28.999…: not 0.28


def fmt_share(v: float) -> str:
    """0.9941 -> "0.99", 0.4541 -> "0.45", 1.0 -> "1": two decimals, rounded down (never "1" short of 1)."""
    return "1" if v >= 1.0 else f"{_floor(v, 2):.2f}"


def fmt_pct(v: float) -> str:
    """A share as a percentage, rounded down as `fmt_share`: 0.994 -> "99 %", 0.6 -> "60 %", 0.004 -> "< 1 %"."""
    if 0 < v < 0.01:
        return "< 1 %"
    return f"{min(_floor(v, 2), 1.0) * 100:.0f} %"


def fmt_pct_off(agree: float) -> str:
    """The share that does not agree, as the complement of `fmt_pct(agree)`: 0.6 -> "40 %", 0.995 -> "1 %"."""
    return f"{100 - min(_floor(agree, 2), 1.0) * 100:.0f} %"


def _plural(n: int, one: str, many: str = "") -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def task_of(o: OutputResult) -> Task | None:
    """An output's task metrics when its answer was judged (a task kind, read without error, a reference answer that
    is not empty on every sample), else None."""
    task = o.task
    if task is None or task.failed_to_read or o.kind not in TASK_KINDS or task.empty_reference:
        return None
    return task


def verdict_words(kind: str, task: Task | None) -> tuple[str, str]:
    """One candidate's verdict on one output in words, and a detail line: ("same boxes: 12 matched", "mean IoU
    0.93"), ("2 missed, 1 extra", …), ("mask IoU 0.99", "PSNR 40.4 dB"), ("top-1 agrees", …),
    ("text differs: edit distance 3", …); ("", "") for outputs judged element by element."""
    if task is None:
        return "", ""
    if task.failed_to_read:
        return f"not read as {kind}", task.error
    if task.empty_reference:
        return "no answer to compare", f"{task.empty_reason}; judged element by element instead"
    head, detail = _answer_words(kind, task)
    empty, samples = int(_number(task.empty_samples) or 0), int(_number(task.samples) or 0)
    if head and empty:
        detail = " · ".join(p for p in (detail, f"{empty} of {samples} samples hold no answer") if p)
    return head, detail


def _answer_words(kind: str, task: Task) -> tuple[str, str]:
    if kind in ("detections", "yolo"):
        matched, missed, extra = (int(_number(v) or 0) for v in (task.matched, task.missed, task.extra_boxes))
        head = (f"same boxes: {matched} matched" if not missed and not extra else
                ", ".join(p for p in (f"{missed} missed" if missed else "", f"{extra} extra" if extra else "") if p)
                + f" ({matched} matched)")
        detail = []
        if (iou := _number(task.mean_iou)) is not None and matched:
            detail.append(f"mean IoU {fmt_share(iou)}")
        if (boundary := int(_number(task.nms_boundary) or 0)):
            detail.append(f"{_plural(boundary, 'box', 'boxes')} at the NMS boundary")
        return head, " · ".join(detail)
    if kind == "image":
        iou, psnr = _number(task.mask_iou), _number(task.psnr_db)
        if iou is not None:
            return f"mask IoU {fmt_share(iou)}", f"PSNR {fmt_snr(psnr)}" if psnr is not None else ""
        return (f"PSNR {fmt_snr(psnr)}", "") if psnr is not None else ("", "")
    if kind == "classes":
        top1, top5 = _number(task.top1), _number(task.top5)
        if top1 is None:
            return "", ""
        head = "top-1 agrees" if top1 >= 1.0 else f"top-1 agrees on {fmt_pct(top1)} of rows"
        return head, f"top-5 holds the reference's best on {fmt_pct(top5)}" if top5 is not None else ""
    if kind == "sequence":
        dist, agree = _number(task.edit_distance), _number(task.token_agreement)
        if dist is None:
            return "", ""
        head = "same text" if dist == 0 else f"text differs: edit distance {dist:.0f}"
        return head, f"{fmt_pct(agree)} of steps agree" if agree is not None else ""
    if kind == "audio":
        return sound_words(task)
    return "", ""


def scorecard_phrase(outputs: Sequence[OutputResult]) -> str | None:
    """The answers' verdict of one candidate by kind, for the scorecard ("boxes unchanged: 12 matched", "masks
    overlap 99 %", "labels unchanged", "text unchanged"), None when no output's answer was judged (tensor and
    embedding outputs: the scorecard keeps its cosine); outputs judged element by element add their cosine."""
    judged = [(o, t) for o in outputs if (t := task_of(o)) is not None]
    if not judged:
        return None
    phrases = []
    boxes = [t for o, t in judged if o.kind in ("detections", "yolo")]
    if boxes:
        matched = sum(int(_number(t.matched) or 0) for t in boxes)
        missed = sum(int(_number(t.missed) or 0) for t in boxes)
        extra = sum(int(_number(t.extra_boxes) or 0) for t in boxes)
        phrases.append(f"boxes unchanged: {matched} matched" if not missed and not extra else
                       "boxes changed: " + ", ".join(p for p in (f"{missed} missed" if missed else "",
                                                                  f"{extra} extra" if extra else "") if p))
    images = [t for o, t in judged if o.kind == "image"]
    masks = [v for t in images if (v := _number(t.mask_iou)) is not None]
    psnrs = [v for t in images if _number(t.mask_iou) is None and (v := _number(t.psnr_db)) is not None]
    if masks:
        phrases.append(f"masks overlap {fmt_pct(min(masks))}" + (f", the worst of {len(masks)} outputs"
                                                                 if len(masks) > 1 else ""))
    if psnrs:
        phrases.append(f"images at PSNR {fmt_snr(min(psnrs))}" + (f", the worst of {len(psnrs)} outputs"
                                                                   if len(psnrs) > 1 else ""))
    tops = [v for o, t in judged if o.kind == "classes" and (v := _number(t.top1)) is not None]
    if tops:
        worst = min(tops)
        phrases.append("labels unchanged" if worst >= 1.0 else f"labels differ on {fmt_pct_off(worst)} of rows")
    dists = [v for o, t in judged if o.kind == "sequence" and (v := _number(t.edit_distance)) is not None]
    if dists:
        phrases.append("text unchanged" if max(dists) == 0 else f"text differs: edit distance {max(dists):.0f}")
    if heard := sound_phrase([t for o, t in judged if o.kind == "audio"]):
        phrases.append(heard)
    if not phrases:
        return None
    rest = [o for o in outputs if task_of(o) is None]
    cosines = [c for o in rest if (c := _number(o.cosine)) is not None]
    if cosines:
        from app.reports.words import fmt_cos

        phrases.append(f"other outputs cosine {fmt_cos(min(cosines))}")
    return "; ".join(phrases)


def kind_line(o: OutputResult | None, given: KindInfo | None) -> dict[str, str] | None:
    """What an output means, for its table's heading: {"kind", "spec", "words", "reason"}; None for results made
    before outputs had kinds."""
    if given is None and (o is None or (o.kind, o.kind_spec) == ("tensor", "tensor")):
        return None  # every result with kinds says each output's: a plain tensor without one is from before kinds
    kind = (o.kind if o is not None else "") or (given.kind if given is not None else "")
    if not kind:
        return None
    spec = (o.kind_spec if o is not None else "") or (given.spec if given is not None else "") or kind
    reason = (given.reason or ("set by you" if given.user else "")) if given is not None else ""
    return {"kind": kind, "spec": spec if spec != kind else "", "words": KIND_WORDS.get(kind, kind),
            "reason": reason}


def _legend(kind: str) -> list[dict[str, str]]:
    """The kind's legend as text parts and colour swatches (the template draws a swatch for each colour part)."""
    text = _LEGENDS.get(kind, "")
    parts: list[dict[str, str]] = []
    for k, piece in enumerate(re.split(r"\{(\w+)\}", text) if text else ()):
        if k % 2 == 0:
            if piece:
                parts.append({"text": piece, "color": ""})
        else:
            name, color = PICTURE_COLOURS[piece]
            parts.append({"text": f"({name})", "color": color})
    return parts


def _list(value: object) -> list:
    return list(value) if isinstance(value, list | tuple) else []


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _tokens(text: str) -> list[str]:
    """Decoded text as its tokens: ids are written with spaces between them, labels one after another."""
    return text.split(" ") if " " in text else list(text)


def text_diff(ref: str, cand: str) -> list[dict[str, str]]:
    """The candidate's text as parts marked "same", "changed" (not in the reference there) or "gone" (the
    reference's tokens it lacks), each with the separator that follows it, so a page can highlight where the
    answers part."""
    from difflib import SequenceMatcher

    r, c = _tokens(ref), _tokens(cand)
    sep = " " if " " in ref or " " in cand else ""
    parts: list[dict[str, str]] = []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, r, c, autojunk=False).get_opcodes():
        if op in ("delete", "replace"):
            parts.append({"text": sep.join(r[i1:i2]), "how": "gone"})
        if op != "delete":
            parts.append({"text": sep.join(c[j1:j2]), "how": "same" if op == "equal" else "changed"})
    parts = [p for p in parts if p["text"]]
    for k, part in enumerate(parts):
        part["sep"] = sep if k < len(parts) - 1 else ""
    return parts


def _texts(text: TextPair | None) -> tuple[str | None, str | None]:
    """One sample's decoded text, the reference's and the candidate's (None where a side has none)."""
    if text is None:
        return None, None
    return _text(text.ref), _text(text.cand)


def _sample_note(kind: str, per_sample: SampleFacts | None, text: TextPair | None) -> str:
    """A candidate's verdict on one sample, where the result has it (masks: IoU; text: same or not)."""
    if per_sample is not None and per_sample.ref_empty:
        return "nothing to compare: the reference found nothing"
    if kind == "image" and per_sample is not None:
        iou, psnr = _number(per_sample.mask_iou), _number(per_sample.psnr_db)
        if iou is not None:
            return f"mask IoU {fmt_share(iou)}"
        return f"PSNR {fmt_snr(psnr)}" if psnr is not None else ""
    if kind in ("detections", "yolo") and per_sample is not None and _number(per_sample.matched) is not None:
        missed, extra = int(_number(per_sample.missed) or 0), int(_number(per_sample.extra_boxes) or 0)
        matched = int(_number(per_sample.matched) or 0)
        return f"same boxes ({matched} matched)" if not missed and not extra else \
            f"{missed} missed, {extra} extra ({matched} matched)"
    if kind == "classes" and per_sample is not None and isinstance(per_sample.top1, bool):
        return "same top-1 label" if per_sample.top1 else "top-1 label changed"
    if kind == "sequence" and text is not None:
        ref, cand = _texts(text)
        if ref is not None and cand is not None:
            return "same text" if ref == cand else "text differs"
    if kind == "audio":
        return sound_note(per_sample)
    return ""


def _output_block(name: str, entry: OutputAnswers, inputs: list[str | None], cands: Mapping[str, CandidateResult],
                  reference: str) -> dict[str, Any] | None:
    kind = entry.kind
    refs = [picture(v) for v in _list(entry.ref)]
    columns: list[dict[str, Any]] = []
    per_cand: list[AnswerPictures] = []
    for cname, ce in entry.candidates.items():
        c = cands.get(cname)
        out = c.output(name) if c is not None else None
        head, detail = verdict_words(kind, out.task if out is not None else None)
        passed = out.passed if out is not None else None
        columns.append({"name": cname, "words": target_words(cname), "verdict": head, "detail": detail,
                        "status": "" if passed is None else "pass" if passed else "fail",
                        "diff": any(picture(v) for v in ce.diff)})
        per_cand.append(ce)
    if not columns:
        return None
    texts = [list(ce.text) for ce in per_cand]
    n = min(MAX_SAMPLES, max([len(refs)] + [len(ce.cand) for ce in per_cand] + [len(t) for t in texts]))
    rows = []
    ref_sounds = list(entry.ref_sound)
    for s in range(n):
        ref_text = next((_texts(t[s])[0] for t in texts if s < len(t) and isinstance(t[s], Mapping)), None)
        cells = []
        for col, ce, tx in zip(columns, per_cand, texts, strict=True):
            pics, diffs, dmax = ce.cand, ce.diff, ce.diff_max
            value = _number(dmax[s]) if s < len(dmax) else None
            text = tx[s] if s < len(tx) and isinstance(tx[s], Mapping) else None
            samples = ce.per_sample
            cand_text = _texts(text)[1] if text else None
            cells.append({"pic": picture(pics[s]) if s < len(pics) else None,
                          "diff": picture(diffs[s]) if s < len(diffs) else None,
                          "diff_max": f"max |Δ| {fmt(value)}" if value is not None else "",
                          "text": cand_text,
                          "parts": text_diff(ref_text, cand_text) if ref_text is not None and cand_text is not None
                          else [],
                          "note": _sample_note(kind, samples[s] if s < len(samples) else None, text),
                          "show_diff": col["diff"],
                          "sound": sound(ce.sound[s]) if s < len(ce.sound) else None})
        row = {"index": s + 1, "input": inputs[s] if s < len(inputs) else None,
               "ref": refs[s] if s < len(refs) else None, "ref_text": ref_text, "cells": cells,
               "ref_sound": sound(ref_sounds[s]) if s < len(ref_sounds) else None}
        if row["ref"] or row["ref_text"] is not None or any(c["pic"] or c["diff"] or c["text"] is not None
                                                             for c in cells):
            rows.append(row)
    if not rows:
        return None
    shown_cols = sum(1 + c["diff"] for c in columns)
    return {"output": name, "kind": kind, "kind_words": KIND_WORDS.get(kind, kind), "columns": columns,
            "rows": rows, "show_input": any(r["input"] for r in rows),
            "show_ref": any(r["ref"] or r["ref_text"] is not None for r in rows),
            "ref_words": target_words(reference) if reference else "reference",
            "legend": _legend(kind), "width": shown_cols}


def answers_section(item: ReportItem) -> dict[str, Any] | None:
    """The Answers section of one compare result: per output drawn, the samples' pictures and each candidate's
    verdict; None when the result has no pictures (made before compare drew them, or no output of a task kind)."""
    data = item.result_as(CompareResult)
    answers = data.answers
    if answers is None:
        return None
    inputs = [picture(v) for v in answers.inputs]
    cands = {c.name: c for c in data.candidates}
    reference = data.reference
    outputs = [b for name, entry in answers.outputs.items()
               if (b := _output_block(name, entry, inputs, cands, reference)) is not None]
    if not outputs:
        return None
    drawn = max(len(b["rows"]) for b in outputs)
    samples = data.samples
    shown = {b["output"] for b in outputs}
    not_drawn = [n for n, k in data.output_kinds.items() if k.kind in TASK_KINDS and n not in shown]
    return {"reference": reference, "outputs": outputs, "samples": samples, "shown": drawn, "not_drawn": not_drawn,
            "photos": answers.photos and any(inputs), "random_data": data.random_data,
            "more": samples - drawn if isinstance(samples, int) and samples > drawn else 0,
            "title": item.title or " · ".join(p for p in (_made_from(item), f"against {reference}") if p)}


def _made_from(item: ReportItem) -> str:
    """The model a result was made on, else the file it was read from (tells several comparisons apart)."""
    model = (item.spec or {}).get("model") or item.result.model
    return Path(str(model)).name if model else Path(item.source).name if item.source else ""
