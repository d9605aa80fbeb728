"""TensorRT results as they come back from another machine, for the tests that import them: trtlab's own TensorRT for
RTX builder dump of the shared magika model written as the files trtexec exports (`--exportLayerInfo`,
`--exportProfile` and a build log), and waits on the window's imports and kits."""

from __future__ import annotations

import json
from pathlib import Path

from app.core.engine.layer_dump import parse_layer_dump

RTX_DUMP = Path(__file__).resolve().parents[1] / "core" / "engine" / "fixtures" / "rtx_layers_magika_fp32.txt"
RTX_GPU = "NVIDIA GeForce RTX 4090"
RTX_VERSION = "11.1.0"
RTX_RUNS = 100  # the timed inferences of the times file (`--exportTimes`)


def rtx_results_folder(folder: Path, dump: Path = RTX_DUMP) -> Path:
    """The magika FP32 engine's layers (the builder dump as the inspector's JSON, the same content
    `--exportLayerInfo` writes; `dump`: another of trtlab's RTX builder dumps), a profile naming each layer (layer i
    takes (i + 1) / 10 ms), the timed inferences (`--exportTimes`) and the build log, written into `folder`
    (made)."""
    doc = parse_layer_dump(dump.read_text(encoding="utf-8"))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "layers.json").write_text(json.dumps(doc), encoding="utf-8")
    names = [layer["Name"] for layer in doc["Layers"]]
    profile = [{"count": 10}] + [{"name": n, "timeMs": float(i + 1), "averageMs": (i + 1) / 10.0,
                                  "medianMs": (i + 1) / 10.0, "percentage": 0.0} for i, n in enumerate(names)]
    (folder / "profile.json").write_text(json.dumps(profile), encoding="utf-8")
    times = [{"startEnqueueMs": 10.0 * i, "endEnqueueMs": 10.0 * i + 0.2, "computeMs": 5.0 + 0.01 * i,
              "latencyMs": 5.5 + 0.01 * i} for i in range(RTX_RUNS)]  # median 5.5 + 0.01 * 49.5 ms
    (folder / "times.json").write_text(json.dumps(times), encoding="utf-8")
    (folder / "build.log").write_text("&&&& RUNNING TensorRT.trtexec [TensorRT v110100] [b6]\n"
                                      f"[I] Selected Device: {RTX_GPU}\n[I] Compute Capability: 8.9\n",
                                      encoding="utf-8")
    return folder


def open_model(qtbot, window, path, shapes: dict[str, tuple[int, ...]] | None = None, timeout: int = 60_000):
    """Open a model in the window (with input shapes) and wait until it is shown."""
    window.open_path(path, shapes)
    qtbot.waitUntil(lambda: not window.loader.is_busy() and window.opened is not None, timeout=timeout)
    return window.opened


def import_and_wait(qtbot, window, folder, timeout: int = 120_000):
    """Import `folder` through File ▸ Import TensorRT Results…'s controller and wait until it is read (or refused);
    returns what was shown (None when the import failed)."""
    shown: list[object] = []
    window.imports.finished.connect(shown.append)
    if not window.imports.import_folder(folder):
        return None
    assert window.imports.busy  # read on a worker thread: the window goes on meanwhile
    qtbot.waitUntil(lambda: bool(shown) and not window.imports.busy, timeout=timeout)
    return shown[0]


def save_outputs(kit: Path) -> bool:
    """The kit's variant run by ONNX Runtime on the kit's samples, saved as `results/outputs.json` in Polygraphy's
    `RunResults` format (what `polygraphy run --trt --save-outputs` writes); False where Polygraphy is not
    installed."""
    try:
        from polygraphy.comparator import RunResults
    except ImportError:
        return False
    import onnxruntime as ort

    from app.core.engine.polygraphy_json import load_feeds

    manifest = json.loads((kit / "kit.json").read_text(encoding="utf-8"))
    session = ort.InferenceSession(str(kit / manifest["variant"]), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    outputs = [dict(zip(names, session.run(None, feed), strict=True)) for feed in load_feeds(kit / "inputs.json")]
    results = RunResults()
    results.add(outputs, runtime=0.1, runner_name="trt-runner-N0-11/28/26")
    (kit / "results").mkdir(exist_ok=True)
    results.save(str(kit / "results" / "outputs.json"))
    return True
