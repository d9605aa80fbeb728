"""Input shapes and input samples from every source, and every way input data can be wrong."""

from __future__ import annotations

import json
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from app.core.evaluate import photo_tensor
from app.core.measure.inputs import (
    ImagePreprocess,
    InputError,
    InputSource,
    integer_input_ranges,
    make_samples,
    random_recipe,
    resolve_input_shapes,
    source_shapes,
)
from app.core.model.tensors import TensorInfo, graph_inputs, value_info_to_tensor_info

# --- image writers: PNG and BMP by hand, for every PNG filter, interlacing, bit depth and palette ------


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _filter(line: bytes, prev: bytes, ftype: int, bpp: int) -> bytes:
    out = bytearray(len(line))
    for i, x in enumerate(line):
        left = line[i - bpp] if i >= bpp else 0
        up, corner = prev[i], (prev[i - bpp] if i >= bpp else 0)
        if ftype == 0:
            pred = 0
        elif ftype == 1:
            pred = left
        elif ftype == 2:
            pred = up
        elif ftype == 3:
            pred = (left + up) >> 1
        else:
            p = left + up - corner
            pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
            pred = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
        out[i] = (x - pred) & 0xFF
    return bytes(out)


def _rows(img: np.ndarray, depth: int) -> list[bytes]:
    """Raw scanlines of an (H, W, C) image at a bit depth."""
    h, w, c = img.shape
    if depth == 8:
        return [img[y].astype(np.uint8).tobytes() for y in range(h)]
    if depth == 16:
        return [img[y].astype(">u2").tobytes() for y in range(h)]
    out = []
    for y in range(h):
        vals = img[y].reshape(-1).astype(np.uint8)
        bits = ((vals[:, None] >> np.arange(depth - 1, -1, -1)) & 1).astype(np.uint8).reshape(-1)
        out.append(np.packbits(bits).tobytes())
    return out


def png_bytes(img: np.ndarray, ctype: int, depth: int = 8, filters: tuple[int, ...] = (0,),
              interlace: bool = False, palette: np.ndarray | None = None) -> bytes:
    img = img if img.ndim == 3 else img[..., None]
    h, w, c = img.shape
    bpp = max(1, c * depth // 8)
    passes = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)) \
        if interlace else ((0, 0, 1, 1),)
    raw = bytearray()
    k = 0
    for x0, y0, dx, dy in passes:
        sub = img[y0::dy, x0::dx]
        if sub.size == 0:
            continue
        prev = bytes(len(_rows(sub[:1], depth)[0]))
        for line in _rows(sub, depth):
            ftype = filters[k % len(filters)]
            k += 1
            raw += bytes([ftype]) + _filter(line, prev, ftype, bpp)
            prev = line
    out = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, int(interlace)))
    if palette is not None:
        out += _chunk(b"PLTE", palette.astype(np.uint8).tobytes())
    return out + _chunk(b"IDAT", zlib.compress(bytes(raw))) + _chunk(b"IEND", b"")


def bmp24_bytes(img: np.ndarray) -> bytes:
    h, w, _ = img.shape
    stride = (w * 3 + 3) // 4 * 4
    body = b"".join(img[y, :, ::-1].astype(np.uint8).tobytes().ljust(stride, b"\0") for y in range(h - 1, -1, -1))
    header = struct.pack("<2sIHHI", b"BM", 54 + len(body), 0, 0, 54)
    info = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, len(body), 2835, 2835, 0, 0)
    return header + info + body


def bmp8_bytes(idx: np.ndarray, palette_rgb: np.ndarray) -> bytes:
    h, w = idx.shape
    stride = (w + 3) // 4 * 4
    table = b"".join(bytes([b, g, r, 0]) for r, g, b in palette_rgb.astype(np.uint8))
    body = b"".join(idx[y].astype(np.uint8).tobytes().ljust(stride, b"\0") for y in range(h))  # top-down
    offset = 54 + len(table)
    header = struct.pack("<2sIHHI", b"BM", offset + len(body), 0, 0, offset)
    info = struct.pack("<IiiHHIIiiII", 40, w, -h, 1, 8, 0, len(body), 0, 0, len(palette_rgb), 0)
    return header + info + table + body


PIXELS = np.array([[[10, 20, 30], [40, 50, 60], [70, 80, 90]],
                   [[100, 110, 120], [130, 140, 150], [160, 170, 255]]], np.uint8)  # 2 x 3 RGB


# --- models ------------------------------------------------------------------------------------------

def _infos(model: onnx.ModelProto) -> list[TensorInfo]:
    return [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]


