"""COCO JSON: ``images``, ``annotations`` (``bbox`` x, y, w, h in pixels; optional ``segmentation``, polygons or
RLE; ``iscrowd``) and ``categories`` (id, name). The images are found by ``file_name`` under the dataset folder,
its ``images/`` folder, the label file's folder or the split folder the file is named for (``instances_val2017.json``
→ ``val2017/``)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from app.core.dataset.errors import DatasetError
from app.core.dataset.files import MAX_LABEL_BYTES, missing_image, resolve_image, unique_bases
from app.core.dataset.segments import polygon_box
from app.core.dataset.types import Dataset, DatasetItem
from app.core.safe_read import read_json_file

COCO_PATTERNS = ("instances_*.json", "*_annotations.coco.json", "_annotations.coco.json")


def find_coco_json(root: Path) -> Path | None:
    """``instances_*.json`` (or Roboflow's ``_annotations.coco.json``) in the folder or its ``annotations/``."""
    for folder in (root, root / "annotations"):
        if not folder.is_dir():
            continue
        for pattern in COCO_PATTERNS:
            found = sorted(folder.glob(pattern))
            if found:
                return found[0]
    return None


def read_coco(root: Path, labels: Path | None = None) -> Dataset:
    """A COCO JSON dataset; ``labels`` is the JSON file (else found by :func:`find_coco_json`)."""
    path = labels or find_coco_json(root)
    if path is None:
        raise DatasetError(f"No COCO JSON in {root} (looked for instances_*.json there and in annotations/).",
                           fix="Give the annotation file with --labels.")
    try:
        doc = read_json_file(str(path), "COCO annotation file", MAX_LABEL_BYTES)
    except ValueError as exc:
        raise DatasetError(f"{path} is not JSON ({exc}).", fix="Check the annotation file.") from exc
    if not isinstance(doc, dict) or not all(isinstance(doc.get(k), list) for k in ("images", "categories")):
        raise DatasetError(f"{path} is not a COCO annotation file: it lacks the 'images' or 'categories' list.",
                           fix="Give a COCO instances JSON (images, annotations, categories).")
    categories = _categories(doc["categories"], path)
    known = {cid for cid, _ in categories}
    by_image: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for ann in doc.get("annotations") or []:
        if not isinstance(ann, dict) or "image_id" not in ann:
            raise DatasetError(f"{path}: an annotation has no image_id: {str(ann)[:80]}", fix="Check the file.")
        by_image[ann["image_id"]].append(ann)
    split = path.stem.split("_", 1)[1] if path.stem.startswith("instances_") else ""
    bases = unique_bases(root, root / "images", path.parent, path.parent.parent / "images",
                         *([root / split, root / "images" / split] if split else []))
    records: list[DatasetItem] = []
    for i, image in enumerate(doc["images"]):
        records.append(_record(i, image, by_image.get(image.get("id"), []), known, bases, path))
    return Dataset(format="coco", root=root, task="detection", categories=categories, records=tuple(records),
                   labels=path)


def _categories(raw: list[Any], path: Path) -> tuple[tuple[int, str], ...]:
    out = []
    for cat in raw:
        try:
            out.append((int(cat["id"]), str(cat["name"])))
        except (KeyError, TypeError, ValueError):
            raise DatasetError(f"{path}: a category lacks an id or name: {str(cat)[:80]}",
                               fix="Each category needs an integer id and a name.") from None
    return tuple(sorted(out))


def _record(i: int, image: Any, anns: list[dict[str, Any]], known: set[int], bases: list[Path],
            path: Path) -> DatasetItem:
    if not isinstance(image, dict) or "file_name" not in image or "id" not in image:
        raise DatasetError(f"{path}: image entry {i} lacks an id or file_name: {str(image)[:80]}",
                           fix="Each image needs an id and a file_name.")
    name = str(image["file_name"])
    found = resolve_image(name, bases) or resolve_image(Path(name).name, bases)
    if found is None:
        raise missing_image(name, bases, path.name)
    boxes, classes, crowd, segs = [], [], [], []
    for ann in anns:
        bbox = ann.get("bbox") or polygon_box(ann.get("segmentation"))
        where = f"{path.name}: annotation {ann.get('id', '?')} of image {name}"
        try:
            x, y, w, h = (float(v) for v in (bbox or ()))  # none: too few values, caught below
        except (TypeError, ValueError):
            raise DatasetError(f"{where} has no readable bbox ({str(ann.get('bbox'))[:60]}).",
                               fix="A COCO bbox is [x, y, width, height] in pixels.") from None
        if w < 0 or h < 0:
            raise DatasetError(f"{where} has a negative width or height ({bbox}).",
                               fix="A COCO bbox is [x, y, width, height], not two corners.")
        cid = ann.get("category_id")
        if cid not in known:
            raise DatasetError(f"{where} has category_id {cid}, which 'categories' does not list.",
                               fix="Add the category, or correct the annotation.")
        boxes.append((x, y, x + w, y + h))
        classes.append(int(cid))
        crowd.append(bool(ann.get("iscrowd", 0)))
        segs.append(ann.get("segmentation") or None)
    width, height = image.get("width"), image.get("height")
    return DatasetItem(index=i, image=found, image_id=int(image["id"]),
                       width=int(width) if width else None, height=int(height) if height else None,
                       boxes=np.asarray(boxes, np.float32).reshape(-1, 4), classes=np.asarray(classes, np.int64),
                       crowd=np.asarray(crowd, bool), segmentations=tuple(segs))
