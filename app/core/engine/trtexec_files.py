"""What ``trtexec`` (and TensorRT for RTX's ``tensorrt_rtx``) writes, read back: the per-layer profile, the
per-inference timings, the build log, and the metadata JSON NVIDIA's engine explorer (TREx) kept beside them.

Formats, from NVIDIA/TensorRT ``samples/common/sampleReporting.cpp`` (``exportJSONProfile``, ``exportJSONTrace``) and
the TREx test inputs (``tools/experimental/trt-engine-explorer/tests/inputs`` at tag v10.16):

* ``--exportProfile``: a list whose first item is ``{"count": runs}`` and then one item per engine layer,
  ``{"name", "timeMs" (over all runs), "averageMs", "medianMs", "percentage"}``; the profile's total is the sum
  of the layers' ``averageMs`` (what trtexec prints as its ``Total`` row).
* ``--exportTimes``: one item per inference, ``{"startEnqMs", "endEnqMs", "startH2dMs", …, "h2dMs", "computeMs",
  "d2hMs", "latencyMs"}``; ``latencyMs`` is H2D + compute + D2H.
* The log: the banner ``&&&& RUNNING TensorRT.trtexec [TensorRT v101600] [b…]`` (the version as major·10000 +
  minor·100 + patch, ``samples/common/logging.h: defineTest``), ``TensorRT version: 10.16.0`` where printed, and
  the ``=== Device Information ===`` block (``Selected Device: NVIDIA TITAN RTX``, ``Compute Capability: 7.5``).
* TREx's ``*.profile.metadata.json`` / ``*.build.metadata.json``: ``{"device_information": {"Selected Device",
  "Compute Capability", …}, "performance_summary", "inference_options"}`` (parsed from the same log).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from app.core.engine.polygraphy_json import is_run_results

__all__ = ["BuildLogFacts", "LayerProfile", "ProfileFile", "classify_json", "latency_stats", "parse_build_log",
           "parse_profile", "parse_profile_table", "parse_times", "parse_trtexec_outputs", "trex_device",
           "version_from_banner"]

_BANNER = re.compile(r"\[TensorRT v(\d+)\]")
_VERSION_LINE = re.compile(r"TensorRT version:\s*(\d+\.\d+\.\d+(?:\.\d+)?)")
_RTX_VERSION = re.compile(r"TensorRT[- ]RTX(?: version)?:?\s*v?(\d+\.\d+\.\d+(?:\.\d+)?)", re.IGNORECASE)
_DEVICE = re.compile(r"Selected Device:\s*(.+?)\s*$", re.MULTILINE)
_CC = re.compile(r"Compute Capability:\s*([\d.]+)")
# trtexec's --dumpProfile table: "Time(ms) Avg.(ms) Median(ms) Time(%) Layer", one row per layer, then "Total".
_PROFILE_HEAD = re.compile(r"=== Profile \((\d+) iterations? \) ===|=== Profile \((\d+) iterations?\) ===")
_PROFILE_ROW = re.compile(r"^\s*(?:\[[^\]]*\]\s*)*\[I\]\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(.+?)\s*$")


@dataclass(frozen=True)
class LayerProfile:
    name: str
    average_ms: float
    median_ms: float | None = None
    total_ms: float | None = None
    percentage: float | None = None


@dataclass
class ProfileFile:
    """A per-layer profile: the layers in the engine's order, the runs it averaged over."""

    layers: list[LayerProfile] = field(default_factory=list)
    runs: int | None = None

    @property
    def total_ms(self) -> float:
        """The profile's own total: the sum of the layers' average times."""
        return math.fsum(layer.average_ms for layer in self.layers)


def _float(value: object) -> float | None:
    try:
        f = float(value)  # type: ignore[arg-type]  # JSON numbers and numeric strings
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def parse_profile(doc: object) -> ProfileFile:
    """trtexec's ``--exportProfile`` JSON."""
    out = ProfileFile()
    if not isinstance(doc, list):
        return out
    for item in doc:
        if not isinstance(item, Mapping):
            continue
        if "count" in item and "name" not in item:
            count = _float(item.get("count"))
            out.runs = int(count) if count is not None else None
            continue
        name, avg = item.get("name"), _float(item.get("averageMs"))
        if not isinstance(name, str) or avg is None:
            continue
        out.layers.append(LayerProfile(name=name, average_ms=avg, median_ms=_float(item.get("medianMs")),
                                       total_ms=_float(item.get("timeMs")), percentage=_float(item.get("percentage"))))
    return out


def parse_profile_table(log: str) -> ProfileFile:
    """The last ``--dumpProfile`` table printed in a log (``tensorrt_rtx`` prints it; it may not export the JSON)."""
    lines = log.splitlines()
    start = None
    runs = None
    for i, line in enumerate(lines):
        m = _PROFILE_HEAD.search(line)
        if m:
            start, runs = i, int(m.group(1) or m.group(2))
    out = ProfileFile(runs=runs)
    if start is None:
        return out
    for line in lines[start + 1:]:
        m = _PROFILE_ROW.match(line)
        if not m:
            if "Time(ms)" in line:
                continue
            if out.layers:
                break
            continue
        name = m.group(5)
        if name == "Total":
            break
        out.layers.append(LayerProfile(name=name, average_ms=float(m.group(2)), median_ms=float(m.group(3)),
                                       total_ms=float(m.group(1)), percentage=float(m.group(4))))
    return out


