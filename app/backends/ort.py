"""ONNX Runtime backends: CPU, CUDA (IOBinding for device-only timing, TF32 off by default), TensorRT EP.

onnxruntime is imported inside functions so that `import app.backends` works without it.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from app.backends.base import Availability, BackendUnavailable

if TYPE_CHECKING:
    import onnxruntime  # untyped: its sessions and options are Any to mypy

log = logging.getLogger(__name__)

_GPU_HINT = ('pip uninstall -y onnxruntime && pip install "trtlab[gpu]"  (onnxruntime-gpu replaces onnxruntime; '
             "it needs an NVIDIA driver and CUDA 12/13 libraries)")


def _ort() -> ModuleType:
    try:
        import onnxruntime as ort
    except ImportError as exc:  # pragma: no cover - onnxruntime is a base dependency
        raise BackendUnavailable("onnxruntime is not installed.", fix="pip install onnxruntime") from exc
    return ort


class OrtSession:
    """An onnxruntime InferenceSession with the provider actually used checked, never assumed."""

    def __init__(self, sess: onnxruntime.InferenceSession, provider: str, device_io: bool, notes: list[str]) -> None:
        self.sess = sess
        self.provider = provider
        self.device_io = device_io
        self.notes = notes
        self.input_names = [i.name for i in sess.get_inputs()]
        self.output_names = [o.name for o in sess.get_outputs()]
        self.graph: CudaGraphRunner | None = None  # set where the session replays a captured CUDA graph

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self.graph is not None:
            return self.graph.run(feeds)
        outs = self.sess.run(self.output_names, feeds)
        return dict(zip(self.output_names, outs, strict=True))

    def timed_runner(self, feeds: dict[str, np.ndarray], mode: str) -> Callable[[], float | None]:
        if self.graph is not None:
            return self.graph.timed_runner(feeds, mode)
        if mode == "device_only":
            if not self.device_io:
                raise BackendUnavailable(f"{self.provider} has no device-only timing.",
                                         fix="Use --mode end_to_end, or a GPU backend.")
            ort = _ort()
            binding = self.sess.io_binding()
            for name, arr in feeds.items():
                value = ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(arr), "cuda", 0)
                binding.bind_ortvalue_input(name, value)
            for name in self.output_names:
                binding.bind_output(name, "cuda", 0)
            run = self.sess.run_with_iobinding

            def once() -> float:
                # Inputs and outputs stay on the device: the time excludes host<->device copies. ORT's run
                # returns after the CUDA stream is synchronised, so wall time is the device time plus launch.
                t0 = time.perf_counter_ns()
                run(binding)
                return (time.perf_counter_ns() - t0) / 1e6
            return once
        names, sess = self.output_names, self.sess

        def once_e2e() -> None:
            sess.run(names, feeds)
        return once_e2e

    def end_profiling(self) -> str:
        """The profiler's trace file (a session prepared with `profile_prefix`), written now."""
        return str(self.sess.end_profiling())

    def close(self) -> None:
        self.sess = None
        self.graph = None


_ORT_TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
              "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int8)": np.int8, "tensor(uint8)": np.uint8,
              "tensor(bool)": np.bool_}


