"""`trtlab diff A.onnx B.onnx [--all] [--json PATH|-]`: which nodes are the same, changed, added or removed.

Exit 0 when the models are the same graph (names, ops, attributes, weights, inputs, outputs, opsets), 1 when they
differ, 2 when a file cannot be opened.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from app.cli.checks import check_outputs
from app.cli.output import EXIT_NOT_MET, EXIT_OK, add_model, write_json

_SHOWN = 40


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("diff", help="compare two ONNX models node by node: same, changed, added, removed")
    p.add_argument("model", metavar="A.onnx")
    p.add_argument("other", metavar="B.onnx")
    p.add_argument("--all", action="store_true", help="list the nodes that are the same too (JSON)")
    p.add_argument("--run", action="store_true",
                   help="also run both models on the same inputs (ONNX Runtime, CPU) and compare the outputs of "
                        "matched nodes: where do they start to disagree?")
    p.add_argument("--shapes", metavar="SPEC", help="input shapes for --run, e.g. x:1x3x224x224")
    p.add_argument("--seed", type=int, default=0, help="seed of --run's random inputs (default 0)")
    p.add_argument("--json", metavar="PATH|-", help="write the diff as JSON to PATH, or stdout with -")


def format_diff(doc: dict, a: str, b: str) -> str:
    c = doc["summary"]
    lines = [f"{Path(a).name} → {Path(b).name}: {c['same']} same, {c['changed']} changed, {c['added']} added, "
             f"{c['removed']} removed" + (f", {c['folded']} Constant nodes now initializers" if c["folded"] else "")
             + (" (identical)" if doc["identical"] else "")]
    lines += [f"  {x}" for x in doc["opsets"] + doc["inputs"] + doc["outputs"]]
    shown = [n for n in doc["nodes"] if n["status"] not in ("same", "folded")]
    for n in shown[:_SHOWN]:
        name = n["b"] if n["b"] is not None else n["a"]
        renamed = f" (was '{n['a']}')" if n["a"] and n["b"] and n["a"] != n["b"] else ""
        lines.append(f"  {n['status']:<8} {n['op']:<18} {name}{renamed}")
        lines += [f"             {ch}" for ch in n["changes"][:4]]
    if len(shown) > _SHOWN:
        lines.append(f"  … and {len(shown) - _SHOWN} more (--json lists them all)")
    return "\n".join(lines)


def cmd_diff(args: argparse.Namespace) -> int:
    import sys

    from app.core.model import diff_models, load_model

    a, b = load_model(args.model), load_model(args.other)
    check_outputs(args, a)
    result = diff_models(a.model, b.model, base_dir_a=str(Path(a.path).parent), base_dir_b=str(Path(b.path).parent))
    doc = {"kind": "diff", **result.to_json(all_nodes=args.all)}
    add_model(doc, args.model)
    other: dict = {}
    add_model(other, args.other)
    doc["other"], doc["other_sha256"] = other.get("model"), other.get("model_sha256")
    doc["a"], doc["b"] = doc.get("model"), doc["other"]
    if args.run:
        doc["numeric"] = _numeric(a, b, result, args)
    text = format_diff(doc, args.model, args.other)
    if args.run:
        text += "\n" + _numeric_text(doc["numeric"])
    if args.json:
        write_json(doc, args.json)
    (sys.stderr if args.json == "-" else sys.stdout).write(text + "\n")
    return EXIT_OK if result.identical else EXIT_NOT_MET


def _numeric(a, b, result, args: argparse.Namespace) -> dict:
    """Both models on one seeded random sample; the matched pairs' first outputs compared in B's order."""
    from app.core.model import graph_inputs, parse_shape_spec, value_info_to_tensor_info
    from app.core.precision import diff_numerically

    infos = [value_info_to_tensor_info(v) for v in graph_inputs(a.model.graph)]
    doc = diff_numerically(a.model, b.model, result, parse_shape_spec(args.shapes, infos) if args.shapes else None,
                           args.seed)
    doc.pop("rows")
    return doc


def _numeric_text(num: dict) -> str:
    from app.core.precision import RELATIVE

    first = num["first_disagreement"]
    head = f"Run on {num['inputs']}: {num['compared']} matched node outputs compared"
    if first is None:
        return head + f"; all agree (cosine ≥ {num['threshold']}, max |Δ| within {RELATIVE:g} of the largest value)."
    what = ("shapes differ" if first["shape_differs"] else
            f"cosine {first['cosine']:.6f}, max |Δ| {first['max_abs']:.3g}")
    return head + f"; they first disagree at '{first['b']}' (A: '{first['a']}'): {what}."
