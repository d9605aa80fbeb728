"""`trtlab report`: one self-contained HTML report from a project and/or result JSON files."""

from __future__ import annotations

import argparse
import zipfile
from pathlib import Path

from app.cli.checks import CliInputError, check_out_path
from app.cli.output import EXIT_OK

PROJECT_SUFFIX = ".trtlab"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write an HTML report of a project's or result files' results")
    p.add_argument("inputs", nargs="+", metavar="PROJECT.trtlab|RESULT.json",
                   help="a .trtlab project and/or JSON files written by `trtlab compare|eval|bench|diagnose|fallback|"
                        "build|import --json PATH`")
    p.add_argument("-o", "--out", required=True, metavar="REPORT.html", help="the HTML file to write")
    p.add_argument("--title", default="", help="the report's title (default: trtlab report: MODEL)")


def _is_project(path: Path) -> bool:
    return path.suffix.lower() == PROJECT_SUFFIX or (path.is_file() and zipfile.is_zipfile(path))


def cmd_report(args: argparse.Namespace) -> int:
    from app.core.fileio import atomic_write_text
    from app.reports import SHOWN_KINDS, as_item, build_report, current_environment, read_result_file

    paths = [Path(p) for p in args.inputs]
    out = check_out_path(args.out, "-o", inputs=[(f"the input file '{p}'", p) for p in paths])
    project = None
    items = []
    for path in paths:
        if _is_project(path):
            from app.core.project import load_project

            loaded = load_project(path)
            project = project or loaded
            items += [as_item(r, source=str(path)) for r in loaded.results]
        else:
            items.append(read_result_file(path))
    if not any(i.kind in SHOWN_KINDS for i in items):
        raise CliInputError(f"{' '.join(map(str, paths))}: no compare, bench, diagnose, fallback or build "
                            "results, imported engines or evaluations to report.",
                            fix="Run a job first (e.g. `trtlab compare MODEL --candidate ort-cpu:fp16 --json "
                                "result.json`), or save the project after running one.")
    html = build_report(items, project, current_environment(), title=args.title)
    try:
        atomic_write_text(out, html)
    except OSError as exc:
        raise CliInputError(f"Cannot write the report '{out}': {exc.strerror or exc}.",
                            fix="Give -o a path in a folder you can write to.") from exc
    counts: dict[str, int] = {}
    for i in items:
        counts[i.kind] = counts.get(i.kind, 0) + 1
    print(f"Report written to {out} ({', '.join(f'{n} {k}' for k, n in counts.items())}).")
    return EXIT_OK

