"""What an evaluation reports beside its metrics: each image's value of the per-image metric (in the result, and as
JSON lines in a file when asked for), and a note when the dataset is too small for a narrow interval."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence

from app.core.evaluate.bootstrap import PairResult
from app.core.evaluate.metrics import PerImage, json_number
from app.core.fileio import atomic_write_text

SMALL_DATASET = 50  # fewer images than this: the result says its intervals are wide


def per_image_values(values: PerImage) -> list[float | None]:
    """Each image's value in the evaluation's order; null where it is undefined."""
    return [json_number(float(v)) for v in values.values]


def write_per_image(path: str | os.PathLike[str], names: Sequence[str], tables: Sequence[PerImage]) -> None:
    """One JSON line per image: its path, the metric, and each target's value (written atomically)."""
    lines = []
    for row, image in enumerate(tables[0].image_ids):
        values = {n: json_number(float(t.values[row])) for n, t in zip(names, tables, strict=True)}
        lines.append(json.dumps({"image": str(image), "metric": tables[0].metric, "values": values}))
    atomic_write_text(path, "".join(line + "\n" for line in lines))


def dataset_notes(images: int, metric: str, pairs: Sequence[PairResult], notes: Sequence[str] = ()) -> list[str]:
    """The dataset's notes, and under ``SMALL_DATASET`` images one saying that its intervals are wide: the widest
    interval of ``metric`` seen here, and the images that would halve it (a mean over images has a standard error
    that falls as 1/√N, so four times the images halve the interval; the dataset's metrics behave so roughly)."""
    out = list(notes)
    if images >= SMALL_DATASET:
        return out
    widths = [(d.high - d.low) * 100 for p in pairs if (d := p.differences.get(metric)) is not None
              and math.isfinite(d.high - d.low)]
    widest = max(widths, default=math.nan)
    text = (f"Only {images} image{'s' if images != 1 else ''}: the 95 % intervals are wide")
    if math.isfinite(widest) and widest > 0:
        text += f" ({metric}'s is up to {widest:.1f} points wide here)"
    elif math.isfinite(widest):
        text += f" ({metric}'s is 0 wide here only because the precisions scored alike on every image)"
    text += f". An interval narrows about as 1/√N with the images: about {4 * images} images would halve it."
    return [*out, text]
