"""The Run panel's input data as an InputSource's JSON: random data, sample files, a folder of images, or — the
default — trtlab's sample photos fitted to an image model, their preprocessing shown in the panel's image fields
(filled in from the model when it opens) and editable there."""

from __future__ import annotations

from typing import Any

from app.core.model import ShapeResult


def photo_defaults(panel: Any, source: Any | None) -> None:
    """The sample photos' preprocessing for the open model (an InputSource, or None for a model with no single
    image input) into the panel's image fields, while the panel's source is the default one. The same defaults again
    (the model reloaded with other input shapes) leave the fields as the person edited them."""
    before = getattr(getattr(panel, "photo_source", None), "preprocess", None)
    panel.photo_source = source
    pre = getattr(source, "preprocess", None)
    same = before is not None and pre is not None and before.to_json() == pre.to_json()
    if pre is not None and not same and panel.source.currentData() == "auto":
        panel.layout_combo.setCurrentText(pre.layout)
        panel.color.setCurrentText(pre.color)
        panel.scale.setValue(pre.scale)
        panel.mean.setText(",".join(f"{v:g}" for v in pre.mean))
        panel.std.setText(",".join(f"{v:g}" for v in pre.std))


def _preprocess(panel: Any) -> dict[str, object]:
    pre: dict[str, object] = {"layout": panel.layout_combo.currentText(), "color": panel.color.currentText(),
                              "scale": panel.scale.value()}
    for key, edit in (("mean", panel.mean), ("std", panel.std)):
        if edit.text().strip():
            try:
                pre[key] = [float(v) for v in edit.text().split(",")]
            except ValueError as exc:
                raise ValueError(f"{key.capitalize()} must be numbers separated by commas.") from exc
    return pre


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


def photo_source(inputs: list, shapes: dict | None, metadata: dict[str, str] | None = None) -> object | None:
    """The sample photos fitted to a model's one image input (an InputSource), or None (no such input, or its
    shape still open); `metadata`: the model's (an Ultralytics export gets no mean/std)."""
    from app.core.errors import TrtlabError
    from app.core.measure import photo_source_for, resolve_input_shapes

    try:
        return photo_source_for(inputs, resolve_input_shapes(inputs, dict(shapes or {})), metadata)
    except TrtlabError:
        return None
