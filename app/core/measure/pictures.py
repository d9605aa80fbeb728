"""The answers as pictures a person can read, drawn with Pillow as PNG: the input photo, masks and heat maps with a
|difference| map, boxes on the photo (reference and candidate in two colours, missed and extra boxes marked),
top-k labels as bars, decoded text. The compare job makes them once; the window, exported PNGs and the HTML
report show the same files (base64 PNG in the results' JSON). Audio outputs: waveform over spectrogram per side and
the difference (``app.core.measure.audio``), and the first samples' sound as WAV data URIs (``ref_sound``,
``sound``)."""

from __future__ import annotations

import base64
import functools
import io
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from app.core.measure.answers import planes
from app.core.measure.audio import SOUND_SAMPLES, audio_pictures, sounds
from app.core.measure.images import ImagePreprocess
from app.core.measure.kinds import OutputKind
from app.core.results import Answers

MAX_SIDE = 320            # pictures are at most this many pixels on their longer side
MAX_SAMPLES = 6           # samples drawn per output
MAX_OUTPUTS = 3           # outputs drawn per candidate (the first ones of a task kind, in graph order)
REF_COLOUR = (46, 204, 113)      # reference boxes: green
CAND_COLOUR = (255, 159, 28)     # candidate boxes: orange
MISSED_COLOUR = (231, 76, 60)    # a reference box the candidate lost: red
EXTRA_COLOUR = (199, 61, 255)    # a box only the candidate has: magenta
# A perceptual dark-to-bright map (viridis' anchors) for heat maps and |difference| maps.
_ANCHORS = np.array([[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]], np.float64)


def png_b64(img: Image.Image, photo: bool = False) -> str:
    """A picture as a data URI: PNG (lossless: masks, boxes, bars, text), or JPEG for photos and |difference| maps
    and boxes drawn on photos (`photo`), which PNG stores at five times the size and time."""
    buf = io.BytesIO()
    if photo:
        img.convert("RGB").save(buf, format="JPEG", quality=90)
        return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
    if img.mode == "RGB":
        px = np.asarray(img)
        if np.array_equal(px[..., 0], px[..., 1]) and np.array_equal(px[..., 0], px[..., 2]):
            img = img.convert("L")  # grey pictures stored as grey: a third of the bytes
    img.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def picture_bytes(uri: str) -> bytes:
    """The encoded file inside a data URI made by `png_b64`."""
    return base64.b64decode(uri.partition(",")[2] if uri.startswith("data:") else uri)


def decode_picture(uri: str) -> Image.Image:
    return Image.open(io.BytesIO(picture_bytes(uri))).convert("RGB")


def _fit(img: Image.Image, side: int = MAX_SIDE) -> Image.Image:
    scale = side / max(img.size)
    if scale >= 1:
        return img
    return img.resize((max(1, round(img.width * scale)), max(1, round(img.height * scale))), Image.Resampling.BILINEAR)


