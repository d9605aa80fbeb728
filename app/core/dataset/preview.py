"""Pictures of an image with labels drawn on it — a dataset's truth before anything runs (so that a wrong box format
or class map shows), or a model's answer beside it: boxes with class names, masks as a coloured overlay, a class
name or a text line under the image. The truth and an answer are both :class:`Marks`, drawn by :func:`draw_marks`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw, ImageFont, ImageOps

from app.core.dataset.files import IGNORE_INDEX
from app.core.dataset.types import Dataset, DatasetItem

COLOURS = (
    (230, 25, 75), (60, 180, 75), (0, 130, 200), (245, 130, 48), (145, 30, 180), (70, 240, 240), (240, 50, 230),
    (210, 245, 60), (250, 190, 212), (0, 128, 128), (220, 190, 255), (170, 110, 40), (255, 250, 200), (128, 0, 0),
    (170, 255, 195), (128, 128, 0), (255, 215, 180), (0, 0, 128), (255, 225, 25), (128, 128, 128),
)
CAPTION = 22  # the strip under the image for its caption, and above it for a title
_OVERLAY_ALPHA = 0.5


@dataclass(frozen=True)
class Marks:
    """What is drawn on an image, in its pixels and the dataset's category ids: ``boxes`` (N×4 x1, y1, x2, y2) with
    their ``classes``, a class ``mask`` (H×W), ``instances`` (N×H×W 0/1 masks, one per class of ``classes``), and the
    ``caption`` written under it."""

    boxes: np.ndarray | None = None
    classes: np.ndarray | None = None
    mask: np.ndarray | None = None
    instances: np.ndarray | None = None
    caption: str = ""


def colour(index: int) -> tuple[int, int, int]:
    """The colour a category is drawn in, by its position among the dataset's categories."""
    return COLOURS[index % len(COLOURS)]


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    try:
        return ImageFont.truetype("DejaVuSans.ttf", size)
    except OSError:
        try:
            return ImageFont.load_default(size=size)
        except TypeError:  # Pillow before 10.1 has one bitmap size
            return ImageFont.load_default()


def preview_pictures(dataset: Dataset, n: int = 3, side: int = 320) -> list[Image.Image]:
    """The first ``n`` images of the dataset, each fitted in ``side``×``side`` with its labels drawn and a caption."""
    return [preview_item(dataset, dataset.item(i), side) for i in range(min(n, len(dataset)))]


def preview_item(dataset: Dataset, item: DatasetItem, side: int = 320) -> Image.Image:
    """One image with its truth drawn on it (boxes, mask) and under it (class, text)."""
    return draw_marks(dataset, upright(item), truth_marks(dataset, item), side)


def upright(item: DatasetItem) -> Image.Image:
    """The item's image as RGB, its EXIF orientation applied (as the evaluation reads it)."""
    with Image.open(item.image) as im:
        return ImageOps.exif_transpose(im).convert("RGB")


def truth_marks(dataset: Dataset, item: DatasetItem) -> Marks:
    """The item's truth as marks: its boxes, its mask or instance masks, its caption."""
    instances = None
    if item.mask_path is None and item.classes is not None and any(seg is not None for seg in item.segmentations):
        instances = item.instance_masks()
    return Marks(item.boxes, item.classes, item.mask() if item.mask_path is not None else None, instances,
                 _caption(dataset, item))


def draw_marks(dataset: Dataset, photo: Image.Image, marks: Marks, side: int = 320, title: str = "") -> Image.Image:
    """The photo fitted in ``side``×``side`` with the marks drawn on it, the caption under it and, when given, the
    title above it; classes named and coloured by the dataset's categories."""
    width, height = photo.size
    scale = min(side / width, side / height)
    shown = photo.resize((max(1, round(width * scale)), max(1, round(height * scale))), Image.Resampling.BILINEAR)
    slot = {cid: k for k, (cid, _name) in enumerate(dataset.categories)}
    if marks.mask is not None:
        shown = _overlay(shown, marks.mask, slot)
    if marks.instances is not None and marks.classes is not None:
        for inst, cid in zip(marks.instances, marks.classes, strict=True):
            shown = _overlay(shown, inst, {1: slot.get(int(cid), int(cid))})
    top = CAPTION if title else 0
    canvas = Image.new("RGB", (side, top + side + CAPTION), (245, 245, 245))
    ox, oy = (side - shown.width) // 2, top + (side - shown.height) // 2
    canvas.paste(shown, (ox, oy))
    draw = ImageDraw.Draw(canvas)
    if marks.boxes is not None and marks.classes is not None:
        _boxes(draw, dataset, marks.boxes, marks.classes, scale, (ox, oy), slot, top)
    if title:
        draw.text((4, 4), title, fill=(0, 0, 0), font=_font(13))
    draw.text((4, top + side + 3), marks.caption, fill=(0, 0, 0), font=_font(13))
    return canvas


def _overlay(shown: Image.Image, mask: np.ndarray, slot: dict[int, int]) -> Image.Image:
    small = np.asarray(Image.fromarray(np.asarray(mask).astype(np.uint8)).resize(shown.size,
                                                                                Image.Resampling.NEAREST))
    rgb = np.asarray(shown, dtype=np.float32).copy()
    for value in np.unique(small):
        if value == 0:
            continue  # background stays as it is
        tint = (255, 255, 255) if value == IGNORE_INDEX else colour(slot.get(int(value), int(value)))
        where = small == value
        rgb[where] = rgb[where] * (1 - _OVERLAY_ALPHA) + np.asarray(tint, np.float32) * _OVERLAY_ALPHA
    return Image.fromarray(rgb.astype(np.uint8))


def _boxes(draw: ImageDraw.ImageDraw, dataset: Dataset, boxes: np.ndarray, classes: np.ndarray, scale: float,
           origin: tuple[int, int], slot: dict[int, int], floor: int) -> None:
    font = _font(11)
    for box, cid in zip(np.asarray(boxes).reshape(-1, 4), classes, strict=True):
        x1, y1, x2, y2 = (float(v) * scale + origin[k % 2] for k, v in enumerate(box))
        tint = colour(slot.get(int(cid), int(cid)))
        draw.rectangle([x1, y1, max(x1, x2), max(y1, y2)], outline=tint, width=2)
        tag = dataset.category_name(int(cid))
        tw = draw.textlength(tag, font=font)
        ty = max(float(floor), y1 - 13)  # a tag stays below the title
        draw.rectangle([x1, ty, x1 + tw + 4, ty + 13], fill=tint)
        draw.text((x1 + 2, ty), tag, fill=(0, 0, 0), font=font)


def _caption(dataset: Dataset, item: DatasetItem) -> str:
    if item.text is not None:
        return item.text
    if item.class_id is not None:
        return dataset.category_name(item.class_id)
    if item.mask_path is not None:
        return mask_caption(dataset, item.mask())
    count = 0 if item.classes is None else len(item.classes)
    return f"{item.image.name} · {count} box{'es' if count != 1 else ''}"


def mask_caption(dataset: Dataset, mask: np.ndarray) -> str:
    """"mask: cat, dog" — the classes a mask shows, by name."""
    values = [int(v) for v in np.unique(mask) if v not in (0, IGNORE_INDEX)]
    return "mask: " + (", ".join(dataset.category_name(v) for v in values) or "background only")
