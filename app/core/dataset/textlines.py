"""Text lines for recognisers: PaddleOCR's ``rec_gt_*.txt`` (or any ``.txt`` given or found) with one
``image<TAB>text`` line per image; the image path is relative to the label file's folder, the dataset folder or
its ``images/``. The text is everything after the first tab, kept as written (spaces included)."""

from __future__ import annotations

from pathlib import Path

from app.core.dataset.errors import DatasetError
from app.core.dataset.files import missing_image, read_text, resolve_image, unique_bases
from app.core.dataset.types import Dataset, DatasetItem


def find_text_lines(root: Path) -> Path | None:
    """``rec_gt*.txt`` in the folder, else the one ``.txt`` there whose first line is ``image<TAB>text``."""
    found = sorted(root.glob("rec_gt*.txt"))
    if found:
        return found[0]
    tabbed = [p for p in sorted(root.glob("*.txt")) if first_line_tabbed(p)]
    return tabbed[0] if len(tabbed) == 1 else None


def first_line_tabbed(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as fh:
            for line in fh:
                if line.strip():
                    return "\t" in line
    except OSError:
        return False
    return False


def read_text_lines(root: Path, labels: Path | None = None) -> Dataset:
    path = labels or find_text_lines(root)
    if path is None:
        raise DatasetError(f"No text-line file in {root} (looked for rec_gt*.txt, or one .txt of image<TAB>text).",
                           fix="Give the label file with --labels.")
    bases = unique_bases(path.parent, root, root / "images")
    records: list[DatasetItem] = []
    for n, line in enumerate(read_text(path, "text-line file").splitlines(), 1):
        if not line.strip():
            continue
        name, tab, text = line.partition("\t")
        where = f"{path}, line {n}"
        if not tab or not name.strip():
            raise DatasetError(f"{where} does not parse: {line[:80]!r}.",
                               fix="Each line is: image path, a tab, then the text it shows.")
        if text.lstrip().startswith("[{"):
            raise DatasetError(f"{where} holds detection boxes (PaddleOCR's det format), not a text line.",
                               fix="Give a recognition label file (rec_gt): image<TAB>text.")
        image = resolve_image(name.strip(), bases)
        if image is None:
            raise missing_image(name.strip(), bases, f"{path.name}, line {n}")
        records.append(DatasetItem(index=len(records), image=image, image_id=len(records), text=text))
    if not records:
        raise DatasetError(f"{path} has no lines.", fix="Write one line per image: image<TAB>text.")
    return Dataset(format="text-lines", root=root, task="recognition", categories=(), records=tuple(records),
                   labels=path)