def _io_model(tiny_model, inputs: list[onnx.ValueInfoProto], nodes=(), initializers=()) -> onnx.ModelProto:
    nodes = list(nodes) or [helper.make_node("Identity", [inputs[0].name], ["out"])]
    out_name = nodes[-1].output[0]
    return tiny_model.build(nodes=nodes, inputs=inputs, initializers=list(initializers),
                            outputs=[helper.make_tensor_value_info(out_name, TensorProto.FLOAT, None)])


@pytest.fixture
def image_model(tiny_model) -> onnx.ModelProto:
    return _io_model(tiny_model, [helper.make_tensor_value_info("img", TensorProto.FLOAT, ["N", 3, 2, 3])])


def _images(model, folder: Path, shape, samples: int = 0, **pre) -> list[dict[str, np.ndarray]]:
    infos = _infos(model)
    shapes = resolve_input_shapes(infos, {"img": shape})
    return make_samples(model, infos, shapes, InputSource("images", str(folder), preprocess=ImagePreprocess(**pre)),
                        samples, photos=photo_tensor)


# --- shapes ------------------------------------------------------------------------------------------

def test_resolve_takes_static_dims_and_user_dims():
    infos = [TensorInfo("x", "float32", ("batch", 3, 224, 224)), TensorInfo("m", "int64", (1, 7))]
    assert resolve_input_shapes(infos, {"x": (2, 3, 224, 224)}) == {"x": (2, 3, 224, 224), "m": (1, 7)}


def test_resolve_names_unset_dynamic_dim_and_symbol(model_paths):
    infos = _infos(onnx.load(model_paths["g2p_bert_mlm"]))
    with pytest.raises(InputError) as e:
        resolve_input_shapes(infos, {})
    msg = str(e.value)
    assert "'input_1'" in msg and "'unk__543'" in msg and "axis 0" in msg and "int64" in msg
    assert "--shapes input_1:1x32" in msg
    infos = [TensorInfo("x", "float32", (-1, 3, "?", "?"))]
    with pytest.raises(InputError, match="'\\?' on axis 2") as e:
        resolve_input_shapes(infos, {})
    # The example is a shape a person would use: batch 1 and a real image size, never 1x3x1x1.
    assert "--shapes x:1x3x224x224" in e.value.fix and "x1x1" not in e.value.fix


def test_resolve_unknown_name_lists_real_inputs():
    infos = [TensorInfo("x", "float32", (1, 3))]
    with pytest.raises(InputError) as e:
        resolve_input_shapes(infos, {"input": (1, 3)})
    assert "'input'" in e.value.message and "'x' (float32 1×3)" in e.value.fix


def test_resolve_wrong_rank_and_fixed_dim():
    infos = [TensorInfo("x", "float32", ("n", 3, 8, 8))]
    with pytest.raises(InputError, match="rank 4.*rank 3"):
        resolve_input_shapes(infos, {"x": (1, 3, 8)})
    with pytest.raises(InputError, match="fixed size 3 on axis 1"):
        resolve_input_shapes(infos, {"x": (1, 4, 8, 8)})


# --- random data -------------------------------------------------------------------------------------

def test_random_per_dtype(tiny_model):
    vis = [helper.make_tensor_value_info("image", TensorProto.FLOAT, [2, 3, 8, 8]),
           helper.make_tensor_value_info("feat", TensorProto.FLOAT, [4, 1000]),
           helper.make_tensor_value_info("mask", TensorProto.INT64, [2, 16]),
           helper.make_tensor_value_info("flag", TensorProto.BOOL, [64]),
           helper.make_tensor_value_info("half", TensorProto.FLOAT16, [2, 2]),
           helper.make_tensor_value_info("bytes", TensorProto.UINT8, [1, 8, 8, 3])]
    model = _io_model(tiny_model, vis)
    infos = _infos(model)
    shapes = resolve_input_shapes(infos, {})
    a = make_samples(model, infos, shapes, InputSource(seed=3), samples=2)
    b = make_samples(model, infos, shapes, InputSource.from_json({"kind": "random", "seed": 3}), samples=2)
    c = make_samples(model, infos, shapes, InputSource(seed=4))
    assert len(a) == 2 and len(c) == 1
    s = a[0]
    assert {k: str(v.dtype) for k, v in s.items()} == {"image": "float32", "feat": "float32", "mask": "int64",
                                                       "flag": "bool", "half": "float16", "bytes": "uint8"}
    assert all(s[k].shape == shapes[k] for k in s)
    assert 0 <= s["image"].min() and s["image"].max() < 1  # image-like: U[0, 1)
    assert s["feat"].min() < -2 and abs(s["feat"].mean()) < 0.1 and abs(s["feat"].std() - 1) < 0.1  # N(0, 1)
    assert set(np.unique(s["mask"])) == {0, 1}
    assert 0 < s["flag"].sum() < 64
    assert s["bytes"].max() > 200
    for k in s:
        np.testing.assert_array_equal(a[0][k], b[0][k])  # seeded
    assert not np.array_equal(a[0]["feat"], a[1]["feat"]) and not np.array_equal(a[0]["feat"], c[0]["feat"])
    recipe = random_recipe(model, infos, shapes)
    assert recipe["image"] == "U[0, 1) (image-like)" and recipe["feat"] == "N(0, 1)"
    assert recipe["mask"] == "uniform integers in [0, 2)" and recipe["bytes"] == "uniform integers in [0, 256)"
    assert InputSource(seed=3).describe() == "random data (seed 3)" and InputSource().is_random


