"""A TensorRT engine built and run elsewhere (File ▸ Import TensorRT Results…, `trtlab import`) shown as trtlab's own
builds are: its layers as a build's (`BuildResult`) for the Engine dock and the graph's "precision that ran"
colours, their times as a benchmark's per-layer times, and one line saying where it ran."""

from __future__ import annotations

from pathlib import Path

from app.core.results import BuildResult, EngineLayer, ImportResult, LayerTiming


def imported_label(r: ImportResult) -> str:
    """The engine's name in the Engine dock: `trt:fp16 (imported)`, `trt-rtx:plan (imported)`."""
    backend = "trt-rtx" if r.tool == "tensorrt_rtx" else "trt"
    return f"{backend}:{r.precision or 'engine'} (imported)"


def as_build(r: ImportResult) -> tuple[BuildResult, dict[str, LayerTiming]]:
    """The import as a build's result (its layers, what each ONNX node ran in, where it ran) and each timed layer's
    time. A reformat or Q/DQ layer of no ONNX node of its own names the nodes it serves."""
    layers = tuple(EngineLayer(name=layer.name, type=layer.type, precision=layer.precision, tactic=layer.tactic,
                               onnx_nodes=layer.onnx_nodes or layer.serves, kind=layer.kind)
                   for layer in r.layers)
    times = {layer.name: LayerTiming(mean_ms=layer.ms, median_ms=layer.median_ms if layer.median_ms is not None
                                     else layer.ms, share=layer.share or 0.0)
             for layer in r.layers if layer.ms is not None}
    build = BuildResult(target=imported_label(r), ok=True, trt_version=r.trt_version, gpu=r.gpu,
                        compute_capability=r.compute_capability, flavour="rtx" if r.tool == "tensorrt_rtx" else "",
                        layer_source=r.layer_source, layers=layers, ran=dict(r.ran), notes=r.notes, model=r.model,
                        kind="build")
    return build, times


def import_summary(r: ImportResult) -> str:
    """One line: where it ran (GPU, TensorRT version), its layers and total, the median latency, the verdict."""
    product = "TensorRT for RTX" if r.tool == "tensorrt_rtx" else "TensorRT"
    parts = [f"Imported {Path(r.imported_from).name or r.imported_from}: {product} {r.trt_version or '?'} on "
             f"{r.gpu or 'an unnamed GPU'}" + (f" (sm {r.compute_capability})" if r.compute_capability else "")]
    parts.append(f"{len(r.layers)} engine layers" + (f", {r.total_ms:.3f} ms in all" if r.total_ms is not None
                                                     else ""))
    median = r.latency_ms.median if r.latency_ms is not None else None
    parts.append(f"median latency {median:.3f} ms over {r.timed_runs} runs" if median is not None
                 else "no timings (--exportTimes) brought back")
    if r.answers is not None and r.answers.candidates:
        passed = all(c.passed for c in r.answers.candidates)
        parts.append("outputs agree with ONNX Runtime FP32" if passed else "outputs differ from ONNX Runtime FP32")
    return " · ".join(parts)
