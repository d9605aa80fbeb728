"""TensorRT for RTX's pure parts: compute-capability targets, which GPUs run a plan, the RTX engine cache key
and sidecar, and what a failed build's log means (error lines as TensorRT for RTX 1.7.1 wrote them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.core.engine.build_errors import clean, explain_build_failure
from app.core.engine.cache import (
    BuildConfig,
    EngineCacheError,
    check_engine_compat,
    engine_key,
    load_engine_meta,
    lookup_engine,
    make_rtx_engine_meta,
    rtx_engine_key,
    save_engine,
)
from app.core.engine.rtx import (
    DEFAULT_LABEL,
    TargetError,
    describe_targets,
    enum_names,
    has_turing,
    lacks_fp8,
    parse_targets,
    run_problem,
    runs_on,
)

DIGEST = "cd" * 32
RTX = "1.7.1.116"


# --- targets --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec, want", [
    ("8.6,8.9", ("8.6", "8.9")), ("8.9, 8.6, 8.9", ("8.6", "8.9")), ("sm86,SM_120", ("8.6", "12.0")),
    ("121,75", ("7.5", "12.1")), ([(8, 0), 8.6], ("8.0", "8.6")), ("", ()), (None, ()), ([], ()),
])
def test_targets_are_read_checked_sorted_and_unique(spec, want):
    assert parse_targets(spec) == want


@pytest.mark.parametrize("spec, words", [
    ("9.0", ["9.0", "H100", "7.5, 8.0, 8.6, 8.9, 12.0, 12.1"]),
    ("8.7", ["cannot build for compute capability 8.7"]),
    ("8.6,,8.9", ["empty entry"]),
    ("ampere", ["'ampere' is not a compute capability", "--target-cc 8.6,8.9"]),
    ("current", ["needs a GPU at build time"]),
])
def test_bad_targets_are_refused_with_the_choices(spec, words):
    with pytest.raises(TargetError) as err:
        parse_targets(spec)
    text = f"{err.value.message} {err.value.fix}"
    assert all(w in text for w in words), text


def test_enum_names_and_descriptions():
    assert enum_names(("7.5", "8.6", "12.0", "12.1")) == ["SM75", "SM86", "SM120", "SM121"]
    assert describe_targets(()) == DEFAULT_LABEL and "12.x" in DEFAULT_LABEL
    assert describe_targets(("8.6", "8.9")) == "8.6, 8.9"
    assert runs_on(()) == ("8.0", "8.6", "8.9", "12.0", "12.1") and runs_on(("8.9",)) == ("8.9",)


def test_which_gpus_run_a_plan():
    assert run_problem((), "8.6") == "" and run_problem((), "12.0") == "" and run_problem(("7.5",), "7.5") == ""
    h100 = run_problem((), "9.0", "NVIDIA H100 80GB HBM3")
    assert h100.startswith("RTX engines do not run on compute capability 9.0") and "H100" in h100
    assert "built for compute capability 8.9" in run_problem(("8.9",), "8.6")
    assert "7.5" in run_problem((), "7.5")  # the default set has no Turing
    assert "no NVIDIA GPU" in run_problem((), None)


def test_fp8_and_turing_rules():
    assert lacks_fp8(()) == ["8.0", "8.6"]  # the default set includes pre-Ada targets
    assert lacks_fp8(("8.9", "12.0")) == [] and lacks_fp8(("7.5", "8.9")) == ["7.5"]
    assert has_turing(("7.5", "8.6")) and not has_turing(())


# --- engine cache ---------------------------------------------------------------------------------------

def test_build_config_keeps_targets_out_of_tensorrt_digests():
    plain = BuildConfig()
    assert "targets" not in plain.to_json()  # TensorRT 10/11 keys stay what they were
    rtx = BuildConfig(targets=["8.9", "sm86"])
    assert rtx.targets == ("8.6", "8.9") and rtx.to_json()["targets"] == ["8.6", "8.9"]
    assert BuildConfig.from_json(rtx.to_json()) == rtx and rtx.digest() != plain.digest()
    with pytest.raises(TargetError):
        BuildConfig(targets=("9.0",))


def test_rtx_key_has_no_gpu_and_follows_version_and_targets():
    cfg = BuildConfig()
    key = rtx_engine_key(DIGEST, cfg, RTX)
    assert key == rtx_engine_key(DIGEST, BuildConfig(), RTX)
    others = {rtx_engine_key(DIGEST, BuildConfig(targets=("8.6",)), RTX), rtx_engine_key(DIGEST, cfg, "1.7.2.1"),
              rtx_engine_key("ef" * 32, cfg, RTX), engine_key(DIGEST, cfg, RTX, "RTX", "8.6")}
    assert key not in others and len(others) == 4


def test_rtx_sidecar_round_trip_and_lookup(tmp_path: Path):
    cfg = BuildConfig(targets=("8.6", "8.9"))
    key = rtx_engine_key(DIGEST, cfg, RTX)
    path = tmp_path / "engines" / f"{key}.engine"
    assert lookup_engine(tmp_path, key, RTX, None, None) is None
    save_engine(path, b"plan-bytes", make_rtx_engine_meta(key, cfg, RTX, onnx_digest=DIGEST, warnings=[]))
    meta = load_engine_meta(path, verify=True)
    assert meta["flavour"] == "rtx" and meta["targets"] == ["8.6", "8.9"] and meta["runs_on"] == ["8.6", "8.9"]
    assert "gpu_name" not in meta and "compute_capability" not in meta  # built without a GPU
    assert lookup_engine(tmp_path, key, RTX, None, None) == path
    assert lookup_engine(tmp_path, key, "1.8.0.1", None, None) is None  # another RTX version rebuilds
    with pytest.raises(EngineCacheError):
        save_engine(tmp_path / "x.engine", b"p", {"flavour": "rtx", "targets": []})  # no version


def test_rtx_compat_names_the_version_and_the_gpu():
    meta = make_rtx_engine_meta("k" * 32, BuildConfig(targets=("8.9",)), RTX)
    assert check_engine_compat(meta, RTX, None, None) is None
    assert check_engine_compat(meta, RTX, "GeForce RTX 4090", "8.9") is None
    other = check_engine_compat(meta, "1.8.0.1", None, None)
    assert other is not None and "1.7.1.116" in other.message and "1.8.0.1" in other.message
    h100 = check_engine_compat(meta, RTX, "NVIDIA H100 80GB HBM3", "9.0")
    assert h100 is not None and "compute capability 9.0" in h100.message and "--target-cc" in h100.fix


# --- build failures -------------------------------------------------------------------------------------

DIM_NAME = ("IBuilder::buildSerializedNetwork: Error Code 4: API Usage Error (?: Input dimensions with this name have "
            "different constant values or have contradictory IOptimizationProfile kMIN/kMAX constraints. In getBounds "
            "at /_src/optimizer/common/shape/shapeContext.cpp:4433)")
SQUEEZE = ("IBuilder::buildSerializedNetwork: Error Code 4: API Usage Error (IShuffleLayer Squeeze_72: Squeeze_72: "
           "ISqueezeLayer without an axes input requires dimension 0 to not be 1 at runtime, because squeezing it "
           "would change the output rank, which is fixed at build time. Set the axes input to control which "
           "dimensions are squeezed. In processCheck at /_src/optimizer/shapeof/graphShapeAnalyzer.cpp:1066)")
TURING = ("IBuilder::buildSerializedNetwork: Error Code 1: Myelin ([pass.cpp:337: check_turing_op_compatibility] "
          "Cannot compile operation 'MatMul.0' for Turing (SM75): FP32 GEMM is not supported. In compileGraph at "
          "/_src/optimizer/myelin/codeGenerator.cpp:2012)")
BF16 = ("IBuilder::buildSerializedNetwork: Error Code 1: Myelin ([pass.cpp:1500: run_passes] Cannot compile for "
        "target(s) sm75, because the model contains HW-specific datatypes: b16. In compileGraph at "
        "/_src/optimizer/myelin/codeGenerator.cpp:2012)")
INTERNAL = ("[graphScope.cpp::makeScopeNodesContiguous::812] Error Code 2: Internal Error (Assertion "
            "newNodeOrder.size() == g.nodes.size() failed.  In makeScopeNodesContiguous at "
            "/_src/optimizer/common/graphScope.cpp:812)")


@pytest.mark.parametrize("line, meaning, fix", [
    (DIM_NAME, "share one dim_param name ('?')", "equal sizes"),
    (SQUEEZE, "Squeeze without axes", "axes given"),
    (TURING, "Turing (compute capability 7.5) cannot run FP32", "Leave 7.5 out of --target-cc"),
    (BF16, "BF16 needs compute capability 8.0", "--target-cc"),
    (INTERNAL, "inside its optimizer", "readiness check"),
])
def test_each_known_failure_is_explained(line, meaning, fix):
    message, how = explain_build_failure([line])
    assert message.startswith("TensorRT could not build the engine: ") and meaning in message and fix in how
    assert "/_src/" not in message and "graphScope.cpp::" not in message  # source locations are dropped


def test_unknown_and_empty_failures_still_say_something():
    message, fix = explain_build_failure(["Error Code 9: something new"])
    assert "something new" in message and "first error" in fix
    message, _ = explain_build_failure([])
    assert "reported no error" in message
    assert clean(INTERNAL).startswith("Error Code 2: Internal Error (Assertion")
