"""The Run panel's image fields start from the open model's preset (its name and reason shown beside them), stay
editable, say which were changed, and are saved with the project's settings."""

from __future__ import annotations

from app.core.model import open_model
from app.ui.run.panel import RunPanel
from app.ui.run.settings import apply_settings, panel_settings
from tests.support.evaluate import survey_model


def test_the_fields_start_from_the_models_preset_and_are_saved(qtbot, models_dir):
    panel = RunPanel()
    qtbot.addWidget(panel)
    panel.show_model(open_model(survey_model("nudenet/320n.onnx"), {"images": (1, 3, 320, 320)}))
    assert panel.preset_label.text().startswith("yolo: an Ultralytics export")
    assert (panel.fit.currentText(), panel.pad.value(), panel.mean.text(), panel.std.text()) == \
        ("letterbox", 114.0, "0,0,0", "1,1,1")
    pre = panel.input_source()["preprocess"]
    assert pre["preset"] == "yolo" and pre["given"] == [] and pre["resize"] == "letterbox"
    assert pre["scale"] == 1 / 255  # the preset's own value, not the spin box's six decimals
    panel.mean.setText("0.1,0.1,0.1")
    pre = panel.input_source()["preprocess"]
    assert pre["given"] == ["mean"] and "mean as set in the window" in pre["reason"] and pre["resize"] == "letterbox"
    saved = panel_settings(panel)
    assert saved["image_resize"] == "letterbox" and saved["pad"] == 114.0 and saved["mean"] == "0.1,0.1,0.1"

    panel.show_model(open_model(models_dir / "u2netp.onnx"))  # another model: ImageNet's preset
    assert panel.preset_label.text().startswith("imagenet:") and panel.fit.currentText() == "stretch"
    assert panel.mean.text() == "0.485,0.456,0.406"
    apply_settings(panel, saved)  # the project's settings come back as saved
    assert (panel.fit.currentText(), panel.pad.value(), panel.mean.text()) == ("letterbox", 114.0, "0.1,0.1,0.1")
