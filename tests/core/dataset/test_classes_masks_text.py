"""Class folders and CSV labels (rotated sample photos), PNG masks (drawn shapes) and text lines (rendered)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from app.core.dataset import DatasetError, detect_format, load_dataset, read_mask
from app.core.measure import sample_photos
from tests.core.dataset.makers import font, not_blank, save_previews

ROTATIONS = ("rot000", "rot090", "rot180", "rot270")


@pytest.fixture
def rotated(tmp_path):
    photos = sample_photos()[:3]
    if not photos:
        pytest.skip("the sample photos are missing from this install")
    root = tmp_path / "rotations"
    rows = []
    for photo in photos:
        with Image.open(photo) as im:
            small = im.convert("RGB").resize((96, 64))
        for k, name in enumerate(ROTATIONS):
            (root / name).mkdir(parents=True, exist_ok=True)
            path = root / name / f"{photo.stem}.jpg"
            small.rotate(90 * k, expand=True).save(path)
            rows.append((f"{name}/{photo.stem}.jpg", name, k))
    return root, rows


def test_class_folders(rotated, tmp_path):
    root, rows = rotated
    assert detect_format(root) == "class-folders"
    ds = load_dataset(root)
    assert ds.task == "classification" and ds.categories == tuple(enumerate(ROTATIONS))
    assert len(ds) == len(rows) and ds.class_counts() == {k: len(rows) // 4 for k in range(4)}
    for item in ds.items():
        assert ds.category_name(item.class_id) == item.image.parent.name
        with Image.open(item.image) as im:  # a 90° or 270° turn makes the landscape photo a portrait
            assert (im.width < im.height) == (item.class_id in (1, 3))
    assert ds.summary() == f"class folders · {len(rows)} images · 4 classes"
    assert all(not_blank(p) for p in save_previews(ds, "class_folders", tmp_path))


def test_csv_by_name_by_index_with_and_without_header(rotated, tmp_path):
    root, rows = rotated
    (root / "labels.csv").write_text("file,label\n" + "".join(f"{f},{name}\n" for f, name, _k in rows))
    assert detect_format(root) == "csv"
    ds = load_dataset(root)
    assert ds.categories == tuple(enumerate(ROTATIONS)) and len(ds) == len(rows)
    assert [ds.category_name(i.class_id) for i in ds.items()] == [name for _f, name, _k in rows]
    (root / "labels.csv").unlink()
    index_file = tmp_path / "val.txt"
    index_file.write_text("".join(f"{root / f} {k}\n" for f, _name, k in rows))
    (tmp_path / "classes.txt").write_text("\n".join(ROTATIONS) + "\n")
    ds = load_dataset(root, labels=index_file)
    assert ds.format == "csv" and ds.categories == tuple(enumerate(ROTATIONS))
    assert [i.class_id for i in ds.items()] == [k for _f, _n, k in rows]
    assert all(not_blank(p) for p in save_previews(ds, "csv_rotations", tmp_path))


def test_csv_errors(rotated, tmp_path):
    root, rows = rotated
    csv = tmp_path / "bad.csv"
    csv.write_text(f"{rows[0][0]},{rows[0][1]}\n{rows[1][0]}\n")
    with pytest.raises(DatasetError, match=r"bad\.csv, line 2 does not parse"):
        load_dataset(root, labels=csv)
    csv.write_text(f"{rows[0][0]},{rows[0][1]}\nrot090/nowhere.jpg,rot090\n")
    with pytest.raises(DatasetError, match=r"image rot090/nowhere\.jpg named in bad\.csv, line 2 is missing"):
        load_dataset(root, labels=csv)


def _draw_masks(root, mode):
    (root / "images").mkdir(parents=True)
    (root / "masks").mkdir()
    truth = []
    for k in range(3):
        photo = Image.new("RGB", (160, 120), (90 + 40 * k, 120, 150))
        mask = Image.new("L", (160, 120), 0)
        d = ImageDraw.Draw(mask)
        d.ellipse((10 + 10 * k, 15, 80 + 10 * k, 95), fill=1)        # class 1: an ellipse
        d.rectangle((95, 30 + 5 * k, 150, 100), fill=2)              # class 2: a rectangle
        d.line((0, 110, 159, 110), fill=255, width=3)                # ignored pixels
        photo_draw = ImageDraw.Draw(photo)
        photo_draw.ellipse((10 + 10 * k, 15, 80 + 10 * k, 95), fill=(250, 250, 250))
        photo_draw.rectangle((95, 30 + 5 * k, 150, 100), fill=(30, 30, 30))
        photo.save(root / "images" / f"img_{k}.jpg")
        if mode == "P":
            pal = mask.convert("P")
            pal.putpalette([0, 0, 0, 255, 0, 0, 0, 255, 0] + [0, 0, 0] * 252 + [255, 255, 255])
            pal.save(root / "masks" / f"img_{k}.png")
        else:
            mask.save(root / "masks" / f"img_{k}.png")
        truth.append(np.asarray(mask))
    return truth


@pytest.mark.parametrize("mode", ["P", "L"])
def test_png_masks_keep_their_values(tmp_path, mode):
    root = tmp_path / f"seg_{mode}"
    truth = _draw_masks(root, mode)
    assert Image.open(root / "masks" / "img_0.png").mode == mode
    (root / "classes.txt").write_text("background\nball\nbox\n")
    assert detect_format(root) == "masks"
    ds = load_dataset(root)
    assert ds.task == "segmentation" and ds.categories == ((0, "background"), (1, "ball"), (2, "box"))
    for item, want in zip(ds.items(), truth, strict=True):
        np.testing.assert_array_equal(item.mask(), want)
    assert set(np.unique(truth[0])) == {0, 1, 2, 255}
    assert ds.class_counts() == {0: 3, 1: 3, 2: 3}
    assert all(not_blank(p) for p in save_previews(ds, f"masks_{mode}", tmp_path))


def test_mask_suffix_beside_images_and_classes_from_values(tmp_path):
    root = tmp_path / "seg"
    truth = _draw_masks(root, "L")
    flat = tmp_path / "flat"
    flat.mkdir()
    for k in range(3):
        (flat / f"img_{k}.jpg").write_bytes((root / "images" / f"img_{k}.jpg").read_bytes())
        (flat / f"img_{k}_mask.png").write_bytes((root / "masks" / f"img_{k}.png").read_bytes())
    assert detect_format(flat) == "masks"
    ds = load_dataset(flat)
    assert ds.categories == ((0, "0"), (1, "1"), (2, "2")) and ds.notes
    np.testing.assert_array_equal(ds.item(2).mask(), truth[2])


def test_colour_masks_and_orphan_masks_are_refused(tmp_path):
    root = tmp_path / "seg"
    _draw_masks(root, "L")
    Image.open(root / "masks" / "img_0.png").convert("RGB").save(root / "masks" / "img_0.png")
    with pytest.raises(DatasetError, match="is a RGB image; a class mask is a palette"):
        load_dataset(root)
    with pytest.raises(DatasetError, match="palette"):
        read_mask(root / "masks" / "img_0.png")
    Image.new("L", (8, 8)).save(root / "masks" / "img_0.png")
    (root / "images" / "img_1.jpg").unlink()
    with pytest.raises(DatasetError, match=r"mask .*img_1\.png has no image"):
        load_dataset(root)


TEXTS = ("FP16 agrees", "INT8 costs 0.4 mAP", "Latency 3.2 ms", "trtlab 2024")


def test_text_lines_paddleocr_rec_gt(tmp_path):
    root = tmp_path / "rec"
    (root / "images").mkdir(parents=True)
    lines = []
    for k, text in enumerate(TEXTS):
        im = Image.new("RGB", (240, 40), "white")
        ImageDraw.Draw(im).text((8, 8), text, fill="black", font=font(20))
        im.save(root / "images" / f"word_{k}.png")
        lines.append(f"images/word_{k}.png\t{text}")
    (root / "rec_gt_val.txt").write_text("\n".join(lines) + "\n")
    assert detect_format(root) == "text-lines"
    ds = load_dataset(root)
    assert ds.task == "recognition" and [i.text for i in ds.items()] == list(TEXTS)
    assert ds.summary().startswith("text lines · 4 images · ")
    assert all(not_blank(p) for p in save_previews(ds, "text_lines", tmp_path))
    (root / "rec_gt_val.txt").write_text(lines[0] + "\nimages/word_1.png only a path\n")
    with pytest.raises(DatasetError, match=r"rec_gt_val\.txt, line 2 does not parse"):
        load_dataset(root)
    (root / "rec_gt_val.txt").write_text("images/missing.png\thello\n")
    with pytest.raises(DatasetError, match=r"image images/missing\.png named in rec_gt_val\.txt, line 1 is missing"):
        load_dataset(root)


def test_empty_unknown_and_missing_folders(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DatasetError, match="is empty. trtlab expects images with labels in one of") as err:
        load_dataset(empty)
    assert "COCO JSON" in str(err.value) and "class folders" in str(err.value)
    (empty / "notes.md").write_text("hello")
    with pytest.raises(DatasetError, match="in no dataset format trtlab reads. It looked for") as err:
        detect_format(empty)
    assert "YOLO txt" in str(err.value) and err.value.fix
    with pytest.raises(DatasetError, match="does not exist"):
        load_dataset(tmp_path / "nowhere")
    with pytest.raises(DatasetError, match="Unknown dataset format"):
        load_dataset(empty, format="voc")
