"""The two TensorRTs trtlab builds with: TensorRT 10.x/11.x (`tensorrt`) and TensorRT for RTX
(`tensorrt_rtx_bindings`). Their build API is the same (RTX 1.7 has TensorRT 11.1's), so one build code path
serves both; a flavour says which module to import and what differs:

- the version: TensorRT is 10.x or 11.x; TensorRT for RTX numbers itself 1.x (1.7.1.116 was measured).
- timing caches: real in TensorRT; deprecated no-ops in RTX (always 172 bytes), whose replacement, the runtime
  cache, needs a loaded engine and so a GPU.
- where a plan runs: a TensorRT plan on the GPU model that built it; an RTX plan, compiled ahead of time
  without a GPU, on any GPU of its compute-capability targets ("portable").

The module is imported here, never inside the build function, which takes it as an argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.backends.base import BackendUnavailable

TRT_INSTALL = 'pip install "trtlab[tensorrt]"'
RTX_INSTALL = 'pip install "trtlab[tensorrt-rtx]"'


@dataclass(frozen=True)
class Flavour:
    key: str                      # "tensorrt" | "rtx"
    backend: str                  # the backend name: "trt" | "trt-rtx"
    label: str                    # for people: "TensorRT", "TensorRT for RTX"
    modules: tuple[str, ...]      # importable module names, first found wins
    install_hint: str
    timing_cache: bool            # builds read and write a timing cache
    portable: bool                # plans are built for compute-capability targets, not for this GPU

    def import_module(self) -> Any:
        """The TensorRT module of this flavour; BackendUnavailable (with the install command) when missing."""
        import importlib

        last: Exception | None = None
        for name in self.modules:
            try:
                return importlib.import_module(name)
            except ImportError as exc:  # also "libtensorrt_rtx.so.1: cannot open shared object file"
                last = exc
        detail = str(last or "").strip().splitlines()[0] if last else ""
        missing_libs = "cannot open shared object" in detail
        reason = (f"{self.label} is installed without its libraries ({detail})." if missing_libs
                  else f"{self.modules[0]} is not installed.")
        raise BackendUnavailable(reason, fix=self.install_hint) from last

    def version_problem(self, version: str) -> str:
        """Why this version is not one trtlab drives ('' when it is)."""
        major = _major(version)
        if version == "unknown":
            return ""
        if self.key == "rtx":
            if major != 1:
                return (f"TensorRT for RTX {version} is installed; trtlab drives TensorRT for RTX 1.x (tested with "
                        "1.7.1.116).")
            return ""
        if major not in (10, 11):
            return f"TensorRT {version} is installed; trtlab supports TensorRT 10.x and 11.x."
        return ""


def _major(version: str) -> int | None:
    try:
        return int(str(version).split(".")[0])
    except ValueError:
        return None


TENSORRT = Flavour("tensorrt", "trt", "TensorRT", ("tensorrt",), TRT_INSTALL, timing_cache=True, portable=False)
RTX = Flavour("rtx", "trt-rtx", "TensorRT for RTX", ("tensorrt_rtx_bindings", "tensorrt_rtx"), RTX_INSTALL,
              timing_cache=False, portable=True)
FLAVOURS = {f.backend: f for f in (TENSORRT, RTX)}


def flavour_of(backend: str) -> Flavour:
    """The flavour of an engine backend ('trt' or 'trt-rtx')."""
    try:
        return FLAVOURS[backend]
    except KeyError:
        raise ValueError(f"'{backend}' is not a TensorRT backend (use one of {', '.join(FLAVOURS)})") from None


def module_version(trt: Any) -> str:
    return str(getattr(trt, "__version__", "unknown"))
