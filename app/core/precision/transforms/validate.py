"""Is a variant graph valid? Checked before any variant is reported as made.

A variant passes three gates, in order: ONNX's full check (strict type and shape inference), a load in
ONNX Runtime with every graph optimisation on (its fusions read types that the checker does not), and —
where TensorRT for RTX is installed — its ONNX parser (a gate `app.backends` registers). The first gate that
fails gives an :class:`InvalidVariant` naming the gate, the node, and the tool's own message.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass

import onnx

from app.core.errors import TrtlabError

_NODE_PATTERNS = (
    re.compile(r"[Nn]ode \(([^)]+)\)"),                       # onnx / ONNX Runtime: "Node (name) Op (Add)"
    re.compile(r"[Nn]ode name: ([^\s,)]+)"),
    re.compile(r"[Nn]ode '([^']+)'"),
    re.compile(r"while parsing node number \d+ \[\w+ -> \"([^\"]+)\""),  # TensorRT's parser names an output
    re.compile(r"\[ONNX node: ([^\]]+)\]"),
)


class InvalidVariant(TrtlabError):
    """The transform wrote a graph that a checker, ONNX Runtime or TensorRT refuses: a bug in the transform."""

    title = "Variant is not a valid model"
    user_error = False  # a job stopped by it failed (exit 4): the user's input was fine

    def __init__(self, gate: str, detail: str, node: str | None = None, precision: str = "") -> None:
        self.gate, self.detail, self.node = gate, detail, node
        where = f" at node '{node}'" if node else ""
        what = f"The {precision.upper()} variant" if precision else "The variant"
        super().__init__(f"{what} fails {gate}{where}: {_first_line(detail)}",
                         fix="This is a fault in the transform, not in your model. Keep the nodes named here "
                             "in FP32 (a plan, or --plan) to get a variant now, and report the model and this "
                             "message.")


@dataclass(frozen=True)
class Gate:
    name: str
    passed: bool
    detail: str = ""
    node: str | None = None


def _first_line(text: str, limit: int = 400) -> str:
    line = " ".join(text.strip().split())
    return line if len(line) <= limit else line[:limit - 1] + "…"


def node_in(text: str) -> str | None:
    """The node a checker's, ONNX Runtime's or TensorRT's error message names, if any."""
    for pattern in _NODE_PATTERNS:
        m = pattern.search(text)
        if m:
            return m.group(1).strip()
    return None


def check_onnx(path: str | os.PathLike[str]) -> Gate:
    """ONNX's full check: structure, then type and shape inference in strict mode with type checking."""
    try:
        onnx.checker.check_model(str(path), full_check=True)
    except Exception as exc:  # noqa: BLE001 - onnx raises several unrelated classes for one failure
        return Gate("ONNX's full check", False, str(exc), node_in(str(exc)))
    return Gate("ONNX's full check", True)


def check_ort(path: str | os.PathLike[str]) -> Gate:
    """A load in ONNX Runtime (CPU) with all graph optimisations, as a deployment would load it.

    Run in a child process: ONNX Runtime crashes outright on some graphs it should refuse (a segmentation
    fault while optimising), and a crash must become a refusal here, not the end of the job or the window."""
    import json
    import subprocess
    import sys

    name = "a load in ONNX Runtime"
    if getattr(sys, "frozen", False):  # a bundled application has no `python -m`: load here, unisolated
        return _load_in_ort(str(path))
    try:
        proc = subprocess.run([sys.executable, "-m", "app.core.precision.transforms.validate", str(path)],
                              capture_output=True, text=True, timeout=600,
                              env={**os.environ, "PYTHONFAULTHANDLER": ""})
    except subprocess.TimeoutExpired:
        return Gate(name, False, "ONNX Runtime took over 10 minutes to load the variant")
    if proc.returncode == 0:
        doc = json.loads(proc.stdout.strip().splitlines()[-1])
        return Gate(name, bool(doc["passed"]), doc.get("detail", ""), doc.get("node"))
    how = f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}"
    tail = " ".join(proc.stderr.strip().splitlines()[-3:])
    return Gate(name, False, f"ONNX Runtime crashed loading the variant ({how}){': ' + tail if tail else ''}")