class CudaGraphRunner:
    """Runs of a session made with `enable_cuda_graph`: ONNX Runtime captures the graph on its first run and replays
    it after, which needs every input and output bound to a device buffer that never moves (IOBinding). The buffers
    are made for the first feeds' shapes, the outputs' shapes read from one run of `probe` (a session without the
    graph) where the model does not fix them; feeds of another shape are refused (a captured graph is one shape)."""

    def __init__(self, sess: onnxruntime.InferenceSession, probe: Callable[[dict[str, np.ndarray]], list[np.ndarray]]
                 ) -> None:
        self.sess, self.probe = sess, probe
        self.binding: object | None = None
        self.inputs: dict[str, object] = {}
        self.outputs: dict[str, object] = {}
        self.shapes: dict[str, tuple[int, ...]] = {}

    def _bind(self, feeds: dict[str, np.ndarray]) -> None:
        shapes = {k: tuple(v.shape) for k, v in feeds.items()}
        if self.binding is not None:
            if shapes != self.shapes:
                raise BackendUnavailable(f"A CUDA graph was captured for inputs {self.shapes} and cannot run {shapes}.",
                                         fix="Drop cuda_graph=1 to run inputs of several shapes in one session.")
            for name, arr in feeds.items():
                self.inputs[name].update_inplace(np.ascontiguousarray(arr))  # type: ignore[attr-defined]
            return
        ort = _ort()
        outs = self.sess.get_outputs()
        dims = [o.shape for o in outs]
        if not all(isinstance(d, int) and d >= 0 for shape in dims for d in shape):
            dims = [list(a.shape) for a in self.probe(feeds)]
        binding = self.sess.io_binding()
        for name, arr in feeds.items():
            self.inputs[name] = value = ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(arr), "cuda", 0)
            binding.bind_ortvalue_input(name, value)
        for out, shape in zip(outs, dims, strict=True):
            dtype = _ORT_TYPES.get(out.type)
            if dtype is None:
                raise BackendUnavailable(f"Output {out.name} is a {out.type}, which trtlab cannot bind for a CUDA "
                                         "graph.", fix="Drop cuda_graph=1 for this model.")
            self.outputs[out.name] = value = ort.OrtValue.ortvalue_from_shape_and_type(list(shape), dtype, "cuda", 0)
            binding.bind_ortvalue_output(out.name, value)
        self.binding, self.shapes = binding, shapes

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        self._bind(feeds)
        self.sess.run_with_iobinding(self.binding)
        return {name: value.numpy() for name, value in self.outputs.items()}  # type: ignore[attr-defined]

    def timed_runner(self, feeds: dict[str, np.ndarray], mode: str) -> Callable[[], float | None]:
        self._bind(feeds)
        run, binding = self.sess.run_with_iobinding, self.binding
        run(binding)  # the capture: ONNX Runtime records the graph here, the timed runs replay it
        if mode == "device_only":
            def once() -> float:
                t0 = time.perf_counter_ns()
                run(binding)
                return (time.perf_counter_ns() - t0) / 1e6
            return once
        inputs, outputs = self.inputs, list(self.outputs.values())

        def once_e2e() -> None:  # the copies in and out belong to an end-to-end run
            for name, arr in feeds.items():
                inputs[name].update_inplace(arr)  # type: ignore[attr-defined]
            run(binding)
            for value in outputs:
                value.numpy()  # type: ignore[attr-defined]
        return once_e2e


class SettingRefused(BackendUnavailable):
    """ONNX Runtime would not make a session with a target's settings (a model a CUDA graph cannot capture)."""


# A target's settings (app.core.targets.KNOBS) as ONNX Runtime's CUDA provider options.
_CUDA_KNOBS: dict[str, tuple[str, dict[str, str]]] = {
    "cuda_graph": ("enable_cuda_graph", {}),
    "nhwc": ("prefer_nhwc", {}),
    "conv_algo": ("cudnn_conv_algo_search", {"exhaustive": "EXHAUSTIVE", "heuristic": "HEURISTIC",
                                             "default": "DEFAULT"}),
    "conv_workspace": ("cudnn_conv_use_max_workspace", {}),
}
_OPT_LEVELS: dict[str, Callable[[ModuleType], object]] = {
    "all": lambda ort: ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    "extended": lambda ort: ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "basic": lambda ort: ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "disable": lambda ort: ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
}
_REFUSED_SETTING = re.compile(r"cuda graph|cudagraph|prefer_nhwc|nhwc", re.IGNORECASE)


def _knob_text(knobs: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(knobs.items()))


def _refusal_fix(message: str) -> str:
    if re.search(r"cuda graph|cudagraph", message, re.IGNORECASE):
        return ("A CUDA graph needs every node on the CUDA provider and shapes fixed per session; this model has "
                "nodes ONNX Runtime places on the CPU (see where each node runs: trtlab bench or profile). Drop "
                "cuda_graph=1, or run a variant whose nodes all have CUDA kernels.")
    return "Drop the setting named in the message and try again."


_NO_KERNEL = re.compile(r"Provider type for (\w+) node|implementation for (\w+)\(")