@pytest.mark.parametrize("elem", [TensorProto.BOOL, TensorProto.FLOAT, TensorProto.INT64, TensorProto.FLOAT16])
def test_a_0d_input_gets_a_0d_array_that_runs(tiny_model, elem):
    """numpy's generators give a bare scalar for shape (): ONNX Runtime takes arrays only."""
    import onnxruntime as ort

    vi = helper.make_tensor_value_info("s", elem, [])
    model = tiny_model.build(nodes=[helper.make_node("Identity", ["s"], ["out"])], inputs=[vi],
                             outputs=[helper.make_tensor_value_info("out", elem, [])])
    infos = _infos(model)
    (sample,) = make_samples(model, infos, resolve_input_shapes(infos, {}), InputSource(seed=1))
    arr = sample["s"]
    assert isinstance(arr, np.ndarray) and arr.shape == () and arr.dtype == np.dtype(infos[0].dtype)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (out,) = sess.run(None, sample)
    np.testing.assert_array_equal(out, arr)


def test_a_sample_file_fixes_the_dynamic_dims_it_gives(tmp_path, two_input_model):
    infos = _infos(two_input_model)
    np.savez(tmp_path / "s.npz", x=np.zeros((5, 4), np.float32), ids=np.zeros((5, 3), np.int64))
    shapes = source_shapes(InputSource("npz", str(tmp_path / "s.npz")), infos)
    assert shapes == {"x": (5, 4), "ids": (5, 3)}
    assert resolve_input_shapes(infos, shapes) == shapes
    folder = tmp_path / "samples"
    folder.mkdir()
    np.savez(folder / "a.npz", x=np.zeros((2, 4), np.float32), ids=np.zeros((2, 3), np.int64))
    assert source_shapes(InputSource("folder", str(folder)), infos) == {"x": (2, 4), "ids": (2, 3)}
    assert source_shapes(InputSource(seed=0), infos) == {}
    # Static inputs are the model's to fix, not the file's; a file that does not match the names says so.
    static = [TensorInfo("x", "float32", (5, 4)), TensorInfo("ids", "int64", ("n", 3))]
    assert source_shapes(InputSource("npz", str(tmp_path / "s.npz")), static) == {"ids": (5, 3)}
    np.savez(tmp_path / "wrong.npz", y=np.zeros(3))
    with pytest.raises(InputError, match="does not match the model's inputs"):
        source_shapes(InputSource("npz", str(tmp_path / "wrong.npz")), infos)


def test_integer_ranges_follow_casts_to_gather_onehot_and_equal(tiny_model):
    vis = [helper.make_tensor_value_info(n, TensorProto.INT64, [1, 5]) for n in ("ids", "cls", "oh", "free")]
    table = numpy_helper.from_array(np.zeros((50, 4), np.float32), "table")
    classes = numpy_helper.from_array(np.arange(3, 10, dtype=np.int64).reshape(1, 1, 7), "classes")
    depth = numpy_helper.from_array(np.array(12, np.int64), "depth")
    onv = numpy_helper.from_array(np.array([0, 1], np.float32), "onv")
    shape = numpy_helper.from_array(np.array([5], np.int64), "shape")
    nodes = [helper.make_node("Cast", ["ids"], ["ids32"], to=TensorProto.INT32),
             helper.make_node("Reshape", ["ids32", "shape"], ["flat"]),
             helper.make_node("Gather", ["table", "flat"], ["emb"]),
             helper.make_node("Unsqueeze", ["cls", "ax"], ["cls3"]),
             helper.make_node("Equal", ["cls3", "classes"], ["hit"]),
             helper.make_node("OneHot", ["oh", "depth", "onv"], ["onehot"]),
             helper.make_node("Identity", ["free"], ["out"])]
    ax = numpy_helper.from_array(np.array([2], np.int64), "ax")
    model = _io_model(tiny_model, vis, nodes, [table, classes, depth, onv, shape, ax])
    assert integer_input_ranges(model) == {"ids": (0, 50), "cls": (3, 10), "oh": (0, 12), "free": (0, 2)}


