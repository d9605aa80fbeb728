"""Classification: ImageNet-style class folders (``root/<class>/*.jpg``: classes are the folder names in sorted
order, indices 0, 1, ... as torchvision's ImageFolder numbers them) and a CSV/TXT of ``file,label`` (a comma, or
white space in a ``.txt``; the label a class name or an index; a first row whose label is not an index and whose
file is not an image is a header). An index label takes its name from ``classes.txt``/``labels.txt`` beside the
file or in the folder, else is named by itself; name labels are numbered in the order of such a file, else sorted."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from app.core.dataset.errors import DatasetError
from app.core.dataset.files import (
    find_names_file,
    has_images,
    is_image,
    list_images,
    missing_image,
    read_names,
    read_text,
    resolve_image,
    unique_bases,
)
from app.core.dataset.types import Dataset, DatasetItem


def class_folders(root: Path) -> list[Path]:
    """The sub-folders of ``root`` that hold images, sorted by name."""
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".") and has_images(p))


def read_class_folders(root: Path) -> Dataset:
    folders = class_folders(root)
    if not folders:
        raise DatasetError(f"{root} has no class folders with images.",
                           fix="Class folders are root/<class name>/<images>.")
    records: list[DatasetItem] = []
    for cid, folder in enumerate(folders):
        for image in list_images(folder):
            records.append(DatasetItem(index=len(records), image=image, image_id=len(records), class_id=cid))
    categories = tuple((cid, folder.name) for cid, folder in enumerate(folders))
    return Dataset(format="class-folders", root=root, task="classification", categories=categories,
                   records=tuple(records))


def find_label_csv(root: Path) -> Path | None:
    found = sorted(root.glob("*.csv"))
    return found[0] if len(found) == 1 else None


def split_rows(path: Path) -> list[tuple[int, list[str]]]:
    """(line number, fields) of a ``file,label`` file: CSV when it has commas, else white space."""
    text = read_text(path, "label file")
    lines = text.splitlines()
    comma = path.suffix.lower() == ".csv" or any("," in line for line in lines[:5])
    rows: list[tuple[int, list[str]]] = []
    if comma:
        for n, fields in enumerate(csv.reader(io.StringIO(text)), 1):
            if any(f.strip() for f in fields):
                rows.append((n, [f.strip() for f in fields]))
    else:
        for n, line in enumerate(lines, 1):
            if line.strip():
                rows.append((n, line.strip().rsplit(None, 1)))
    return rows


def read_label_csv(root: Path, labels: Path | None = None) -> Dataset:
    path = labels or find_label_csv(root)
    if path is None:
        raise DatasetError(f"No label CSV in {root}.", fix="Give the file,label list with --labels.")
    rows = split_rows(path)
    if rows and _is_header(rows[0][1]):
        rows = rows[1:]
    if not rows:
        raise DatasetError(f"{path} has no rows.", fix="Write one line per image: file,label.")
    for n, fields in rows:
        if len(fields) < 2 or not fields[0] or not fields[1]:
            raise DatasetError(f"{path}, line {n} does not parse: {','.join(fields)[:80]!r}.",
                               fix="Each line is: file,label (the label a class name or an index).")
    names_file = find_names_file(unique_bases(path.parent, root))
    names = read_names(names_file) if names_file else None
    by_index = all(f[1].lstrip("-").isdigit() for _n, f in rows)
    if by_index:
        top = max(int(f[1]) for _n, f in rows)
        count = max(len(names or []), top + 1)
        categories = tuple((k, names[k] if names and k < len(names) else str(k)) for k in range(count))
        ids = {str(k): k for k in range(count)}
    else:
        order = names if names else sorted({f[1] for _n, f in rows})
        categories = tuple(enumerate(order))
        ids = {name: k for k, name in categories}
    bases = unique_bases(path.parent, root, root / "images")
    records: list[DatasetItem] = []
    for n, fields in rows:
        label = str(int(fields[1])) if by_index else fields[1]
        if label not in ids:
            raise DatasetError(f"{path}, line {n}: the label {fields[1]!r} is not in {names_file}.",
                               fix="Add it to the names file, or correct the label.")
        image = resolve_image(fields[0], bases)
        if image is None:
            raise missing_image(fields[0], bases, f"{path.name}, line {n}")
        records.append(DatasetItem(index=len(records), image=image, image_id=len(records), class_id=ids[label]))
    return Dataset(format="csv", root=root, task="classification", categories=categories, records=tuple(records),
                   labels=path)


def _is_header(fields: list[str]) -> bool:
    return len(fields) >= 2 and not fields[1].lstrip("-").isdigit() and not is_image(Path(fields[0]))
