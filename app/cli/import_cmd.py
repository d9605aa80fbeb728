"""`trtlab import`: a TensorRT engine built and run elsewhere (a run kit's folder, or trtexec's files) read back onto
the ONNX graph, its outputs judged against ONNX Runtime FP32 (app/core/engine/trt_import.py); with `--against`, two
such engines compared ONNX node by ONNX node (app/core/engine/import_compare.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from app.cli.checks import CliInputError
from app.cli.output import EXIT_JOB_FAILED, EXIT_NOT_MET, EXIT_OK, result_json, write_json
from app.core.results import ImportComparison, ImportResult

SHOWN_LAYERS = 25
SHOWN_CHANGES = 25


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import", help="read TensorRT results (a run kit's folder, or trtexec's files) onto the graph")
    p.add_argument("folder", metavar="DIR", help="a run kit's folder after run_kit.py ran, or a folder of trtexec's "
                                                 "--exportLayerInfo/--exportProfile/--exportTimes files")
    p.add_argument("--model", metavar="MODEL.onnx", default=None,
                   help="the ONNX model the engine was built from (needed for a folder without kit.json)")
    p.add_argument("--against", metavar="DIR2", default=None,
                   help="a second engine's folder: compare the two ONNX node by ONNX node (time, precision, fusion)")
    p.add_argument("--against-model", metavar="MODEL.onnx", default=None,
                   help="the ONNX model DIR2's engine was built from, where it differs from --model")
    p.add_argument("--json", metavar="PATH|-", help="write the result as JSON to PATH, or stdout with -")


def cmd_import(args: argparse.Namespace) -> int:
    from app.backends.imported import import_results
    from app.core.engine import ImportInputError
    from app.core.errors import TrtlabError

    if args.against_model and not args.against:
        raise CliInputError("--against-model names the model of the engine given with --against, and there is none.",
                            fix="Add --against DIR2 (the second engine's folder), or leave --against-model out.")
    folders = [(args.folder, args.model)]
    if args.against:
        folders.append((args.against, args.against_model or args.model))
    results: list[ImportResult] = []
    for folder, model in folders:
        sys.stderr.write(f"Reading {folder}…\n")
        try:
            results.append(import_results(folder, model))
        except ImportInputError as exc:  # the folder, a file in it or the model: the user's input (exit 2)
            raise CliInputError(exc.message, fix=exc.fix) from exc
        except TrtlabError:
            raise  # exit 2 for the user's input, 4 for a fault of trtlab's own (app.cli.jobrun.exit_code_for)
        except Exception as exc:  # a fault of trtlab's own: said, never a traceback
            sys.stderr.write(f"trtlab import: reading {folder} failed ({type(exc).__name__}: {exc}). This is a fault "
                             "of trtlab's own, not of your files: please report it with this message.\n")
            return EXIT_JOB_FAILED
    out = sys.stderr if args.json == "-" else sys.stdout
    if len(results) == 2:
        from app.core.engine import compare_imports

        comparison = compare_imports(results[0], results[1])
        if args.json:
            write_json(result_json(comparison), args.json)
        out.write(format_comparison(comparison) + "\n")
    else:
        if args.json:
            write_json(result_json(results[0].replace(kind="import")), args.json)
        out.write(format_import(results[0]) + "\n")
    passed = all(r.answers.candidates[0].passed for r in results if r.answers and r.answers.candidates)
    return EXIT_OK if passed else EXIT_NOT_MET


def _ms(x: float | None) -> str:
    return f"{x:.4f}" if x is not None else "—"


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def format_import(r: ImportResult) -> str:
    where = ", ".join(x for x in (f"TensorRT {r.trt_version}" if r.trt_version else "",
                                  f"on {r.gpu}" if r.gpu else "",
                                  f"compute capability {r.compute_capability}" if r.compute_capability else "") if x)
    lines = [f"Imported {r.tool or 'TensorRT'} results from {r.imported_from}" + (f" ({where})" if where else "")]
    if r.kit:
        lines.append(f"  kit of {Path(r.model).name}: {r.precision}; graph {Path(r.variant).name}")
    timed = [layer for layer in r.layers if layer.ms is not None]
    mix: dict[str, int] = {}
    for layer in r.layers:
        mix[layer.precision or "unknown"] = mix.get(layer.precision or "unknown", 0) + 1
    lines.append(f"{len(r.layers)} engine layers ({r.layer_source or 'no layer information'}), {len(timed)} timed: "
                 + ", ".join(f"{n} {p.upper()}" for p, n in sorted(mix.items(), key=lambda kv: (-kv[1], kv[0]))))
    if timed:
        runs = f", profile of {r.profile_runs} runs" if r.profile_runs else ""
        lines.append(f"Slowest layers first (ms per inference{runs}):")
        lines.append(f"  {'ms':>8} {'share':>6}  {'ran':<7} {'type':<24} layer → ONNX nodes")
        for layer in timed[:SHOWN_LAYERS]:
            nodes = ", ".join(layer.onnx_nodes) or "—"
            if layer.serves:
                nodes += f" (serves {', '.join(layer.serves)})"
            share = f"{layer.share:.1%}" if layer.share is not None else "—"
            kind = _short(layer.type or layer.kind, 24)
            lines.append(f"  {_ms(layer.ms):>8} {share:>6}  {layer.precision or '?':<7} {kind:<24} "
                         f"{_short(layer.name, 60)} → {_short(nodes, 90)}")
        if len(timed) > SHOWN_LAYERS:
            lines.append(f"  … {len(timed) - SHOWN_LAYERS} more (--json lists them all)")
        lines.append(f"  {_ms(r.total_ms):>8} 100.0%  total: the sum of the profile's {len(timed)} layers")
    if r.latency_ms is not None and r.latency_ms.median is not None:
        lat = r.latency_ms
        lines.append(f"Latency ({r.timed_runs} timed inferences): median {_ms(lat.median)} ms, p90 {_ms(lat.p90)}, "
                     f"p99 {_ms(lat.p99)}, mean {_ms(lat.mean)}, min {_ms(lat.min)}, max {_ms(lat.max)}"
                     + (f"; {r.throughput_per_s:,.0f} inferences/s" if r.throughput_per_s else ""))
    if r.unclaimed:
        lines.append(f"ONNX nodes no engine layer claims: {len(r.unclaimed)} (e.g. {', '.join(r.unclaimed[:5])})")
    if r.unmapped:
        lines.append(f"Engine layers of no ONNX node in the graph: {len(r.unmapped)} "
                     f"(e.g. {_short(r.unmapped[0], 80)})")
    lines += _verdict(r)
    lines += [f"  note: {n}" for n in r.notes]
    return "\n".join(lines)


def _verdict(r: ImportResult) -> list[str]:
    if r.answers is None or not r.answers.candidates:
        return ["Verdict: not judged (no outputs came back with their samples)" if "outputs" not in r.files
                else "Verdict: not judged (see the notes)"]
    cand = r.answers.candidates[0]
    lines = [f"Verdict: {cand.name} against {r.answers.reference} on {r.answers.samples} sample(s): "
             + ("PASS" if cand.passed else "FAIL")]
    for o in cand.outputs:
        cos = f"cos {o.cosine:.6f}" if o.cosine is not None else "cos —"
        lines.append(f"  {o.name} ({o.kind}): {cos}, max|Δ| {o.max_abs if o.max_abs is not None else '—'}"
                     + ("" if o.passed else f"  ✗ {'; '.join(o.failures)}"))
    return lines


def _delta(a: float | None, b: float | None) -> str:
    if a is None or b is None:
        return f"{_ms(a)} → {_ms(b)} ms"
    pct = f", {(b - a) / a:+.0%}" if a else ""
    return f"{_ms(a)} → {_ms(b)} ms ({b - a:+.4f} ms{pct})"


def format_comparison(c: ImportComparison) -> str:
    """Two imports side by side: where each ran, the totals and latency, then the nodes that changed most."""
    from app.core.engine import group_changes, group_words

    lines = []
    for tag, label, r in (("A", c.label_a, c.engine_a), ("B", c.label_b, c.engine_b)):
        lines.append(f"Engine {tag}: {label}" + (f" (from {r.imported_from})" if r is not None else ""))
    lines.append(f"Total (the sum of each profile's layers): {_delta(c.total_ms_a, c.total_ms_b)}")
    if c.median_ms_a is not None or c.median_ms_b is not None:
        lines.append(f"Median latency (timed inferences): {_delta(c.median_ms_a, c.median_ms_b)}")
    both = len(c.nodes) - len(c.only_a) - len(c.only_b)
    lines.append(f"{both} ONNX nodes in both engines: {c.precision_changes} ran in another precision, "
                 f"{c.fusion_changes} fused differently; {len(c.only_a)} only in A, {len(c.only_b)} only in B")
    groups = group_changes(c)  # the nodes that ran in the same layers of A and B, as one line
    if groups:
        lines.append("Largest changes first (B against A, ms per inference; nodes fused alike in both on one line):")
        lines += [f"  {group_words(g)}" for g in groups[:SHOWN_CHANGES]]
        if len(groups) > SHOWN_CHANGES:
            lines.append(f"  … {len(groups) - SHOWN_CHANGES} more (--json lists every node)")
    for tag, nodes in (("A", c.only_a), ("B", c.only_b)):
        if nodes:
            lines.append(f"Only in {tag}: {len(nodes)} node(s), e.g. {_short(', '.join(nodes[:5]), 110)}")
    for tag, r in (("A", c.engine_a), ("B", c.engine_b)):
        if r is not None:
            lines += [f"{tag} " + v[0].lower() + v[1:] if i == 0 else v for i, v in enumerate(_verdict(r))]
    lines += [f"  note: {n}" for n in c.notes]
    return "\n".join(lines)