def test_integer_ranges_on_real_models(model_paths):
    import onnxruntime as ort

    for stem, name, expected, dtype in (("g2p_bert_mlm", "input_1", (0, 32), np.int64),
                                        ("magika_standard_v3_3", "bytes", (0, 257), np.int32)):
        model = onnx.load(model_paths[stem])
        assert integer_input_ranges(model)[name] == expected  # g2p: embedding table [32, 128]; magika: one-hot of 257
        infos = _infos(model)
        shapes = resolve_input_shapes(infos, {name: (4,) + tuple(infos[0].shape[1:])})
        sample = make_samples(model, infos, shapes, InputSource(seed=1))[0]
        arr = sample[name]
        assert arr.dtype == dtype and arr.min() >= expected[0] and arr.max() < expected[1]
        assert arr.max() >= expected[1] - 3  # the whole range is used, not only 0/1
        outs = ort.InferenceSession(str(model_paths[stem]), providers=["CPUExecutionProvider"]).run(None, sample)
        assert all(np.isfinite(o).all() for o in outs)


# --- npz / npy / folders -----------------------------------------------------------------------------

@pytest.fixture
def two_input_model(tiny_model) -> onnx.ModelProto:
    vis = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4]),
           helper.make_tensor_value_info("ids", TensorProto.INT64, ["n", 3])]
    return _io_model(tiny_model, vis)


def _make(model, source: InputSource, shapes: dict, samples: int = 1):
    infos = _infos(model)
    return make_samples(model, infos, resolve_input_shapes(infos, shapes), source, samples)


def test_npz_sample_cast_to_model_dtypes(tmp_path, two_input_model):
    x = np.arange(8, dtype=np.float64).reshape(2, 4)
    np.savez(tmp_path / "s.npz", x=x, ids=np.array([[1, 2, 3], [4, 5, 6]], np.int32))
    (s,) = _make(two_input_model, InputSource("npz", str(tmp_path / "s.npz")), {"x": (2, 4), "ids": (2, 3)})
    assert s["x"].dtype == np.float32 and s["ids"].dtype == np.int64
    np.testing.assert_array_equal(s["x"], x.astype(np.float32))
    assert InputSource("npz", str(tmp_path / "s.npz")).describe() == "file 's.npz'"


def test_npz_names_must_match(tmp_path, two_input_model):
    np.savez(tmp_path / "s.npz", input=np.zeros((2, 4), np.float32), ids=np.zeros((2, 3), np.int64))
    with pytest.raises(InputError) as e:
        _make(two_input_model, InputSource("npz", str(tmp_path / "s.npz")), {"x": (2, 4), "ids": (2, 3)})
    assert "'input'" in e.value.message and "lacks inputs 'x'" in e.value.message
    assert "'x' (float32 n×4)" in e.value.fix and "'ids' (int64 n×3)" in e.value.fix


def test_npz_wrong_shape_dtype_and_rank(tmp_path, two_input_model):
    shapes = {"x": (2, 4), "ids": (2, 3)}
    np.savez(tmp_path / "a.npz", x=np.zeros((2, 5), np.float32), ids=np.zeros((2, 3), np.int64))
    with pytest.raises(InputError) as e:
        _make(two_input_model, InputSource("npz", str(tmp_path / "a.npz")), shapes)
    assert "size 5 on axis 1" in e.value.message and "needs 4" in e.value.message and "x:2x5" in e.value.fix
    np.savez(tmp_path / "b.npz", x=np.zeros((2, 4, 1), np.float32), ids=np.zeros((2, 3), np.int64))
    with pytest.raises(InputError, match="rank 3"):
        _make(two_input_model, InputSource("npz", str(tmp_path / "b.npz")), shapes)
    np.savez(tmp_path / "c.npz", x=np.zeros((2, 4), np.float32), ids=np.zeros((2, 3), np.float32))
    with pytest.raises(InputError, match="holds float32 values but the input is int64"):
        _make(two_input_model, InputSource("npz", str(tmp_path / "c.npz")), shapes)


def test_npy_single_input_and_multi_input_error(tmp_path, tiny_model, two_input_model):
    model = tiny_model.build()  # x float32 [1, 4]
    np.save(tmp_path / "x.npy", np.array([[1, 2, 3, 4]], np.float32))
    (s,) = _make(model, InputSource("npz", str(tmp_path / "x.npy")), {})
    np.testing.assert_array_equal(s["x"], [[1, 2, 3, 4]])
    with pytest.raises(InputError, match="is a .npy file \\(one array\\) but the model has 2 inputs"):
        _make(two_input_model, InputSource("npz", str(tmp_path / "x.npy")), {"x": (1, 4), "ids": (1, 3)})


