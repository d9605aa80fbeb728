"""Native TensorRT: availability only in this version (engine builds come with the TensorRT work)."""

from __future__ import annotations

import importlib.util

from app.backends.base import Availability, BackendUnavailable


class TrtBackend:
    name = "trt"
    precisions = ("fp32", "fp16", "bf16", "int8")
    timing_modes = ("end_to_end", "device_only")

    def availability(self) -> Availability:
        if importlib.util.find_spec("tensorrt") is None:
            return Availability(False, "tensorrt is not installed.", 'pip install "trtlab[tensorrt]"')
        return Availability(False, "native TensorRT builds are not in this version of trtlab yet.",
                            "Use ort-trt (ONNX Runtime's TensorRT provider) meanwhile.")

    def prepare(self, model_path: str, options: dict[str, object] | None = None) -> object:
        a = self.availability()
        raise BackendUnavailable(f"trt: {a.reason}", fix=a.install_hint)
