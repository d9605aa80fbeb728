"""TensorRT for RTX's ONNX parser as a gate every variant passes (app.core.precision.transforms.validate), where it is
installed. Registered when app.backends is imported: the core cannot import TensorRT itself."""

from __future__ import annotations

import os

from app.core.precision import Gate, node_in

NAME = "TensorRT for RTX's ONNX parser"


def check_rtx_parse(path: str | os.PathLike[str]) -> Gate | None:
    """TensorRT for RTX's ONNX parser on the graph; None when it is not installed here."""
    from app.backends.base import BackendUnavailable
    from app.backends.trt_build import parse_only
    from app.backends.trt_flavour import RTX

    try:
        trt = RTX.import_module()
    except BackendUnavailable:
        return None
    issues = parse_only(str(path), trt=trt)
    if not issues:
        return Gate(NAME, True)
    text = "; ".join(str(i.get("desc") or i.get("text") or "") for i in issues[:3])
    node = next((str(i["node_name"]) for i in issues if i.get("node_name")), None) or node_in(text)
    return Gate(NAME, False, text, node)
