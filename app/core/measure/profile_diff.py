"""Reading profiles (the JSON of `trtlab profile`, or the placement that compare and bench record): each model node's
share of the time and the device it ran on, two profiles side by side, and the measured reasons a candidate is
slower than its reference.

A profile names fused nodes `A + B` (ONNX Runtime's Conv+Relu): for the graph, the fused time is split evenly
between the nodes and each is placed where the fusion ran. Nodes are matched across two profiles by these names;
nodes only the candidate has (the Casts a precision transform added, the Memcpy ONNX Runtime inserts around a CPU
node) are counted by op type.

Two points of one target (the same model at batch 1 and at batch 32) are set side by side per item: each node's and
each op type's time divided by the batch, its share of the run, and how its time grows with the batch. A node whose
time stays nearly flat while the batch grows k-fold (less than k^0.2: 2× for 32×), or whose kernels stay under
20 µs at both points, is launch-bound: its per-item time falls with the batch. One whose time grows nearly as the
batch does (at least k^0.8: 16× for 32×) scales with the batch: compute-bound.
"""

from __future__ import annotations

from collections.abc import Mapping

from app.core.results import ProfileResult

CPU = "CPUExecutionProvider"
SLOWER = 1.10        # a node (or op type) counts as slower from 10 % more time
SMALL_KERNEL_MS = 0.02  # kernels this short are dominated by their launch on a GPU
FLAT_EXPONENT = 0.2     # time grows less than k^0.2 for a k-fold batch: launch-bound (under 2× for 32×)
LINEAR_EXPONENT = 0.8   # time grows at least k^0.8 for a k-fold batch: scales with the batch (16× for 32×)


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


def bound_of(reference_ms: float, ms: float, reference_items: int, items: int, reference_count: int = 1,
             count: int = 1) -> str:
    """How a node's (or an op type's: `count` nodes) time follows the batch between two points: "launch" (its
    kernels stay under 20 µs, or its time stays nearly flat), "compute" (it grows about as the batch does),
    "between", or "" (the same batch at both points)."""
    mean = max(reference_ms / max(reference_count, 1), ms / max(count, 1))
    if mean < SMALL_KERNEL_MS:
        return "launch"
    if items == reference_items:
        return ""
    (lo_ms, hi_ms), k = ((reference_ms, ms), items / reference_items) if items > reference_items else \
        ((ms, reference_ms), reference_items / items)
    if lo_ms <= 0:
        return "compute"
    growth = hi_ms / lo_ms
    if growth < k ** FLAT_EXPONENT:
        return "launch"
    return "compute" if growth >= k ** LINEAR_EXPONENT else "between"


def _per_item(ref_ms: float, ms: float, ref_items: int, items: int, ref_count: int = 1, count: int = 1) -> dict:
    return {"reference_per_item_ms": round(ref_ms / ref_items, 6), "per_item_ms": round(ms / items, 6),
            "ratio": round(ms / ref_ms, 4) if ref_ms > 0 else None,
            "bound": bound_of(ref_ms, ms, ref_items, items, ref_count, count)}


def _by_op(doc: Mapping) -> tuple[dict[str, tuple[int, float]], float]:
    """{op: (nodes, ms)} over every node of a profile, and their total."""
    out: dict[str, tuple[int, float]] = {}
    for n in doc.get("nodes") or []:
        count, ms = out.get(str(n["op"]), (0, 0.0))
        out[str(n["op"])] = (count + 1, ms + float(n["ms"]))
    return out, sum(ms for _, ms in out.values())


def points_delta(reference: Mapping, candidate: Mapping, delta: Mapping) -> dict:
    """`delta` (the two profiles' :func:`profile_delta`) of one target at two batches (each profile's "batch"), per
    item: each matched node's and each op type's time per item at both points, its share of the node time, how its
    time grew (`ratio`) and whether it stays launch-bound or scales with the batch (`bound`), the counts of each,
    and a summary in words."""
    ri, ci = int(reference["batch"]), int(candidate["batch"])
    out = dict(delta)
    nodes = [{**row, **_per_item(float(row["reference_ms"]), float(row["ms"]), ri, ci)} for row in delta["nodes"]]
    ref_ops, ref_total = _by_op(reference)
    cand_ops, cand_total = _by_op(candidate)
    ops = []
    for op in sorted(set(ref_ops) | set(cand_ops), key=lambda o: -cand_ops.get(o, (0, 0.0))[1]):
        (rc, rms), (cc, cms) = ref_ops.get(op, (0, 0.0)), cand_ops.get(op, (0, 0.0))
        ops.append({"node": "", "op": op, "count": cc, "reference_ms": round(rms, 6), "ms": round(cms, 6),
                    "delta_ms": round(cms - rms, 6), **_per_item(rms, cms, ri, ci, rc, cc),
                    "reference_share": round(rms / ref_total, 4) if ref_total > 0 else 0.0,
                    "share": round(cms / cand_total, 4) if cand_total > 0 else 0.0})
    out.update({"reference_point": f"batch {ri}", "candidate_point": f"batch {ci}", "reference_items": ri,
                "candidate_items": ci, "nodes": nodes, "ops": ops,
                "small_nodes": sum(1 for n in nodes if max(n["ms"], n["reference_ms"]) < SMALL_KERNEL_MS),
                "launch_bound_nodes": sum(1 for n in nodes if n["bound"] == "launch"),
                "compute_bound_nodes": sum(1 for n in nodes if n["bound"] == "compute")})
    out["summary"] = _points_summary(reference, candidate, out)
    return out


def _points_summary(reference: Mapping, candidate: Mapping, d: Mapping) -> list[str]:
    """The two points in words, from the numbers of `d` (as :func:`points_delta` stores them)."""
    ri, ci = d["reference_items"], d["candidate_items"]
    lines = []
    ref_run = reference.get("total_ms") if reference.get("total_ms") is not None else reference.get("kernels_ms")
    run = candidate.get("total_ms") if candidate.get("total_ms") is not None else candidate.get("kernels_ms")
    if ref_run and run:
        lines.append(f"{candidate.get('backend')}: {run:.3f} ms per run at batch {ci} ({run / ci:.4f} ms per item), "
                     f"{ref_run:.3f} ms at batch {ri} ({ref_run / ri:.4f} ms per item): "
                     f"{(ref_run / ri) / (run / ci):.2f}× the items per second")
    ops = d["ops"]
    if ops:
        top = ", ".join(f"{o['op']} takes {100 * o['share']:.0f} % (was {100 * o['reference_share']:.0f} % at batch "
                        f"{ri})" for o in ops[:2])
        lines.append(f"At batch {ci}, {top}")
    n = len(d["nodes"])
    if n:
        lo = min(ri, ci)
        launch = [o["op"] for o in ops if o["bound"] == "launch"][:5]
        compute = [o["op"] for o in ops if o["bound"] == "compute"][:5]
        lines.append(f"{d['small_nodes']} of {n} nodes stay under {SMALL_KERNEL_MS * 1000:.0f} µs at batch {lo} and "
                     f"{max(ri, ci)}: launch-bound; {d['launch_bound_nodes']} of {n} stay launch-bound (those, and "
                     f"those whose time stays nearly flat with the batch), {d['compute_bound_nodes']} scale with it "
                     "(compute-bound)")
        if launch or compute:
            lines.append("By op type: " + "; ".join(
                part for part in (f"launch-bound: {', '.join(launch)}" if launch else "",
                                  f"compute-bound: {', '.join(compute)}" if compute else "") if part))
    return lines
