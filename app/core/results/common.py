"""Parts that several jobs' results share: where nodes ran, the model's random nodes, what the CLI adds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.core.results.record import JSONValue, Record, optional


@dataclass(frozen=True)
class Placement(Record):
    """Where a target's nodes ran (ONNX Runtime's profiler): nodes per execution provider, compute nodes that fell
    back to the CPU in a GPU session, the casts and device copies it inserted."""

    placement: Mapping[str, int] = optional(factory=dict)
    fallback_nodes: tuple[str, ...] = optional(factory=tuple)
    casts: int = optional(0)
    copies: int = optional(0)
    node_count: int = optional(0)
    cast_ms: float | None = optional(None)
    copy_ms: float | None = optional(None)


@dataclass(frozen=True)
class RandomOp(Record):
    name: str = ""
    op: str = ""
    where: str = ""
    seed: JSONValue = None


@dataclass(frozen=True)
class FloorEntry(Record):
    """One output of the reference against itself with other seeds."""

    cosine: float | None = None
    mean_abs: float | None = None
    max_abs: float | None = None
    passed: bool | None = None
    shape_mismatch: JSONValue = None


@dataclass(frozen=True)
class RandomOps(Record):
    """The model's nodes that draw random numbers and how the runs matched their draws (docs/cli.md `random_ops`)."""

    nodes: tuple[str, ...] = ()
    method: str | None = optional(None)
    note: str = optional("")
    ops: tuple[RandomOp, ...] = optional(factory=tuple)
    targets: Mapping[str, str] = optional(factory=dict)
    noise_inputs: Mapping[str, tuple[str, ...]] = optional(factory=dict)
    floor: Mapping[str, FloorEntry] | None = optional(None)
    seeded: bool | None = optional(None)       # bench and profile: whether the seeds were fixed
    seeds: Mapping[str, JSONValue] = optional(factory=dict)


@dataclass(frozen=True, kw_only=True)
class JobDoc(Record):
    """What the command line adds to every job's JSON: the command, the model and its digest, files written, and
    the machine it ran on."""

    artifacts: tuple[JSONValue, ...] = optional(factory=tuple)
    provenance: Mapping[str, JSONValue] = optional(factory=dict)
    kind: str = optional("")
    model: str = optional("")
    model_sha256: str = optional("")
    interrupted_by: str = optional("")    # the signal a job that still finished was interrupted by (SIGINT…)
    ray_node: str | None = optional(None)  # a batch job run on a Ray cluster: the node it ran on
    model_on_node: str = optional("")     # … and the model's copy there, when the model was shipped to it
