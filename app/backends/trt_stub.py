"""Native TensorRT: availability only in this version (engine builds come with the TensorRT work)."""

from __future__ import annotations

from app.backends.base import Availability, BackendUnavailable


class TrtBackend:
    name = "trt"
    precisions = ("fp32", "fp16", "bf16", "int8")
    timing_modes = ("end_to_end", "device_only")

    def availability(self) -> Availability:
        from app.backends.trt_env import environment

        found = environment().availability()
        if not found.available:
            return found
        return Availability(False, "native TensorRT builds are not in this version of trtlab yet.",
                            "Use ort-trt (ONNX Runtime's TensorRT provider) meanwhile.", found.details)

    def prepare(self, model_path: str, options: dict[str, object] | None = None) -> object:
        a = self.availability()
        raise BackendUnavailable(f"trt: {a.reason}", fix=a.install_hint)