def test_missing_and_unreadable_files(tmp_path, tiny_model):
    model = tiny_model.build()
    with pytest.raises(InputError, match="does not exist"):
        _make(model, InputSource("npz", str(tmp_path / "nope.npz")), {})
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(InputError, match="not a readable .npz/.npy file") as e:
        _make(model, InputSource("npz", str(tmp_path / "bad.npz")), {})
    assert "numpy.savez" in e.value.fix


def test_folder_of_samples(tmp_path, tiny_model):
    model = tiny_model.build()
    for i in (2, 0, 1):
        np.savez(tmp_path / f"s{i}.npz", x=np.full((1, 4), i, np.float32))
    (tmp_path / "notes.txt").write_text("ignored")
    src = InputSource("folder", str(tmp_path))
    assert [s["x"][0, 0] for s in _make(model, src, {}, samples=2)] == [0, 1]
    assert [s["x"][0, 0] for s in _make(model, src, {}, samples=0)] == [0, 1, 2]
    assert [s["x"][0, 0] for s in _make(model, src, {}, samples=10)] == [0, 1, 2]


def test_empty_and_missing_folder(tmp_path, tiny_model, image_model):
    model = tiny_model.build()
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="has no .npz/.npy sample files"):
        _make(model, InputSource("folder", str(tmp_path / "empty")), {})
    with pytest.raises(InputError, match="does not exist"):
        _make(model, InputSource("folder", str(tmp_path / "gone")), {})
    with pytest.raises(InputError, match="has no images"):
        _images(image_model, tmp_path / "empty", (1, 3, 2, 3))


def test_source_json_round_trip():
    src = InputSource("images", "/data/imgs", 7, ImagePreprocess((224, 224), "nhwc", "bgr", 1.0, (1, 2, 3), (4, 5, 6)))
    doc = json.loads(json.dumps(src.to_json()))
    assert InputSource.from_json(doc) == src
    ui = {"kind": "images", "path": "/p", "seed": 0, "preprocess": {"layout": "NCHW", "color": "RGB", "scale": 0.5}}
    assert InputSource.from_json(ui).preprocess == ImagePreprocess(None, "NCHW", "RGB", 0.5)
    assert "images from folder 'imgs' (resize 224×224, NHWC, BGR" in src.describe()
    with pytest.raises(InputError, match="Unknown input source"):
        InputSource.from_json({"kind": "video"})


# --- images ------------------------------------------------------------------------------------------

def test_png_nchw_rgb_scale(tmp_path, image_model):
    (tmp_path / "a.png").write_bytes(png_bytes(PIXELS, 2))
    (s,) = _images(image_model, tmp_path, (1, 3, 2, 3))
    x = s["img"]
    assert x.dtype == np.float32 and x.shape == (1, 3, 2, 3)
    np.testing.assert_allclose(x[0, 0], [[10, 40, 70], [100, 130, 160]] / np.float32(255), rtol=1e-6)
    np.testing.assert_allclose(x[0, 2, 1, 2], 1.0, rtol=1e-6)  # blue of the last pixel: 255 / 255


def test_png_bgr_nhwc_mean_std(tmp_path, tiny_model):
    model = _io_model(tiny_model, [helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 2, 3, 3])])
    (tmp_path / "a.png").write_bytes(png_bytes(PIXELS, 2))
    (s,) = _images(model, tmp_path, (1, 2, 3, 3), layout="NHWC", color="BGR", scale=1.0,
                   mean=(100.0, 50.0, 0.0), std=(2.0, 5.0, 10.0))
    x = s["img"]
    assert x.shape == (1, 2, 3, 3)
    # pixel (0, 0) is RGB (10, 20, 30) -> BGR (30, 20, 10) -> ((30-100)/2, (20-50)/5, (10-0)/10)
    np.testing.assert_allclose(x[0, 0, 0], [-35.0, -6.0, 1.0])
    # pixel (1, 2) is RGB (160, 170, 255) -> BGR (255, 170, 160) -> (77.5, 24, 16)
    np.testing.assert_allclose(x[0, 1, 2], [77.5, 24.0, 16.0])


