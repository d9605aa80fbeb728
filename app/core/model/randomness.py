"""Nodes that draw random numbers (RandomNormal, RandomUniform, their *Like forms, Multinomial, Bernoulli): finding
them anywhere in a model, the graph inputs that scale their noise, and fixing their seeds.

ONNX Runtime seeds an unseeded random node from a number fixed per process and the node's place in the graph, so
two runs of the same file in one process draw alike while a variant with a Cast more draws other numbers. A node
with a `seed` attribute draws the same sequence in every fresh session (each Run call takes the next draws), so
a reference and a variant seeded alike — their random nodes drawing in the same type and shape — draw the same
numbers sample for sample.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import onnx

from app.core.model.onnx_walk import node_subgraphs

RANDOM_OPS = frozenset({"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial",
                        "Bernoulli"})
NOISE_DEPTH = 3  # nodes followed from a random node's output, and back from the other operand, to find noise scales
_SCALING_OPS = frozenset({"Mul", "Add", "Sub", "Div"})
_SEED_RANGE = 1 << 24  # a float32 `seed` attribute holds every integer below this exactly


@dataclass(frozen=True)
class RandomOp:
    """One random node: its name (its first output's when it has none), op, where it is, and its seed if fixed."""

    name: str
    op_type: str
    where: str = ""            # "" in the main graph, else e.g. "in the body of Loop 'loop'"
    seed: float | None = None

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "op": self.op_type, "where": self.where or None, "seed": self.seed}


def is_random(node: onnx.NodeProto) -> bool:
    return node.op_type in RANDOM_OPS and (node.domain or "") in ("", "ai.onnx")


def op_name(node: onnx.NodeProto) -> str:
    """The node's name, else its first output's: how a random node is named in notes and matched between graphs."""
    return node.name or next((o for o in node.output if o), node.op_type)


def _seed_of(node: onnx.NodeProto) -> float | None:
    return next((float(a.f) for a in node.attribute if a.name == "seed"), None)


def _walk(model: onnx.ModelProto) -> Iterator[tuple[onnx.NodeProto, str]]:
    """Every node of the model with where it is: the main graph, If/Loop/Scan bodies at any depth, local functions."""
    stack: list[tuple[onnx.GraphProto | onnx.FunctionProto, str]] = [
        (f, f"in local function '{f.name}'") for f in reversed(model.functions)]
    stack.append((model.graph, ""))
    while stack:
        graph, where = stack.pop()
        nested: list[tuple[onnx.GraphProto | onnx.FunctionProto, str]] = []
        for node in graph.node:
            yield node, where
            for attr, sub in node_subgraphs(node):
                inner = f"in the {attr} of {node.op_type} '{op_name(node)}'"
                nested.append((sub, f"{where}, {inner}" if where else inner))
        stack.extend(reversed(nested))


def find_random_ops(model: onnx.ModelProto) -> list[RandomOp]:
    """The model's random nodes in graph order, subgraphs and local functions included."""
    return [RandomOp(op_name(n), n.op_type, where, _seed_of(n)) for n, where in _walk(model) if is_random(n)]


def describe_random_ops(ops: list[RandomOp], limit: int = 4) -> str:
    """'2 RandomNormalLike nodes (/dp/RandomNormalLike, /RandomNormalLike)': counts per op, then the names."""
    counts: dict[str, int] = {}
    for op in ops:
        counts[op.op_type] = counts.get(op.op_type, 0) + 1
    kinds = ", ".join(f"{n} {op} node{'s' if n != 1 else ''}" for op, n in counts.items())
    names = ", ".join(op.name for op in ops[:limit]) + (f" and {len(ops) - limit} more" if len(ops) > limit else "")
    return f"{kinds} ({names})"


def noise_inputs(model: onnx.ModelProto, depth: int = NOISE_DEPTH) -> dict[str, list[str]]:
    """Graph inputs that scale or shift noise: {input: [random nodes]} for each input that reaches, within `depth`
    nodes, a Mul/Add/Sub/Div that also takes (within `depth` nodes) a random node's output in the main graph —
    not through the tensor the random node is computed from (the signal a VITS decoder adds its noise to). A VITS
    voice's `scales` input (noise_scale, length_scale, noise_w) is found this way."""
    g = model.graph
    producer = {o: n for n in g.node for o in n.output if o}
    readers: dict[str, list[onnx.NodeProto]] = {}
    for n in g.node:
        for name in n.input:
            if name:
                readers.setdefault(name, []).append(n)
    inputs = {v.name for v in g.input} - {t.name for t in g.initializer}
    found: dict[str, list[str]] = {}
    for node in g.node:
        if not is_random(node):
            continue
        shaped_like = _ancestors(node, producer)  # the signal a *Like node takes its shape from is not a scale
        noisy = set(node.output)   # tensors carrying this node's noise, followed forward
        frontier = list(noisy)
        for _ in range(depth):
            step = []
            for t in frontier:
                for reader in readers.get(t, ()):
                    if reader.op_type in _SCALING_OPS:
                        for other in reader.input:
                            if other and other not in noisy and other not in shaped_like:
                                for src in _sources(other, producer, inputs, depth):
                                    names = found.setdefault(src, [])
                                    if op_name(node) not in names:
                                        names.append(op_name(node))
                    step += [o for o in reader.output if o and o not in noisy]
            noisy.update(step)
            frontier = step
    return found


def _ancestors(node: onnx.NodeProto, producer: dict[str, onnx.NodeProto]) -> set[str]:
    """Every tensor `node` is computed from."""
    seen: set[str] = set()
    stack = [i for i in node.input if i]
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        src = producer.get(t)
        if src is not None:
            stack += [i for i in src.input if i and i not in seen]
    return seen


def _sources(tensor: str, producer: dict[str, onnx.NodeProto], inputs: set[str], depth: int) -> list[str]:
    """Graph inputs that `tensor` is computed from within `depth` nodes."""
    out: list[str] = []
    frontier, seen = [tensor], {tensor}
    for _ in range(depth + 1):
        step = []
        for t in frontier:
            if t in inputs and t not in out:
                out.append(t)
            node = producer.get(t)
            if node is not None and not is_random(node):
                step += [i for i in node.input if i and i not in seen]
        seen.update(step)
        frontier = step
    return out


def seed_for(name: str, base: int = 0) -> float:
    """The seed a random node gets: from its name (so that a variant's node, which keeps the name, gets the same)
    and `base` (another base, other draws)."""
    return float((zlib.crc32(name.encode()) + base * 7919) % _SEED_RANGE)


def seed_random_ops(model: onnx.ModelProto, base: int = 0, *, keep_seeds: bool = True) -> dict[str, float]:
    """Give every random node a fixed `seed` (in place; subgraphs and local functions included); returns {name:
    seed}. With `keep_seeds`, a node that has a seed keeps it; without, every node gets one from `base`."""
    seeds: dict[str, float] = {}
    for node, _ in _walk(model):
        if not is_random(node):
            continue
        name = op_name(node)
        current = _seed_of(node)
        if current is not None and keep_seeds:
            seeds[name] = current
            continue
        for attr in [a for a in node.attribute if a.name == "seed"]:
            node.attribute.remove(attr)
        node.attribute.append(onnx.helper.make_attribute("seed", seed_for(name, base)))
        seeds[name] = seed_for(name, base)
    return seeds
