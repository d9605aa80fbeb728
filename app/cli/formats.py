"""The human-readable summaries the CLI commands print, from the typed results (their JSON is the job's result)."""

from __future__ import annotations

from pathlib import Path

from app.core.measure import EMPTY_ADVICE, device_word, empty_reference, task_words
from app.core.results import (
    BenchResult,
    CompareResult,
    DiagnoseResult,
    FallbackResult,
    ProfileResult,
    RunResult,
    SweepResult,
    VariantResult,
)
from app.core.targets import Target

_SHOWN_NOTES = ("random numbers", "noise floor")  # the notes of the job's own that the summaries repeat


def format_fallback(doc: FallbackResult) -> str:
    metric = doc.metric
    b, a = doc.before.get(metric), doc.after.get(metric)
    lines = [f"{doc.candidate} against {doc.reference}, target {doc.target}: "
             f"{'MET' if doc.met else 'NOT MET'}"
             + (f" (stopped: {doc.stopped})" if doc.stopped else ""),
             f"  {metric}: {num(b, '.6g')} → {num(a, '.6g')} keeping {len(doc.keep_high_precision)} node(s) in "
             f"high precision; {doc.evaluations} evaluations in {doc.seconds:.1f} s"]
    lines += [f"    {k}" for k in doc.keep_high_precision]
    if doc.random_data:
        lines.append("NOTE: measured on random inputs; real data may need a different set.")
    lines += [f"  note: {n}" for n in doc.notes.get(doc.candidate, ()) if str(n).startswith(_SHOWN_NOTES)]
    if doc.plan_file:
        lines.append(f"Plan saved to {doc.plan_file} (use it with --plan)")
    return "\n".join(lines)


def format_variant(doc: VariantResult) -> str:
    lines = [f"Variant of {Path(doc.model).name} ({doc.plan_summary}) saved to {doc.out}"
             + (" (from the cache)" if doc.cached else "")]
    lines += [f"  note: {n}" for n in doc.notes if n != "variant from the cache"]
    return "\n".join(lines)


def format_diagnose(doc: DiagnoseResult) -> str:
    lines = [f"{doc.candidate} against {doc.reference}: {doc.tensors_compared:,} tensors compared; "
             f"inputs: {doc.inputs}",
             f"First NaN/Inf: {doc.first_nonfinite or 'none'}    Worst layer: {doc.worst or '—'}"]
    rows = sorted((r for r in doc.layers if r.cosine is not None), key=lambda r: r.cosine or 0.0)[:10]
    lines += [f"  {r.node[:48]:<48} {r.op:<18} cos {r.cosine:.6f}  max|Δ| {num(r.max_abs, '.3g')}  "
              f"nan {r.nan} inf {r.inf}" + ("  (within the noise floor)" if r.within_floor else "")
              for r in rows]
    lines += [f"  note: {n}" for n in doc.notes if str(n).startswith(_SHOWN_NOTES)]
    return "\n".join(lines)


def format_run(doc: RunResult) -> str:
    lines = [f"Backend  {doc.backend}   inputs: {doc.inputs}"]
    lines += [f"  {o.name:<30} {o.dtype:<8} {list(o.shape)}" for o in doc.outputs]
    lines.append(f"Outputs saved to {doc.npz}")
    return "\n".join(lines)


