"""What the readiness check reports: findings (severity, code, nodes, message, fix) and the report around them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")
_RANK = {s: i for i, s in enumerate(SEVERITIES)}
TRT_VERSIONS = ("10", "11", "rtx")   # TensorRT 10.x, 11.x, and TensorRT for RTX


@dataclass
class Finding:
    """One thing a TensorRT build would trip on (error), do differently than expected (warning), or note (info).

    ``nodes`` are node keys of the top-level graph (:func:`app.core.precision.plan.node_keys`): a problem inside an
    If/Loop/Scan body or a local function is reported on the node that owns it. ``code`` is stable across
    versions (tools and tests rely on it); ``message`` and ``fix`` are for people.
    """

    severity: Severity
    code: str
    nodes: list[str]
    message: str
    fix: str

    def __post_init__(self) -> None:
        if self.severity not in _RANK:
            raise ValueError(f"severity must be one of {SEVERITIES}, not {self.severity!r}")

    def to_json(self) -> dict[str, object]:
        return {"severity": self.severity, "code": self.code, "nodes": list(self.nodes), "message": self.message,
                "fix": self.fix}


@dataclass
class Report:
    """Every finding of one check, most severe first, with how long the check took."""

    findings: list[Finding] = field(default_factory=list)
    trt_version: str = "11"
    seconds: float = 0.0
    targets: tuple[str, ...] = ()   # TensorRT for RTX compute capabilities checked (() for its default set)
    profile_fixes: dict[str, tuple[str, str]] = field(default_factory=dict)  # input -> (problem, MIN:OPT:MAX fixed)

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.severity == "error")

    @property
    def warnings(self) -> int:
        return sum(1 for f in self.findings if f.severity == "warning")

    @property
    def infos(self) -> int:
        return sum(1 for f in self.findings if f.severity == "info")

    @property
    def blocks_build(self) -> bool:
        """An error-level finding: the build is expected to fail."""
        return self.errors > 0

    def by_severity(self) -> dict[str, list[Finding]]:
        """Findings grouped as ``{"error": [...], "warning": [...], "info": [...]}`` (every key present)."""
        out: dict[str, list[Finding]] = {s: [] for s in SEVERITIES}
        for f in self.findings:
            out[f.severity].append(f)
        return out

    def for_node(self, key: str) -> list[Finding]:
        """The findings that name a node (for a selection or a tooltip)."""
        return [f for f in self.findings if key in f.nodes]

    def node_severity(self) -> dict[str, Severity]:
        """The worst severity per node key: what a badge on the graph shows."""
        out: dict[str, Severity] = {}
        for f in self.findings:
            for key in f.nodes:
                if key not in out or _RANK[f.severity] < _RANK[out[key]]:
                    out[key] = f.severity
        return out

    def codes(self) -> list[str]:
        return [f.code for f in self.findings]

    def to_json(self, model: str = "") -> dict[str, object]:
        """The ``trtlab check --json`` document (``CLI.md``): model, trt_version, errors, warnings, findings."""
        doc: dict[str, object] = {"model": model, "trt_version": self.trt_version, "errors": self.errors,
                                  "warnings": self.warnings, "infos": self.infos, "seconds": round(self.seconds, 4),
                                  "findings": [f.to_json() for f in self.findings]}
        if self.trt_version == "rtx":
            doc["targets"] = list(self.targets)
        return doc


def sort_findings(findings: Iterable[Finding], order: dict[str, int] | None = None) -> list[Finding]:
    """Most severe first; within a severity by the position of the first node named (graph order), then code."""
    order = order or {}
    big = len(order) + 1

    def key(f: Finding) -> tuple[int, int, str]:
        first = min((order.get(k, big) for k in f.nodes), default=-1)
        return _RANK[f.severity], first, f.code

    return sorted(findings, key=key)
