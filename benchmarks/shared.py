"""What the benchmark scripts share: the shared models and the input shapes their dynamic dims need (from
tests/support/shared.py, which the tests use too), and writing a result document as JSON."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.shared import (
    ROOT,
    SHARED_SHAPES,
    corpus_dir,
    corpus_models,
    corpus_shapes,
    model_shapes,
    shared_models,
)

__all__ = ["ROOT", "SHARED_SHAPES", "corpus_dir", "corpus_models", "corpus_shapes", "model_shapes", "shared_models",
           "write_json"]


def write_json(doc: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"JSON: {path}")
