"""TensorRT build progress and cancellation, without TensorRT.

:class:`PhaseTracker` has the three methods of ``tensorrt.IProgressMonitor`` (a backend subclasses the
monitor and forwards to it). TensorRT's contract, from its docstrings: ``phase_start`` gives a phase, its
parent (None at the top) and its step count; ``step_complete(phase, step)`` reports step ``step`` in
``[0, num_steps)`` of the innermost phase done and returns False to stop the build; ``phase_finish`` may
come before every step was reported (errors, cancel). Phase names are unique while active and may be
reused afterwards. Callbacks come from several TensorRT threads, so the tracker locks its state, and an
exception inside it never reaches TensorRT (where it would cancel the build).

:class:`CancelPolicy` is the watchdog's timetable: cancel first through ``step_complete`` returning False;
a build that has not stopped after a grace period (TensorRT may spend long in one step) is terminated,
then killed.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

Emit = Callable[[float, str], None]
SEPARATOR = " ▸ "


@dataclass(eq=False)
class Phase:
    """One active (or finished) TensorRT build phase."""

    name: str
    parent: Phase | None
    num_steps: int            # ≤ 0: unknown
    order: int                # start order, for "the most recent" phase
    done: int = 0             # steps completed
    partial: float = 0.0      # share of the current step earned by children that have finished
    children: list[Phase] = field(default_factory=list)  # active children only
    finished: bool = False
    floor: float = 0.0        # the fraction never goes below what was already reported

    def depth(self) -> int:
        return 0 if self.parent is None else self.parent.depth() + 1

    def path(self) -> list[Phase]:
        return ([] if self.parent is None else self.parent.path()) + [self]

    def fraction(self) -> float:
        """Share done: completed steps, plus active children's progress inside the current step."""
        if self.finished:
            return 1.0
        step = self.partial
        if self.children:
            live = sum(c.fraction() for c in self.children) / len(self.children)
            step = self.partial + (1.0 - self.partial) * live
        x = self.done + min(step, 1.0)
        if self.num_steps > 0:
            value = min(x / self.num_steps, 1.0)
        else:
            value = x / (x + 1.0)  # unknown length: keeps moving, never reaches 1 before the finish
        self.floor = max(self.floor, value)
        return self.floor


