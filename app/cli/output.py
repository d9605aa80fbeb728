"""What every command shares and nothing else: the exit codes of the public interface (docs/cli.md) and writing a
result document as JSON. Its own module so that the commands and `main` import it, never each other."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from app.core.errors import TrtlabError

if TYPE_CHECKING:
    from app.core.results import JobDoc

EXIT_OK, EXIT_NOT_MET, EXIT_BAD_INPUT, EXIT_UNAVAILABLE, EXIT_JOB_FAILED = 0, 1, 2, 3, 4


def write_json(doc: object, target: str) -> None:
    """Write JSON to a path (atomically) or to stdout for '-'."""
    text = json.dumps(doc, indent=2, sort_keys=False)
    if target == "-":
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
        return
    from pathlib import Path

    from app.core.fileio import atomic_write_text

    if not Path(target).resolve().parent.is_dir():  # the write would create folders: a typo must not do that
        raise TrtlabError(f"Cannot write the JSON file '{target}': its folder does not exist.",
                          fix="Create the folder first, or give --json a path in an existing folder.")
    try:
        atomic_write_text(target, text + "\n")
    except OSError as exc:
        raise TrtlabError(f"Cannot write the JSON file '{target}': {exc.strerror or exc}.",
                          fix="Give --json a path in a folder you can write to, or '-' for stdout.") from exc


def add_model(doc: dict, model: str | None) -> None:
    """Every command's JSON names its model: the path as given (kept where the command wrote one) and the file's
    SHA-256, so that a report made from the JSON says what it is about and a CI log can tell two models apart."""
    from pathlib import Path

    if not model or not Path(model).is_file():
        return
    from app.core.fileio import file_sha256

    doc.setdefault("model", str(Path(model).resolve()))
    doc.setdefault("model_sha256", file_sha256(model))


def with_model(result: JobDoc, model: str | None) -> JobDoc:
    """`add_model` for a typed result: the model's path and digest, unless the job named them itself."""
    from pathlib import Path

    if not model or not Path(model).is_file():
        return result
    from app.core.fileio import file_sha256

    return result.replace(model=result.model or str(Path(model).resolve()),
                          model_sha256=result.model_sha256 or file_sha256(model))


def result_json(result: JobDoc, order: Iterable[str] = ()) -> dict[str, Any]:
    """A typed result's JSON with its keys in `order` (the job's, as it wrote them), the keys added since after."""
    doc = result.to_json()
    first = {k: doc[k] for k in order if k in doc}
    return {**first, **{k: v for k, v in doc.items() if k not in first}}
