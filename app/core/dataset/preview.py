"""Pictures of a dataset's first images with their labels drawn, so that a wrong box format or class map shows
before anything runs: boxes with class names, masks as a coloured overlay, a class name or a text line under the
image."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from app.core.dataset.files import IGNORE_INDEX
from app.core.dataset.types import Dataset, DatasetItem

COLOURS = (
    (230, 25, 75), (60, 180, 75), (0, 130, 200), (245, 130, 48), (145, 30, 180), (70, 240, 240), (240, 50, 230),
    (210, 245, 60), (250, 190, 212), (0, 128, 128), (220, 190, 255), (170, 110, 40), (255, 250, 200), (128, 0, 0),
    (170, 255, 195), (128, 128, 0), (255, 215, 180), (0, 0, 128), (255, 225, 25), (128, 128, 128),
)
CAPTION = 22  # the strip under the image for its caption
_OVERLAY_ALPHA = 0.5


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
    with Image.open(item.image) as im:
        photo = im.convert("RGB")
    width, height = photo.size
    scale = min(side / width, side / height)
    shown = photo.resize((max(1, round(width * scale)), max(1, round(height * scale))), Image.Resampling.BILINEAR)
    slot = {cid: k for k, (cid, _name) in enumerate(dataset.categories)}
    if item.mask_path is not None:
        shown = _overlay(shown, item.mask(), slot)
    elif item.classes is not None and any(seg is not None for seg in item.segmentations):
        for inst, cid in zip(item.instance_masks(), item.classes, strict=True):
            shown = _overlay(shown, inst, {1: slot.get(int(cid), int(cid))})
    canvas = Image.new("RGB", (side, side + CAPTION), (245, 245, 245))
    ox, oy = (side - shown.width) // 2, (side - shown.height) // 2
    canvas.paste(shown, (ox, oy))
    draw = ImageDraw.Draw(canvas)
    if item.boxes is not None and item.classes is not None:
        _boxes(draw, dataset, item, scale, (ox, oy), slot)
    draw.text((4, side + 3), _caption(dataset, item), fill=(0, 0, 0), font=_font(13))
    return canvas


def _overlay(shown: Image.Image, mask: np.ndarray, slot: dict[int, int]) -> Image.Image:
    small = np.asarray(Image.fromarray(mask).resize(shown.size, Image.Resampling.NEAREST))
    rgb = np.asarray(shown, dtype=np.float32).copy()
    for value in np.unique(small):
        if value == 0:
            continue  # background stays as it is
        tint = (255, 255, 255) if value == IGNORE_INDEX else colour(slot.get(int(value), int(value)))
        where = small == value
        rgb[where] = rgb[where] * (1 - _OVERLAY_ALPHA) + np.asarray(tint, np.float32) * _OVERLAY_ALPHA
    return Image.fromarray(rgb.astype(np.uint8))


def _boxes(draw: ImageDraw.ImageDraw, dataset: Dataset, item: DatasetItem, scale: float, origin: tuple[int, int],
           slot: dict[int, int]) -> None:
    assert item.boxes is not None and item.classes is not None
    font = _font(11)
    for box, cid in zip(item.boxes, item.classes, strict=True):
        x1, y1, x2, y2 = (float(v) * scale + origin[k % 2] for k, v in enumerate(box))
        tint = colour(slot.get(int(cid), int(cid)))
        draw.rectangle([x1, y1, max(x1, x2), max(y1, y2)], outline=tint, width=2)
        tag = dataset.category_name(int(cid))
        tw = draw.textlength(tag, font=font)
        ty = max(0.0, y1 - 13)
        draw.rectangle([x1, ty, x1 + tw + 4, ty + 13], fill=tint)
        draw.text((x1 + 2, ty), tag, fill=(0, 0, 0), font=font)


def _caption(dataset: Dataset, item: DatasetItem) -> str:
    if item.text is not None:
        return item.text
    if item.class_id is not None:
        return dataset.category_name(item.class_id)
    if item.mask_path is not None:
        values = [int(v) for v in np.unique(item.mask()) if v not in (0, IGNORE_INDEX)]
        return "mask: " + (", ".join(dataset.category_name(v) for v in values) or "background only")
    count = 0 if item.classes is None else len(item.classes)
    return f"{item.image.name} · {count} box{'es' if count != 1 else ''}"
