"""The Run panel's settings as JSON, and back: what a project saves of the panel and restores into it."""

from __future__ import annotations

from typing import Any

from app.ui.run.panel import RunPanel


def panel_settings(panel: RunPanel) -> dict[str, Any]:
    """Every setting a person chose in the panel (ticks, reference, input data, calibration, tolerance)."""
    return {
        "reference": panel.reference.currentText(),
        "backends": panel.backend_rows.checked(),
        "precisions": panel.precisions(),
        "tf32": panel.tf32.isChecked(),
        "source": panel.source.currentData(),
        "path": panel.path.text(),
        "seed": panel.seed.value(),
        "samples": panel.samples.value(),
        "image_resize": panel.fit.currentText(),
        "pad": panel.pad.value(),
        "image_layout": panel.layout_combo.currentText(),
        "color": panel.color.currentText(),
        "scale": panel.scale.value(),
        "mean": panel.mean.text(),
        "std": panel.std.text(),
        "calib_method": panel.calib_method.currentText(),
        "calib_samples": panel.calib_samples.value(),
        "tolerance": f"cos:{panel.min_cos.value():g}",
        "iterations": panel.iterations.text(),
        "rtx_targets": panel.rtx_targets.text(),
        "output_kinds": panel.outputs_box.kinds(),
        "tuned": dict(panel.tuned),
    }


def panel_inputs(panel: RunPanel) -> dict | None:
    """The input source JSON, or None while the chosen source lacks its path."""
    try:
        return panel.input_source()
    except ValueError:
        return None


def apply_settings(panel: RunPanel, s: dict[str, Any], profiles: list[str] | None = None) -> None:
    """Put saved settings back; a setting this machine cannot take (a backend that is not here) is left as is."""
    if s.get("backends") is not None:
        wanted = set(s["backends"])
        for name, cb in panel.checks.items():
            if cb.isEnabled():
                cb.setChecked(name in wanted)
    if s.get("precisions"):
        panel.set_precisions(list(s["precisions"]))
    if s.get("reference") and panel.reference.findText(s["reference"]) >= 0:
        panel.reference.setCurrentText(s["reference"])
    panel.tf32.setChecked(bool(s.get("tf32", False)))
    index = panel.source.findData(s.get("source", "random"))
    if index >= 0:
        panel.source.setCurrentIndex(index)
    panel.path.setText(str(s.get("path") or ""))
    for box, key in ((panel.seed, "seed"), (panel.samples, "samples"), (panel.calib_samples, "calib_samples")):
        if isinstance(s.get(key), int):
            box.setValue(s[key])
    for combo, key in ((panel.fit, "image_resize"), (panel.layout_combo, "image_layout"), (panel.color, "color"),
                       (panel.calib_method, "calib_method")):
        if s.get(key) and combo.findText(s[key]) >= 0:
            combo.setCurrentText(s[key])
    for spin, key in ((panel.scale, "scale"), (panel.pad, "pad")):
        if isinstance(s.get(key), int | float):
            spin.setValue(float(s[key]))
    panel.mean.setText(str(s.get("mean") or ""))
    panel.std.setText(str(s.get("std") or ""))
    tol = str(s.get("tolerance") or "")
    if tol.startswith("cos:"):
        try:
            panel.min_cos.setValue(float(tol[4:]))
        except ValueError:
            pass
    if s.get("iterations"):
        panel.iterations.setText(str(s["iterations"]))
    panel.rtx_targets.setText(str(s.get("rtx_targets") or ""))
    panel.outputs_box.set_kinds(dict(s.get("output_kinds") or {}))
    panel.set_tuned({str(k): str(v) for k, v in (s.get("tuned") or {}).items()})
    for line in profiles or []:
        name, _, ranges = line.partition(":")
        if name in panel.profile_edits:
            panel.profile_edits[name].setText(ranges)
