"""TensorRT's ONNX operator support, read from ``onnx_trt_support.json`` (data with its sources and date)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from app.core.readiness.findings import TRT_VERSIONS

TABLE_PATH = Path(__file__).with_name("onnx_trt_support.json")


@dataclass(frozen=True)
class OpSupport:
    name: str
    supported: frozenset[str]                     # TensorRT major versions whose parser imports the op
    types: tuple[str, ...] = ()                   # "FP32", "INT64", ... as the matrix lists them
    restriction: str = ""
    since: dict[str, str] = field(default_factory=dict)   # major -> first minor release with the op, when later

    def supported_in(self, version: str) -> bool:
        return version in self.supported


@dataclass(frozen=True)
class SupportTable:
    operators: dict[str, OpSupport]
    versions: dict[str, dict]
    custom_ops: dict[str, frozenset[str]]
    sources: tuple[dict, ...]
    recorded: str

    def op(self, name: str) -> OpSupport | None:
        return self.operators.get(name)

    def opset_range(self, version: str) -> tuple[int, int]:
        v = self.versions[version]
        return int(v["min_opset"]), int(v["max_opset"])

    def label(self, version: str) -> str:
        return str(self.versions[version].get("label", f"TensorRT {version}.x"))

    def matrix(self, version: str) -> str:
        return str(self.versions[version].get("matrix", ""))

    def is_custom_op(self, name: str, version: str) -> bool:
        return name in self.custom_ops.get(version, frozenset())

    def source_line(self) -> str:
        """One line for reports: where the table comes from and when it was recorded."""
        first = self.sources[0] if self.sources else {}
        return f"{first.get('url', '?')} (released {first.get('released', '?')}; recorded {self.recorded})"


def check_version(version: str) -> str:
    version = str(version).strip().lower()
    version = "rtx" if version in ("trt-rtx", "tensorrt-rtx") else version.removeprefix("trt").removesuffix(".x")
    if version not in TRT_VERSIONS:
        raise ValueError(f"TensorRT version must be one of {', '.join(TRT_VERSIONS)}, not {version!r}")
    return version


@lru_cache(maxsize=4)
def load_support_table(path: str | None = None) -> SupportTable:
    """The support table shipped with trtlab (or one at ``path``), parsed once."""
    doc = json.loads(Path(path or TABLE_PATH).read_text(encoding="utf-8"))
    ops = {name: OpSupport(name=name, supported=frozenset(e.get("supported", ())),
                           types=tuple(e.get("types", ())), restriction=str(e.get("restriction", "")),
                           since=dict(e.get("since", {})))
           for name, e in doc["operators"].items()}
    custom = {v: frozenset(names) for v, names in doc.get("custom_ops", {}).items()}
    return SupportTable(operators=ops, versions=dict(doc["versions"]), custom_ops=custom,
                        sources=tuple(doc.get("sources", ())), recorded=str(doc.get("recorded", "")))
