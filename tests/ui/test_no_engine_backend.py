"""Build TensorRT Engine where neither TensorRT nor TensorRT for RTX can build, made so on every machine: the
counterpart of the window test that runs only where TensorRT is not installed."""

from __future__ import annotations

from app.backends import Availability
from tests.ui.conftest import open_and_wait


def test_build_with_no_engine_backend_says_how_to_install_both(qtbot, window, model_paths, monkeypatch):
    from app.backends.trt import TrtBackend
    from app.backends.trt_rtx import RtxBackend

    monkeypatch.setattr(TrtBackend, "availability", lambda self: Availability(
        False, "tensorrt is not installed.", 'pip install "trtlab[tensorrt]"', can_build=False,
        build_reason="tensorrt is not installed."))
    monkeypatch.setattr(RtxBackend, "availability", lambda self: Availability(
        False, "tensorrt-rtx is not installed", 'pip install "trtlab[tensorrt-rtx]"', can_build=False,
        build_reason="tensorrt-rtx is not installed"))
    open_and_wait(qtbot, window, model_paths["u2netp"])  # static input shapes: nothing else to ask first
    window.run_controller.availability = {}  # forget what this machine has: ask the backends again
    assert window.run_controller.start_build() is None
    assert window.banner.isVisible()
    assert "trtlab[tensorrt]" in window.banner.fix and "trtlab[tensorrt-rtx]" in window.banner.fix
    assert not window.run_controller.running