class PhaseTracker:
    """Nested TensorRT build phases → one overall fraction and a one-line message, throttled.

    ``emit(fraction, message)`` is called at most once per ``min_interval`` seconds (20/s by default),
    except for the start and end of top-level phases and a cancel, which always go out; ``flush()`` sends
    what was held back. ``cancelled()`` is polled in ``step_complete``; once it is true every later
    ``step_complete`` returns False, which makes TensorRT stop the build.

    The overall fraction is that of the active top-level phase (the mean if several run at once); a
    top-level phase starting after the others finished starts the bar again, its name in the message.
    """

    def __init__(self, emit: Emit | None = None, *, cancelled: Callable[[], bool] | None = None,
                 title: str = "Building", min_interval: float = 0.05,
                 clock: Callable[[], float] = time.monotonic, message_depth: int = 2) -> None:
        self._emit = emit
        self._cancelled = cancelled
        self.title = title
        self.min_interval = min_interval
        self._clock = clock
        self.message_depth = max(1, message_depth)
        self._lock = threading.Lock()
        self._emit_lock = threading.RLock()  # one emit at a time, in state order
        self._active: dict[str, Phase] = {}
        self._top: list[Phase] = []
        self._finished_top = 0
        self._order = itertools.count()
        self._touched: Phase | None = None
        self._overall_floor = 0.0
        self._cancel_at: float | None = None
        self._delivered_at: float | None = None
        self._last_emit_at: float | None = None
        self._last_sent: tuple[float, str] | None = None
        self._dirty = False

    # ---------------------------------------------------------------- IProgressMonitor
    def phase_start(self, phase_name: str, parent_phase: str | None, num_steps: int) -> None:
        try:
            with self._lock:
                phase = self._start(str(phase_name), str(parent_phase) if parent_phase else None, int(num_steps))
            self._maybe_emit(force=phase.parent is None)
        except Exception:  # never into TensorRT
            log.exception("progress: phase_start(%r, %r, %r) failed", phase_name, parent_phase, num_steps)

    def step_complete(self, phase_name: str, step: int) -> bool:
        try:
            with self._lock:
                phase = self._active.get(str(phase_name))
                if phase is None:
                    log.debug("progress: step %s of unknown phase %r", step, phase_name)
                else:
                    phase.done = max(phase.done, int(step) + 1)
                    if phase.num_steps > 0:
                        phase.done = min(phase.done, phase.num_steps)
                    phase.partial = 0.0
                    self._touched = phase
            self._maybe_emit()
        except Exception:
            log.exception("progress: step_complete(%r, %r) failed", phase_name, step)
        if self._check_cancel():
            if self._delivered_at is None:
                self._delivered_at = self._clock()
            return False
        return True

    def phase_finish(self, phase_name: str) -> None:
        try:
            with self._lock:
                phase = self._active.get(str(phase_name))
                if phase is None:
                    log.debug("progress: finish of unknown phase %r", phase_name)
                    return
                self._finish(phase)
                top = phase.parent is None
            self._maybe_emit(force=top)
        except Exception:
            log.exception("progress: phase_finish(%r) failed", phase_name)

    # ---------------------------------------------------------------- state
    def _start(self, name: str, parent_name: str | None, num_steps: int) -> Phase:
        if name in self._active:  # a name is unique while active: a second start replaces the first
            log.debug("progress: phase %r started again before it finished", name)
            self._finish(self._active[name])
        parent = self._active.get(parent_name) if parent_name else None
        if parent_name and parent is None:
            log.debug("progress: phase %r has unknown parent %r; shown at the top", name, parent_name)
        if parent is None and not self._top and self._finished_top:
            self._overall_floor = 0.0  # a new top-level phase after the others finished: a new bar
        phase = Phase(name, parent, num_steps, next(self._order))
        self._active[name] = phase
        (parent.children if parent is not None else self._top).append(phase)
        self._touched = phase
        return phase

    def _finish(self, phase: Phase) -> None:
        for child in list(phase.children):  # children end with their parent, whatever order TensorRT used
            self._finish(child)
        final = phase.fraction()  # what it reached: a phase may finish before its last step
        phase.finished = True
        if self._active.get(phase.name) is phase:
            del self._active[phase.name]
        if phase.parent is not None:
            parent = phase.parent
            parent.children.remove(phase)
            if not parent.finished:  # its progress moves from the live child into the current step
                parent.partial = parent.partial + (1.0 - parent.partial) * final
        else:
            self._top.remove(phase)
            self._finished_top += 1
        if self._touched is phase or (self._touched is not None and self._touched.finished):
            self._touched = phase.parent if phase.parent is not None and not phase.parent.finished else None

    def _innermost(self) -> Phase | None:
        if self._touched is not None and not self._touched.finished:
            node = self._touched
        elif self._active:
            node = max(self._active.values(), key=lambda p: p.order)
        else:
            return None
        while node.children:  # a touched parent with live children: show the newest child
            node = max(node.children, key=lambda p: p.order)
        return node

    def _overall(self) -> float:
        if self._top:
            value = sum(p.fraction() for p in self._top) / len(self._top)
        else:
            value = 1.0 if self._finished_top else 0.0
        self._overall_floor = max(self._overall_floor, value)
        return self._overall_floor

    def _message(self) -> str:
        if self._cancel_at is not None:
            return f"{self.title}: cancelling…"
        node = self._innermost()
        if node is None:
            return f"{self.title}: finishing…" if self._finished_top else f"{self.title}…"
        names = SEPARATOR.join(p.name for p in node.path()[-self.message_depth:])
        if node.num_steps > 0:
            counter = f"{min(node.done + 1, node.num_steps)} of {node.num_steps}"
        else:
            counter = f"step {node.done + 1}"
        return f"{self.title}: {names} {counter}"

    # ---------------------------------------------------------------- cancel
    def _check_cancel(self) -> bool:
        if self._cancel_at is not None:
            return True
        try:
            wanted = bool(self._cancelled()) if self._cancelled is not None else False
        except Exception:  # a broken cancel check must not stop a build nobody cancelled
            log.exception("progress: cancelled() failed")
            wanted = False
        if wanted:
            self.cancel()
        return wanted

    def cancel(self) -> None:
        """Stop at TensorRT's next ``step_complete``."""
        with self._lock:
            if self._cancel_at is not None:
                return
            self._cancel_at = self._clock()
        self._maybe_emit(force=True)

    @property
    def cancel_requested_at(self) -> float | None:
        """When (clock time) the cancel was first seen, by ``cancel()`` or the ``cancelled`` check."""
        return self._cancel_at

    @property
    def cancel_delivered_at(self) -> float | None:
        """When ``step_complete`` first returned False, i.e. TensorRT was told (``acknowledged_at`` of
        :class:`CancelPolicy`); None while TensorRT has not called back since the cancel."""
        return self._delivered_at

    def is_cancelled(self) -> bool:
        return self._cancel_at is not None

    def cancelled(self) -> bool:
        """Same as :meth:`is_cancelled`: after a build returned None, tells a cancel from a failure."""
        return self._cancel_at is not None

    # ---------------------------------------------------------------- reading
    def fraction(self) -> float:
        with self._lock:
            return self._overall()

    def message(self) -> str:
        with self._lock:
            return self._message()

    def snapshot(self) -> list[dict[str, object]]:
        """The active phases, parents before children: name, depth, done, num_steps, fraction."""
        with self._lock:
            out: list[dict[str, object]] = []

            def walk(p: Phase) -> None:
                out.append({"name": p.name, "depth": p.depth(), "done": p.done, "num_steps": p.num_steps,
                            "fraction": p.fraction()})
                for c in sorted(p.children, key=lambda c: c.order):
                    walk(c)

            for top in sorted(self._top, key=lambda p: p.order):
                walk(top)
            return out

    # ---------------------------------------------------------------- emitting
    def _maybe_emit(self, force: bool = False) -> None:
        if self._emit is None:
            return
        with self._emit_lock:
            now = self._clock()
            with self._lock:
                if not force and self._last_emit_at is not None and now - self._last_emit_at < self.min_interval:
                    self._dirty = True
                    return
                state = (self._overall(), self._message())
                if state == self._last_sent:
                    self._dirty = False
                    return
                self._last_emit_at, self._last_sent, self._dirty = now, state, False
            try:
                self._emit(*state)
            except Exception:
                log.exception("progress: emit failed")

    def flush(self) -> None:
        """Send the current state if an update was held back by the throttle."""
        if self._dirty:
            self._maybe_emit(force=True)