def _widened_bf16(model_path: str, exc: Exception, ort: ModuleType, so: onnxruntime.SessionOptions,
                  providers: list[object], every_op: bool
                  ) -> tuple[onnxruntime.InferenceSession, set[str] | None] | None:
    """A BF16 variant ONNX Runtime refused because an op has no BF16 kernel on the provider (nor on the CPU, where
    it would place the op): with `every_op` (the CPU provider, which has none) every BF16 node widened to FP32
    between rounding Casts at once; else the op types named in the refusals, one per failed load, until it loads.
    Returns the session and the widened op types (None: all); None when the model is not BF16 or never loads.
    Tried only after a refusal, so models that load as they are never pay for reading the graph again."""
    import onnx

    from app.core.precision import has_bfloat16, widen_bfloat16

    m = _NO_KERNEL.search(str(exc))
    if m is None:
        return None
    try:
        model = onnx.load(model_path)
    except Exception:  # noqa: BLE001 - the original error is the one to report
        return None
    if not has_bfloat16(model) or model.ByteSize() >= 1_800_000_000:
        return None
    if every_op:
        try:
            return ort.InferenceSession(widen_bfloat16(model).SerializeToString(), sess_options=so,
                                        providers=providers), None
        except Exception:  # noqa: BLE001 - the original refusal is the one to report
            return None
    ops: set[str] = set()
    for _ in range(16):
        op = next(g for g in m.groups() if g)
        if op in ops:
            return None
        ops.add(op)
        try:
            return ort.InferenceSession(widen_bfloat16(model, ops).SerializeToString(), sess_options=so,
                                        providers=providers), ops
        except Exception as again:  # noqa: BLE001 - another op without a kernel: widen it too
            m = _NO_KERNEL.search(str(again))
            if m is None:
                return None
    return None


class _OrtBackend:
    provider = "CPUExecutionProvider"
    name = "ort-cpu"
    precisions: tuple[str, ...] = ("fp32", "fp16", "bf16", "int8")
    timing_modes: tuple[str, ...] = ("end_to_end",)

    def availability(self) -> Availability:
        try:
            ort = _ort()
        except BackendUnavailable as exc:
            return Availability(False, exc.message, exc.fix)
        providers = ort.get_available_providers()
        if self.provider not in providers:
            return self._missing(ort.__version__, providers)
        return Availability(True, details={"onnxruntime": ort.__version__, "provider": self.provider})

    def _missing(self, version: str, providers: list[str]) -> Availability:
        return Availability(False, f"onnxruntime {version} here has no {self.provider} "
                                   f"(it has {', '.join(providers)}).", _GPU_HINT)

    def provider_options(self, options: dict[str, object]) -> dict[str, str]:
        return {}

    def notes(self, options: dict[str, object]) -> list[str]:
        return []

    def prepare(self, model_path: str, options: dict[str, object] | None = None,
                profile_prefix: str | None = None) -> OrtSession:
        """A session on the model; with `profile_prefix` ONNX Runtime's profiler records every node of every run
        (where it ran, how long) into a trace file there (`OrtSession.end_profiling`)."""
        options = dict(options or {})
        avail = self.availability()
        if not avail.available:
            raise BackendUnavailable(f"{self.name}: {avail.reason}", fix=avail.install_hint)
        ort = _ort()
        so = ort.SessionOptions()
        so.log_severity_level = 3
        if profile_prefix:
            so.enable_profiling = True
            so.profile_file_prefix = profile_prefix
        knobs: dict[str, str] = dict(options.get("knobs") or {})  # type: ignore[call-overload]  # the target's
        threads = knobs.get("threads") or options.get("threads")
        if threads:
            so.intra_op_num_threads = int(threads)  # type: ignore[call-overload]  # a JSON option; int() checks it
        if "inter_threads" in knobs:
            so.inter_op_num_threads = int(knobs["inter_threads"])
        if knobs.get("mode") == "parallel":
            so.execution_mode = ort.ExecutionMode.ORT_PARALLEL
        if "opt" in knobs:
            so.graph_optimization_level = _OPT_LEVELS[knobs["opt"]](ort)
        providers: list[object] = [(self.provider, self.provider_options(options))]
        if self.provider != "CPUExecutionProvider":
            providers.append("CPUExecutionProvider")  # for ops the accelerator lacks, as ORT does itself
        cpu = self.provider == "CPUExecutionProvider"
        notes = self.notes(options)
        try:
            sess = ort.InferenceSession(str(model_path), sess_options=so, providers=providers)
        except Exception as exc:  # ORT raises its own Fail/InvalidGraph/... types
            if knobs and _REFUSED_SETTING.search(str(exc)):
                raise SettingRefused(f"{self.name} refused the settings {_knob_text(knobs)}: "
                                     f"{str(exc).strip()[:400]}", fix=_refusal_fix(str(exc))) from None
            retry = _widened_bf16(str(model_path), exc, ort, so, providers, every_op=cpu)
            if retry is None:
                raise BackendUnavailable(f"{self.name} could not load the model: {str(exc).strip()[:500]}",
                                         fix="Check that this onnxruntime supports the model's opsets and IR "
                                             "version (pip install -U onnxruntime).") from exc
            sess, widened = retry
            notes.append("BF16 emulated: ONNX Runtime's CPU provider has no BF16 kernels, so each BF16 node "
                         "computes in FP32 between Casts that round its inputs and results to BF16" if widened is None
                         else f"BF16 partly emulated: ONNX Runtime's {self.provider} has no BF16 kernel for "
                              f"{', '.join(sorted(widened))}, so those nodes compute in FP32 between rounding Casts")
        used = sess.get_providers()
        if self.provider not in used:
            # ORT silently falls back to the CPU when the GPU provider cannot start: never time that as a GPU.
            raise BackendUnavailable(f"{self.name}: {self.provider} did not start (ONNX Runtime fell back to "
                                     f"{', '.join(used)}); no usable GPU or CUDA libraries here.", fix=_GPU_HINT)
        session = OrtSession(sess, self.provider, not cpu, notes)
        if knobs.get("cuda_graph") == "1":
            plain = {**options, "knobs": {k: v for k, v in knobs.items() if k != "cuda_graph"}}

            def probe(feeds: dict[str, np.ndarray]) -> list[np.ndarray]:  # the outputs' shapes, once
                other = self.prepare(model_path, plain)
                try:
                    return list(other.run(feeds).values())
                finally:
                    other.close()
            session.graph = CudaGraphRunner(sess, probe)
        return session


