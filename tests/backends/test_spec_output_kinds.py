"""Output kinds travel parsed: a spec holds `OutputKind`s, writes them as text only in its JSON and reads them back
from it; nothing between parses them again."""

from __future__ import annotations

import json

import pytest

from app.backends.tasks.specs import CompareSpec, SpecError, spec_from_json
from app.core.measure import OutputKind, OutputKindError, infer_output_kinds, parse_output_kinds
from app.core.measure import kinds as kinds_module
from tests.detector_models import topk_detector_model


@pytest.fixture
def parses(monkeypatch):
    """Counts every parse of an output kind's text."""
    seen: list[str] = []
    real = kinds_module.OutputKind.parse

    def counted(text: str, *, user: bool = True) -> OutputKind:
        seen.append(text)
        return real(text, user=user)

    monkeypatch.setattr(kinds_module.OutputKind, "parse", staticmethod(counted))
    return seen


def _spec(**kinds: OutputKind) -> CompareSpec:
    return CompareSpec(model="m.onnx", candidates=("ort-cpu:fp16",), output_kinds=kinds)


def test_a_spec_holds_the_parsed_kinds_and_writes_them_as_text():
    chosen = parse_output_kinds(["dets=detections:cxcywh,score=4", "mask=image:nhwc", "wav=audio:rate=22050"])
    spec = _spec(**chosen)
    assert all(isinstance(k, OutputKind) for k in spec.output_kinds.values())
    assert spec.output_kinds["dets"] is chosen["dets"]
    doc = json.loads(json.dumps(spec.to_json()))
    assert doc["output_kinds"] == {"dets": "detections:cxcywh", "mask": "image:nhwc", "wav": "audio:rate=22050"}
    back = spec_from_json(doc)
    assert back == spec and back.output_kinds == chosen and back.to_json() == spec.to_json()


def test_kinds_are_parsed_once_on_the_way_and_once_read_back(parses):
    chosen = parse_output_kinds({"dets": "yolo:v5"})
    assert parses == ["yolo:v5"]          # where the user's text entered
    spec = _spec(**chosen)
    spec = spec.with_(samples=2)
    doc = spec.to_json()
    assert parses == ["yolo:v5"]          # making, copying and writing the spec parse nothing
    CompareSpec.from_json(doc)
    assert parses == ["yolo:v5", "yolo:v5"]  # the job's process reads its JSON back: once


def test_infer_output_kinds_takes_the_parsed_kinds_as_they_are(parses):
    model = topk_detector_model(k=20)
    chosen = {"dets": OutputKind("detections", box="cxcywh", reason="set by you", user=True)}
    kinds = infer_output_kinds(model, {"dets": [1, 20, 6]}, user=chosen)
    assert kinds["dets"] is chosen["dets"] and parses == []


def test_a_spec_refuses_kinds_that_were_never_parsed():
    with pytest.raises(SpecError, match="not parsed kinds"):
        CompareSpec(model="m.onnx", candidates=("ort-cpu:fp16",), output_kinds={"dets": "yolo"})  # type: ignore[dict-item]
    with pytest.raises(OutputKindError, match="'blob' is not an output kind"):
        CompareSpec.from_json({"model": "m.onnx", "candidates": ["ort-cpu"], "output_kinds": {"dets": "blob"}})
    with pytest.raises(SpecError, match="not parsed kinds"):
        CompareSpec.from_json({"model": "m.onnx", "candidates": ["ort-cpu"], "output_kinds": "dets=yolo"})
