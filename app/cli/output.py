"""What every command shares and nothing else: the exit codes of the public interface (docs/cli.md) and writing a
result document as JSON. Its own module so that the commands and `main` import it, never each other."""

from __future__ import annotations

import json
import sys

from app.core.errors import TrtlabError

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
