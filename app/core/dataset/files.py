"""Finding a dataset's files: images under a folder, an image's size read from its header, masks, names files."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from app.core.dataset.errors import DatasetError

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".pgm", ".webp", ".tif", ".tiff", ".gif")
NAMES_FILES = ("classes.txt", "labels.txt", "obj.names", "names.txt")
IGNORE_INDEX = 255  # a mask pixel of this value is left out of every class (its edges, "don't care")
MAX_LABEL_BYTES = 1 << 30  # a label file larger than this is not a label file


def is_image(path: Path) -> bool:
    return path.suffix.lower() in IMAGE_EXTENSIONS


def list_images(folder: Path, *, recursive: bool = True) -> list[Path]:
    """The images under ``folder``, sorted by path (hidden folders skipped)."""
    if not recursive:
        return sorted(p for p in folder.iterdir() if p.is_file() and is_image(p))
    found: list[Path] = []
    for here, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found.extend(Path(here) / f for f in files if is_image(Path(f)))
    return sorted(found)


def has_images(folder: Path) -> bool:
    """Whether any image lies under ``folder`` (stops at the first)."""
    for _here, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        if any(is_image(Path(f)) for f in files):
            return True
    return False


def image_size(path: Path) -> tuple[int, int]:
    """(width, height) from the image's header; the pixels are not decoded."""
    try:
        with Image.open(path) as im:
            return int(im.size[0]), int(im.size[1])
    except FileNotFoundError:
        raise DatasetError(f"The image {path} is missing.", fix="Put it back, or remove its labels.") from None
    except OSError as exc:
        raise DatasetError(f"The image {path} cannot be read ({exc}).", fix="Replace it or remove its labels.") from exc


def read_mask(path: Path) -> np.ndarray:
    """A class mask: a palette PNG (its indices are the classes) or a greyscale index PNG, as uint8 H×W."""
    try:
        with Image.open(path) as im:
            mode = im.mode
            if mode in ("P", "L"):
                return np.asarray(im, dtype=np.uint8)  # a palette image's array is its indices, not its colours
            if mode == "1":
                return np.asarray(im.convert("L"), dtype=np.uint8) // 255
            if mode in ("I;16", "I") and im.getextrema()[1] <= 255:
                return np.asarray(im, dtype=np.int32).astype(np.uint8)
    except FileNotFoundError:
        raise DatasetError(f"The mask {path} is missing.", fix="Put it back, or remove its image.") from None
    except OSError as exc:
        raise DatasetError(f"The mask {path} cannot be read ({exc}).", fix="Replace it.") from exc
    raise DatasetError(f"The mask {path} is a {mode} image; a class mask is a palette (P) or greyscale (L) PNG whose "
                       "pixel values are class indices.",
                       fix="Save the masks as index or palette PNGs (a colour picture of the classes cannot be read "
                           "back into classes).")


def read_text(path: Path, what: str) -> str:
    """A label file's text (UTF-8, a BOM dropped), refused past :data:`MAX_LABEL_BYTES`."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise DatasetError(f"The {what} {path} does not exist.", fix="Check the path.") from None
    if size > MAX_LABEL_BYTES:
        raise DatasetError(f"The {what} {path} is {size:,} bytes, too large for a label file.",
                           fix="Check that it is the right file.")
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"The {what} {path} is not UTF-8 text ({exc}).", fix="Save it as UTF-8.") from exc


def read_names(path: Path) -> list[str]:
    """One class name per line, in index order (blank lines at the end dropped)."""
    names = [line.strip() for line in read_text(path, "names file").splitlines()]
    while names and not names[-1]:
        names.pop()
    return names


def find_names_file(folders: Iterable[Path], candidates: Sequence[str] = NAMES_FILES) -> Path | None:
    """The first names file (``classes.txt``, ``labels.txt``, ...) found in ``folders``."""
    for folder in folders:
        for name in candidates:
            if (folder / name).is_file():
                return folder / name
    return None


def resolve_image(name: str, bases: Sequence[Path]) -> Path | None:
    """The image ``name`` (relative, or absolute) under the first base that has it."""
    path = Path(name)
    if path.is_absolute():
        return path if path.is_file() else None
    for base in bases:
        if (base / path).is_file():
            return base / path
    return None


def missing_image(name: str, bases: Sequence[Path], where: str) -> DatasetError:
    looked = ", ".join(str(b) for b in dict.fromkeys(bases))
    return DatasetError(f"The image {name} named in {where} is missing (looked in {looked}).",
                        fix="Put the image there, or remove its labels.")


def unique_bases(*bases: Path) -> list[Path]:
    return list(dict.fromkeys(bases))