def colormap(values: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Values → RGB uint8 through the dark-to-bright map, lo…hi."""
    t = np.clip((np.nan_to_num(values.astype(np.float64)) - lo) / ((hi - lo) or 1.0), 0, 1) * (len(_ANCHORS) - 1)
    i = np.minimum(t.astype(np.int64), len(_ANCHORS) - 2)
    f = (t - i)[..., None]
    return (_ANCHORS[i] * (1 - f) + _ANCHORS[i + 1] * f).astype(np.uint8)


def input_picture(feeds: Mapping[str, np.ndarray], preprocess: ImagePreprocess | None) -> Image.Image | None:
    """The model's image input as a photo again (the preprocessing undone), or None for other inputs."""
    if len(feeds) != 1:
        return None
    x = np.asarray(next(iter(feeds.values())), dtype=np.float64)
    if x.ndim != 4:
        return None
    layout = preprocess.layout if preprocess is not None else "NCHW" if x.shape[1] in (1, 3) else "NHWC"
    img = x[0] if layout == "NHWC" else np.moveaxis(x[0], 0, -1)
    if img.shape[-1] not in (1, 3) or min(img.shape[:2]) < 16:
        return None
    if preprocess is not None:
        c = img.shape[-1]
        std = np.resize(np.asarray(preprocess.std, np.float64), c)
        mean = np.resize(np.asarray(preprocess.mean, np.float64), c)
        img = (img * std + mean) / (preprocess.scale or 1.0)
        if preprocess.color == "BGR":
            img = img[..., ::-1]
    else:
        lo, hi = float(img.min()), float(img.max())
        img = (img - lo) / ((hi - lo) or 1.0) * 255
    img = np.clip(img, 0, 255).astype(np.uint8)
    return Image.fromarray(img[..., 0] if img.shape[-1] == 1 else img).convert("RGB")


@functools.lru_cache(maxsize=8)
def _font(size: int = 12) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1 has one bitmap size
        return ImageFont.load_default()


# --------------------------------------------------------------------------------------------- per kind
def image_pictures(ref: np.ndarray, cand: np.ndarray, kind: OutputKind) -> tuple[Image.Image, Image.Image, Image.Image,
                                                                                  float]:
    """The first plane of a sample as two pictures on one scale, and the |difference| map (and its largest value)."""
    r, c = planes(ref, kind)[0].astype(np.float64), planes(cand, kind)[0].astype(np.float64)
    lo, hi = float(np.nanmin(r)), float(np.nanmax(r))
    d = np.abs(np.nan_to_num(c) - np.nan_to_num(r))
    dmax = float(d.max())
    if lo >= -1e-3 and hi <= 1 + 1e-3:  # a mask or probability map: white is 1, black 0 (grey compresses well)
        pics = [Image.fromarray((np.clip(np.nan_to_num(a), 0, 1) * 255).astype(np.uint8), "L").convert("RGB")
                for a in (r, c)]
    else:
        pics = [Image.fromarray(colormap(a, lo, hi)) for a in (r, c)]
    pics.append(Image.fromarray(colormap(d, 0, dmax or 1.0)))
    return _fit(pics[0]), _fit(pics[1]), _fit(pics[2]), dmax


def boxes_picture(photo: Image.Image | None, size: tuple[int, int], answer: Mapping[str, list], sides: Sequence[str],
                  labels: Sequence[str] | None = None) -> Image.Image:
    """Boxes drawn on the photo (or a grey canvas of the model's input size): `sides` "ref" and/or "cand"."""
    base = photo.copy() if photo is not None else Image.new("RGB", (size[1], size[0]), (90, 90, 90))
    scale = MAX_SIDE / max(base.size)
    big = base.resize((round(base.width * scale), round(base.height * scale)), Image.Resampling.BILINEAR)
    draw = ImageDraw.Draw(big)
    font = _font(11)
    for side in sides:
        for b in answer.get(side, []):
            status = b.get("status", "matched")
            colour = (MISSED_COLOUR if status == "missed" else EXTRA_COLOUR if status == "extra"
                      else REF_COLOUR if side == "ref" else CAND_COLOUR)
            x1, y1, x2, y2 = (v * scale for v in b["box"])
            width = 3 if status in ("missed", "extra") else 2 if side == "ref" else 1
            draw.rectangle([x1, y1, max(x1, x2), max(y1, y2)], outline=colour, width=width)
            name = labels[b["class"]] if labels and 0 <= b["class"] < len(labels) else f"class {b['class']}"
            tag = f"{name} {b['score']:.2f}" + (f" {status.upper()}" if status in ("missed", "extra") else "")
            if side == "ref" or status != "matched":
                tw = draw.textlength(tag, font=font)
                ty = y1 - 13 if y1 >= 13 else y1 + 1
                draw.rectangle([x1, ty, x1 + tw + 4, ty + 12], fill=colour)
                draw.text((x1 + 2, ty), tag, fill=(0, 0, 0), font=font)
    return big


def bars_picture(answer: Mapping[str, list], labels: Sequence[str] | None = None) -> Image.Image:
    """Top-k labels with bars, reference above candidate for each label."""
    ref, cand = answer.get("ref", []), answer.get("cand", [])
    cand_score = {i: s for i, s in cand}
    rows = [(i, s, cand_score.get(i)) for i, s in ref]
    width, row_h = MAX_SIDE, 30
    img = Image.new("RGB", (width, 18 + row_h * max(1, len(rows))), (255, 255, 255))
    draw, font = ImageDraw.Draw(img), _font(11)
    top_c = cand[0][0] if cand else None
    draw.text((4, 2), f"reference best: {_label(ref[0][0], labels) if ref else '—'}   candidate best: "
                      f"{_label(top_c, labels) if top_c is not None else '—'}", fill=(0, 0, 0), font=font)
    hi = max([abs(s) for _, s in ref] + [abs(s) for _, s in cand] + [1e-9])
    for k, (i, rs, cs) in enumerate(rows):
        y = 18 + k * row_h
        draw.text((4, y + 7), _label(i, labels)[:16], fill=(0, 0, 0), font=font)
        for j, (v, colour) in enumerate(((rs, REF_COLOUR), (cs, CAND_COLOUR))):
            if v is None:
                continue
            x0 = 110
            draw.rectangle([x0, y + 3 + 12 * j, x0 + max(1, (width - x0 - 50) * abs(v) / hi), y + 13 + 12 * j],
                           fill=colour)
            draw.text((width - 46, y + 2 + 12 * j), f"{v:.3f}", fill=(0, 0, 0), font=font)
    return img


def _label(i: int, labels: Sequence[str] | None) -> str:
    return labels[i] if labels and 0 <= i < len(labels) else f"class {i}"


def text_of(seq: Sequence[int], labels: Sequence[str] | None) -> str:
    if labels:
        return "".join(labels[t] if 0 <= t < len(labels) else "?" for t in seq)
    return " ".join(str(t) for t in seq)


def sequence_picture(answer: Mapping[str, list], labels: Sequence[str] | None = None) -> Image.Image:
    """The decoded sequences, reference over candidate, with the steps that differ marked."""
    font = _font(12)
    ref, cand = list(answer.get("ref", [])), list(answer.get("cand", []))
    lines = [("reference", text_of(ref, labels), REF_COLOUR), ("candidate", text_of(cand, labels), CAND_COLOUR)]
    wrap = 44
    chunks = [(who, txt[i:i + wrap] or "(empty)", col) for who, txt, col in lines
              for i in range(0, max(1, len(txt)), wrap)][:12]
    img = Image.new("RGB", (MAX_SIDE + 60, 10 + 16 * len(chunks)), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    for k, (who, txt, col) in enumerate(chunks):
        draw.rectangle([2, 6 + 16 * k, 8, 16 + 16 * k], fill=col)
        draw.text((12, 4 + 16 * k), f"{who}: {txt}", fill=(0, 0, 0), font=font)
    return img


def read_labels(path: str | None) -> list[str] | None:
    """One label per line of a text file; None when no file is given or it cannot be read."""
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            return [line.rstrip("\n") for line in fh]
    except OSError:
        return None


def answer_labels(kind: OutputKind) -> list[str] | None:
    """The labels an output's answers are read with: the user's labels file, else a sequence's tokens as the model's
    own dictionary reads them (``OutputKind.characters``), else None (indices are shown)."""
    return read_labels(kind.labels) or (list(kind.characters) if kind.characters else None)


def output_pictures(kind: OutputKind, ref: Sequence[np.ndarray], cand: Sequence[np.ndarray],
                    answers: Sequence[Mapping[str, Any]], photos: Sequence[Image.Image | None],
                    input_size: tuple[int, int]) -> dict[str, list]:
    """Per sample (up to MAX_SAMPLES): base64 PNGs of the reference's and the candidate's answers (and, for images,
    the |difference| map and its largest value). `answers`: the judge's per-sample answers (TaskResult.answers),
    whose "ref" and "cand" hold boxes, top-k rows or tokens depending on the kind."""
    labels = answer_labels(kind)
    out: dict[str, list] = {"ref": [], "cand": [], "diff": [], "diff_max": []}
    n = min(MAX_SAMPLES, len(ref), len(cand))
    for s in range(n):
        photo = photos[s] if s < len(photos) else None
        answer = answers[s] if s < len(answers) else {}
        if kind.kind == "image":
            a, b, d, dmax = image_pictures(ref[s], cand[s], kind)
            out["ref"].append(png_b64(a))
            out["cand"].append(png_b64(b))
            out["diff"].append(png_b64(d, photo=True))
            out["diff_max"].append(dmax)
        elif kind.kind in ("detections", "yolo"):
            # Boxes are drawn on a photo: JPEG stores it at a fifth of PNG's size and time.
            for side, shown in (("ref", ["ref"]), ("cand", ["ref", "cand"])):
                pic = boxes_picture(photo, input_size, answer, shown, labels)
                out[side].append(png_b64(pic, photo=photo is not None))
        elif kind.kind == "classes":
            out["cand"].append(png_b64(bars_picture(answer, labels)))
        elif kind.kind == "audio":  # waveform over spectrogram; the first samples' sound as WAV
            a, b, d, dmax = audio_pictures(ref[s], cand[s], kind.rate)
            for side, pic in (("ref", a), ("cand", b), ("diff", d)):
                out[side].append(png_b64(pic, photo=True))
            out["diff_max"].append(dmax)
            if s < SOUND_SAMPLES:
                ref_wav, cand_wav = sounds(ref[s], cand[s], kind.rate)
                out.setdefault("ref_sound", []).append(ref_wav)
                out.setdefault("sound", []).append(cand_wav)
        elif kind.kind == "sequence":
            out["cand"].append(png_b64(sequence_picture(answer, labels)))
            out.setdefault("text", []).append({"ref": text_of(answer.get("ref", []), labels),
                                               "cand": text_of(answer.get("cand", []), labels)})
    return {k: v for k, v in out.items() if v}



def strip(pictures: Sequence[tuple[str, str]], height: int = MAX_SIDE) -> Image.Image:
    """(title, data URI) pictures side by side at one height, each titled above: what exported PNGs hold."""
    font = _font(14)
    tiles = []
    for title, uri in pictures:
        img = decode_picture(uri)
        img = img.resize((max(1, round(img.width * height / img.height)), height), Image.Resampling.BILINEAR)
        tiles.append((title, img))
    width = sum(t.width for _, t in tiles) + 8 * (len(tiles) + 1)
    out = Image.new("RGB", (max(width, 16), height + 34), (255, 255, 255))
    draw, x = ImageDraw.Draw(out), 8
    for title, img in tiles:
        draw.text((x, 6), title, fill=(0, 0, 0), font=font)
        out.paste(img, (x, 28))
        x += img.width + 8
    return out


def answer_strips(answers: Answers | None) -> dict[tuple[str, int], Image.Image]:
    """Per (output, sample): the input, the reference and every candidate side by side (|difference| maps after)."""
    out: dict[tuple[str, int], Image.Image] = {}
    if answers is None:
        return out
    inputs = list(answers.inputs)
    for name, entry in answers.outputs.items():
        ref = list(entry.ref or ())
        n = max([len(ref)] + [len(c.cand) for c in entry.candidates.values()])
        for s in range(n):
            row = [("input", inputs[s])] if s < len(inputs) and inputs[s] else []
            row += [("reference", ref[s])] if s < len(ref) else []
            row += [(cand, c.cand[s]) for cand, c in entry.candidates.items() if s < len(c.cand)]
            row += [(f"|{cand} - reference|", c.diff[s]) for cand, c in entry.candidates.items() if s < len(c.diff)]
            if row:
                out[(name, s)] = strip(row)
    return out
