"""YOLO txt: one ``.txt`` per image with the same stem, each line ``class cx cy w h`` normalised to [0, 1]
(a line with a polygon, ``class x1 y1 x2 y2 ...``, gives the box around it). The label of ``.../images/a.jpg`` is
``.../labels/a.txt`` (the last ``images`` folder of the path swapped for ``labels``, as Ultralytics does), else
``a.txt`` beside the image; an image without one has no objects. Class names come from ``data.yaml`` or
``dataset.yaml`` (``names:`` a list or a dict) in the folder or up to two folders above, else ``classes.txt`` or
``obj.names``; without any, a class is named by its index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from app.core.dataset.errors import DatasetError
from app.core.dataset.files import find_names_file, list_images, read_names, read_text
from app.core.dataset.types import Dataset, DatasetItem

YAML_NAMES = ("data.yaml", "dataset.yaml", "data.yml", "dataset.yml")
_SLACK = 0.01  # normalised values a little past [0, 1] are rounding; far past, they are pixels


def label_path(image: Path) -> Path:
    """Where the label file of ``image`` is: under ``labels/`` for an image under ``images/``, else beside it."""
    parts = image.parts
    for k in range(len(parts) - 2, -1, -1):
        if parts[k] == "images":
            mirrored = Path(*parts[:k], "labels", *parts[k + 1:]).with_suffix(".txt")
            if mirrored.is_file():
                return mirrored
            break
    return image.with_suffix(".txt")


def find_yaml(root: Path) -> Path | None:
    for folder in (root, root.parent, root.parent.parent):
        for name in YAML_NAMES:
            if (folder / name).is_file():
                return folder / name
    return None


def read_yolo(root: Path, labels: Path | None = None) -> Dataset:
    """A YOLO dataset; ``labels`` may name its ``data.yaml`` or a names file."""
    images = [p for p in list_images(root) if "labels" not in p.relative_to(root).parts[:-1]]
    if not images:
        raise DatasetError(f"{root} has no images.", fix="A YOLO dataset is images/ and labels/ (or .txt beside "
                                                         "each image).")
    names = _names(root, labels)
    records: list[DatasetItem] = []
    seen: set[int] = set()
    labelled: set[Path] = set()
    for i, image in enumerate(images):
        path = label_path(image)
        boxes, classes = _parse(path, names) if path.is_file() else (np.zeros((0, 4), np.float32), np.zeros(0, int))
        if path.is_file():
            labelled.add(path.resolve())
        seen.update(int(c) for c in classes)
        records.append(DatasetItem(index=i, image=image, image_id=i, boxes=boxes, classes=classes.astype(np.int64),
                                   crowd=np.zeros(len(classes), bool)))
    _check_orphans(root, labelled)
    count = len(names) if names is not None else (max(seen) + 1 if seen else 0)
    categories = tuple((k, names[k] if names is not None else str(k)) for k in range(count))
    notes = () if names is not None else ("No data.yaml or classes.txt: classes are named by their index.",)
    return Dataset(format="yolo", root=root, task="detection", categories=categories, records=tuple(records),
                   labels=labels, boxes_normalised=True, notes=notes)


def _names(root: Path, labels: Path | None) -> list[str] | None:
    if labels is not None and labels.suffix.lower() not in (".yaml", ".yml"):
        return read_names(labels)
    yaml_path = labels or find_yaml(root)
    if yaml_path is not None:
        return yaml_names(yaml_path)
    names_file = find_names_file((root, root.parent), ("classes.txt", "obj.names", "names.txt"))
    return read_names(names_file) if names_file else None


def yaml_names(path: Path) -> list[str]:
    """The ``names:`` of a YOLO data.yaml, a list or a dict of index → name."""
    import yaml

    try:
        doc: Any = yaml.safe_load(read_text(path, "YOLO data file"))
    except yaml.YAMLError as exc:
        raise DatasetError(f"{path} is not YAML ({exc}).", fix="Check the data file.") from exc
    names = doc.get("names") if isinstance(doc, dict) else None
    if isinstance(names, list):
        return [str(n) for n in names]
    if isinstance(names, dict):
        try:
            by_index = {int(k): str(v) for k, v in names.items()}
        except (TypeError, ValueError):
            raise DatasetError(f"{path}: 'names' has a key that is not a class index.",
                               fix="Write names as a list, or as a dict of index: name.") from None
        return [by_index.get(k, str(k)) for k in range(max(by_index, default=-1) + 1)]
    raise DatasetError(f"{path} has no 'names:' list.", fix="Add names: [class0, class1, ...] to it.")


def _parse(path: Path, names: list[str] | None) -> tuple[np.ndarray, np.ndarray]:
    boxes, classes = [], []
    for n, line in enumerate(read_text(path, "YOLO label file").splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        where = f"{path}, line {n}"
        try:
            cls, values = int(fields[0]), [float(v) for v in fields[1:]]
        except ValueError:
            raise DatasetError(f"{where} does not parse: {line.strip()[:80]!r}.",
                               fix="A YOLO label line is: class cx cy w h (an integer, then four numbers).") from None
        if len(values) == 4:
            cx, cy, w, h = values
        elif len(values) >= 6 and len(values) % 2 == 0:  # a segment polygon: the box around it
            xs, ys = values[0::2], values[1::2]
            cx, cy, w, h = (min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2, max(xs) - min(xs), max(ys) - min(ys)
        else:
            raise DatasetError(f"{where} has {len(fields)} fields: {line.strip()[:80]!r}.",
                               fix="A YOLO label line is: class cx cy w h (five fields).")
        if min(cx, cy, w, h) < -_SLACK or max(cx, cy, w, h) > 1 + _SLACK:
            raise DatasetError(f"{where} has values outside 0..1 ({line.strip()[:80]!r}): they look like pixels.",
                               fix="YOLO boxes are normalised by the image's width and height.")
        if cls < 0 or (names is not None and cls >= len(names)):
            raise DatasetError(f"{where} has class {cls}, but the names list has {len(names or [])} classes.",
                               fix="Correct the class, or add its name to data.yaml.")
        boxes.append((cx, cy, w, h))
        classes.append(cls)
    return np.asarray(boxes, np.float32).reshape(-1, 4), np.asarray(classes, np.int64)


def _check_orphans(root: Path, labelled: set[Path]) -> None:
    """A label file under ``labels/`` whose image is missing is refused, naming it."""
    labels_dir = root / "labels"
    if not labels_dir.is_dir():
        return
    for path in sorted(labels_dir.rglob("*.txt")):
        if path.name in ("classes.txt", "names.txt"):
            continue
        if path.resolve() not in labelled:
            raise DatasetError(f"The label file {path} has no image (looked for {path.stem}.* under "
                               f"{root / 'images'}).", fix="Put the image there, or remove the label file.")
