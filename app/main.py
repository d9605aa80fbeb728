"""One entry point: no subcommand opens the GUI (on MODEL if given); a subcommand runs the CLI."""

from __future__ import annotations

import multiprocessing
import os
import sys
from pathlib import Path

EXIT_BAD_INPUT = 2


def gui_usage_error(args: list[str], environ: dict[str, str] | None = None) -> tuple[str, str] | None:
    """Why the GUI cannot start for these arguments, as (problem, fix), checked before Qt loads: Qt aborts the
    process without a display, and a mistyped command or a missing file must not open a window to say so."""
    from app.cli.main import SUBCOMMANDS

    env = os.environ if environ is None else environ
    positional = [a for a in args if not a.startswith("-")]
    if positional:
        given = positional[0]
        p = Path(given).expanduser()
        if not p.exists():
            if not p.suffix and os.sep not in given and "/" not in given:
                import difflib

                close = difflib.get_close_matches(given, SUBCOMMANDS, n=1)
                hint = f"Did you mean `trtlab {close[0]}`? " if close else ""
                return (f"'{given}' is neither a trtlab command nor a file.",
                        f"{hint}Commands: {', '.join(SUBCOMMANDS)} (trtlab --help); or give an ONNX file to open it "
                        "in the GUI.")
            return (f"the model file '{given}' does not exist.",
                    "Check the path and the file name; it may have been moved or renamed.")
        if p.is_dir():
            return (f"'{given}' is a folder, not a model file.", "Give the .onnx file inside it.")
    if sys.platform.startswith("linux") and not env.get("QT_QPA_PLATFORM") \
            and not env.get("DISPLAY") and not env.get("WAYLAND_DISPLAY"):
        return ("no display to open the GUI on (DISPLAY and WAYLAND_DISPLAY are not set).",
                "Use a command such as `trtlab inspect MODEL` here (trtlab --help lists them), log in with a "
                "display (ssh -X), or set QT_QPA_PLATFORM=offscreen.")
    return None


def main(argv: list[str] | None = None) -> int:
    multiprocessing.freeze_support()
    args = list(sys.argv[1:] if argv is None else argv)
    from app.cli.main import SUBCOMMANDS, run_cli

    if args and (args[0] in SUBCOMMANDS or args[0] in ("-h", "--help", "--version")):
        return run_cli(args)
    problem = gui_usage_error(args)
    if problem is not None:
        sys.stderr.write(f"usage: trtlab [MODEL] | trtlab COMMAND ...\ntrtlab: error: {problem[0]}\n"
                         f"  Fix: {problem[1]}\n")
        return EXIT_BAD_INPUT
    if args == ["--selftest"]:  # open the window, check its icons, exit: for a built application
        from app.ui.shell.app import selftest

        return selftest()
    from app.ui.shell.app import run_gui

    return run_gui(args)


if __name__ == "__main__":
    sys.exit(main())
