"""Waits on conditions and on jobs' events, never for a fixed time. Each wait has a deadline that only stops a test
that would otherwise hang; it fails with what was awaited, and never asserts how fast anything was."""

from __future__ import annotations

import time
from collections.abc import Callable

from app.jobs import JobEvent, JobHandle


def wait_until(predicate: Callable[[], bool], timeout: float, what: str, poll_s: float = 0.01) -> None:
    """Return once ``predicate()`` is true; AssertionError naming ``what`` after ``timeout`` seconds. For conditions
    with no event to wait on (another process's state, a file appearing)."""
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"still waiting after {timeout:g} s for {what}")
        time.sleep(poll_s)


class _Seen(Exception):
    pass


def wait_for_event(handle: JobHandle, predicate: Callable[[JobEvent], bool], timeout: float,
                   what: str) -> JobEvent:
    """Block on the job's own wait (it wakes on each event) until an event matching ``predicate`` arrives and return
    it. AssertionError if the job ends first or ``timeout`` seconds pass; events stay in ``handle.events``."""
    for ev in handle.events:
        if predicate(ev):
            return ev
    found: list[JobEvent] = []

    def look(ev: JobEvent) -> None:
        if predicate(ev):
            found.append(ev)
            raise _Seen

    try:
        result = handle.wait(timeout=timeout, on_event=look)
    except _Seen:
        return found[0]
    except TimeoutError:
        raise AssertionError(f"still waiting after {timeout:g} s for {what}; last events: "
                             f"{[e.message for e in handle.events][-5:]}") from None
    raise AssertionError(f"the job ended ({result.status}: {result.error}) before {what}; last events: "
                         f"{[e.message for e in handle.events][-5:]}")
