"""COCO JSON and YOLO txt read from rendered document pages whose block boxes are known by construction."""

from __future__ import annotations

import numpy as np
import pytest

from app.core.dataset import DatasetError, detect_format, load_dataset
from tests.core.dataset.makers import DOC_CLASSES, PAGE, not_blank, save_previews, write_coco, write_pages, write_yolo


@pytest.fixture
def pages(tmp_path):
    root = tmp_path / "docs"
    truth = write_pages(root)
    return root, truth


def _truth_arrays(blocks):
    return (np.array([b for _k, b in blocks], np.float32), [DOC_CLASSES.index(k) for k, _b in blocks])


def test_coco_and_yolo_read_the_same_boxes(pages, tmp_path):
    root, truth = pages
    coco_root, yolo_root = tmp_path / "coco", tmp_path / "yolo"
    for dst in (coco_root, yolo_root):
        (dst / "images").mkdir(parents=True)
        for png in (root / "images").iterdir():
            (dst / "images" / png.name).write_bytes(png.read_bytes())
    write_coco(coco_root, truth)
    write_yolo(yolo_root, truth)
    assert detect_format(coco_root) == "coco"
    assert detect_format(yolo_root) == "yolo"
    coco, yolo = load_dataset(coco_root), load_dataset(yolo_root)
    assert coco.task == yolo.task == "detection"
    assert coco.categories == tuple((i + 1, n) for i, n in enumerate(DOC_CLASSES))
    assert yolo.categories == tuple(enumerate(DOC_CLASSES))
    assert len(coco) == len(yolo) == 3
    n_boxes = sum(len(b) for b in truth)
    assert coco.summary() == f"COCO JSON · 3 images · 4 classes · {n_boxes} boxes"
    assert yolo.summary() == f"YOLO txt · 3 images · 4 classes · {n_boxes} boxes"
    for k, (c, y) in enumerate(zip(coco.items(), yolo.items(), strict=True)):
        boxes, classes = _truth_arrays(truth[k])
        assert c.image.name == y.image.name == f"page_{k}.png"
        assert (c.width, c.height) == (y.width, y.height) == PAGE
        np.testing.assert_allclose(c.boxes, boxes, atol=1e-3)
        np.testing.assert_allclose(y.boxes, c.boxes, atol=1.0)
        assert list(c.classes) == [i + 1 for i in classes]
        assert list(y.classes) == classes
    counts = coco.class_counts()
    assert counts[1] == 3 and sum(counts.values()) == n_boxes
    for ds, name in ((coco, "coco_pages"), (yolo, "yolo_pages")):
        for path in save_previews(ds, name, tmp_path):
            assert not_blank(path)


def test_coco_segmentation_polygons_and_rle_become_masks(pages, tmp_path):
    pytest.importorskip("pycocotools")
    from pycocotools import mask as mask_api

    root, truth = pages
    path = write_coco(root, truth, segmentation=True)
    ds = load_dataset(root, labels=path)
    item = ds.item(0)
    masks = item.instance_masks()
    assert masks.shape == (len(truth[0]), PAGE[1], PAGE[0])
    x1, y1, x2, y2 = (int(v) for v in truth[0][0][1])
    inside = masks[0][y1 + 2:y2 - 2, x1 + 2:x2 - 2]
    assert inside.all() and masks[0].sum() < (x2 - x1 + 2) * (y2 - y1 + 2)
    # the same rectangle as compressed RLE (its counts a string, as COCO files keep them)
    rect = np.zeros((PAGE[1], PAGE[0]), np.uint8, order="F")
    rect[y1:y2, x1:x2] = 1
    rle = mask_api.encode(np.asfortranarray(rect))
    rle["counts"] = rle["counts"].decode("ascii")
    from app.core.dataset.segments import decode_segmentations

    decoded = decode_segmentations([rle], item.boxes[:1], PAGE[0], PAGE[1])
    np.testing.assert_array_equal(decoded[0], rect)
    assert all(not_blank(p) for p in save_previews(ds, "coco_masks", tmp_path))