def parse_times(doc: object) -> list[float]:
    """Per-inference latencies (ms) from ``--exportTimes``: ``latencyMs``, else ``computeMs``."""
    out: list[float] = []
    if not isinstance(doc, list):
        return out
    for item in doc:
        if isinstance(item, Mapping):
            v = _float(item.get("latencyMs", item.get("computeMs")))
            if v is not None:
                out.append(v)
    return out


def latency_stats(times_ms: Sequence[float]) -> dict[str, float | None]:
    """min, mean, median, p90, p95, p99, max, std of per-inference times (the keys of trtlab's bench results)."""
    t = np.asarray(times_ms, dtype=np.float64)
    if not t.size:
        return {k: None for k in ("min", "mean", "median", "p90", "p95", "p99", "max", "std")}
    p50, p90, p95, p99 = (float(v) for v in np.percentile(t, [50, 90, 95, 99]))
    return {"min": float(t.min()), "mean": float(t.mean()), "median": p50, "p90": p90, "p95": p95, "p99": p99,
            "max": float(t.max()), "std": float(t.std(ddof=1)) if t.size > 1 else 0.0}


def parse_trtexec_outputs(doc: object) -> dict[str, np.ndarray]:
    """trtexec's ``--exportOutput`` JSON: ``[{"name", "dimensions": "1x1000", "values": [...]}]`` (one sample)."""
    out: dict[str, np.ndarray] = {}
    if not isinstance(doc, list):
        return out
    for item in doc:
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            continue
        dims_text = str(item.get("dimensions") or "")
        try:
            dims = tuple(int(d) for d in dims_text.split("x")) if dims_text and dims_text != "scalar" else ()
            values = np.asarray(item.get("values") or [], dtype=np.float64)
            out[item["name"]] = values.reshape(dims) if dims or values.size == 1 else values  # float64: untyped text
        except (TypeError, ValueError):
            continue
    return out


def version_from_banner(text: str) -> str:
    """The TensorRT version a trtexec banner names ("10.16.0" from ``[TensorRT v101600]``), else ""."""
    m = _BANNER.search(text)
    if not m:
        return ""
    n = int(m.group(1))
    return f"{n // 10000}.{n // 100 % 100}.{n % 100}"


@dataclass(frozen=True)
class BuildLogFacts:
    trt_version: str = ""
    gpu: str = ""
    compute_capability: str = ""
    tool: str = ""           # "trtexec" | "tensorrt_rtx" | ""
    errors: tuple[str, ...] = ()


def parse_build_log(text: str) -> BuildLogFacts:
    """What a trtexec / tensorrt_rtx log says about where it ran."""
    version = ""
    if m := _VERSION_LINE.search(text):
        version = m.group(1)
    elif (v := version_from_banner(text)):
        version = v
    tool = "tensorrt_rtx" if re.search(r"tensorrt_rtx|TensorRT-RTX", text) else (
        "trtexec" if "trtexec" in text else "")
    if tool == "tensorrt_rtx" and (m := _RTX_VERSION.search(text)):
        version = m.group(1)
    gpu = m.group(1).strip() if (m := _DEVICE.search(text)) else ""
    cc = m.group(1).rstrip(".") if (m := _CC.search(text)) else ""
    errors = tuple(line.strip() for line in text.splitlines() if "[E]" in line)[:20]
    return BuildLogFacts(trt_version=version, gpu=gpu, compute_capability=cc, tool=tool, errors=errors)


def trex_device(doc: object) -> tuple[str, str]:
    """GPU name and compute capability from TREx's metadata JSON (its ``device_information``)."""
    if not isinstance(doc, Mapping):
        return "", ""
    info = doc.get("device_information")
    if not isinstance(info, Mapping):
        return "", ""
    gpu = str(info.get("Selected Device") or "").strip()
    cc = info.get("Compute Capability")
    return gpu, (f"{cc}" if cc not in (None, "") else "")


def classify_json(doc: object) -> str:
    """Which artefact a JSON document is: "layers" (the engine inspector's), "profile", "times", "outputs"
    (Polygraphy's RunResults), "trtexec_outputs" (``--exportOutput``), "feeds" (Polygraphy input feeds), "metadata"
    (TREx's), "manifest" (a trtlab kit's), "run" (its script's record) or ""."""
    if isinstance(doc, Mapping):
        if doc.get("format") == "trtlab-kit":
            return "manifest"
        if doc.get("format") == "trtlab-kit-run":
            return "run"
        if "Layers" in doc:
            return "layers"
        if is_run_results(doc):
            return "outputs"
        if "device_information" in doc or "performance_summary" in doc or "build_options" in doc:
            return "metadata"
        return ""
    if isinstance(doc, list) and doc:
        items = [x for x in doc[:4] if isinstance(x, Mapping)]
        if any("averageMs" in x for x in items) or (items and set(items[0]) == {"count"}):
            return "profile"
        if any("latencyMs" in x or "computeMs" in x for x in items):
            return "times"
        if items and all("dimensions" in x and "values" in x for x in items):
            return "trtexec_outputs"
        if items and all(isinstance(v, Mapping) and ("array" in v or "values" in v)
                         for x in items for v in x.values()):
            return "feeds"
        if all(isinstance(x, str) for x in doc[:4]):
            return ""
    return ""
