"""The Run panel refuses TensorRT runs and builds whose shapes size apart dims that share a dim_param (PP-OCR's
classifier: H and W both '?'), naming the input and axes in its refusal and in the banner over the graph;
ONNX Runtime runs, which do not care, go ahead."""

from __future__ import annotations

from dataclasses import replace

from app.core.measure import InputSource
from app.ui.run.requests import CompareRequest, JobSettings
from tests.ui.conftest import open_and_wait


def _open_with_shape(qtbot, window, path, shape: str) -> None:
    open_and_wait(qtbot, window, path)
    window.shapes_panel.edits["x"].setText(shape)
    window.shapes_panel.apply()
    qtbot.waitUntil(lambda: not window.loader.is_busy(), timeout=30_000)


def _refusal_in_sight(window) -> str:
    panel = window.run_panel
    assert panel.message.isVisible() and panel.message.width() > 0 and panel.message.height() > 0
    assert window.banner.isVisible()
    return panel.message.text()


def test_a_tensorrt_compare_with_one_name_two_sizes_is_refused(qtbot, window, model_paths):
    _open_with_shape(qtbot, window, model_paths["ppocr_cls_mobile_v2"], "1x3x48x192")
    window.run_dock.show()
    settings = JobSettings(inputs=InputSource(kind="random", seed=0), samples=1)
    request = CompareRequest(settings, "ort-cpu:fp32", ("trt-rtx:fp32",))
    assert window.run_controller.start_compare(request) is None
    assert "'x' axis 2" in window.run_controller.last_refusal  # what the guided flow shows when it cannot start
    text = _refusal_in_sight(window)
    assert "'x' axis 2" in text and "'x' axis 3" in text and "'?'" in text and "192" in text
    assert window.banner.title == "Input shapes needed" and "rename the dim_param" in window.banner.fix
    # ONNX Runtime takes the same shapes: nothing to refuse.
    onnx_runtime = replace(request, candidates=("ort-cpu:fp32",))
    base = window.run_controller._model_inputs(onnx_runtime.targets())
    assert base is not None and onnx_runtime.spec(base).shapes == {"x": (1, 3, 48, 192)}


def test_a_build_with_one_name_two_sizes_is_refused(qtbot, window, model_paths):
    _open_with_shape(qtbot, window, model_paths["ppocr_cls_mobile_v2"], "1x3x48x192")
    window.run_dock.show()
    assert window.run_controller.start_build() is None
    text = _refusal_in_sight(window)
    assert "share the name '?'" in text and "axis 3 = 192" in text
    assert window.banner.title == "Build not started"
    # Square shapes build: that refusal is gone (the build itself may be refused for want of TensorRT).
    window.shapes_panel.edits["x"].setText("1x3x48x48")
    window.shapes_panel.apply()
    qtbot.waitUntil(lambda: not window.loader.is_busy(), timeout=30_000)
    job = window.run_controller.start_build()
    assert "share the name" not in window.run_panel.message.text()
    assert not (window.banner.isVisible() and "share the name" in window.banner.text())  # a started job hides it
    if job is not None:
        window.run_controller.cancel_all()


def test_a_dynamic_image_input_takes_the_size_its_model_says(qtbot, window, model_paths):
    """PP-OCR's classifier (x: ?×3×?×?) opened with no shapes: a job runs it at PaddleOCR's 48×192, as the command
    line does, instead of refusing for want of sizes; sizes set in the Shapes panel still win."""
    open_and_wait(qtbot, window, model_paths["ppocr_cls_mobile_v2"])
    base = window.run_controller._model_inputs(["ort-cpu:fp32", "ort-cpu:fp16"])
    assert base is not None and dict(base.shapes) == {"x": (1, 3, 48, 192)}
    _open_with_shape(qtbot, window, model_paths["ppocr_cls_mobile_v2"], "2x3x48x96")
    base = window.run_controller._model_inputs(["ort-cpu:fp32"])
    assert base is not None and dict(base.shapes) == {"x": (2, 3, 48, 96)}