def test_png_batches_and_resize(tmp_path, tiny_model):
    model = _io_model(tiny_model, [helper.make_tensor_value_info("img", TensorProto.FLOAT, ["N", 3, 1, 4])])
    two = np.array([[[0, 0, 0], [255, 255, 255]]], np.uint8)  # 1 x 2 pixels, black then white
    for i in range(5):
        (tmp_path / f"{i}.png").write_bytes(png_bytes(two, 2))
    samples = _images(model, tmp_path, (2, 3, 1, 4))
    assert len(samples) == 2 and samples[0]["img"].shape == (2, 3, 1, 4)  # 5 images -> 2 batches of 2
    # half-pixel bilinear 2 -> 4: source x = -0.25 (clamped), 0.25, 0.75, 1.25 (clamped), i.e. 0, 63.75, 191.25, 255,
    # resized in 8-bit pixels as the models' own pipelines resize (64 and 191 after rounding), then scaled by 1/255
    np.testing.assert_allclose(samples[0]["img"][0, 1, 0], [0.0, 64 / 255, 191 / 255, 1.0], atol=1e-6)
    assert len(_images(model, tmp_path, (2, 3, 1, 4), samples=1)) == 1
    with pytest.raises(InputError, match="has 5 image\\(s\\) but one batch needs 8"):
        _images(model, tmp_path, (8, 3, 1, 4))
    with pytest.raises(InputError, match="axis 2 differs") as e:
        _images(model, tmp_path, (1, 3, 1, 4), size=(2, 4))
    assert "Resize to 1×4" in e.value.fix


def test_the_builtin_photos_repeat_to_fill_a_large_batch(tiny_model):
    """trtlab's own five photos feed any batch (a sweep or a tune at batch 32), repeated in order; a user's folder
    with fewer images than one batch is refused above."""
    from app.core.measure import SAMPLES_DIR

    model = _io_model(tiny_model, [helper.make_tensor_value_info("img", TensorProto.FLOAT, ["N", 3, 8, 8])])
    five = _images(model, SAMPLES_DIR, (5, 3, 8, 8), samples=1)[0]["img"]
    twelve = _images(model, SAMPLES_DIR, (12, 3, 8, 8), samples=1)[0]["img"]
    assert twelve.shape == (12, 3, 8, 8)
    np.testing.assert_array_equal(twelve[:5], five)
    np.testing.assert_array_equal(twelve[5:10], five)
    np.testing.assert_array_equal(twelve[10:], five[:2])


@pytest.mark.parametrize("filters", [(1,), (2,), (3,), (4,), (0, 1, 2, 3, 4)])
def test_png_filters_decode_exactly(tmp_path, filters):
    from app.core.measure.images import read_image

    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (7, 9, 4), dtype=np.uint8)
    (tmp_path / "f.png").write_bytes(png_bytes(img, 6, filters=filters))
    np.testing.assert_array_equal(read_image(tmp_path / "f.png"), img)


def test_png_interlaced_grey_palette_and_16_bit(tmp_path):
    from app.core.measure.images import read_image

    rng = np.random.default_rng(1)
    img = rng.integers(0, 256, (11, 13, 3), dtype=np.uint8)
    (tmp_path / "i.png").write_bytes(png_bytes(img, 2, interlace=True, filters=(4, 1)))
    np.testing.assert_array_equal(read_image(tmp_path / "i.png"), img)
    grey = np.array([[0, 1], [2, 3]], np.uint8)
    (tmp_path / "g.png").write_bytes(png_bytes(grey, 0, depth=2))
    np.testing.assert_array_equal(read_image(tmp_path / "g.png")[..., 0], [[0, 85], [170, 255]])
    pal = np.array([[255, 0, 0], [0, 0, 255]], np.uint8)
    (tmp_path / "p.png").write_bytes(png_bytes(np.array([[1, 0, 1]], np.uint8), 3, depth=1, palette=pal))
    np.testing.assert_array_equal(read_image(tmp_path / "p.png")[0], [[0, 0, 255], [255, 0, 0], [0, 0, 255]])
    deep = np.array([[[65535, 0, 257]]], np.uint16)
    (tmp_path / "d.png").write_bytes(png_bytes(deep, 2, depth=16))
    np.testing.assert_allclose(read_image(tmp_path / "d.png")[0, 0], [255, 0, 1])


def test_grey_png_feeds_three_channels(tmp_path, image_model):
    (tmp_path / "g.png").write_bytes(png_bytes(np.full((2, 3), 51, np.uint8), 0))
    (s,) = _images(image_model, tmp_path, (1, 3, 2, 3))
    np.testing.assert_allclose(s["img"], 0.2, rtol=1e-6)


