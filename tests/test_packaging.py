"""The PyInstaller spec and the pip package data, checked without building: build_app.spec runs with PyInstaller's
build steps replaced by recorders (packaging/check_app.py builds and checks the real application)."""

from __future__ import annotations

import fnmatch
import importlib.util
import sys
import types
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "build_app.spec"
NVIDIA_LIBS = [("libnvinfer.so.10", "/x/tensorrt_libs/libnvinfer.so.10", "BINARY"),
               ("tensorrt_rtx_libs/libtensorrt_rtx.so.1", "/x/libtensorrt_rtx.so.1", "BINARY"),
               ("libnvonnxparser.so.10", "/x/libnvonnxparser.so.10", "BINARY")]
KEPT_LIB = ("onnxruntime/capi/libonnxruntime.so.1", "/x/libonnxruntime.so.1", "BINARY")


def _run_spec(monkeypatch, tmp_path) -> dict:
    """Execute build_app.spec as PyInstaller would, recording what it asks for instead of building."""
    calls: dict = {"collect_data_files": [], "collect_submodules": []}
    hooks = types.ModuleType("PyInstaller.utils.hooks")

    def collect_data_files(package, excludes=None, **_):
        calls["collect_data_files"].append((package, excludes))
        return [(f"/site/{package}/data.txt", package)]

    def collect_submodules(package, **_):
        calls["collect_submodules"].append(package)
        return [package, f"{package}.cli.main"]

    hooks.collect_data_files = collect_data_files
    hooks.collect_submodules = collect_submodules
    hooks.collect_dynamic_libs = lambda package, **_: []
    monkeypatch.setitem(sys.modules, "PyInstaller.utils.hooks", hooks)

    def analysis(scripts, **kw):
        calls["Analysis"] = kw
        # A hook or a dependency could still bring TensorRT's libraries: the spec must drop them.
        return types.SimpleNamespace(binaries=[*NVIDIA_LIBS, KEPT_LIB], datas=list(kw["datas"]), pure=[],
                                     scripts=[])

    namespace = {"SPECPATH": str(ROOT), "workpath": str(tmp_path), "Analysis": analysis,
                 "PYZ": lambda *a, **kw: "pyz",
                 "EXE": lambda *a, **kw: calls.setdefault("EXE", kw),
                 "COLLECT": lambda *a, **kw: calls.setdefault("COLLECT", (a, kw)), "__file__": str(SPEC)}
    exec(compile(SPEC.read_text(encoding="utf-8"), str(SPEC), "exec"), namespace)
    calls["a"] = namespace["a"]
    return calls


@pytest.fixture
def spec(monkeypatch, tmp_path) -> dict:
    return _run_spec(monkeypatch, tmp_path)


def test_spec_excludes_every_tensorrt_module(spec):
    excludes = set(spec["Analysis"]["excludes"])
    assert {"tensorrt", "tensorrt_libs", "tensorrt_bindings", "tensorrt_lean", "tensorrt_dispatch", "tensorrt_rtx",
            "tensorrt_rtx_libs", "tensorrt_rtx_bindings"} <= excludes
    # ... and every module an installed tensorrt* wheel provides (the test extra installs TensorRT for RTX).
    installed = {m for m, dists in packages_distributions().items()
                 if any(d.lower().startswith("tensorrt") for d in dists)}
    assert installed <= excludes, installed - excludes


def test_spec_drops_tensorrt_libraries_that_reach_the_bundle(spec):
    binaries = spec["a"].binaries
    assert KEPT_LIB in binaries
    assert not [b for b in binaries if b in NVIDIA_LIBS]


def test_spec_bundles_the_resources_and_the_icon(spec):
    datas = spec["Analysis"]["datas"]
    targets = {Path(src).relative_to(ROOT).as_posix(): dest for src, dest in datas if src.startswith(str(ROOT))}
    assert targets["resources/trtlab.desktop"] == "resources"
    assert targets["resources/icons"] == "resources/icons" and targets["resources/png"] == "resources/png"
    for src in targets:
        assert (ROOT / src).exists(), src
    # The app's own data (app/resources, the readiness table, templates) comes with collect_data_files("app").
    assert ("app", None) in spec["collect_data_files"]
    # onnx's test models are left out.
    assert ("onnx", ["backend/test/**"]) in spec["collect_data_files"]
    # Jobs and commands are imported by name: every module of the app is a hidden import.
    assert spec["collect_submodules"] == ["app"] and spec["Analysis"]["hiddenimports"] == ["app", "app.cli.main"]
    icon = spec["EXE"]["icon"]
    assert icon is None if sys.platform.startswith("linux") else Path(icon).is_file()
    assert spec["EXE"]["name"] == "trtlab"


def test_pip_package_data_ships_every_packaged_resource():
    """`pip install .` installs app/resources/ (the icons the app loads): each file matches a package-data glob."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = meta["tool"]["setuptools"]["package-data"]["app"]
    files = [p.relative_to(ROOT / "app").as_posix() for p in (ROOT / "app" / "resources").rglob("*") if p.is_file()]
    assert len(files) >= 20
    unmatched = [f for f in files if not any(fnmatch.fnmatch(f, pat) and f.count("/") == pat.count("/")
                                             for pat in patterns)]
    assert not unmatched, f"add a package-data pattern for {unmatched} in pyproject.toml"
    assert any(d.lower().startswith("pyinstaller") for d in meta["project"]["optional-dependencies"]["package"])


def test_check_app_runs_the_frozen_app_without_the_source_tree(monkeypatch):
    spec_ = importlib.util.spec_from_file_location("check_app", ROOT / "packaging" / "check_app.py")
    check_app = importlib.util.module_from_spec(spec_)
    monkeypatch.setitem(sys.modules, "check_app", check_app)  # its dataclasses look their module up there
    spec_.loader.exec_module(check_app)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("VIRTUAL_ENV", "/opt/venv")
    monkeypatch.setenv("PATH", "/opt/venv/bin:/usr/bin")
    env = check_app.clean_env({"QT_QPA_PLATFORM": "offscreen"})
    assert "PYTHONPATH" not in env and "VIRTUAL_ENV" not in env
    assert env["PATH"] == "/usr/bin" and env["QT_QPA_PLATFORM"] == "offscreen"