def format_compare(doc: CompareResult) -> str:
    lines = [f"Reference {doc.reference} · {doc.samples} sample(s) · inputs: {doc.inputs}"]
    if doc.random_data:
        lines.append("NOTE: inputs are random data; accuracy on real data may differ.")
    for c in doc.candidates:
        lines.append(f"{c.name}: {'PASS' if c.passed else 'FAIL'}")
        lines += [f"  note: {n}" for n in doc.notes.get(c.name, ())]
        for o in c.outputs:
            lines.append(f"  {o.name:<28} max_abs {num(o.max_abs, '.3g')}  mean_abs {num(o.mean_abs, '.3g')}"
                         f"  cos {num(o.cosine, '.6f')}  snr {num(o.snr_db, '.1f')} dB  nan {o.nan} "
                         f"inf {o.inf}" + (f"  top1 {o.top1:.3f}" if o.top1 is not None else ""))
            if o.task is not None:
                lines.append(f"    answer ({o.kind_spec}): {task_words(o)}"
                             f"  [judged by {', '.join(o.judged_by) or 'nothing'}]")
                if empty_reference(o):
                    lines.append(f"    note: {EMPTY_ADVICE}")
            lines += [f"    ✗ {f}" for f in o.failures]
        for t in c.unused:
            lines.append(f"  note: --tol {t} judged no output here: outputs whose answers are judged (masks, boxes, "
                         "labels, text) use their own metrics; give --output-kind NAME=tensor to hold one to it")
    return "\n".join(lines)


def num(v: object, spec: str) -> str:
    return "—" if v is None else format(v, spec)


def format_bench(doc: BenchResult) -> str:
    lat = doc.latency_ms
    return (f"{doc.backend} ({doc.mode}): median {lat.median:.3f} ms, mean {lat.mean:.3f}, "
            f"p99 {lat.p99:.3f}, min {lat.min:.3f}, max {lat.max:.3f}; CoV {100 * (doc.cov or 0.0):.1f}%; "
            f"{doc.throughput_per_s:.1f}/s over {doc.iterations} iterations"
            + (f"\nWARNING: {doc.warning}" if doc.warning else "")
            + "".join(f"\nWARNING: {n}" for n in doc.notes if "ran on the CPU, not the GPU" in n))


def format_sweep(doc: SweepResult) -> str:
    """A table per target (value, p50, p99, throughput, memory, status), where its throughput stops growing, and
    why a half-precision target is not faster than FP32."""
    dim = "batch" if doc.is_batch and not doc.input else f"{doc.input or 'dim'}:{doc.axis}"
    from app.core.measure import RATE_NOTE, rate_unit

    rate = rate_unit(doc.is_batch)
    sources = {p.memory_source for p in doc.points if p.memory_source}
    memory = {"device": "device MB", "process": "RSS MB"}.get(next(iter(sources)), "memory MB") \
        if len(sources) == 1 else "memory MB"
    several = doc.sessions > 1
    each = f", {doc.sessions} sessions per point: the median one" if several else ""
    lines = [f"Sweep of {dim} over {', '.join(map(str, doc.values))} ({doc.mode}{each})"]
    for target in doc.targets:
        lines += ["", f"{target}", f"  {dim:>8} {'p50 ms':>10} {'p99 ms':>10} {rate:>10} {memory:>10}"
                  + (f" {'spread':>7}" if several else "") + "  status"]
        for p in doc.series(target):
            lat = p.latency_ms
            status = p.status + (" (unstable)" if p.unstable else "")
            if p.status in ("oom", "failed", "skipped") and p.message:
                status = p.message
            spread = p.spread()
            lines.append(f"  {p.value:>8} {num(lat.median, '.3f'):>10} {num(lat.p99, '.3f'):>10} "
                         f"{num(p.throughput_per_s, ',.1f'):>10} {num(p.peak_memory_mb, '.1f'):>10}"
                         + (f" {f'{spread:.1%}' if spread is not None else '—':>7}" if several else "")
                         + f"  {status}")
        knee = doc.knees.get(target)
        if knee is not None:
            best = (f"best {num(knee.best_throughput_per_s, ',.1f')} {rate} at {dim} {knee.best_value}"
                    if knee.best_value is not None else "no measured point")
            lines.append(f"  knee: {dim} {knee.value if knee.value is not None else '—'}; {best}. {knee.reason}")
        if target in doc.why:
            lines.append(f"  why: {doc.why[target]}")
    if not doc.is_batch:
        lines += ["", RATE_NOTE]
    if several:
        lines += ["", "spread: the sessions' medians' range over the point's median (each session picks its own "
                      "kernels)"]
    if sources:
        lines.append("")
        lines.append("memory: " + "; ".join(
            {"device": "device: GPU memory in use after the point's runs less before its session",
             "process": "process: peak resident memory above its level before the point's session"}[s]
            for s in sorted(sources)))
    unstable = [f"{p.target} at {p.value}" for p in doc.points if p.unstable]
    if unstable:
        lines.append(f"WARNING: unstable timings at {', '.join(unstable[:6])}"
                     + (f" and {len(unstable) - 6} more" if len(unstable) > 6 else "")
                     + ": run more iterations (--iterations 3s).")
    return "\n".join(lines)