def test_bmp_and_ppm(tmp_path, image_model):
    from app.core.measure.images import read_image

    (tmp_path / "a.bmp").write_bytes(bmp24_bytes(PIXELS))
    np.testing.assert_array_equal(read_image(tmp_path / "a.bmp"), PIXELS)
    pal = np.array([[1, 2, 3], [200, 100, 50]], np.uint8)
    (tmp_path / "p.bmp").write_bytes(bmp8_bytes(np.array([[0, 1, 1], [1, 0, 0]]), pal))
    np.testing.assert_array_equal(read_image(tmp_path / "p.bmp")[0], [[1, 2, 3], [200, 100, 50], [200, 100, 50]])
    (tmp_path / "c.ppm").write_bytes(b"P6\n# comment\n3 2\n255\n" + PIXELS.tobytes())
    np.testing.assert_array_equal(read_image(tmp_path / "c.ppm"), PIXELS)
    (tmp_path / "p.bmp").unlink()
    (tmp_path / "c.ppm").unlink()
    (s,) = _images(image_model, tmp_path, (1, 3, 2, 3), scale=1.0)
    np.testing.assert_array_equal(s["img"][0].transpose(1, 2, 0), PIXELS)


def test_without_pillow_the_error_says_how_to_install_it(tmp_path, image_model, monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)  # makes `from PIL import Image` fail even where Pillow exists
    (tmp_path / "a.png").write_bytes(png_bytes(PIXELS, 2))
    with pytest.raises(InputError) as e:
        _images(image_model, tmp_path, (1, 3, 2, 3))
    assert "needs Pillow" in e.value.message and "pip install Pillow" in e.value.fix


# --- images Pillow writes ------------------------------------------------------------------------------

def _smooth(h: int = 32, w: int = 48) -> np.ndarray:
    """An RGB image smooth enough that lossy codecs keep it within a few levels."""
    y, x = np.mgrid[0:h, 0:w]
    return np.stack([x * 255 // (w - 1), y * 255 // (h - 1), (x + y) * 255 // (h + w - 2)], -1).astype(np.uint8)


def test_jpeg_decodes_close_to_what_was_written(tmp_path, image_model):
    from PIL import Image

    from app.core.measure.images import read_image

    img = _smooth()
    Image.fromarray(img).save(tmp_path / "photo.jpg", quality=95)
    out = read_image(tmp_path / "photo.jpg")
    assert out.dtype == np.float32 and out.shape == (32, 48, 3)
    assert np.abs(out - img).mean() < 2.0 and np.abs(out - img).max() < 16
    (s,) = _images(image_model, tmp_path, (1, 3, 2, 3))  # resized 32x48 -> 2x3, NCHW
    assert s["img"].shape == (1, 3, 2, 3) and 0.0 <= s["img"].min() and s["img"].max() <= 1.0


def test_webp_tiff_gif_and_pgm(tmp_path, image_model):
    from PIL import Image, features

    from app.core.measure.images import read_image

    img = _smooth(8, 12)
    if features.check("webp"):
        Image.fromarray(img).save(tmp_path / "a.webp", lossless=True)
        np.testing.assert_array_equal(read_image(tmp_path / "a.webp"), img)
    Image.fromarray(img).save(tmp_path / "b.tif")
    np.testing.assert_array_equal(read_image(tmp_path / "b.tif"), img)
    # A two-frame GIF: the first frame is read; a palette with a transparent entry becomes RGBA.
    red, blue = (Image.new("RGB", (4, 2), c).convert("P") for c in ((255, 0, 0), (0, 0, 255)))
    red.save(tmp_path / "c.gif", save_all=True, append_images=[blue])
    np.testing.assert_array_equal(read_image(tmp_path / "c.gif"), np.broadcast_to([255.0, 0, 0], (2, 4, 3)))
    pal = Image.new("P", (2, 1))
    pal.putpalette([0, 0, 0, 0, 255, 0])
    pal.putpixel((1, 0), 1)
    pal.save(tmp_path / "t.png", transparency=0)
    np.testing.assert_array_equal(read_image(tmp_path / "t.png")[0], [[0, 0, 0, 0], [0, 255, 0, 255]])
    (tmp_path / "d.pgm").write_bytes(b"P5\n2 1\n255\n\x00\xff")
    np.testing.assert_array_equal(read_image(tmp_path / "d.pgm"), [[[0.0], [255.0]]])
    (tmp_path / "t.png").unlink()
    assert len(_images(image_model, tmp_path, (1, 3, 2, 3))) == (4 if features.check("webp") else 3)


def test_sixteen_bit_and_grey_png(tmp_path):
    from PIL import Image

    from app.core.measure.images import read_image

    deep = np.array([[0, 257, 65535], [25700, 512, 1000]], np.uint16)
    Image.fromarray(deep).save(tmp_path / "deep.png")
    assert Image.open(tmp_path / "deep.png").mode.startswith("I")
    out = read_image(tmp_path / "deep.png")
    assert out.shape == (2, 3, 1)
    np.testing.assert_allclose(out[..., 0], deep / 257.0, rtol=1e-6)
    grey = np.array([[0, 51], [200, 255]], np.uint8)
    Image.fromarray(grey).save(tmp_path / "grey.png")
    np.testing.assert_array_equal(read_image(tmp_path / "grey.png"), grey[..., None])
    Image.fromarray(np.stack([grey, 255 - grey], -1), "LA").save(tmp_path / "la.png")
    assert read_image(tmp_path / "la.png").shape == (2, 2, 2)  # grey + alpha


def test_corrupt_and_truncated_jpeg(tmp_path, image_model):
    from PIL import Image

    noise = np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8)
    Image.fromarray(noise).save(tmp_path / "whole.jpg", quality=90)
    data = (tmp_path / "whole.jpg").read_bytes()
    (tmp_path / "whole.jpg").unlink()
    for cut in (len(data) // 2, 300):  # inside the pixel data, inside the header
        (tmp_path / "cut.jpg").write_bytes(data[:cut])
        with pytest.raises(InputError, match="'cut.jpg' cannot be read: the file is corrupt or truncated") as e:
            _images(image_model, tmp_path, (1, 3, 2, 3))
        assert "Re-save" in e.value.fix
    (tmp_path / "cut.jpg").write_bytes(data[:4] + b"\x00" * 200)
    with pytest.raises(InputError, match="'cut.jpg' cannot be read"):
        _images(image_model, tmp_path, (1, 3, 2, 3))


def test_exif_orientation_is_applied(tmp_path):
    from PIL import Image

    from app.core.measure.images import read_image

    stored = np.zeros((16, 32, 3), np.uint8)
    stored[:, :16] = (255, 0, 0)  # left half red, right half blue
    stored[:, 16:] = (0, 0, 255)
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: shown rotated 90° clockwise
    Image.fromarray(stored).save(tmp_path / "turned.jpg", quality=95, subsampling=0, exif=exif.tobytes())
    out = read_image(tmp_path / "turned.jpg")
    assert out.shape == (32, 16, 3)
    np.testing.assert_allclose(out, np.rot90(stored, -1), atol=24)  # the red half is now on top
    assert out[:16, :, 0].mean() > 200 and out[16:, :, 2].mean() > 200


def test_unreadable_image_and_layout_errors(tmp_path, tiny_model, image_model, two_input_model):
    (tmp_path / "broken.png").write_bytes(png_bytes(PIXELS, 2)[:60])
    with pytest.raises(InputError, match="'broken.png' cannot be read: the file is corrupt or truncated") as e:
        _images(image_model, tmp_path, (1, 3, 2, 3))
    assert "Re-save" in e.value.fix
    (tmp_path / "broken.png").write_bytes(b"hello")
    with pytest.raises(InputError, match="'broken.png' cannot be read: it is not an image Pillow can read"):
        _images(image_model, tmp_path, (1, 3, 2, 3))
    square = _io_model(tiny_model, [helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 3, 5, 5])])
    with pytest.raises(InputError, match="read as NHWC has 5 channels") as e:
        _images(square, tmp_path, (1, 3, 5, 5), layout="NHWC")
    assert "Set the layout to NCHW" in e.value.fix
    with pytest.raises(InputError, match="feeds one image input, but the model has 2 inputs"):
        _make(two_input_model, InputSource("images", str(tmp_path)), {"x": (1, 4), "ids": (1, 3)})


