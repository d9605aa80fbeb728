"""Which format a dataset folder is in, and reading it.

With ``labels`` given, its kind decides: ``.json`` COCO, ``.yaml`` YOLO's data file, ``.csv`` a ``file,label``
list, ``.txt`` text lines when its first line has a tab, else a ``file,label`` list. Without, the folder is tried
in this order, the first that fits wins:

1. COCO JSON: ``instances_*.json`` or ``_annotations.coco.json`` in the folder or its ``annotations/``;
2. YOLO txt: a ``data.yaml``/``dataset.yaml``, or a ``labels/`` folder of ``.txt`` beside ``images/``, or a ``.txt``
   beside an image with the same stem whose first line is five numbers;
3. PNG masks: ``images/`` (or ``JPEGImages/``) with ``masks/``, ``annotations/``, ``labels/`` or
   ``SegmentationClass/`` holding PNGs of the same stems, or ``name_mask.png`` beside ``name.jpg``;
4. text lines: ``rec_gt*.txt``, or the one ``.txt`` whose first line is ``image<TAB>text``;
5. CSV labels: the one ``.csv`` in the folder;
6. class folders: sub-folders holding images.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from app.core.dataset.classes import class_folders, find_label_csv, read_class_folders, read_label_csv
from app.core.dataset.coco import find_coco_json, read_coco
from app.core.dataset.errors import DatasetError
from app.core.dataset.files import is_image, list_images
from app.core.dataset.masks import mask_layout, read_masks, suffix_masks
from app.core.dataset.textlines import find_text_lines, first_line_tabbed, read_text_lines
from app.core.dataset.types import FORMAT_NAMES, Dataset
from app.core.dataset.yolo import find_yaml, read_yolo

LOOKED_FOR = (
    "COCO JSON (instances_*.json or _annotations.coco.json, here or in annotations/)",
    "YOLO txt (data.yaml, or labels/*.txt beside images/, or a .txt beside each image)",
    "PNG masks (images/ with masks/, annotations/, labels/ or SegmentationClass/; or name_mask.png)",
    "text lines (rec_gt*.txt, or a .txt of image<TAB>text)",
    "CSV labels (one .csv of file,label)",
    "class folders (root/<class>/<images>)",
)

_READERS: dict[str, Callable[[Path, Path | None], Dataset]] = {
    "coco": read_coco,
    "yolo": read_yolo,
    "class-folders": lambda root, _labels: read_class_folders(root),
    "csv": read_label_csv,
    "masks": read_masks,
    "text-lines": read_text_lines,
}


def detect_format(folder: str | Path, labels: str | Path | None = None) -> str:
    """The format's name (a key of :data:`FORMAT_NAMES`), by the rules above; refused naming what was looked for."""
    root = _folder(folder)
    if labels is not None:
        return _by_labels(_labels(labels))
    if find_coco_json(root) is not None:
        return "coco"
    if find_yaml(root) is not None or _yolo_labels(root):
        return "yolo"
    if mask_layout(root) is not None or suffix_masks(root):
        return "masks"
    if find_text_lines(root) is not None:
        return "text-lines"
    if find_label_csv(root) is not None:
        return "csv"
    if class_folders(root):
        return "class-folders"
    looked = "".join(f"\n  - {w}" for w in LOOKED_FOR)
    raise DatasetError(f"{root} is in no dataset format trtlab reads. It looked for:{looked}",
                       fix="Give the label file with --labels, or the format with --format.")


def load_dataset(folder: str | Path, labels: str | Path | None = None, format: str | None = None) -> Dataset:
    """The dataset in ``folder`` (its labels in ``labels`` where given), in ``format`` or the one detected."""
    root = _folder(folder)
    label_path = _labels(labels) if labels is not None else None
    name = format or detect_format(root, label_path)
    if name not in _READERS:
        raise DatasetError(f"Unknown dataset format {name!r}.", fix=f"Use one of: {', '.join(FORMAT_NAMES)}.")
    return _READERS[name](root, label_path)


def _folder(folder: str | Path) -> Path:
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise DatasetError(f"The dataset folder {root} does not exist." if not root.exists()
                           else f"{root} is a file, not a dataset folder.",
                           fix="Give the folder that holds the images and their labels.")
    if not any(p for p in root.iterdir() if not p.name.startswith(".")):
        looked = "".join(f"\n  - {w}" for w in LOOKED_FOR)
        raise DatasetError(f"The dataset folder {root} is empty. trtlab expects images with labels in one of:{looked}",
                           fix="Put the images and their labels there.")
    return root


def _labels(labels: str | Path) -> Path:
    path = Path(labels).expanduser()
    if not path.is_file():
        raise DatasetError(f"The label file {path} does not exist.", fix="Check the path given with --labels.")
    return path


def _by_labels(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".json":
        return "coco"
    if suffix in (".yaml", ".yml"):
        return "yolo"
    if suffix == ".csv":
        return "csv"
    if suffix == ".txt":
        return "text-lines" if first_line_tabbed(path) else "csv"
    raise DatasetError(f"trtlab cannot tell the format of the label file {path.name}.",
                       fix="Give a .json (COCO), .yaml (YOLO), .csv or .txt label file, or the format with --format.")


def _yolo_labels(root: Path) -> bool:
    """A labels/ folder of .txt beside images/, or a .txt of five numbers beside an image of the same stem."""
    if (root / "labels").is_dir() and (root / "images").is_dir():
        stems = {p.stem for p in list_images(root / "images")}
        if any(t.stem in stems for t in (root / "labels").rglob("*.txt")):
            return True
    for txt in sorted(root.rglob("*.txt"))[:200]:
        if any(is_image(p) for p in txt.parent.glob(f"{txt.stem}.*")) and _five_numbers(txt):
            return True
    return False


def _five_numbers(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.strip():
                    fields = line.split()
                    return len(fields) >= 5 and all(_number(f) for f in fields)
    except OSError:
        return False
    return True  # an empty label file: an image with no objects


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
