"""Runtimes behind one protocol. Heavy imports (onnxruntime, tensorrt, cuda) happen inside functions."""

from __future__ import annotations

from app.backends.base import (
    BACKEND_NAMES,
    ENGINE_BACKENDS,
    PRECISIONS,
    Availability,
    Backend,
    BackendSpecError,
    BackendUnavailable,
    EngineBackend,
    EngineSession,
    OrtBackend,
    ProfiledSession,
    Session,
    Target,
)
from app.backends.parse_gate import check_rtx_parse
from app.core.precision import register_parser_gate

register_parser_gate(check_rtx_parse)  # every variant built where app.backends runs is parsed by TensorRT for RTX


def get_backend(name: str) -> Backend:
    if name in ENGINE_BACKENDS:
        return get_engine_backend(name)
    return get_ort_backend(name)


def get_ort_backend(name: str) -> OrtBackend:
    """An ONNX Runtime backend (`ort-cpu`, `ort-cuda`, `ort-trt`)."""
    from app.backends import ort

    table = {"ort-cpu": ort.OrtCpuBackend, "ort-cuda": ort.OrtCudaBackend, "ort-trt": ort.OrtTrtBackend}
    if name in table:
        return table[name]()
    raise _unknown(name)


def get_engine_backend(name: str) -> EngineBackend:
    """A backend building TensorRT engines (ENGINE_BACKENDS: `trt`, `trt-rtx`)."""
    if name == "trt":
        from app.backends.trt import TrtBackend

        return TrtBackend()
    if name == "trt-rtx":
        from app.backends.trt_rtx import RtxBackend

        return RtxBackend()
    raise _unknown(name)


def _unknown(name: str) -> BackendSpecError:
    return BackendSpecError(f"Unknown backend '{name}'.", fix=f"Use one of {', '.join(BACKEND_NAMES)}.")


def all_availability() -> dict[str, Availability]:
    return {name: get_backend(name).availability() for name in BACKEND_NAMES}


__all__ = ["BACKEND_NAMES", "ENGINE_BACKENDS", "PRECISIONS", "Availability", "Backend", "BackendSpecError",
           "BackendUnavailable", "EngineBackend", "EngineSession", "OrtBackend", "ProfiledSession", "Session", "Target",
           "all_availability", "get_backend", "get_engine_backend", "get_ort_backend"]