# --- cancel escalation -------------------------------------------------------------------------------

class CancelStage:
    RUNNING = "running"          # no cancel requested
    COOPERATIVE = "cooperative"  # step_complete returns False; waiting for TensorRT to return
    TERMINATE = "terminate"      # send SIGTERM to the build's process now
    KILL = "kill"                # SIGTERM was not enough: send SIGKILL now
    STOPPED = "stopped"          # the build returned or its process ended


@dataclass(frozen=True)
class CancelPolicy:
    """When a cancelled build is terminated, then killed; pure functions of clock times (seconds).

    TensorRT only hears of a cancel at its next ``step_complete``, and one step (timing one layer's
    tactics) can last many seconds. So the build gets ``grace_s`` to stop by itself; once it has seen the
    cancel (``acknowledged_at``) it may take up to ``unwind_s`` more to return cleanly (which keeps its
    timing cache), but never beyond ``max_wait_s`` from the request. Then terminate, and ``kill_after_s``
    later kill.
    """

    grace_s: float = 1.0
    unwind_s: float = 2.0
    max_wait_s: float = 3.0
    kill_after_s: float = 1.0

    def __post_init__(self) -> None:
        for name in ("grace_s", "unwind_s", "max_wait_s", "kill_after_s"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be ≥ 0, not {getattr(self, name)!r}")
        if self.max_wait_s < self.grace_s:
            raise ValueError(f"max_wait_s ({self.max_wait_s}) must be ≥ grace_s ({self.grace_s})")

    def terminate_at(self, requested_at: float, acknowledged_at: float | None = None) -> float:
        """When to terminate a build that has not stopped."""
        deadline = requested_at + self.grace_s
        if acknowledged_at is not None and acknowledged_at <= deadline:
            deadline = min(requested_at + self.max_wait_s, max(deadline, acknowledged_at + self.unwind_s))
        return deadline

    def kill_at(self, requested_at: float, acknowledged_at: float | None = None,
                terminated_at: float | None = None) -> float:
        """When to kill: ``kill_after_s`` after terminate was sent (or was due)."""
        sent = terminated_at if terminated_at is not None else self.terminate_at(requested_at, acknowledged_at)
        return sent + self.kill_after_s

    def stage(self, now: float, requested_at: float | None, *, acknowledged_at: float | None = None,
              terminated_at: float | None = None, stopped: bool = False) -> str:
        """What should be in effect at ``now`` (a :class:`CancelStage` value); send each signal once."""
        if stopped:
            return CancelStage.STOPPED
        if requested_at is None:
            return CancelStage.RUNNING
        if terminated_at is None:
            due = self.terminate_at(requested_at, acknowledged_at)
            return CancelStage.COOPERATIVE if now < due else CancelStage.TERMINATE
        if now < self.kill_at(requested_at, acknowledged_at, terminated_at):
            return CancelStage.TERMINATE
        return CancelStage.KILL

    def next_deadline(self, requested_at: float | None, *, acknowledged_at: float | None = None,
                      terminated_at: float | None = None, killed: bool = False,
                      stopped: bool = False) -> float | None:
        """The next clock time at which :meth:`stage` changes, for a watchdog's sleep; None: nothing due."""
        if stopped or requested_at is None or killed:
            return None
        if terminated_at is None:
            return self.terminate_at(requested_at, acknowledged_at)
        return self.kill_at(requested_at, acknowledged_at, terminated_at)
