"""Honest data for the dataset tests: pictures drawn here, so that every label is known by construction."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from app.core.dataset import Dataset, preview_pictures

DOC_CLASSES = ("title", "paragraph", "table", "figure")  # COCO ids 1..4, YOLO indices 0..3
PAGE = (420, 560)
WORDS = "model precision engine layer tensor accuracy latency graph input output calibration".split()


def font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    try:
        return ImageFont.truetype("DejaVuSans.ttf", size)
    except OSError:
        return ImageFont.load_default(size=size)


def render_page(seed: int) -> tuple[Image.Image, list[tuple[str, tuple[float, float, float, float]]]]:
    """A document page with a title, paragraphs, a table and a figure; each block's box is where it was drawn."""
    rng = random.Random(seed)
    page = Image.new("RGB", PAGE, "white")
    draw = ImageDraw.Draw(page)
    blocks: list[tuple[str, tuple[float, float, float, float]]] = []
    y = 24 + rng.randint(0, 12)
    title = " ".join(rng.choice(WORDS).capitalize() for _ in range(3))
    x0 = 30 + rng.randint(0, 20)
    draw.text((x0, y), title, fill="black", font=font(24))
    blocks.append(("title", tuple(map(float, draw.textbbox((x0, y), title, font=font(24))))))
    y = int(blocks[-1][1][3]) + 20
    order = ["paragraph", "table", "paragraph", "figure"] if seed % 2 else ["paragraph", "figure", "table"]
    for kind in order:
        if kind == "paragraph":
            lines = [" ".join(rng.choice(WORDS) for _ in range(5)) for _ in range(rng.randint(2, 4))]
            text = "\n".join(lines)
            draw.multiline_text((30, y), text, fill=(40, 40, 40), font=font(13), spacing=4)
            box = draw.multiline_textbbox((30, y), text, font=font(13), spacing=4)
        elif kind == "table":
            w, h, rows, cols = rng.randint(220, 340), rng.randint(70, 110), 4, 3
            box = (40, y, 40 + w, y + h)
            draw.rectangle(box, outline="black", width=2)
            for r in range(1, rows):
                draw.line([(40, y + r * h // rows), (40 + w, y + r * h // rows)], fill="black")
            for c in range(1, cols):
                draw.line([(40 + c * w // cols, y), (40 + c * w // cols, y + h)], fill="black")
        else:
            w, h = rng.randint(140, 220), rng.randint(90, 130)
            x = rng.randint(60, PAGE[0] - w - 30)
            box = (x, y, x + w, y + h)
            draw.rectangle(box, fill=(200, 225, 250), outline=(30, 60, 120), width=2)
            draw.ellipse((x + 15, y + 15, x + w - 15, y + h - 15), fill=(240, 160, 60))
        blocks.append((kind, tuple(map(float, box))))
        y = int(box[3]) + 18
    return page, blocks


def write_pages(root: Path, count: int = 3) -> list[list[tuple[str, tuple[float, float, float, float]]]]:
    """Pages as images/page_<k>.png; returns each page's blocks."""
    (root / "images").mkdir(parents=True, exist_ok=True)
    truth = []
    for k in range(count):
        page, blocks = render_page(k)
        page.save(root / "images" / f"page_{k}.png")
        truth.append(blocks)
    return truth


def write_coco(root: Path, truth: list, name: str = "instances_val.json", segmentation: bool = False) -> Path:
    images, annotations = [], []
    for k, blocks in enumerate(truth):
        images.append({"id": 100 + k, "file_name": f"page_{k}.png", "width": PAGE[0], "height": PAGE[1]})
        for kind, (x1, y1, x2, y2) in blocks:
            ann = {"id": len(annotations) + 1, "image_id": 100 + k, "category_id": DOC_CLASSES.index(kind) + 1,
                   "bbox": [x1, y1, x2 - x1, y2 - y1], "area": (x2 - x1) * (y2 - y1), "iscrowd": 0}
            if segmentation:
                ann["segmentation"] = [[x1, y1, x2, y1, x2, y2, x1, y2]]
            annotations.append(ann)
    doc = {"images": images, "annotations": annotations,
           "categories": [{"id": i + 1, "name": n} for i, n in enumerate(DOC_CLASSES)]}
    (root / "annotations").mkdir(parents=True, exist_ok=True)
    path = root / "annotations" / name
    path.write_text(json.dumps(doc))
    return path


def write_yolo(root: Path, truth: list) -> None:
    (root / "labels").mkdir(parents=True, exist_ok=True)
    for k, blocks in enumerate(truth):
        lines = []
        for kind, (x1, y1, x2, y2) in blocks:
            cx, cy = (x1 + x2) / 2 / PAGE[0], (y1 + y2) / 2 / PAGE[1]
            w, h = (x2 - x1) / PAGE[0], (y2 - y1) / PAGE[1]
            lines.append(f"{DOC_CLASSES.index(kind)} {cx:.6f} {cy:.6f} {w:.6f} {h:.6f}")
        (root / "labels" / f"page_{k}.txt").write_text("\n".join(lines) + "\n")
    (root / "data.yaml").write_text("path: .\nval: images\nnames:\n" + "".join(f"  - {n}\n" for n in DOC_CLASSES))


def save_previews(dataset: Dataset, name: str, out: Path) -> list[Path]:
    """The dataset's previews as PNGs in ``out`` (and in $TRTLAB_DATASET_PREVIEWS, when set, to be looked at)."""
    pictures = preview_pictures(dataset, n=3, side=320)
    width = sum(p.width for p in pictures) + 8 * (len(pictures) - 1)
    strip = Image.new("RGB", (width, max(p.height for p in pictures)), "white")
    x = 0
    for p in pictures:
        strip.paste(p, (x, 0))
        x += p.width + 8
    paths = [out / f"{name}.png"]
    if extra := os.environ.get("TRTLAB_DATASET_PREVIEWS"):
        Path(extra).mkdir(parents=True, exist_ok=True)
        paths.append(Path(extra) / f"{name}.png")
    for path in paths:
        strip.save(path)
    return paths


def not_blank(path: Path) -> bool:
    arr = np.asarray(Image.open(path).convert("L"), dtype=np.float32)
    return float(arr.std()) > 5.0
