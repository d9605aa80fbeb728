"""Two models' diff, typed: `trtlab diff`'s JSON (docs/cli.md) and what File ▸ Compare With Model shows.

The structural part (`DiffResult`: which nodes are the same, changed, added or removed, and how) comes from
`app.core.model.diff_models`; the numeric part (`NumericDiff`: both models run on one sample, the outputs of matched
nodes compared) from `app.core.precision.diff_numerically`.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.core.results.record import Record, optional


@dataclass(frozen=True)
class DiffCounts(Record):
    """How many nodes the diff found the same, changed, only in B (added), only in A (removed), and Constant nodes
    that B stores as initializers (folded)."""

    same: int = 0
    changed: int = 0
    added: int = 0
    removed: int = 0
    folded: int = 0


@dataclass(frozen=True)
class ChangedNode(Record):
    """A matched pair that differs: its keys in A and B and what changed."""

    a: str | None = None
    b: str | None = None
    what: tuple[str, ...] = ()


@dataclass(frozen=True)
class DiffNode(Record):
    """One node of the diff: same | changed | added | removed | folded, its keys in A and B (None on the side that
    lacks it), its op, the changes, and how the pair was matched (name | structure | initializer)."""

    status: str = ""
    a: str | None = None
    b: str | None = None
    op: str = ""
    changes: tuple[str, ...] = ()
    matched_by: str = ""

    @property
    def key(self) -> str | None:
        """The node's key in B, or in A for a node only A has."""
        return self.b if self.b is not None else self.a


@dataclass(frozen=True)
class MatchedOutput(Record):
    """The first outputs of a matched pair on one sample: max |Δ|, that relative to A's largest |value|, and cosine
    (B against A; None where undefined)."""

    a: str = ""
    b: str = ""
    output: str = ""
    max_abs: float | None = None
    cosine: float | None = None
    relative: float | None = None
    shape_differs: bool = False


@dataclass(frozen=True)
class NumericDiff(Record):
    """Both models run on one sample: how many matched outputs were compared, the first pair that disagrees (None:
    all agree), the ten lowest cosines, and every pair compared (`rows`: the window's colours; not in the CLI's
    JSON)."""

    compared: int = 0
    threshold: float = 0.0
    first_disagreement: MatchedOutput | None = None
    worst: tuple[MatchedOutput, ...] = ()
    rows: tuple[MatchedOutput, ...] = optional(factory=tuple)
    inputs: str = ""


@dataclass(frozen=True)
class DiffResult(Record):
    """`trtlab diff`'s result: the counts, the changed pairs, the nodes only one side has, the changed graph inputs,
    outputs and opsets (one line each), the nodes (without the same ones unless `--all`), both files, and with
    `--run` the numeric comparison."""

    kind: str = "diff"
    summary: DiffCounts = DiffCounts()
    identical: bool = False
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    opsets: tuple[str, ...] = ()
    matched: int = 0                         # matched pairs, folded Constants included
    same: int = 0
    changed: tuple[ChangedNode, ...] = ()
    added: tuple[str, ...] = ()              # node keys in B
    removed: tuple[str, ...] = ()            # node keys in A
    nodes: tuple[DiffNode, ...] = ()
    model: str = optional("")                # A: the path resolved, and its SHA-256
    model_sha256: str = optional("")
    other: str | None = None                 # B
    other_sha256: str | None = None
    a: str | None = None                     # the two files again, as `a` and `b`
    b: str | None = None
    numeric: NumericDiff | None = optional(None)

    @property
    def graph_changes(self) -> tuple[str, ...]:
        """The changed opsets, graph inputs and outputs, in that order (a line each)."""
        return self.opsets + self.inputs + self.outputs
