"""Running a job for a CLI command: progress on stderr, Ctrl+C/SIGTERM as cancel, and the exit code of a job that
did not finish (CLI.md: 2 bad input, 3 backend unavailable, 4 the job failed; 128 + the signal when interrupted)."""

from __future__ import annotations

import shutil
import signal
import sys
import time
from typing import TYPE_CHECKING

from app.cli.output import EXIT_BAD_INPUT, EXIT_JOB_FAILED, EXIT_UNAVAILABLE
from app.core.errors import INTERNAL_FAULTS, TrtlabError, is_user_error
from app.jobs import time_left

if TYPE_CHECKING:
    from app.backends.tasks.specs import JobInputs
    from app.jobs import JobEvent, JobResult

# Ctrl+C asks the job to stop at its next check; it is terminated if it has not after this long. Longer than the
# GUI's grace: a fallback search finishing its evaluation still reports the best set it found.
CANCEL_GRACE_S = 5.0


class JobFailed(Exception):
    """A job that ended without a result: failed, or cancelled by a signal (``interrupted``: its number)."""

    def __init__(self, result: JobResult, interrupted: int | None = None) -> None:
        super().__init__(getattr(result, "error", "job failed"))
        self.result = result
        self.interrupted = interrupted


def interrupted_exit(signum: int) -> int:
    """The shell's convention for a process ended by a signal: 130 for Ctrl+C, 143 for SIGTERM."""
    return 128 + int(signum)


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def run_job(spec: JobInputs, title: str, keep_workdir: bool = False) -> dict:
    """Run the job of a typed spec in a child process, showing its progress on stderr; its folder is removed
    afterwards unless the result points into it (`run` without --out keeps its outputs there). A job that finished
    although it was interrupted (a fallback reporting its best set so far) gets ``interrupted_by`` in its result."""
    from app.jobs import JobRunner

    last = [""]
    first: list[tuple[float, float]] = []  # (time, fraction) of the first fraction: where the estimate starts

    def on_event(ev: JobEvent) -> None:
        kind, msg = getattr(ev, "kind", ""), getattr(ev, "message", "")
        if kind == "progress" and msg and msg != last[0]:
            last[0] = msg
            frac = getattr(ev, "fraction", None)
            left = ""
            if frac is not None and frac >= 0:
                if not first or frac < first[0][1]:
                    first[:] = [(time.monotonic(), frac)]
                left = time_left(first[0], frac, time.monotonic())
            sys.stderr.write(f"  [{'   ' if frac is None else f'{100 * frac:3.0f}%'}] {msg}"
                             + (f" (about {left} left)" if left else "") + "\n")
        elif kind == "log" and getattr(ev, "level", "info") in ("warning", "error"):
            sys.stderr.write(f"  {ev.level}: {msg}\n")

    def on_interrupt(signum: int, forced: bool) -> None:
        if forced:
            sys.stderr.write(f"  {signal_name(signum)} again: stopping the job now\n")
        else:
            sys.stderr.write(f"  {signal_name(signum)}: cancelling the job (press Ctrl+C again to stop it at once)\n")
        sys.stderr.flush()

    runner = JobRunner(grace=CANCEL_GRACE_S)
    result = runner.run(spec.job_spec(title), on_event=on_event, on_interrupt=on_interrupt)
    done = result.status == "done"
    if getattr(result, "workdir", "") and (not done or not keep_workdir):
        shutil.rmtree(result.workdir, ignore_errors=True)  # a cancelled or failed job leaves no temp folder
    if not done:
        raise JobFailed(result, runner.interrupted)
    data = result.data or {}
    if runner.interrupted:
        data["interrupted_by"] = signal_name(runner.interrupted)
    return data


def exit_code_for(exc: BaseException) -> int:
    """The exit code of an error raised in this process."""
    from app.backends import BackendUnavailable

    if isinstance(exc, BackendUnavailable):
        return EXIT_UNAVAILABLE
    if isinstance(exc, TrtlabError):
        return EXIT_BAD_INPUT if is_user_error(exc) else EXIT_JOB_FAILED
    return EXIT_JOB_FAILED


def report_job_failure(command: str, exc: JobFailed) -> int:
    """Print a failed job's reason and last log lines; a user error inside the job still exits 2 or 3, a fault of
    trtlab's own (an invalid variant) 4, a cancelled one 128 + the signal."""
    r = exc.result
    if getattr(r, "status", "") == "cancelled":
        signum = exc.interrupted or signal.SIGINT
        sys.stderr.write(f"trtlab {command}: cancelled ({signal_name(signum)}); its temporary files are removed.\n")
        return interrupted_exit(signum)
    error, fix = getattr(r, "error", "") or "the job failed", getattr(r, "fix", "")
    if fix and error.endswith(fix):  # the job's message carries its fix: shown on a line of its own, as in-process
        error = error[:-len(fix)].rstrip()
    sys.stderr.write(f"trtlab {command}: {error}\n")
    if fix:
        sys.stderr.write(f"  Fix: {fix}\n")
    error_type = getattr(r, "error_type", "")
    if error_type == "BackendUnavailable":
        return EXIT_UNAVAILABLE
    if getattr(r, "user_error", False) and error_type not in INTERNAL_FAULTS:
        return EXIT_BAD_INPUT
    if getattr(r, "exit_reason", ""):
        sys.stderr.write(f"  Exit: {r.exit_reason}\n")
    tail = [line for line in _without_traceback(getattr(r, "log_tail", []), getattr(r, "error", ""))
            if line.strip()][-12:]
    if tail:
        sys.stderr.write("  Last log lines:\n" + "".join(f"    {line.rstrip()}\n" for line in tail))
    return EXIT_JOB_FAILED


_TRACEBACK_HEADER = "Traceback (most recent call last)"


def _without_traceback(lines: list[str], error: str = "") -> list[str]:
    """The job's log without the Python traceback its process printed (also when the log's tail starts inside
    one, and for chained exceptions): the error above says what failed, and the lines a reader needs are the job's
    own (TensorRT's errors, for a failed build). Lines repeating ``error`` are dropped too."""
    out, in_frame = [], False
    seen = error.strip()[:80]
    for line in lines:
        stripped = line.strip()
        if line.startswith(_TRACEBACK_HEADER):
            in_frame = False
            continue
        if line[:1].isspace() and stripped.startswith('File "'):
            in_frame = True  # a frame: its source line and ^^^ markers follow, indented
            continue
        if in_frame and line[:1].isspace():
            continue
        in_frame = False  # the exception's own line ends the traceback: keep it, it says what failed
        if seen and seen in line:
            continue
        out.append(line)
    return out
