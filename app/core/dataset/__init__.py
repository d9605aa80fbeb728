"""Labelled datasets in the formats people have: COCO JSON, YOLO txt, class folders, a CSV of ``file,label``, PNG
masks beside images and PaddleOCR's text lines, detected (`detect_format`) and read lazily (`load_dataset` →
`Dataset`, one `DatasetItem` per image); the model's classes mapped to the dataset's categories (`class_map`,
`model_class_names`); and pictures of the first images with their labels drawn (`preview_pictures`; the truth or
a model's answer as `Marks`, drawn by `draw_marks`). Other packages import these names from here."""

from __future__ import annotations

from app.core.dataset.classmap import (
    BACKGROUND_NAMES,
    COCO_80_NAMES,
    COCO_80_TO_91,
    UNMATCHED_TOLERANCE,
    ClassMap,
    class_map,
    model_class_names,
    normalise_name,
)
from app.core.dataset.detect import LOOKED_FOR, detect_format, load_dataset
from app.core.dataset.errors import ClassMapError, DatasetError
from app.core.dataset.files import IGNORE_INDEX, IMAGE_EXTENSIONS, image_size, read_mask, read_names
from app.core.dataset.preview import (
    Marks,
    draw_marks,
    mask_caption,
    preview_item,
    preview_pictures,
    truth_marks,
    upright,
)
from app.core.dataset.types import FORMAT_NAMES, TASKS, Dataset, DatasetItem

__all__ = [
    "BACKGROUND_NAMES",
    "COCO_80_NAMES",
    "COCO_80_TO_91",
    "FORMAT_NAMES",
    "IGNORE_INDEX",
    "IMAGE_EXTENSIONS",
    "LOOKED_FOR",
    "TASKS",
    "UNMATCHED_TOLERANCE",
    "ClassMap",
    "ClassMapError",
    "Dataset",
    "DatasetError",
    "DatasetItem",
    "Marks",
    "class_map",
    "detect_format",
    "draw_marks",
    "image_size",
    "load_dataset",
    "mask_caption",
    "model_class_names",
    "normalise_name",
    "preview_item",
    "preview_pictures",
    "read_mask",
    "read_names",
    "truth_marks",
    "upright",
]
