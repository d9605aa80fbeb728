"""Output paths checked before any work starts: never onto an input file, never into a folder that is not there."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

from app.core.errors import TrtlabError

# Every flag of any command that names a file trtlab writes (`--json -` is stdout).
OUTPUT_FLAGS = (("json", "--json"), ("out", "-o"))
# Flags naming files trtlab reads: an output must never replace one of them.
INPUT_FLAGS = (("inputs", "--inputs"), ("calib", "--calib"), ("plan", "--plan"))


class CliInputError(TrtlabError):
    title = "Invalid arguments"


class _ExternalData(Protocol):
    @property
    def location(self) -> str: ...


class ModelFile(Protocol):
    """What the checks read of a loaded model (`app.core.model.load_model`): its path and its external data."""

    @property
    def path(self) -> Path: ...

    @property
    def external(self) -> Sequence[_ExternalData]: ...


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.resolve() == b.resolve():
            return True
        return a.exists() and b.exists() and os.path.samefile(a, b)  # hard links, bind mounts
    except OSError:
        return False


def check_out_path(path: str | os.PathLike[str], flag: str, model: str | os.PathLike[str] | None = None,
                   inputs: Iterable[tuple[str, str | os.PathLike[str]]] = ()) -> Path:
    """An output file path that can be written, checked before any work starts: not the model nor any other file
    the command reads (``inputs``: (description, path) pairs), in a folder that exists (none is created)."""
    p = Path(path)
    protected = ([("the model", model)] if model is not None else []) + list(inputs)
    for what, other in protected:
        if other and _same_file(p, Path(other)):
            raise CliInputError(f"{flag} '{p}' is {what} itself; writing there would replace it.",
                                fix=f"Give {flag} another file name.")
    if p.is_dir():
        raise CliInputError(f"{flag} '{p}' is a folder.", fix=f"Give {flag} a file path.")
    parent = p.resolve().parent
    if not parent.is_dir():
        raise CliInputError(f"{flag} '{p}': the folder '{parent}' does not exist.", fix="Create it, or write "
                            "somewhere else.")
    if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise CliInputError(f"{flag} '{p}' cannot be written.", fix="Choose a folder you can write to.")
    return p


def read_files(args: argparse.Namespace, doc: ModelFile | None = None) -> list[tuple[str, Path]]:
    """The files a command reads besides the model: its external data (from the loaded ``doc``), the files of
    --inputs, --calib and --plan (a folder's files are protected one by one)."""
    out: list[tuple[str, Path]] = []
    if doc is not None:
        from app.core.model import resolve_external

        for location in sorted({r.location for r in doc.external}):
            out.append((f"the model's external data file '{location}'", resolve_external(doc.path, location)))
    for attr, flag in INPUT_FLAGS:
        given = getattr(args, attr, None)
        if not given:
            continue
        p = Path(given)
        files = [f for f in p.iterdir() if f.is_file()] if p.is_dir() else [p]
        out += [(f"the {flag} file", f) for f in files]
    return out


def check_outputs(args: argparse.Namespace, doc: ModelFile | None = None, out_flag: str = "-o") -> None:
    """Every output flag the command has (--json PATH, -o/--out, named ``out_flag`` in messages), against the
    model, every file it reads, and each other."""
    model = getattr(args, "model", None)
    reads = read_files(args, doc)
    seen: list[tuple[str, Path]] = []
    for attr, flag in OUTPUT_FLAGS:
        flag = out_flag if attr == "out" else flag
        given = getattr(args, attr, None)
        if not given or (attr == "json" and given == "-"):
            continue
        check_out_path(given, flag, model, [*reads, *((f"the {f} file", q) for f, q in seen)])
        seen.append((flag, Path(given)))