class OrtCpuBackend(_OrtBackend):
    provider = "CPUExecutionProvider"
    name = "ort-cpu"
    timing_modes = ("end_to_end",)


class OrtCudaBackend(_OrtBackend):
    provider = "CUDAExecutionProvider"
    name = "ort-cuda"
    timing_modes = ("end_to_end", "device_only")

    def provider_options(self, options: dict[str, object]) -> dict[str, str]:
        # TF32 off by default: a strict FP32 reference; switchable and labelled in the results.
        out = {"device_id": str(options.get("device_id", 0)), "use_tf32": "1" if options.get("tf32") else "0"}
        knobs: dict[str, str] = dict(options.get("knobs") or {})  # type: ignore[call-overload]  # the target's
        for knob, (key, values) in _CUDA_KNOBS.items():
            if knob in knobs:
                out[key] = values.get(knobs[knob], knobs[knob])
        return out

    def notes(self, options: dict[str, object]) -> list[str]:
        return ["TF32 on (MatMul/Conv inputs rounded to 10-bit mantissa)"] if options.get("tf32") else ["TF32 off"]


class OrtTrtBackend(_OrtBackend):
    provider = "TensorrtExecutionProvider"
    name = "ort-trt"
    timing_modes = ("end_to_end", "device_only")

    def _missing(self, version: str, providers: list[str]) -> Availability:
        return Availability(False, f"onnxruntime {version} here has no TensorrtExecutionProvider "
                                   f"(it has {', '.join(providers)}).",
                            'pip uninstall -y onnxruntime && pip install "trtlab[gpu]" and install TensorRT '
                            '(pip install "trtlab[tensorrt]") so ONNX Runtime can load its libraries')

    def provider_options(self, options: dict[str, object]) -> dict[str, str]:
        return {"device_id": str(options.get("device_id", 0))}
