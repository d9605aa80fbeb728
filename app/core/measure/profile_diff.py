"""Reading profiles (the JSON of `trtlab profile`, or the placement that compare and bench record): each model node's
share of the time and the device it ran on, two profiles side by side, and the measured reasons a candidate is
slower than its reference.

A profile names fused nodes `A + B` (ONNX Runtime's Conv+Relu): for the graph, the fused time is split evenly
between the nodes and each is placed where the fusion ran. Nodes are matched across two profiles by these names;
nodes only the candidate has (the Casts a precision transform added, the Memcpy ONNX Runtime inserts around a CPU
node) are counted by op type.
"""

from __future__ import annotations

from collections.abc import Mapping

from app.core.results import ProfileResult

CPU = "CPUExecutionProvider"
SLOWER = 1.10        # a node (or op type) counts as slower from 10 % more time
SMALL_KERNEL_MS = 0.02  # kernels this short are dominated by their launch on a GPU


def _parts(name: str) -> list[str]:
    return [p for p in name.split(" + ") if p]


def node_shares(doc: ProfileResult) -> dict[str, float]:
    """{model node key: its share of the run's node time} (0–1), a fusion's time split evenly between its nodes."""
    nodes = [n for n in doc.nodes if n.model_node]
    total = sum(float(n.ms) for n in doc.nodes) or 0.0
    out: dict[str, float] = {}
    if total <= 0:
        return out
    for n in nodes:
        parts = _parts(n.node)
        for p in parts:
            out[p] = out.get(p, 0.0) + float(n.ms) / total / len(parts)
    return out


def node_devices(doc: ProfileResult) -> dict[str, str]:
    """{model node key: the execution provider that ran it} (every node of a fusion where the fusion ran)."""
    out: dict[str, str] = {}
    for n in doc.nodes:
        if n.model_node:
            for p in _parts(n.node):
                out[p] = n.provider
    return out


def device_word(provider: str) -> str:
    """`CUDAExecutionProvider` → `CUDA`."""
    return provider.replace("ExecutionProvider", "") or "unknown"


def profile_delta(reference: Mapping, candidate: Mapping) -> dict:
    """The candidate's nodes against the reference's, by name: each node's time in both and the difference (slowest
    change first), the nodes only the candidate runs (by op: count and time), and the totals."""
    ref = {str(n["node"]): n for n in reference.get("nodes") or []}
    rows = []
    added: dict[str, tuple[int, float]] = {}
    for n in candidate.get("nodes") or []:
        r = ref.get(str(n["node"]))
        if r is None or r["op"] != n["op"]:  # a Cast that ONNX Runtime named after the node it follows is new
            count, ms = added.get(n["op"], (0, 0.0))
            added[n["op"]] = (count + 1, ms + float(n["ms"]))
            continue
        rows.append({"node": n["node"], "op": n["op"], "provider": n.get("provider", ""),
                     "reference_provider": r.get("provider", ""), "reference_ms": float(r["ms"]),
                     "ms": float(n["ms"]), "delta_ms": float(n["ms"]) - float(r["ms"])})
    rows.sort(key=lambda d: -d["delta_ms"])
    ref_total, cand_total = reference.get("total_ms"), candidate.get("total_ms")
    return {"reference": reference.get("backend"), "candidate": candidate.get("backend"),
            "reference_ms": ref_total, "candidate_ms": cand_total,
            "delta_ms": None if ref_total is None or cand_total is None else round(cand_total - ref_total, 6),
            "nodes": [{k: (round(v, 6) if isinstance(v, float) else v) for k, v in d.items()} for d in rows],
            "added": {op: {"count": c, "ms": round(ms, 6)} for op, (c, ms) in
                      sorted(added.items(), key=lambda kv: -kv[1][1])}}


def _ms(v: float) -> str:
    return f"{float(v):.3f} ms"


