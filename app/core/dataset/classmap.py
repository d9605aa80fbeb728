"""Mapping a model's class indices to a dataset's categories.

The model's names come from its metadata (Ultralytics writes ``names`` as a Python dict literal), from a labels
file (one name per line, in the model's index order) or, for a model with no names and 80 classes, are COCO's 80.
They are matched to the dataset's category names ignoring case, spaces, underscores and hyphens ("Traffic light",
"traffic_light" and "TRAFFIC-LIGHT" are one name), which also gives COCO's 80 → 91 id mapping on a COCO JSON
dataset. A model without names meets a dataset whose categories are named by index (YOLO or a CSV without names)
index for index.

The tolerance: a dataset category no model class matches is allowed only when it is background ("background",
"__background__", "bg", "void") or when such categories are at most 5 % of the dataset's (rounded down: none of
fewer than 20); those left out are listed in :attr:`ClassMap.unmatched`. Anything more is refused with
:class:`ClassMapError`, the two lists side by side. Model classes the dataset lacks are fine (an 80-class detector
on a 3-class set)."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.core.dataset.errors import ClassMapError
from app.core.dataset.files import read_names

UNMATCHED_TOLERANCE = 0.05
CLASS_NAMES_FIX = ("Give the model's class names in a text file, one a line in the model's index order "
                   "(trtlab eval --class-names FILE)")
BACKGROUND_NAMES = frozenset({"background", "__background__", "bg", "void"})
COCO_80_NAMES = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
    "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow", "elephant",
    "bear", "zebra", "giraffe", "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee", "skis", "snowboard",
    "sports ball", "kite", "baseball bat", "baseball glove", "skateboard", "surfboard", "tennis racket", "bottle",
    "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple", "sandwich", "orange", "broccoli",
    "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch", "potted plant", "bed", "dining table", "toilet",
    "tv", "laptop", "mouse", "remote", "keyboard", "cell phone", "microwave", "oven", "toaster", "sink",
    "refrigerator", "book", "clock", "vase", "scissors", "teddy bear", "hair drier", "toothbrush",
)
# COCO's category ids (1..90, with gaps) of the 80 classes above, in that order.
COCO_80_TO_91 = (
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 27, 28, 31, 32, 33, 34,
    35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63,
    64, 65, 67, 70, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 84, 85, 86, 87, 88, 89, 90,
)
_MAX_ROWS = 60


@dataclass(frozen=True)
class ClassMap:
    """Model class index → dataset category id, and how it was made ("by name", "COCO 80 → 91 ids", ...)."""

    pairs: tuple[tuple[int, int], ...]
    how: str
    unmatched: tuple[str, ...] = ()

    def dataset_id(self, model_index: int) -> int | None:
        return dict(self.pairs).get(model_index)

    def model_index(self, category_id: int) -> int | None:
        return {c: m for m, c in self.pairs}.get(category_id)

    def __len__(self) -> int:
        return len(self.pairs)


def normalise_name(name: str) -> str:
    """A class name for matching: lower case, no spaces, underscores or hyphens."""
    return re.sub(r"[\s_\-]+", "", name.strip().lower())


def model_class_names(model: Any) -> dict[int, str] | None:
    """The class names an ONNX model's metadata gives (``names``: a dict or list literal, as Ultralytics writes),
    by index; None when it gives none or they do not parse."""
    for prop in getattr(model, "metadata_props", ()):
        if prop.key != "names":
            continue
        try:
            value = ast.literal_eval(prop.value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            try:
                value = json.loads(prop.value)
            except ValueError:
                return None
        if isinstance(value, dict):
            try:
                return {int(k): str(v) for k, v in value.items()}
            except (TypeError, ValueError):
                return None
        if isinstance(value, (list, tuple)):
            return {k: str(v) for k, v in enumerate(value)}
    return None


def class_map(model_names: Sequence[str] | Mapping[int, str] | None,
              dataset_categories: Sequence[tuple[int, str]],
              labels_file: str | Path | None = None, *, model_classes: int | None = None) -> ClassMap:
    """Map the model's class indices to the dataset's category ids (the rules above); refused on a mismatch."""
    names: dict[int, str] | None
    if labels_file is not None:
        names, how = dict(enumerate(read_names(Path(labels_file)))), f"by name, from {Path(labels_file).name}"
    elif model_names is not None and len(model_names):
        names, how = (dict(model_names) if isinstance(model_names, Mapping) else dict(enumerate(model_names)),
                      "by name")
    elif model_classes == 80 and not _by_index(dataset_categories):
        names, how = dict(enumerate(COCO_80_NAMES)), "COCO's 80 names (the model names none)"
    else:
        names = None
        how = "by index"
    if names is None:
        if not _by_index(dataset_categories):
            raise ClassMapError(
                "The model does not name its classes, and the dataset's categories are names: trtlab cannot tell "
                f"which model class is which category.{_table({}, dataset_categories, {})}",
                fix=f"{CLASS_NAMES_FIX}.")
        count = model_classes if model_classes is not None else len(dataset_categories)
        pairs = tuple((int(n), cid) for cid, n in dataset_categories if int(n) < count)
        return _checked(pairs, how, {k: str(k) for k in range(count)}, dataset_categories)
    first: dict[str, int] = {}
    for index in sorted(names):
        first.setdefault(normalise_name(names[index]), index)
    pairs = tuple(sorted((first[key], cid) for cid, name in dataset_categories
                         if (key := normalise_name(name)) in first))
    if how == "by name" and _coco_91(pairs, names):
        how = "by name (COCO 80 → 91 ids)"
    return _checked(pairs, how, names, dataset_categories)


def _by_index(categories: Sequence[tuple[int, str]]) -> bool:
    return bool(categories) and all(name.isdigit() for _cid, name in categories)


def _coco_91(pairs: tuple[tuple[int, int], ...], names: Mapping[int, str]) -> bool:
    coco = [normalise_name(n) for n in COCO_80_NAMES]
    return (len(names) == 80 and [normalise_name(names.get(k, "")) for k in range(80)] == coco
            and bool(pairs) and all(COCO_80_TO_91[m] == c for m, c in pairs) and any(m != c for m, c in pairs))


def _checked(pairs: tuple[tuple[int, int], ...], how: str, names: Mapping[int, str],
             categories: Sequence[tuple[int, str]]) -> ClassMap:
    mapped = {c: m for m, c in pairs}
    unmatched = [(cid, name) for cid, name in categories
                 if cid not in mapped and normalise_name(name) not in BACKGROUND_NAMES]
    counted = [c for c in categories if normalise_name(c[1]) not in BACKGROUND_NAMES]
    allowed = int(len(counted) * UNMATCHED_TOLERANCE)
    if not pairs or len(unmatched) > allowed:
        what = ("no dataset category matches a model class" if not pairs
                else f"{len(unmatched)} of the dataset's {len(counted)} categories match no model class "
                     f"(at most {allowed} may)")
        table = _table(names, categories, mapped)
        raise ClassMapError(
            f"The model's classes and the dataset's categories do not match: {what}.{table}",
            fix=f"{CLASS_NAMES_FIX}, or correct the dataset's category names.")
    return ClassMap(pairs=pairs, how=how, unmatched=tuple(name for _cid, name in unmatched))


def _table(names: Mapping[int, str], categories: Sequence[tuple[int, str]], mapped: Mapping[int, int]) -> str:
    """The two lists side by side: the model's classes, the dataset's categories and what each maps to."""
    left = [f"{k} {names[k]}" for k in sorted(names)] or ["(no names)"]
    right = [f"{cid} {name}" + (f"  ← model {mapped[cid]}" if cid in mapped else "  ✗ no model class")
             for cid, name in categories] or ["(no categories)"]
    width = max(len("model classes"), *(len(s) for s in left[:_MAX_ROWS])) + 3
    rows = [f"  {'model classes':<{width}}dataset categories"]
    for k in range(min(max(len(left), len(right)), _MAX_ROWS)):
        rows.append(f"  {left[k] if k < len(left) else '':<{width}}{right[k] if k < len(right) else ''}")
    if max(len(left), len(right)) > _MAX_ROWS:
        rows.append(f"  … and {max(len(left), len(right)) - _MAX_ROWS} more rows")
    return "\n" + "\n".join(rows)
