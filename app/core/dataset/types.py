"""The values a dataset is read into: :class:`Dataset` (the folder, its format, task and categories) and one
:class:`DatasetItem` per image (the image's path and its truth), with the errors a person can act on."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from app.core.dataset.errors import DatasetError
from app.core.dataset.files import IGNORE_INDEX, image_size, read_mask
from app.core.dataset.segments import decode_segmentations

# The formats by the name `--format` takes, with the words a person reads.
FORMAT_NAMES: dict[str, str] = {
    "coco": "COCO JSON",
    "yolo": "YOLO txt",
    "class-folders": "class folders",
    "csv": "CSV labels",
    "masks": "PNG masks",
    "text-lines": "text lines",
}
TASKS = ("detection", "classification", "segmentation", "recognition")


@dataclass(frozen=True, eq=False)
class DatasetItem:
    """One image and its truth. Which truth depends on the task: ``boxes`` (N×4 float32, x1 y1 x2 y2 in pixels)
    with ``classes`` (N category ids) for detection, ``class_id`` for classification, ``mask_path`` for
    segmentation, ``text`` for recognition. ``width``/``height`` are None where the labels do not say."""

    index: int
    image: Path
    image_id: int
    width: int | None = None
    height: int | None = None
    boxes: np.ndarray | None = None
    classes: np.ndarray | None = None
    crowd: np.ndarray | None = None
    segmentations: tuple[Any, ...] = ()
    class_id: int | None = None
    mask_path: Path | None = None
    text: str | None = None

    def mask(self) -> np.ndarray:
        """The class mask as a uint8 array (H×W; :data:`IGNORE_INDEX` where the pixel is left out)."""
        if self.mask_path is None:
            raise DatasetError(f"{self.image.name} has no mask.", fix="Only a segmentation dataset's items have one.")
        return read_mask(self.mask_path)

    def instance_masks(self) -> np.ndarray:
        """The COCO segmentations (polygons or RLE) as N×H×W uint8 masks (0/1), one per box; a box without a
        segmentation gets its filled rectangle."""
        if self.width is None or self.height is None:
            width, height = image_size(self.image)
        else:
            width, height = self.width, self.height
        boxes = self.boxes if self.boxes is not None else np.zeros((0, 4), np.float32)
        return decode_segmentations(self.segmentations, boxes, width, height)


@dataclass(frozen=True, eq=False)
class Dataset:
    """A labelled folder, read lazily: its label files were parsed once when it was loaded, its images are opened
    only by :meth:`item` (a YOLO item's boxes become pixels then, from the image's size read without decoding).

    ``records`` holds the items as the labels gave them; read them through :meth:`item` and :meth:`items`."""

    format: str
    root: Path
    task: str
    categories: tuple[tuple[int, str], ...]
    records: tuple[DatasetItem, ...]
    labels: Path | None = None
    boxes_normalised: bool = False
    notes: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.records)

    @property
    def format_name(self) -> str:
        return FORMAT_NAMES.get(self.format, self.format)

    def item(self, i: int) -> DatasetItem:
        """Item ``i``, its boxes in pixels (YOLO's normalised boxes are scaled by the image's size here)."""
        record = self.records[i]
        if not self.boxes_normalised:
            return record
        width, height = image_size(record.image)
        boxes = record.boxes if record.boxes is not None else np.zeros((0, 4), np.float32)
        cx, cy, w, h = (boxes[:, k] for k in range(4))
        xyxy = np.stack([(cx - w / 2) * width, (cy - h / 2) * height, (cx + w / 2) * width, (cy + h / 2) * height],
                        axis=1).astype(np.float32)
        return replace(record, width=width, height=height, boxes=xyxy.reshape(-1, 4))

    def items(self) -> Iterator[DatasetItem]:
        """Every item in order, one at a time."""
        for i in range(len(self.records)):
            yield self.item(i)

    def category_name(self, category_id: int) -> str:
        for cid, name in self.categories:
            if cid == category_id:
                return name
        return str(category_id)

    def class_counts(self) -> dict[int, int]:
        """Boxes per category (detection), images per class (classification), images showing each class
        (segmentation: every mask is read, one at a time); empty for recognition."""
        counts: Counter[int] = Counter()
        for record in self.records:
            if self.task == "detection" and record.classes is not None:
                counts.update(int(c) for c in record.classes)
            elif self.task == "classification" and record.class_id is not None:
                counts[record.class_id] += 1
            elif self.task == "segmentation" and record.mask_path is not None:
                values = np.unique(record.mask())
                counts.update(int(v) for v in values if v != IGNORE_INDEX)
        return dict(sorted(counts.items()))

    def summary(self) -> str:
        """One line: "COCO JSON · 200 images · 3 classes · 1,412 boxes" (no image or mask is opened)."""
        parts = [self.format_name, _count(len(self.records), "image")]
        if self.task == "recognition":
            chars = {c for r in self.records for c in (r.text or "")}
            parts.append(_count(len(chars), "character"))
        else:
            parts.append(_count(len(self.categories), "class", "classes"))
        if self.task == "detection":
            parts.append(_count(sum(len(r.classes) for r in self.records if r.classes is not None), "box", "boxes"))
        return " · ".join(parts)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else many or one + 's'}"