def test_yolo_side_by_side_with_classes_txt(pages, tmp_path):
    root, truth = pages
    flat = tmp_path / "flat"
    flat.mkdir()
    write_yolo(root, truth)
    for k in range(3):
        (flat / f"page_{k}.png").write_bytes((root / "images" / f"page_{k}.png").read_bytes())
        (flat / f"page_{k}.txt").write_text((root / "labels" / f"page_{k}.txt").read_text())
    (flat / "classes.txt").write_text("\n".join(DOC_CLASSES) + "\n")
    assert detect_format(flat) == "yolo"
    ds = load_dataset(flat)
    assert ds.categories == tuple(enumerate(DOC_CLASSES))
    boxes, _ = _truth_arrays(truth[1])
    np.testing.assert_allclose(ds.item(1).boxes, boxes, atol=1.0)


def test_yolo_names_as_a_dict_and_an_image_without_labels(pages):
    root, truth = pages
    write_yolo(root, truth)
    (root / "data.yaml").write_text("names: {0: title, 1: paragraph, 2: table, 3: figure}\n")
    (root / "labels" / "page_2.txt").unlink()
    ds = load_dataset(root)
    assert ds.category_name(3) == "figure"
    assert ds.item(2).boxes.shape == (0, 4)


def test_yolo_errors_name_the_file_and_line(pages):
    root, truth = pages
    write_yolo(root, truth)
    label = root / "labels" / "page_1.txt"
    lines = label.read_text().splitlines()
    label.write_text("\n".join([lines[0], "2 0.5 0.5 oops 0.1", *lines[1:]]) + "\n")
    with pytest.raises(DatasetError, match=r"page_1\.txt, line 2 does not parse") as err:
        load_dataset(root)
    assert err.value.fix
    label.write_text("1 210 280 100 50\n")
    with pytest.raises(DatasetError, match="look like pixels"):
        load_dataset(root)
    label.write_text("7 0.5 0.5 0.1 0.1\n")
    with pytest.raises(DatasetError, match="class 7, but the names list has 4"):
        load_dataset(root)
    label.write_text("1 0.5 0.5 0.1\n")
    with pytest.raises(DatasetError, match="line 1 has 4 fields"):
        load_dataset(root)


def test_yolo_label_without_image_is_named(pages):
    root, truth = pages
    write_yolo(root, truth)
    (root / "images" / "page_2.png").unlink()
    with pytest.raises(DatasetError, match=r"label file .*page_2\.txt has no image"):
        load_dataset(root)


def test_coco_missing_image_and_bad_annotation(pages):
    root, truth = pages
    path = write_coco(root, truth)
    (root / "images" / "page_1.png").unlink()
    with pytest.raises(DatasetError, match=r"image page_1\.png named in instances_val\.json is missing"):
        load_dataset(root)
    write_pages(root)
    doc = path.read_text().replace('"category_id": 4', '"category_id": 9', 1)
    path.write_text(doc)
    with pytest.raises(DatasetError, match="category_id 9, which 'categories' does not list"):
        load_dataset(root)
    path.write_text('{"images": [], "nothing": 1}')
    with pytest.raises(DatasetError, match="not a COCO annotation file"):
        load_dataset(root)


def test_lazy_items_open_no_image_until_asked(pages, monkeypatch):
    root, truth = pages
    write_yolo(root, truth)
    import PIL.Image

    opened = []
    real_open = PIL.Image.open

    def counting_open(fp, *args, **kwargs):
        opened.append(fp)
        return real_open(fp, *args, **kwargs)

    monkeypatch.setattr(PIL.Image, "open", counting_open)
    ds = load_dataset(root)
    assert opened == [] and ds.summary().startswith("YOLO txt · 3 images")
    ds.item(1)
    assert len(opened) == 1