def _load_in_ort(path: str) -> Gate:
    import onnxruntime as ort

    from app.core.precision.transforms.emulate import cpu_runnable

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3
    # A BF16 variant loads as the CPU runs it (BF16 nodes widened between Casts): ONNX Runtime's CPU provider
    # has no BF16 kernels, which says nothing about the graph.
    source, _ = cpu_runnable(str(path))
    try:
        ort.InferenceSession(source, opts, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - ORT's errors are one class per binding, all "it did not load"
        return Gate("a load in ONNX Runtime", False, str(exc), node_in(str(exc)))
    return Gate("a load in ONNX Runtime", True)


# Gates that need a runtime the core does not import (TensorRT's parser): app.backends registers them when it is
# imported, as every job process does. Each takes the variant's path and returns a Gate, or None when its tool
# is not installed here.
PARSER_GATES: list[Callable[[str | os.PathLike[str]], Gate | None]] = []


def register_parser_gate(gate: Callable[[str | os.PathLike[str]], Gate | None]) -> None:
    if gate not in PARSER_GATES:
        PARSER_GATES.append(gate)


def validate_variant(path: str | os.PathLike[str], *, parser: bool = True,
                     source: str | os.PathLike[str] | None = None) -> list[Gate]:
    """Every gate's result, stopping at the first that fails.

    With `source` (the model the variant was made from), a gate the source model fails too does not count
    against the variant: TensorRT's parser refusing an op of the model itself (a ScatterElements reduction it
    lacks, an already-quantized model's int32 bias) is the model's property, reported by `trtlab check`, not a
    fault of the transform. Such a gate passes, its detail saying so."""
    gates: list[Gate] = []
    for check in (check_onnx, check_ort, *(PARSER_GATES if parser else ())):
        gate = check(path)
        if gate is None:
            continue
        if not gate.passed and source is not None and check is not check_onnx:
            before = check(source)
            if before is not None and not before.passed and _same_failure(before, gate, str(source), str(path)):
                gate = Gate(gate.name, True, f"the model itself fails this too: {_first_line(before.detail)}")
        gates.append(gate)
        if not gate.passed:
            break
    return gates


def _same_failure(model: Gate, variant: Gate, model_path: str = "", variant_path: str = "") -> bool:
    """Whether the variant fails where the model does: the same node, or the same words (the files' own paths,
    which the messages quote, and numbers aside). The words count even where the nodes differ: a parser that names
    "node number 812" in the model names another number in a variant with Q/DQ nodes added, for one refusal (a
    Piper TTS model's NonZero, refused by TensorRT for RTX's parser in the model and in its INT8 variant alike)."""
    if model.node and model.node == variant.node:
        return True

    def words(gate: Gate, path: str) -> str:
        text = gate.detail.replace(path, "<model>") if path else gate.detail
        return re.sub(r"\d+", "#", _first_line(text, 300))
    return words(model, model_path) == words(variant, variant_path)


def require_valid(path: str | os.PathLike[str], precision: str = "", *, parser: bool = True,
                  source: str | os.PathLike[str] | None = None) -> list[Gate]:
    """:func:`validate_variant`, raising :class:`InvalidVariant` at the first gate that fails."""
    gates = validate_variant(path, parser=parser, source=source)
    if gates and not gates[-1].passed:
        bad = gates[-1]
        raise InvalidVariant(bad.name, bad.detail, bad.node, precision)
    return gates


if __name__ == "__main__":  # the child process of check_ort
    import json
    import sys

    gate = _load_in_ort(sys.argv[1])
    sys.stdout.write(json.dumps({"passed": gate.passed, "detail": gate.detail, "node": gate.node}) + "\n")