def test_lengths_hold_the_sequence_length_and_scales_their_neutral_value():
    """Piper's inputs: phoneme ids [1, T], `input_lengths` [1] and `scales` [3] (noise, length, noise width). Random
    lengths of 0 or 1 and scales from N(0, 1) made ~256 samples of sound; a length is T and a scale is 1."""

    nodes = [helper.make_node("Cast", ["input_lengths"], ["lf"], to=TensorProto.FLOAT),
             helper.make_node("ReduceSum", ["scales"], ["s"], keepdims=0),
             helper.make_node("Mul", ["lf", "s"], ["out"])]
    graph = helper.make_graph(nodes, "piper_like", [
        helper.make_tensor_value_info("input", TensorProto.INT64, [1, "T"]),
        helper.make_tensor_value_info("input_lengths", TensorProto.INT64, [1]),
        helper.make_tensor_value_info("scales", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    infos = [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]
    shapes = resolve_input_shapes(infos, {"input": (1, 48)})
    recipe = random_recipe(model, infos, shapes)
    assert recipe["input_lengths"] == "the sequence length 48 (a lengths input)"
    assert recipe["scales"] == "1.0 each (a scale input: its neutral value)"
    (sample,) = make_samples(model, infos, shapes, InputSource(kind="random", seed=0), samples=1)
    assert sample["input_lengths"].tolist() == [48] and sample["scales"].tolist() == [1.0, 1.0, 1.0]
    assert sample["input"].dtype == np.int64 and sample["input"].shape == (1, 48)
