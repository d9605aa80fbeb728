"""The precision jobs as the GUI and CLI run them: cancel during INT8 calibration, progress, variant reuse."""

from __future__ import annotations

import threading

from app.jobs import JobRunner, JobSpec


def test_cancel_during_int8_calibration_ends_the_job_as_cancelled(model_paths, tmp_path):
    """u2netp calibrates for seconds; Cancel on the first calibration message stops the child promptly."""
    params = {"model": str(model_paths["u2netp"]), "target": "ort-cpu:int8", "out": str(tmp_path / "v.onnx"),
              "shapes": {}, "inputs": {"kind": "random", "seed": 0}, "calib_samples": 64,
              "cache_dir": str(tmp_path / "cache")}
    messages: list[str] = []
    handle_box = {}
    started = threading.Event()

    def on_event(ev):
        messages.append(getattr(ev, "message", ""))
        if "Calibrating" in getattr(ev, "message", "") and not started.is_set():
            started.set()
            handle_box["h"].cancel()

    runner = JobRunner()
    handle = runner.start(JobSpec(func="app.backends.tasks.variant:variant_task", params=params, title="int8"))
    handle_box["h"] = handle
    result = handle.wait(on_event=on_event, timeout=300)
    assert started.is_set(), messages[-5:]
    assert result.status == "cancelled", (result.status, result.error)
    assert not (tmp_path / "v.onnx").exists()
