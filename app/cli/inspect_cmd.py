"""`trtlab inspect MODEL [--json PATH|-]`."""

from __future__ import annotations

import argparse
import sys

from app.cli.checks import check_outputs
from app.cli.output import EXIT_OK, add_model, write_json
from app.core.model import ModelSummary, hierarchy, load_model, summarize
from app.core.units import human_bytes, human_count


def format_summary(s: ModelSummary) -> str:
    lines = [
        f"Model      {s.model}",
        f"Producer   {s.producer}",
        f"IR         {s.ir_version}    opsets: " + ", ".join(f"{d} {v}" for d, v in s.opsets.items()),
        f"Nodes      {s.nodes:,} (with subgraphs: {s.nodes_total:,})",
        f"Params     {human_count(s.params)} ({human_bytes(s.param_bytes)}; "
        f"{human_count(s.constant_params)} in Constant nodes)",
        f"File       {human_bytes(s.file_size)}"
        + (f" + {human_bytes(s.external_bytes)} external data" if s.external_bytes else ""),
        "Inputs",
    ]
    if s.random_ops:
        lines.insert(-1, f"Random     {s.random_text}")
    lines += [f"  {t.name:<30} {t.dtype:<9} {list(t.shape) if t.shape is not None else '?'}" for t in s.inputs]
    lines.append("Outputs")
    lines += [f"  {t.name:<30} {t.dtype:<9} {list(t.shape) if t.shape is not None else '?'}" for t in s.outputs]
    lines.append("Ops")
    lines += [f"  {op:<30} {n:>6}" for op, n in s.ops.items()]
    return "\n".join(lines)


def cmd_inspect(args: argparse.Namespace) -> int:
    doc = load_model(args.model)
    check_outputs(args, doc)  # never onto the model or its data, never into a folder that is not there
    summary = summarize(doc)
    if args.json:
        out = summary.to_json()
        out["hierarchy"] = [g.to_json() for g in hierarchy(doc.model.graph)]
        add_model(out, args.model)
        write_json(out, args.json)
        if args.json != "-":
            print(format_summary(summary))
    else:
        print(format_summary(summary))
    if args.json == "-":
        sys.stderr.write(format_summary(summary) + "\n")
    return EXIT_OK
