"""The Run panel's input data as an InputSource's JSON: random data, sample files, a folder of images, or — the
default — trtlab's sample photos fitted to an image model, their preprocessing (the model's preset: letterbox for an
Ultralytics export, PaddleOCR's rules, else ImageNet's) named and shown in the panel's image fields (filled in from
the model when it opens) and editable there."""

from __future__ import annotations

from typing import Any

from app.core.model import ShapeResult


def photo_defaults(panel: Any, source: Any | None) -> None:
    """The sample photos' preprocessing for the open model (an InputSource whose preprocessing is the model's
    preset, or None for a model with no single image input) into the panel's image fields, and the preset's name
    and reason beside them, while the panel's source is the default one. The same defaults again (the model
    reloaded with other input shapes) leave the fields as the person edited them."""
    before = getattr(getattr(panel, "photo_source", None), "preprocess", None)
    panel.photo_source = source
    pre = getattr(source, "preprocess", None)
    panel.preset_label.setText(f"{pre.preset}: {pre.reason}" if pre is not None and pre.preset else
                               "none: the model has no single image input" if source is None else "")
    same = before is not None and pre is not None and before.to_json() == pre.to_json()
    if pre is not None and not same and panel.source.currentData() == "auto":
        panel.fit.setCurrentText(pre.resize)
        panel.pad.setValue(pre.pad)
        panel.layout_combo.setCurrentText(pre.layout)
        panel.color.setCurrentText(pre.color)
        panel.scale.setValue(pre.scale)
        panel.mean.setText(",".join(f"{v:g}" for v in pre.mean))
        panel.std.setText(",".join(f"{v:g}" for v in pre.std))


def _preprocess(panel: Any) -> dict[str, object]:
    """The panel's image fields as ImagePreprocess JSON: the model's preset (the fields' defaults) named, and the
    fields a person changed from it listed as given."""
    pre: dict[str, object] = {"resize": panel.fit.currentText(), "pad": panel.pad.value(),
                              "layout": panel.layout_combo.currentText(), "color": panel.color.currentText(),
                              "scale": panel.scale.value()}
    for key, edit in (("mean", panel.mean), ("std", panel.std)):
        if edit.text().strip():
            try:
                pre[key] = [float(v) for v in edit.text().split(",")]
            except ValueError as exc:
                raise ValueError(f"{key.capitalize()} must be numbers separated by commas.") from exc
    base = getattr(getattr(panel, "photo_source", None), "preprocess", None)
    if base is not None and base.preset:
        model = base.to_json()
        given = [k for k in pre if not _same(pre[k], model.get(k))]
        pre.update({k: model[k] for k in pre if k not in given})  # the preset's exact values (1/255, not 0.003922)
        pre["preset"] = base.preset
        pre["given"] = given
        pre["reason"] = (base.reason if not given else
                         f"{', '.join(given)} as set in the window, the rest from the model's {base.preset} preset")
    return pre


def _same(a: object, b: object) -> bool:
    """Whether a field's value is the preset's (numbers within the spin boxes' rounding)."""
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, int | float) and isinstance(b, int | float):
        return abs(float(a) - float(b)) <= 1e-6 * max(1.0, abs(float(b)))
    return a == b


def input_source(panel: Any) -> dict | None:
    """The chosen input data as InputSource JSON. The default source: the sample photos with the preprocessing in
    the panel's image fields for an image model; None for other models (the job then uses seeded random data)."""
    kind = panel.source.currentData()
    if kind == "auto":
        if getattr(panel, "photo_source", None) is None:
            return None
        return {"kind": "images", "path": panel.photo_source.path, "seed": panel.seed.value(),
                "preprocess": _preprocess(panel)}
    src: dict[str, object] = {"kind": kind, "seed": panel.seed.value()}
    if kind != "random":
        if not panel.path.text().strip():
            raise ValueError("Choose a file or folder for the input data (or use random data).")
        src["path"] = panel.path.text().strip()
    if kind == "images":
        src["preprocess"] = _preprocess(panel)
    return src


def output_dims(names: list[str], shapes: ShapeResult | None) -> dict[str, list[int | None]]:
    """Inferred dims of some tensors (ints where known, else None), for reading what each output means."""
    out: dict[str, list[int | None]] = {}
    for name in names:
        info = shapes.get(name) if shapes is not None else None
        if info is not None and info.shape is not None:
            out[name] = [d if isinstance(d, int) and d > 0 else None for d in info.shape]
    return out


def photo_source(inputs: list, shapes: dict | None, model: Any = None) -> object | None:
    """The sample photos fitted to a model's one image input, preprocessed by the model's preset (an InputSource:
    app.core.evaluate.photo_source), or None (no such input, or its shape still open); `model`: the model (or only
    its metadata: then only an Ultralytics export is told apart)."""
    from app.core.errors import TrtlabError
    from app.core.evaluate import photo_source as fitted
    from app.core.measure import resolve_input_shapes

    try:
        return fitted(model, inputs, resolve_input_shapes(inputs, dict(shapes or {})))
    except TrtlabError:
        return None