def format_profile(doc: ProfileResult, top: int = 15) -> str:
    """The slowest nodes, time by op type, where the nodes ran, and what the run spent outside kernels."""
    total = doc.total_ms
    lines = [f"{doc.backend}: {num(total, '.3f')} ms per run (median of {doc.runs}), "
             f"{doc.node_count} nodes, kernels {num(doc.kernels_ms, '.3f')} ms"
             + (f", {100 * doc.outside_kernels_share:.1f}% outside kernels"
                if doc.outside_kernels_share is not None else "")]
    placement = ", ".join(f"{p.replace('ExecutionProvider', '')} {n}" for p, n in doc.placement.items())
    lines.append(f"placement: {placement}")
    if doc.fallback_nodes:
        names = doc.fallback_nodes
        lines.append(f"WARNING: {len(names)} compute node(s) ran on the CPU in a GPU session: "
                     f"{', '.join(names[:8])}{' …' if len(names) > 8 else ''}")
    if doc.casts or doc.copies:
        lines.append(f"casts: {doc.casts} ({num(doc.cast_ms, '.3f')} ms); device copies: "
                     f"{doc.copies} ({num(doc.copy_ms, '.3f')} ms)")
    lines.append(f"{'node':<44} {'op':<18} {'provider':<10} {'ms':>9} {'share':>6}")
    for n in doc.nodes[:top]:
        share = 100 * n.ms / total if total else 0.0
        where = n.provider.replace("ExecutionProvider", "")[:10]
        lines.append(f"{n.node[:44]:<44} {n.op[:18]:<18} {where:<10} {n.ms:>9.3f} {share:>5.1f}%")
    lines.append("by op: " + ", ".join(f"{op} {ms:.3f}" for op, ms in list(doc.by_op.items())[:8]))
    if doc.against is not None:
        lines += ["", *format_profile_delta(doc, top)]
    return "\n".join(lines)


def format_profile_delta(doc: ProfileResult, top: int = 15) -> list[str]:
    """Two profiles side by side: the totals, why the target is slower, the nodes that changed most, and the nodes
    only the target runs."""
    d, against = doc.delta, doc.against
    if d is None or against is None:
        return []
    total = f"{num(d.reference_ms, '.3f')} → {num(d.candidate_ms, '.3f')} ms"
    lines = [f"{doc.backend} against {against.backend}: {total} per run "
             f"({against.node_count} → {doc.node_count} nodes)"]
    for reason in doc.slower_because:
        lines.append(f"  slower because: {reason}")
    changed = [n for n in d.nodes if abs(n.delta_ms) >= 0.0005][:top]
    if changed:
        ta, tb = Target.read(against.backend), Target.read(doc.backend)
        a, b = ((ta.precision, tb.precision) if ta.backend == tb.backend  # one backend: name the columns by precision
                else (str(against.backend), str(doc.backend)))
        lines.append(f"{'node':<44} {'op':<18} {a[:10] + ' ms':>10} {b[:10] + ' ms':>10} {'Δ ms':>8}")
        for n in changed:
            moved = "" if n.provider == n.reference_provider else f"  (moved to {device_word(n.provider)})"
            lines.append(f"{n.node[:44]:<44} {n.op[:18]:<18} {n.reference_ms:>10.3f} {n.ms:>10.3f} "
                         f"{n.delta_ms:>+8.3f}{moved}")
    if d.added:
        lines.append("only in " + doc.backend + ": " + ", ".join(
            f"{v.count} {op} ({v.ms:.3f} ms)" for op, v in d.added.items()))
    return lines
