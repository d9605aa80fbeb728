"""One entry point: no subcommand opens the GUI (on MODEL if given); a subcommand runs the CLI."""

from __future__ import annotations

import multiprocessing
import sys


def main(argv: list[str] | None = None) -> int:
    multiprocessing.freeze_support()
    args = list(sys.argv[1:] if argv is None else argv)
    from app.cli.main import SUBCOMMANDS, run_cli

    if args and (args[0] in SUBCOMMANDS or args[0] in ("-h", "--help", "--version")):
        return run_cli(args)
    from app.ui.app import run_gui

    return run_gui(args)


if __name__ == "__main__":
    sys.exit(main())
