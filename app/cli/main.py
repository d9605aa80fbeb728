"""The headless command line (see docs/cli.md). Never imports Qt.

Exit codes: 0 success; 1 tolerance/target not met; 2 bad usage or bad input; 3 backend unavailable;
4 the job itself failed (trtlab's own fault included, such as an invalid variant); 130 / 143 when Ctrl+C or
SIGTERM cancelled the job (128 + the signal, the shell's convention).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from types import ModuleType
from typing import NoReturn

from app import __version__
from app.cli.output import EXIT_BAD_INPUT
from app.core.errors import TrtlabError

# Every subcommand of the public interface; those not built yet say so and exit 2.
SUBCOMMANDS = ("inspect", "run", "compare", "bench", "variant", "diagnose", "fallback", "check",
               "build", "report", "batch", "profile", "diff", "eval", "kit", "import", "tune")
_BUILT = ("inspect", "run", "compare", "bench", "variant", "diagnose", "fallback", "check", "build", "batch",
          "report", "profile", "diff", "eval", "kit", "import", "tune")
_PLANNED = frozenset(SUBCOMMANDS) - set(_BUILT)


def _command_modules() -> dict[str, ModuleType]:
    """The module of every command but `inspect` (its `register(sub)` and `cmd_<name>(args)`), in the order
    `trtlab --help` lists them; imported here, not at the top, so that importing this module stays light."""
    from app.cli import (
        batch_cmd,
        bench_cmd,
        build_cmd,
        check_cmd,
        compare_cmd,
        diagnose_cmd,
        diff_cmd,
        eval_cmd,
        fallback_cmd,
        import_cmd,
        kit_cmd,
        profile_cmd,
        report_cmd,
        run_cmd,
        tune_cmd,
        variant_cmd,
    )

    return {"run": run_cmd, "compare": compare_cmd, "diagnose": diagnose_cmd, "fallback": fallback_cmd,
            "variant": variant_cmd, "bench": bench_cmd, "profile": profile_cmd,
            "build": build_cmd, "check": check_cmd, "diff": diff_cmd, "batch": batch_cmd,
            "report": report_cmd, "eval": eval_cmd, "kit": kit_cmd, "import": import_cmd,
            "tune": tune_cmd}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        sys.stderr.write(f"trtlab: error: {message}\n")
        raise SystemExit(EXIT_BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="trtlab", description="Inspect ONNX models, compare precisions and backends.")
    parser.add_argument("--version", action="version", version=f"trtlab {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    p = sub.add_parser("inspect", help="summarise a model: I/O, opsets, ops, parameters")
    p.add_argument("model", metavar="MODEL")
    p.add_argument("--json", metavar="PATH|-", help="write the summary as JSON to PATH, or stdout with -")
    for module in _command_modules().values():
        module.register(sub)
    for name in sorted(_PLANNED):
        q = sub.add_parser(name, help="(not in this version yet)", add_help=False)
        q.add_argument("rest", nargs=argparse.REMAINDER)
    return parser


def _own_fault(command: str, exc: Exception) -> int:
    """An error in the command itself, outside any job: a fault of trtlab's own (exit 4, never 1, which CI reads as a
    tolerance not met), said in one line with where it happened, the traceback after it for the report."""
    import traceback

    from app.cli.output import EXIT_JOB_FAILED

    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f" at {Path(frame.filename).name}:{frame.lineno}" if frame else ""
    sys.stderr.write(f"trtlab {command}: internal error{where} ({type(exc).__name__}: {exc}). This is a fault of "
                     "trtlab's own, not of your model or settings: please report it with this message and the "
                     "lines below.\n")
    traceback.print_exception(exc, file=sys.stderr)
    return EXIT_JOB_FAILED


def run_cli(argv: list[str]) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    if args.command in _PLANNED:
        sys.stderr.write(f"trtlab {args.command}: this command is not available in trtlab {__version__} yet; "
                         f"`trtlab {'`, `'.join(_BUILT)}` and the GUI are.\n")
        return EXIT_BAD_INPUT
    try:
        if args.command == "inspect":
            from app.cli.inspect_cmd import cmd_inspect

            return cmd_inspect(args)
        if args.command in _BUILT:
            return getattr(_command_modules()[args.command], f"cmd_{args.command}")(args)
    except TrtlabError as exc:
        from app.cli.jobrun import exit_code_for

        sys.stderr.write(f"trtlab {args.command}: {exc.message}\n")
        if exc.fix:
            sys.stderr.write(f"  Fix: {exc.fix}\n")
        return exit_code_for(exc)
    except KeyboardInterrupt:  # Ctrl+C before or after a job (during one, the job is cancelled instead)
        import signal

        from app.cli.jobrun import interrupted_exit

        sys.stderr.write(f"trtlab {args.command}: interrupted.\n")
        return interrupted_exit(signal.SIGINT)
    except Exception as exc:  # a failed job: its reason and last log lines, never a traceback
        from app.cli.jobrun import JobFailed, report_job_failure
        from app.cli.output import EXIT_JOB_FAILED
        from app.core.results import ResultFormatError

        if isinstance(exc, JobFailed):
            return report_job_failure(args.command, exc)
        if isinstance(exc, ResultFormatError):  # the job finished, and its result does not read as its type
            sys.stderr.write(f"trtlab {args.command}: the job's result could not be read ({exc}). This is a fault of "
                             "trtlab's own, not of your model or settings: please report it with this message.\n")
            return EXIT_JOB_FAILED
        return _own_fault(args.command, exc)
    build_parser().print_help(sys.stderr)
    return EXIT_BAD_INPUT
