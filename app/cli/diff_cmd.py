"""`trtlab diff A.onnx B.onnx [--all] [--json PATH|-]`: which nodes are the same, changed, added or removed.

Exit 0 when the models are the same graph (names, ops, attributes, weights, inputs, outputs, opsets), 1 when they
differ, 2 when a file cannot be opened.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from app.cli.checks import check_outputs
from app.cli.output import EXIT_NOT_MET, EXIT_OK, write_json
from app.core.results import DiffResult, NumericDiff

if TYPE_CHECKING:
    from app.core.model import ModelDiff, ModelDoc

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


def format_diff(diff: DiffResult, a: str, b: str) -> str:
    c = diff.summary
    lines = [f"{Path(a).name} → {Path(b).name}: {c.same} same, {c.changed} changed, {c.added} added, "
             f"{c.removed} removed" + (f", {c.folded} Constant nodes now initializers" if c.folded else "")
             + (" (identical)" if diff.identical else "")]
    lines += [f"  {x}" for x in diff.graph_changes]
    shown = [n for n in diff.nodes if n.status not in ("same", "folded")]
    for n in shown[:_SHOWN]:
        renamed = f" (was '{n.a}')" if n.a and n.b and n.a != n.b else ""
        lines.append(f"  {n.status:<8} {n.op:<18} {n.key}{renamed}")
        lines += [f"             {ch}" for ch in n.changes[:4]]
    if len(shown) > _SHOWN:
        lines.append(f"  … and {len(shown) - _SHOWN} more (--json lists them all)")
    return "\n".join(lines)


def cmd_diff(args: argparse.Namespace) -> int:
    import sys

    from app.core.model import diff_models, load_model

    a, b = load_model(args.model), load_model(args.other)
    check_outputs(args, a)
    result = diff_models(a.model, b.model, base_dir_a=str(Path(a.path).parent), base_dir_b=str(Path(b.path).parent))
    (path_a, sha_a), (path_b, sha_b) = _file(args.model), _file(args.other)
    diff = result.result(all_nodes=args.all).replace(model=path_a or "", model_sha256=sha_a or "", other=path_b,
                                                     other_sha256=sha_b, a=path_a, b=path_b)
    if args.run:
        diff = diff.replace(numeric=_numeric(a, b, result, args))
    text = format_diff(diff, args.model, args.other)
    if diff.numeric is not None:
        text += "\n" + _numeric_text(diff.numeric)
    if args.json:
        write_json(diff.to_json(), args.json)
    (sys.stderr if args.json == "-" else sys.stdout).write(text + "\n")
    return EXIT_OK if result.identical else EXIT_NOT_MET


def _file(path: str) -> tuple[str | None, str | None]:
    """A model file as every command's JSON names it: the path resolved and the file's SHA-256 (None: not a file)."""
    if not Path(path).is_file():
        return None, None
    from app.core.fileio import file_sha256

    return str(Path(path).resolve()), file_sha256(path)


def _numeric(a: ModelDoc, b: ModelDoc, result: ModelDiff, args: argparse.Namespace) -> NumericDiff:
    """Both models on one seeded random sample; the matched pairs' first outputs compared in B's order (each pair's
    row left out of the JSON)."""
    from app.core.model import graph_inputs, parse_shape_spec, value_info_to_tensor_info
    from app.core.precision import diff_numerically

    infos = [value_info_to_tensor_info(v) for v in graph_inputs(a.model.graph)]
    num = diff_numerically(a.model, b.model, result, parse_shape_spec(args.shapes, infos) if args.shapes else None,
                           args.seed)
    return num.replace(rows=(), present=num.present - {"rows"})


def _numeric_text(num: NumericDiff) -> str:
    from app.core.precision import RELATIVE

    first = num.first_disagreement
    head = f"Run on {num.inputs}: {num.compared} matched node outputs compared"
    if first is None:
        return head + f"; all agree (cosine ≥ {num.threshold}, max |Δ| within {RELATIVE:g} of the largest value)."
    what = ("shapes differ" if first.shape_differs else
            f"cosine {first.cosine:.6f}, max |Δ| {first.max_abs:.3g}")
    return head + f"; they first disagree at '{first.b}' (A: '{first.a}'): {what}."
