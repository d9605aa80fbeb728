"""What the evaluation tests share: trtlab's sample photos, the survey's real models, a model's first input."""

from __future__ import annotations

import os
from pathlib import Path

import onnx
import pytest

from app.core.model import TensorInfo, graph_inputs, value_info_to_tensor_info

SAMPLES = Path(__file__).resolve().parents[2] / "app" / "resources" / "samples"


def survey_model(rel: str) -> Path:
    """A model fetched by benchmarks/survey_models.py (the test skips, saying so, where it is not)."""
    path = Path(os.environ.get("TRTLAB_SURVEY", Path.home() / ".cache" / "trtlab" / "survey")) / rel
    if not path.exists():
        pytest.skip(f"{rel} is not fetched at {path.parent} (python benchmarks/survey_models.py fetches it)")
    return path


def first_input(model: onnx.ModelProto) -> TensorInfo:
    return value_info_to_tensor_info(graph_inputs(model.graph)[0])
