"""Engine cache keys, paths, sidecars and the compatibility check."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from app.core.engine.cache import (
    BuildConfig,
    BuildConfigError,
    EngineCacheError,
    EngineCompatError,
    check_engine_compat,
    default_root,
    engine_key,
    engine_path,
    format_cc,
    load_engine_meta,
    load_timing_cache,
    lookup_engine,
    make_engine_meta,
    save_engine,
    save_timing_cache,
    sidecar_path,
    timing_cache_path,
)
from app.core.engine.profiles import InputProfile, OptimizationProfile

A100 = ("10.8.0.43", "NVIDIA A100-SXM4-80GB", "8.0")
H100 = ("11.0.0.9", "NVIDIA H100 80GB HBM3", "9.0")
DIGEST = "ab" * 32


def _profile(max_batch: int = 8) -> OptimizationProfile:
    return OptimizationProfile.of([InputProfile("x", (1, 3), (4, 3), (max_batch, 3)),
                                   InputProfile.fixed("m", (1, 4))])


# --- BuildConfig ----------------------------------------------------------------------------------------

def test_defaults_turn_tf32_off_and_keep_trt_level() -> None:
    c = BuildConfig()
    assert (c.workspace_mb, c.optimization_level, c.tf32, c.strongly_typed) == (None, 3, False, True)
    assert c.workspace_bytes is None and c.uses_timing_cache
    assert BuildConfig(workspace_mb=4096).workspace_bytes == 4096 * 1024 * 1024
    assert not BuildConfig(optimization_level=0).uses_timing_cache


@pytest.mark.parametrize("level", [-1, 6, True, 2.5, "3"])
def test_optimization_level_outside_0_to_5_is_refused(level: object) -> None:
    with pytest.raises(BuildConfigError) as info:
        BuildConfig(optimization_level=level)  # type: ignore[arg-type]
    assert f"level {level!r} is out of range" in info.value.message
    assert "0 to 5" in info.value.fix


@pytest.mark.parametrize("level", [0, 1, 2, 3, 4, 5])
def test_every_level_0_to_5_is_accepted(level: int) -> None:
    assert BuildConfig(optimization_level=level).optimization_level == level


@pytest.mark.parametrize("ws", [0, -64, True, "1024", 1.5])
def test_workspace_must_be_positive_whole_megabytes(ws: object) -> None:
    with pytest.raises(BuildConfigError, match="Workspace size"):
        BuildConfig(workspace_mb=ws)  # type: ignore[arg-type]


def test_flags_must_be_bools_and_extra_plain_json() -> None:
    with pytest.raises(BuildConfigError, match="'tf32'"):
        BuildConfig(tf32="yes")  # type: ignore[arg-type]
    with pytest.raises(BuildConfigError, match="not plain JSON"):
        BuildConfig(extra={"a": {1, 2}})
    with pytest.raises(BuildConfigError, match="not plain JSON"):
        BuildConfig(extra={"a": float("nan")})
    with pytest.raises(BuildConfigError, match="string keys"):
        BuildConfig(extra={1: "a"})  # type: ignore[dict-item]


def test_digest_ignores_order_but_not_values() -> None:
    base = BuildConfig(workspace_mb=1024, profiles=[_profile()], extra={"a": 1, "b": [1, 2]})
    same = BuildConfig(extra={"b": [1, 2], "a": 1}, workspace_mb=1024,
                       profiles=[OptimizationProfile({"m": _profile().inputs["m"], "x": _profile().inputs["x"]})])
    assert base.digest() == same.digest()
    assert re.fullmatch(r"[0-9a-f]{64}", base.digest())  # a SHA-256 in hex
    changed = [BuildConfig(workspace_mb=2048, profiles=[_profile()], extra={"a": 1, "b": [1, 2]}),
               BuildConfig(workspace_mb=1024, optimization_level=4, profiles=[_profile()], extra={"a": 1, "b": [1, 2]}),
               BuildConfig(workspace_mb=1024, tf32=True, profiles=[_profile()], extra={"a": 1, "b": [1, 2]}),
               BuildConfig(workspace_mb=1024, strongly_typed=False, profiles=[_profile()],
                           extra={"a": 1, "b": [1, 2]}),
               BuildConfig(workspace_mb=1024, profiles=[_profile(16)], extra={"a": 1, "b": [1, 2]}),
               BuildConfig(workspace_mb=1024, profiles=[_profile(), _profile()], extra={"a": 1, "b": [1, 2]}),
               BuildConfig(workspace_mb=1024, profiles=[_profile()], extra={"a": 1, "b": [2, 1]})]
    digests = {c.digest() for c in changed}
    assert len(digests) == len(changed) and base.digest() not in digests


def test_profile_order_matters_in_the_digest() -> None:
    # profile index is what set_optimization_profile_async selects, so order is meaningful
    a = BuildConfig(profiles=[_profile(8), _profile(16)])
    b = BuildConfig(profiles=[_profile(16), _profile(8)])
    assert a.digest() != b.digest()


def test_config_json_round_trip() -> None:
    c = BuildConfig(workspace_mb=512, optimization_level=5, tf32=True, profiles=[_profile()], extra={"k": "v"})
    doc = json.loads(json.dumps(c.to_json()))
    back = BuildConfig.from_json(doc)
    assert back == c and back.digest() == c.digest()
    assert isinstance(back.profiles[0], OptimizationProfile)
    with pytest.raises(BuildConfigError, match="malformed"):
        BuildConfig.from_json([1, 2])


# --- keys and paths -------------------------------------------------------------------------------------

@pytest.mark.parametrize("cc,want", [((8, 6), "8.6"), ("8.6", "8.6"), ("sm_86", "8.6"), ("SM86", "8.6"),
                                     ("86", "8.6"), (8.6, "8.6"), (9, "9.0"), ("9", "9.0"), ("sm_100", "10.0"),
                                     ("12.0", "12.0"), ([12, 1], "12.1"), (" 7.5 ", "7.5")])
def test_format_cc(cc: object, want: str) -> None:
    assert format_cc(cc) == want


@pytest.mark.parametrize("cc", ["", "ampere", None, (8,), (8, "6"), True, 0, float("nan"), "sm_"])
def test_format_cc_refuses_nonsense(cc: object) -> None:
    with pytest.raises(EngineCacheError, match="compute capability"):
        format_cc(cc)


def test_engine_key_depends_on_every_part() -> None:
    cfg = BuildConfig()
    key = engine_key(DIGEST, cfg, *A100)
    assert len(key) == 32 and all(c in "0123456789abcdef" for c in key)
    assert key == engine_key(DIGEST, BuildConfig(), *A100)
    assert key == engine_key(DIGEST, cfg, A100[0], A100[1], (8, 0))
    assert key == engine_key(DIGEST, cfg, A100[0], " " + A100[1] + " ", "sm_80")
    others = {engine_key("cd" * 32, cfg, *A100), engine_key(DIGEST, BuildConfig(tf32=True), *A100),
              engine_key(DIGEST, cfg, "10.8.0.40", A100[1], A100[2]),
              engine_key(DIGEST, cfg, A100[0], "NVIDIA A100-PCIE-40GB", A100[2]),
              engine_key(DIGEST, cfg, A100[0], A100[1], "8.6")}
    assert len(others) == 5 and key not in others


@pytest.mark.parametrize("args", [("", "10.8", "A100", "8.0"), (DIGEST, "", "A100", "8.0"),
                                  (DIGEST, "10.8", "  ", "8.0")])
def test_engine_key_needs_every_part(args: tuple) -> None:
    with pytest.raises(EngineCacheError, match="empty"):
        engine_key(args[0], BuildConfig(), *args[1:])


def test_timing_cache_path_is_per_version_and_gpu(tmp_path: Path) -> None:
    p = timing_cache_path(tmp_path, *A100)
    assert p.parent == tmp_path / "timing"
    assert p.name.startswith("NVIDIA-A100-SXM4-80GB_sm80_trt10.8.0.43_") and p.suffix == ".cache"
    assert p == timing_cache_path(tmp_path, A100[0], A100[1], (8, 0))
    assert len({p, timing_cache_path(tmp_path, *H100), timing_cache_path(tmp_path, "10.8.0.44", *A100[1:]),
                timing_cache_path(tmp_path, A100[0], "NVIDIA A100 SXM4 80GB", A100[2])}) == 4


def test_timing_cache_path_is_safe_for_odd_names(tmp_path: Path) -> None:
    p = timing_cache_path(tmp_path, "10.8/../x", "GPU / with: odd*chars", "8.9")
    assert p.parent == tmp_path / "timing"
    assert "/" not in p.name and ":" not in p.name and "*" not in p.name


def test_engine_and_sidecar_paths(tmp_path: Path) -> None:
    key = engine_key(DIGEST, BuildConfig(), *A100)
    assert engine_path(tmp_path, key) == tmp_path / "engines" / f"{key}.engine"
    assert sidecar_path(tmp_path / "m.engine") == tmp_path / "m.engine.json"
    for bad in ("../../etc/passwd", "", "XYZ", "ab"):
        with pytest.raises(EngineCacheError, match="not an engine key"):
            engine_path(tmp_path, bad)


def test_default_root_follows_the_cache_dir(variant_cache: Path) -> None:
    assert default_root() == variant_cache / "tensorrt"


# --- engines on disk ------------------------------------------------------------------------------------

def _meta(key: str = "0" * 32, machine: tuple = A100, **more) -> dict:
    return make_engine_meta(key, BuildConfig(workspace_mb=256), *machine, onnx_digest=DIGEST, **more)


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    data = bytes(range(256)) * 10
    path = tmp_path / "out" / "model.engine"
    side = save_engine(path, memoryview(data), _meta(created="2026-01-02T03:04:05+00:00", note="x"))
    assert side == tmp_path / "out" / "model.engine.json"
    assert path.read_bytes() == data
    meta = load_engine_meta(path, verify=True)
    assert meta["trt_version"] == "10.8.0.43" and meta["gpu_name"] == "NVIDIA A100-SXM4-80GB"
    assert meta["compute_capability"] == "8.0" and meta["key"] == "0" * 32
    assert meta["config"]["workspace_mb"] == 256 and BuildConfig.from_json(meta["config"]).workspace_mb == 256
    assert meta["created"] == "2026-01-02T03:04:05+00:00" and meta["note"] == "x"
    assert meta["engine_bytes"] == 2560 and meta["schema"] == 1 and len(meta["engine_sha256"]) == 64
    assert meta["onnx_digest"] == DIGEST
    assert not list((tmp_path / "out").glob("*.tmp"))


def test_created_is_filled_in_when_missing(tmp_path: Path) -> None:
    meta = _meta()
    assert meta["created"].endswith("+00:00") and meta["created"][:2] == "20"
    doc = {k: v for k, v in meta.items() if k != "created"}
    save_engine(tmp_path / "e.engine", b"x", doc)
    assert load_engine_meta(tmp_path / "e.engine")["created"][:2] == "20"


def test_a_truncated_engine_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "e.engine"
    save_engine(path, b"0123456789", _meta())
    path.write_bytes(b"01234")
    with pytest.raises(EngineCacheError) as info:
        load_engine_meta(path)
    assert "has 5 bytes but its sidecar describes 10" in info.value.message
    assert "Rebuild" in info.value.fix


def test_a_changed_engine_of_the_same_size_fails_only_the_checksum(tmp_path: Path) -> None:
    path = tmp_path / "e.engine"
    save_engine(path, b"0123456789", _meta())
    path.write_bytes(b"9876543210")
    assert load_engine_meta(path)["engine_bytes"] == 10  # size check alone passes
    with pytest.raises(EngineCacheError, match="checksum"):
        load_engine_meta(path, verify=True)


def test_missing_and_broken_sidecars(tmp_path: Path) -> None:
    path = tmp_path / "e.engine"
    with pytest.raises(EngineCacheError, match="does not exist"):
        load_engine_meta(path)
    path.write_bytes(b"plan")
    with pytest.raises(EngineCacheError) as info:
        load_engine_meta(path)
    assert "has no sidecar 'e.engine.json'" in info.value.message
    assert "which TensorRT version and GPU built it" in info.value.message
    side = sidecar_path(path)
    side.write_text("{not json", encoding="utf-8")
    with pytest.raises(EngineCacheError, match="unreadable"):
        load_engine_meta(path)
    side.write_text("[1]", encoding="utf-8")
    with pytest.raises(EngineCacheError, match="not a JSON object"):
        load_engine_meta(path)
    side.write_text(json.dumps({"schema": 99, "trt_version": "x", "gpu_name": "y", "compute_capability": "8.0",
                                "engine_bytes": 4}), encoding="utf-8")
    with pytest.raises(EngineCacheError, match="format 99"):
        load_engine_meta(path)
    side.write_text(json.dumps({"schema": 1, "trt_version": "10.8", "engine_bytes": 4}), encoding="utf-8")
    with pytest.raises(EngineCacheError, match="lacks gpu_name, compute_capability"):
        load_engine_meta(path)


def test_save_refuses_incomplete_or_non_json_meta(tmp_path: Path) -> None:
    with pytest.raises(EngineCacheError, match="lacks gpu_name"):
        save_engine(tmp_path / "e.engine", b"x", {"trt_version": "10.8", "compute_capability": "8.0"})
    with pytest.raises(EngineCacheError, match="not plain JSON"):
        save_engine(tmp_path / "e.engine", b"x", _meta(extra_thing={1, 2}))
    assert not (tmp_path / "e.engine").exists()


def test_saving_again_replaces_engine_and_sidecar(tmp_path: Path) -> None:
    path = tmp_path / "e.engine"
    save_engine(path, b"old plan", _meta(machine=A100))
    save_engine(path, b"new plan!", _meta(machine=H100))
    meta = load_engine_meta(path, verify=True)
    assert path.read_bytes() == b"new plan!" and meta["trt_version"] == "11.0.0.9" and meta["engine_bytes"] == 9


# --- compatibility --------------------------------------------------------------------------------------

def test_same_machine_is_compatible() -> None:
    assert check_engine_compat(_meta(), *A100) is None
    assert check_engine_compat(_meta(), A100[0], A100[1], (8, 0)) is None


def test_other_version_and_gpu_is_a_clear_error() -> None:
    err = check_engine_compat(_meta(), *H100)
    assert isinstance(err, EngineCompatError)
    assert err.message == ("This engine was built with TensorRT 10.8.0.43 on NVIDIA A100-SXM4-80GB (compute "
                           "capability 8.0); this machine has TensorRT 11.0.0.9 on NVIDIA H100 80GB HBM3 (9.0).")
    assert err.fix.startswith("Rebuild it here (the TensorRT version and GPU architecture differ)")


def test_only_the_version_differs() -> None:
    err = check_engine_compat(_meta(), "10.9.0.34", A100[1], A100[2])
    assert err is not None and "(the TensorRT version differs)" in err.fix


def test_another_gpu_model_of_the_same_architecture() -> None:
    meta = _meta(machine=("10.8.0.43", "NVIDIA GeForce RTX 4090", "8.9"))
    err = check_engine_compat(meta, "10.8.0.43", "NVIDIA L40S", "8.9")
    assert err is not None and "(the GPU model differs)" in err.fix
    assert check_engine_compat(meta, "10.8.0.43", "NVIDIA L40S", "8.9", strict_gpu=False) is None
    err = check_engine_compat(meta, "10.8.0.43", "NVIDIA A100", "8.0", strict_gpu=False)
    assert err is not None and "GPU architecture" in err.fix


def test_an_incomplete_sidecar_is_not_compatible() -> None:
    err = check_engine_compat({"trt_version": "10.8"}, *A100)
    assert isinstance(err, EngineCompatError) and "incomplete" in err.message


# --- the cache ------------------------------------------------------------------------------------------

def test_lookup_misses_then_hits(tmp_path: Path) -> None:
    cfg = BuildConfig(profiles=[_profile()])
    key = engine_key(DIGEST, cfg, *A100)
    assert lookup_engine(tmp_path, key, *A100) is None
    path = engine_path(tmp_path, key)
    save_engine(path, b"plan bytes", make_engine_meta(key, cfg, *A100, onnx_digest=DIGEST))
    os.utime(path, (1, 1))
    assert lookup_engine(tmp_path, key, *A100) == path
    assert path.stat().st_mtime > 1  # touched so that pruning keeps it
    assert lookup_engine(tmp_path, key, *H100) is None


def test_lookup_ignores_broken_or_foreign_entries(tmp_path: Path) -> None:
    key = engine_key(DIGEST, BuildConfig(), *A100)
    path = engine_path(tmp_path, key)
    save_engine(path, b"plan", _meta(key="f" * 32))  # sidecar of another key
    assert lookup_engine(tmp_path, key, *A100) is None
    save_engine(path, b"plan", _meta(key=key))
    assert lookup_engine(tmp_path, key, *A100) == path
    sidecar_path(path).unlink()  # a crash between engine and sidecar
    assert lookup_engine(tmp_path, key, *A100) is None


def test_timing_cache_round_trip(tmp_path: Path) -> None:
    path = timing_cache_path(tmp_path, *A100)
    assert load_timing_cache(path) == b""
    save_timing_cache(path, memoryview(b"\x00\x01cache"))
    assert load_timing_cache(path) == b"\x00\x01cache"
