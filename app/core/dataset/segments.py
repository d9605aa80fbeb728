"""COCO segmentations (polygons, uncompressed or compressed RLE) decoded to masks by pycocotools.mask."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from app.core.dataset.errors import DatasetError


def _mask_api() -> Any:
    try:
        from pycocotools import mask as mask_api
    except ImportError as exc:
        raise DatasetError("Reading COCO segmentation masks needs pycocotools, which is not installed.",
                           fix='Install it: pip install "trtlab[eval]".') from exc
    return mask_api


def decode_segmentations(segmentations: Sequence[Any], boxes: np.ndarray, width: int, height: int) -> np.ndarray:
    """N×H×W uint8 (0/1), one mask per box: its segmentation decoded, or the filled box where it has none."""
    out = np.zeros((len(boxes), height, width), np.uint8)
    for k in range(len(boxes)):
        seg = segmentations[k] if k < len(segmentations) else None
        if not seg:
            x1, y1, x2, y2 = (int(round(float(v))) for v in boxes[k])
            out[k, max(0, y1):max(0, y2), max(0, x1):max(0, x2)] = 1
            continue
        out[k] = _decode_one(seg, width, height)
    return out


def _decode_one(seg: Any, width: int, height: int) -> np.ndarray:
    api = _mask_api()
    if isinstance(seg, list):  # polygons: [[x1, y1, x2, y2, ...], ...]
        polys = [list(map(float, p)) for p in seg if len(p) >= 6]
        if not polys:
            return np.zeros((height, width), np.uint8)
        rle = api.merge(api.frPyObjects(polys, height, width))
    elif isinstance(seg, dict) and isinstance(seg.get("counts"), list):  # uncompressed RLE
        rle = api.frPyObjects(seg, height, width)
    elif isinstance(seg, dict):  # compressed RLE
        rle = dict(seg)
        if isinstance(rle.get("counts"), str):
            rle["counts"] = rle["counts"].encode("ascii")
    else:
        raise DatasetError(f"A COCO segmentation is neither polygons nor RLE: {str(seg)[:80]}",
                           fix="Check the annotation file.")
    return np.asarray(api.decode(rle), dtype=np.uint8).reshape(height, width)


def polygon_box(seg: Any) -> list[float] | None:
    """The x, y, w, h around polygons (for an annotation that gives a segmentation but no bbox)."""
    if not isinstance(seg, list):
        return None
    xs = [float(v) for p in seg for v in p[0::2]]
    ys = [float(v) for p in seg for v in p[1::2]]
    if not xs or not ys:
        return None
    return [min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys)]
