"""Reading archives and arrays that may be hostile: sizes bounded before anything is inflated or allocated.

A 2 MB project whose `project.json` inflates to 2 GB took 4.3 GB of memory and 15 s before it was refused; a `.npy`
header can claim a shape of 10¹² elements, and numpy allocates it before it reads a byte. Every read here checks
the declared size first, then reads at most the limit plus one byte (a declared size can lie), and refuses with
:class:`UnsafeFile` (a user error, exit 2) in well under a second and a few MB:

- ZIP members: a name that climbs out of the archive (`../`, an absolute path, a drive) is refused; each member and
  the archive's total have limits the caller sets from what the file may legitimately hold; a member that inflates
  more than :data:`MAX_RATIO` times its compressed size and past 16 MB is a bomb.
- `.npy` arrays (alone or in an `.npz`): the header's shape and dtype must give exactly the bytes that follow, no
  object dtype (pickles run code), and no more than the limit.
- JSON: nesting deeper than Python's parser takes is refused, not a crash.
"""

from __future__ import annotations

import io
import json
import math
import zipfile
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any, BinaryIO

import numpy as np

from app.core.errors import TrtlabError
from app.core.units import human_bytes

MAX_RATIO = 200                # inflated / compressed: text compresses 5–20×, zeros 1000×
_RATIO_FLOOR = 16 * 2**20      # below this inflated size the ratio is not checked (small members of zeros)


class UnsafeFile(TrtlabError):
    """A file trtlab refuses to read in full: too large for what it should hold, a bomb, or a name that escapes."""

    title = "File refused"


def _fix(what: str) -> str:
    return f"Check that this is the {what} you meant, and write it again if it is damaged."


def check_archive(zf: zipfile.ZipFile, what: str, *, member_limit: int, total_limit: int) -> None:
    """Refuse an archive whose member names escape it, or whose declared sizes pass the limits or look like a bomb."""
    total = 0
    for info in zf.infolist():
        name = info.filename
        parts = PurePosixPath(name.replace("\\", "/")).parts
        if name.startswith(("/", "\\")) or ".." in parts or PureWindowsPath(name).drive:
            raise UnsafeFile(f"The {what} holds a member named '{name[:120]}', which points outside the archive.",
                             fix=_fix(what))
        if info.file_size > member_limit:
            raise UnsafeFile(f"The {what}'s member '{name[:120]}' inflates to {human_bytes(info.file_size)}, more than "
                             f"the {human_bytes(member_limit)} such a member may hold.", fix=_fix(what))
        if info.file_size > _RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            ratio = info.file_size // max(info.compress_size, 1)
            raise UnsafeFile(f"The {what}'s member '{name[:120]}' inflates {ratio} times (to "
                             f"{human_bytes(info.file_size)}): a ZIP bomb, not a {what}.", fix=_fix(what))
        total += info.file_size
    if total > total_limit:
        raise UnsafeFile(f"The {what} inflates to {human_bytes(total)} in all, more than the "
                         f"{human_bytes(total_limit)} a {what} may hold.", fix=_fix(what))


def read_member(zf: zipfile.ZipFile, name: str, what: str, limit: int) -> bytes:
    """A member's bytes, never more than `limit` of them read (its declared size may be false)."""
    info = zf.getinfo(name)
    if info.file_size > limit:
        raise UnsafeFile(f"The {what}'s '{name}' inflates to {human_bytes(info.file_size)}, more than the "
                         f"{human_bytes(limit)} it may hold.", fix=_fix(what))
    with zf.open(info) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise UnsafeFile(f"The {what}'s '{name}' inflates past {human_bytes(limit)}, though its header says "
                         f"{human_bytes(info.file_size)}.", fix=_fix(what))
    return data


def load_json(data: bytes, what: str) -> Any:
    """JSON from bytes; invalid text and nesting too deep for the parser are ValueError."""
    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError as exc:
        raise ValueError(f"the {what} nests deeper than any trtlab writes") from exc


def read_npy(fh: BinaryIO, size: int, what: str, limit: int) -> np.ndarray:
    """One `.npy` array from a stream of `size` bytes, its header checked against those bytes before anything is
    allocated."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fh)
        shape, fortran, dtype = (fmt.read_array_header_1_0(fh) if version == (1, 0) else
                                 fmt.read_array_header_2_0(fh, max_header_size=2**16))
    except (ValueError, OSError) as exc:  # malformed, not hostile: the caller says the file is damaged
        raise ValueError(f"the {what} is not a numpy array file ({exc})") from exc
    if dtype.hasobject:
        raise UnsafeFile(f"The {what} holds Python objects (a pickle), which trtlab does not load: loading one "
                         "runs code.", fix="Save plain numeric arrays (np.save with a numeric dtype).")
    count = math.prod(int(d) for d in shape)
    nbytes = count * dtype.itemsize
    body = size - fh.tell()
    if nbytes > limit:
        raise UnsafeFile(f"The {what} claims a {'×'.join(map(str, shape))} {dtype} array ({human_bytes(nbytes)}), "
                         f"more than the {human_bytes(limit)} it may hold.", fix=_fix(what))
    if nbytes != body:
        raise UnsafeFile(f"The {what} claims a {'×'.join(map(str, shape))} {dtype} array ({human_bytes(nbytes)}) "
                         f"but holds {human_bytes(max(body, 0))} of data.", fix=_fix(what))
    data = fh.read(nbytes)
    array = np.frombuffer(data, dtype=dtype, count=count).copy()
    return array.reshape(shape, order="F" if fortran else "C")


def load_npz(data_or_path: bytes | str, what: str, *, member_limit: int, total_limit: int) -> dict[str, np.ndarray]:
    """Every array of an `.npz` (bytes or a path), each checked as :func:`read_npy` does, the archive as
    :func:`check_archive` does."""
    source: Any = io.BytesIO(data_or_path) if isinstance(data_or_path, bytes) else data_or_path
    try:
        with zipfile.ZipFile(source) as zf:
            check_archive(zf, what, member_limit=member_limit, total_limit=total_limit)
            out = {}
            for info in zf.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                raw = read_member(zf, info.filename, what, member_limit)
                out[info.filename[:-4]] = read_npy(io.BytesIO(raw), len(raw), f"{what}'s '{info.filename}'",
                                                   member_limit)
            return out
    except zipfile.BadZipFile as exc:
        raise ValueError(f"the {what} is not a readable .npz archive ({exc})") from exc


def read_json_file(path: str, what: str, limit: int) -> Any:
    """A JSON file's document: refused (UnsafeFile) beyond `limit` bytes before anything is read; text that is not
    JSON, or nests deeper than the parser takes, is ValueError."""
    import os

    size = os.path.getsize(path)
    if size > limit:
        raise UnsafeFile(f"The {what} is {human_bytes(size)}, more than the {human_bytes(limit)} such a file may be.",
                         fix=_fix(what))
    with open(path, "rb") as fh:
        return load_json(fh.read(limit + 1), what)
