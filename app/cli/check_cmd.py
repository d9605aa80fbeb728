"""`trtlab check MODEL [--plan PLAN.json] [--shapes SPEC] [--trt-version 10|11|rtx] [--target-cc CC,…]
[--json PATH|-]`.

Exit 1 when a finding is an error (the TensorRT build would fail), 0 otherwise; 2 for bad input (a model
that does not open, a malformed plan or ``--shapes``). A ``--shapes`` entry that names no input of the model
is a finding (it names the real inputs), not a usage error: reporting such mistakes is what the check is for.
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from pathlib import Path

from app.cli.checks import CliInputError, check_outputs
from app.cli.output import EXIT_NOT_MET, EXIT_OK, add_model, write_json
from app.core.readiness import SEVERITIES, Report, check_model, load_support_table

_DIMS = re.compile(r"\d+(x\d+)*")
_HEADINGS = {"error": "ERRORS", "warning": "WARNINGS", "info": "INFO"}
_WIDTH = 110
_MAX_NODES = 8


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="find what would break a TensorRT build, on the graph, without TensorRT")
    p.add_argument("model", metavar="MODEL")
    p.add_argument("--plan", metavar="PLAN.json", help="a precision plan: check its FP16/BF16 weights and nodes")
    p.add_argument("--shapes", metavar="SPEC", help="input shapes, e.g. x:1x3x224x224[,y:...]")
    p.add_argument("--profile", action="append", default=[], metavar="NAME:MIN:OPT:MAX",
                   help="an optimization profile for a dynamic input, as `trtlab build` takes it: its min, opt, max "
                        "and sizes inside the range are checked for shapes that disagree")
    p.add_argument("--trt-version", choices=("10", "11", "rtx"), default="11",
                   help="TensorRT 10 or 11, or rtx for TensorRT for RTX (default 11)")
    p.add_argument("--target-cc", default=None, metavar="CC[,CC...]",
                   help="rtx: the compute capabilities to build for (default: RTX's portable set)")
    p.add_argument("--json", metavar="PATH|-", help="write the findings as JSON to PATH, or stdout with -")


def shape_pairs(spec: str) -> dict[str, tuple[int, ...]]:
    """``name:1x3x224x224[,name2:...]`` read for its syntax only (names are checked against the model later)."""
    out: dict[str, tuple[int, ...]] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        name, sep, dims = part.rpartition(":")
        if not sep or not name:
            raise CliInputError(f"--shapes '{part}' has no input name; write NAME:DIMS such as 'x:1x3x224x224'.",
                                fix="Run `trtlab inspect MODEL` to see the input names.")
        if not _DIMS.fullmatch(dims.strip()):
            raise CliInputError(f"--shapes '{part}': '{dims}' is not a shape; write dims as positive integers joined "
                                "by 'x', e.g. 1x3x224x224.", fix="Give every dimension as a number.")
        if name in out:
            raise CliInputError(f"--shapes gives input '{name}' twice.", fix="Give each input once.")
        out[name] = tuple(int(d) for d in dims.strip().split("x"))
    return out


def _wrap(text: str, indent: str) -> str:
    return textwrap.fill(text, width=_WIDTH, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_on_hyphens=False)


def format_report(report: Report, model_name: str) -> str:
    table = load_support_table()
    v = report.trt_version
    label = table.label(v)
    if v == "rtx":
        from app.core.engine import describe_targets

        label += f" (compute capability {describe_targets(report.targets)})"
        source = f"Operator support: {table.matrix(v)}"
    else:
        source = f"Operator support: onnx-tensorrt's operator matrix of TensorRT {table.matrix(v)} (recorded " \
                 f"{table.recorded})"
    lines = [f"{label} readiness of {model_name}: {report.errors} error(s), {report.warnings} warning(s), "
             f"{report.infos} note(s) ({report.seconds:.2f} s)", source]
    groups = report.by_severity()
    for severity in SEVERITIES:
        found = groups[severity]
        if not found:
            continue
        lines += ["", f"{_HEADINGS[severity]} ({len(found)})"]
        for f in found:
            lines.append(_wrap(f"[{f.code}] {f.message}", "  "))
            if f.nodes:
                shown = ", ".join(f.nodes[:_MAX_NODES])
                more = f" … and {len(f.nodes) - _MAX_NODES} more" if len(f.nodes) > _MAX_NODES else ""
                lines.append(_wrap(f"nodes: {shown}{more}", "    "))
            lines.append(_wrap(f"fix: {f.fix}", "    "))
    lines.append("")
    if report.errors:
        lines.append(f"Result: the {table.label(v)} build would fail ({report.errors} error(s)); fix them first.")
    elif report.warnings:
        lines.append(f"Result: no errors; the build should start, but read the {report.warnings} warning(s).")
    else:
        lines.append("Result: nothing found that would stop or change a TensorRT build.")
    return "\n".join(lines)


def cmd_check(args: argparse.Namespace) -> int:
    from app.core.model import load_model
    from app.core.precision import PrecisionPlan

    doc = load_model(args.model)
    check_outputs(args, doc)
    plan = PrecisionPlan.load(args.plan) if args.plan else None
    shapes = shape_pairs(args.shapes) if args.shapes else None
    if args.target_cc is not None and args.trt_version != "rtx":
        raise CliInputError("--target-cc is a TensorRT for RTX setting.", fix="Add --trt-version rtx, or drop "
                                                                               "--target-cc.")
    from app.core.engine import parse_targets

    targets = parse_targets(args.target_cc)  # exit 2 on a compute capability RTX cannot build for
    profile = None
    if args.profile:
        from app.core.engine import parse_profile_args
        from app.core.model import summarize

        inputs = summarize(doc).inputs
        profile = parse_profile_args(args.profile, inputs, {k: list(v) for k, v in (shapes or {}).items()})
    report = check_model(doc.model, plan=plan, shapes=shapes, trt_version=args.trt_version, model_path=doc.path,
                         targets=targets or None, profile=profile)
    text = format_report(report, Path(doc.path).name)
    if args.json:
        out = report.to_json(str(doc.path))
        add_model(out, str(doc.path))
        write_json(out, args.json)
    (sys.stderr if args.json == "-" else sys.stdout).write(text + "\n")
    return EXIT_NOT_MET if report.errors else EXIT_OK
