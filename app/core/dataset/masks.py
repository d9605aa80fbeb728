"""Semantic segmentation: a PNG mask beside each image. Either an image folder and a mask folder side by side
(``images/`` with ``masks/``, ``annotations/``, ``labels/`` or ``SegmentationClass/``; Pascal VOC's ``JPEGImages/``
with ``SegmentationClass/``), a mask found by the image's path under the image folder or by its stem, or
``name_mask.png`` beside ``name.jpg``. A mask is a palette PNG (the pixel's index is its class) or a greyscale
PNG of class indices; 255 is left out ("ignore"). Class names come from ``classes.txt``/``labels.txt``; without
one every mask is read once, at load, to find the classes present (each is named by its index)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from app.core.dataset.errors import DatasetError
from app.core.dataset.files import IGNORE_INDEX, find_names_file, list_images, read_mask, read_names
from app.core.dataset.types import Dataset, DatasetItem

IMAGE_DIRS = ("images", "JPEGImages", "imgs")
MASK_DIRS = ("masks", "annotations", "labels", "SegmentationClass", "SegmentationClassPNG")
MASK_SUFFIX = "_mask"


def mask_layout(root: Path) -> tuple[Path, Path] | None:
    """(image folder, mask folder) when the root has both and at least one PNG mask matches an image's stem."""
    for image_dir in (root / d for d in IMAGE_DIRS):
        if not image_dir.is_dir():
            continue
        stems = {p.stem for p in list_images(image_dir)}
        for mask_dir in (root / d for d in MASK_DIRS):
            if mask_dir.is_dir() and any(p.stem in stems for p in mask_dir.rglob("*.png")):
                return image_dir, mask_dir
    return None


def suffix_masks(root: Path) -> bool:
    """Whether any ``name_mask.png`` lies beside a ``name.*`` image."""
    for mask in root.rglob(f"*{MASK_SUFFIX}.png"):
        stem = mask.name[: -len(MASK_SUFFIX + ".png")]
        if any(p.stem == stem and p != mask for p in mask.parent.glob(f"{stem}.*")):
            return True
    return False


def read_masks(root: Path, labels: Path | None = None) -> Dataset:
    layout = mask_layout(root)
    pairs = _folder_pairs(*layout) if layout else _suffix_pairs(root)
    if not pairs:
        raise DatasetError(f"No image in {root} has a PNG mask.",
                           fix="Put images in images/ and masks with the same names in masks/, or name each mask "
                               "<image name>_mask.png beside its image.")
    records = tuple(DatasetItem(index=i, image=img, image_id=i, mask_path=mask) for i, (img, mask) in enumerate(pairs))
    read_mask(pairs[0][1])  # refuses a colour mask at once, not on the hundredth image
    mask_dir = layout[1] if layout else root
    names_file = labels or find_names_file((root, mask_dir), ("classes.txt", "labels.txt", "names.txt"))
    notes: tuple[str, ...] = ()
    if names_file is not None:
        categories = tuple(enumerate(read_names(names_file)))
    else:
        present: set[int] = set()
        for _img, mask in pairs:
            present.update(int(v) for v in np.unique(read_mask(mask)) if v != IGNORE_INDEX)
        categories = tuple((k, str(k)) for k in sorted(present))
        notes = ("No classes.txt: the classes are the values found in the masks, named by their index.",)
    without = len(list_images(layout[0])) - len(pairs) if layout else 0
    if without:
        notes += (f"{without:,} images have no mask and are left out.",)
    return Dataset(format="masks", root=root, task="segmentation", categories=categories, records=records,
                   labels=names_file, notes=notes)


def _folder_pairs(image_dir: Path, mask_dir: Path) -> list[tuple[Path, Path]]:
    masks = {p.relative_to(mask_dir).with_suffix(""): p for p in mask_dir.rglob("*.png")}
    by_stem: dict[str, Path] = {}
    for rel, p in masks.items():
        by_stem.setdefault(rel.name, p)
    pairs, used = [], set()
    for image in list_images(image_dir):
        rel = image.relative_to(image_dir).with_suffix("")
        mask = masks.get(rel) or by_stem.get(rel.name)
        if mask is not None:
            pairs.append((image, mask))
            used.add(mask)
    stems = {p.stem for p in list_images(image_dir)}
    for mask in sorted(set(masks.values()) - used):
        if mask.stem not in stems:
            raise DatasetError(f"The mask {mask} has no image (looked for {mask.stem}.* under {image_dir}).",
                               fix="Put the image there, or remove the mask.")
    return pairs


def _suffix_pairs(root: Path) -> list[tuple[Path, Path]]:
    pairs = []
    for image in list_images(root):
        if image.stem.endswith(MASK_SUFFIX):
            continue
        mask = image.with_name(image.stem + MASK_SUFFIX + ".png")
        if mask.is_file():
            pairs.append((image, mask))
    for mask in sorted(root.rglob(f"*{MASK_SUFFIX}.png")):
        stem = mask.name[: -len(MASK_SUFFIX + ".png")]
        if not any(p.stem == stem and p != mask for p in mask.parent.glob(f"{stem}.*")):
            raise DatasetError(f"The mask {mask} has no image (looked for {stem}.* beside it).",
                               fix="Put the image there, or remove the mask.")
    return pairs
