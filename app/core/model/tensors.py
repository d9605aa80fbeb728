"""Tensor type facts (name, dtype, dims) read from ONNX value infos."""

from __future__ import annotations

from dataclasses import dataclass

import onnx

from app.core.model.onnx_walk import dtype_name

Dim = int | str


@dataclass(frozen=True)
class TensorInfo:
    """A tensor's element type and dims; symbolic dims stay strings, unnamed ones are '?'."""

    name: str
    dtype: str
    shape: tuple[Dim, ...] | None  # None: rank unknown

    def shape_text(self) -> str:
        if self.shape is None:
            return "?"
        return "×".join(str(d) for d in self.shape) if self.shape else "scalar"

    def is_static(self) -> bool:
        return self.static_shape() is not None

    def static_shape(self) -> tuple[int, ...] | None:
        """The dims when every one is a known size (none symbolic or negative), else None."""
        if self.shape is None:
            return None
        dims = tuple(d for d in self.shape if isinstance(d, int) and d >= 0)
        return dims if len(dims) == len(self.shape) else None

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "dtype": self.dtype,
                "shape": list(self.shape) if self.shape is not None else None}


def value_info_to_tensor_info(vi: onnx.ValueInfoProto) -> TensorInfo:
    t = vi.type
    kind = t.WhichOneof("value")
    if kind == "tensor_type" or kind == "sparse_tensor_type":
        tt = t.tensor_type if kind == "tensor_type" else t.sparse_tensor_type
        dtype = dtype_name(tt.elem_type) if tt.elem_type else "?"
        if not tt.HasField("shape"):
            return TensorInfo(vi.name, dtype, None)
        dims: list[Dim] = []
        for d in tt.shape.dim:
            if d.HasField("dim_value"):
                dims.append(int(d.dim_value))
            elif d.HasField("dim_param") and d.dim_param:
                dims.append(d.dim_param)
            else:
                dims.append("?")
        return TensorInfo(vi.name, dtype, tuple(dims))
    if kind == "sequence_type":
        return TensorInfo(vi.name, "sequence", None)
    if kind == "map_type":
        return TensorInfo(vi.name, "map", None)
    if kind == "optional_type":
        return TensorInfo(vi.name, "optional", None)
    return TensorInfo(vi.name, "?", None)


def tensor_proto_info(t: onnx.TensorProto) -> TensorInfo:
    return TensorInfo(t.name, dtype_name(t.data_type), tuple(int(d) for d in t.dims))


def graph_inputs(graph: onnx.GraphProto) -> list[onnx.ValueInfoProto]:
    """Real inputs: IR < 4 files also list initializers as inputs, which the user does not feed."""
    inits = {t.name for t in graph.initializer}
    return [i for i in graph.input if i.name not in inits]