def slower_reasons(reference: Mapping, candidate: Mapping, delta: Mapping | None = None) -> list[str]:
    """What the profiler measured that makes `candidate` slower than `reference`, most costly first, in words: nodes
    on the CPU in a GPU session and the copies they cost, Casts added, more and smaller kernels to launch, or op
    types whose kernels are slower in the candidate's precision. Works on full profiles (times) and on the
    placement that compare and bench record (counts only); [] when it saw nothing. `delta`: the two profiles'
    :func:`profile_delta` where the caller has it already."""
    timed = bool(candidate.get("nodes")) and bool(reference.get("nodes"))
    reasons: list[tuple[float, str]] = []
    fallback = list(candidate.get("fallback_nodes") or [])
    if fallback:
        shown = ", ".join(fallback[:3]) + (" …" if len(fallback) > 3 else "")
        names = set(fallback)
        cpu_ms = sum(float(n["ms"]) for n in candidate.get("nodes") or [] if n.get("provider") == CPU
                     and n["node"] in names)
        copies, copy_ms = int(candidate.get("copies") or 0), candidate.get("copy_ms")
        cost = cpu_ms + float(copy_ms or 0)
        reasons.append((cost or 1e9, f"{len(fallback)} node(s) ran on the CPU ({shown})"
                        + (f", {_ms(cpu_ms)}" if timed else "")
                        + f", with {copies} copies between host and device"
                        + (f" ({_ms(copy_ms)})" if timed and copy_ms is not None else "")))
    casts = int(candidate.get("casts") or 0) - int(reference.get("casts") or 0)
    if casts > 0:
        extra = float(candidate.get("cast_ms") or 0) - float(reference.get("cast_ms") or 0)
        reasons.append((extra if timed else 1e6, f"{casts} Cast node(s) were added"
                        + (f" ({_ms(extra)} per run)" if timed and extra > 0 else "")))
    more = int(candidate.get("node_count") or 0) - int(reference.get("node_count") or 0)
    if timed:
        _launch_bound(reference, candidate, more, reasons)
        _slower_ops(reference, candidate, reasons, delta)
    elif more > 0 and not reasons:
        reasons.append((0.0, f"{more} more kernels run (small kernels: launch-bound)"))
    return [text for _, text in sorted(reasons, key=lambda r: -r[0])]


def _launch_bound(reference: Mapping, candidate: Mapping, more: int, reasons: list[tuple[float, str]]) -> None:
    """More time outside kernels (launches, synchronisation) with more, shorter kernels."""
    def outside(doc: Mapping) -> float | None:
        total, kernels = doc.get("total_ms"), doc.get("kernels_ms")
        return None if total is None or kernels is None else max(0.0, float(total) - float(kernels))

    ref_out, cand_out = outside(reference), outside(candidate)
    if ref_out is None or cand_out is None or cand_out <= ref_out * SLOWER or cand_out - ref_out < 0.005:
        return
    nodes = candidate.get("nodes") or []
    small = sum(1 for n in nodes if float(n["ms"]) < SMALL_KERNEL_MS)
    reasons.append((cand_out - ref_out, f"{_ms(cand_out - ref_out)} more outside kernels per run"
                    + (f" with {more} more kernels" if more > 0 else "")
                    + f" ({small} of {len(nodes)} take under {SMALL_KERNEL_MS * 1000:.0f} µs: launch-bound)"))


def _slower_ops(reference: Mapping, candidate: Mapping, reasons: list[tuple[float, str]],
                delta: Mapping | None = None) -> None:
    """Op types whose matched nodes take longer in the candidate (the provider has no faster kernel for them)."""
    if delta is None:
        delta = profile_delta(reference, candidate)
    by_op: dict[str, list[float]] = {}
    for row in delta["nodes"]:
        if row["provider"] != row["reference_provider"]:
            continue  # counted as a fallback, not a slower kernel
        ref_ms, ms = by_op.get(row["op"], [0.0, 0.0])
        by_op[row["op"]] = [ref_ms + row["reference_ms"], ms + row["ms"]]
    floor = max(0.005, 0.01 * float(candidate.get("total_ms") or 0))  # 1 % of the run: smaller is noise here
    for op, (ref_ms, ms) in by_op.items():
        if ms > ref_ms * SLOWER and ms - ref_ms >= floor:
            reasons.append((ms - ref_ms, f"{op} took {_ms(ms)} against {_ms(ref_ms)} "
                            f"({ms / ref_ms:.1f}×: no faster kernel in this precision here)" if ref_ms > 0 else
                            f"{op} took {_ms(ms)} against nothing"))
