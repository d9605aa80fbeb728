"""Build progress from IProgressMonitor-style call sequences, throttling, cancel, and the cancel timetable."""

from __future__ import annotations

import logging
import threading

import pytest

from app.core.engine.progress import CancelPolicy, CancelStage, PhaseTracker


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t

    def tick(self, dt: float = 1.0) -> None:
        self.t += dt


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[float, str]] = []

    def __call__(self, fraction: float, message: str) -> None:
        self.events.append((fraction, message))

    @property
    def fractions(self) -> list[float]:
        return [f for f, _ in self.events]


def tracker(**kw) -> tuple[PhaseTracker, Clock, Recorder]:
    clock, rec = Clock(), Recorder()
    return PhaseTracker(rec, clock=clock, **kw), clock, rec


# --- fractions and messages -----------------------------------------------------------------------------

def test_nested_phase_fills_its_parents_current_step() -> None:
    t, clock, _ = tracker()
    t.phase_start("Building engine", None, 4)
    assert t.fraction() == 0.0
    t.phase_start("Tactic selection", "Building engine", 10)
    for step in range(5):
        t.step_complete("Tactic selection", step)
    assert t.fraction() == pytest.approx(5 / 10 / 4)
    assert t.message() == "Building: Building engine ▸ Tactic selection 6 of 10"
    for step in range(5, 10):
        t.step_complete("Tactic selection", step)
    assert t.fraction() == pytest.approx(0.25)
    t.phase_finish("Tactic selection")
    assert t.fraction() == pytest.approx(0.25)  # the child's work moved into the step, nothing lost
    assert t.message() == "Building: Building engine 1 of 4"
    t.step_complete("Building engine", 0)
    assert t.fraction() == pytest.approx(0.25)
    assert t.message() == "Building: Building engine 2 of 4"
    t.step_complete("Building engine", 2)  # steps may be skipped: step 2 done means 3 done
    assert t.fraction() == pytest.approx(0.75)
    t.phase_finish("Building engine")
    assert t.fraction() == 1.0
    assert t.message() == "Building: finishing…"


def test_three_levels_weight_each_inside_its_parent_step() -> None:
    t, _, _ = tracker()
    t.phase_start("A", None, 2)
    t.step_complete("A", 0)                  # A: 1 of 2 done
    t.phase_start("B", "A", 4)
    t.step_complete("B", 0)                  # B: 1 of 4 done
    t.phase_start("C", "B", 5)
    t.step_complete("C", 1)                  # C: 2 of 5 done
    # A = (1 + B) / 2, B = (1 + C) / 4, C = 2/5
    assert t.fraction() == pytest.approx((1 + (1 + 2 / 5) / 4) / 2)
    assert t.message() == "Building: B ▸ C 3 of 5"
    assert [(p["name"], p["depth"], p["done"], p["num_steps"]) for p in t.snapshot()] == [
        ("A", 0, 1, 2), ("B", 1, 1, 4), ("C", 2, 2, 5)]


def test_message_depth_and_title_are_configurable() -> None:
    t, _, _ = tracker(title="Engine", message_depth=3)
    t.phase_start("A", None, 2)
    t.phase_start("B", "A", 3)
    t.phase_start("C", "B", 80)
    for step in range(11):
        t.step_complete("C", step)
    assert t.message() == "Engine: A ▸ B ▸ C 12 of 80"


def test_phases_with_unknown_or_zero_steps_keep_moving_below_one() -> None:
    t, _, _ = tracker()
    t.phase_start("Compiling", None, 0)
    assert t.fraction() == 0.0
    assert t.message() == "Building: Compiling step 1"
    values = []
    for step in range(3):
        t.step_complete("Compiling", step)
        values.append(t.fraction())
    assert values == pytest.approx([1 / 2, 2 / 3, 3 / 4])
    assert t.message() == "Building: Compiling step 4"
    t.phase_start("Inner", "Compiling", -1)
    t.step_complete("Inner", 0)  # inner x=1 -> 1/2 of the current step: x = 3.5 -> 3.5/4.5
    assert t.fraction() == pytest.approx(3.5 / 4.5)
    t.phase_finish("Compiling")
    assert t.fraction() == 1.0


def test_a_zero_step_child_inside_a_known_parent() -> None:
    t, _, _ = tracker()
    t.phase_start("Build", None, 2)
    t.phase_start("Probe", "Build", 0)
    t.step_complete("Probe", 0)
    assert t.fraction() == pytest.approx(0.5 / 2)
    t.phase_finish("Probe")
    t.step_complete("Build", 0)
    assert t.fraction() == pytest.approx(0.5)


def test_steps_beyond_num_steps_are_clamped() -> None:
    t, _, _ = tracker()
    t.phase_start("P", None, 3)
    t.step_complete("P", 7)
    assert t.fraction() == 1.0
    assert t.message() == "Building: P 3 of 3"


def test_early_finish_credits_what_the_child_reached() -> None:
    t, _, _ = tracker()
    t.phase_start("Build", None, 2)
    t.phase_start("Timing", "Build", 10)
    for step in range(4):
        t.step_complete("Timing", step)
    t.phase_finish("Timing")  # allowed before every step was reported
    assert t.fraction() == pytest.approx(0.4 / 2)
    t.phase_start("Timing", "Build", 10)  # a name may be reused once finished
    assert t.fraction() == pytest.approx(0.4 / 2)
    for step in range(5):
        t.step_complete("Timing", step)
    # the new child fills what is left of the step: 0.4 + 0.6 * 0.5
    assert t.fraction() == pytest.approx(0.7 / 2)


def test_out_of_order_finish_ends_the_children_too() -> None:
    t, _, _ = tracker()
    t.phase_start("Build", None, 3)
    t.phase_start("Tactics", "Build", 5)
    t.phase_start("Layer", "Tactics", 2)
    t.phase_finish("Tactics")  # before its child
    assert [p["name"] for p in t.snapshot()] == ["Build"]
    assert t.step_complete("Layer", 1) is True  # a step of a finished phase is ignored, the build goes on
    t.phase_finish("Layer")                     # and so is its late finish
    assert t.message() == "Building: Build 1 of 3"
    t.phase_finish("Build")
    t.phase_finish("Build")
    assert t.snapshot() == [] and t.fraction() == 1.0


def test_unknown_parent_and_unknown_phase_do_not_break_anything() -> None:
    t, _, _ = tracker()
    t.phase_start("Orphan", "Never started", 4)
    assert t.snapshot()[0]["depth"] == 0
    assert t.step_complete("Nobody", 3) is True
    t.step_complete("Orphan", 1)
    assert t.fraction() == pytest.approx(0.5)


def test_a_phase_started_twice_replaces_the_first() -> None:
    t, _, _ = tracker()
    t.phase_start("P", None, 4)
    t.phase_start("Q", "P", 2)
    t.phase_start("Q", "P", 8)
    t.step_complete("Q", 3)
    assert [(p["name"], p["num_steps"], p["done"]) for p in t.snapshot()] == [("P", 4, 0), ("Q", 8, 4)]


def test_emitted_fractions_never_go_back_within_a_top_level_phase() -> None:
    t, clock, rec = tracker()
    t.phase_start("Build", None, 3)
    for outer in range(3):
        clock.tick()
        t.phase_start("Pass", "Build", 4)
        t.step_complete("Pass", 0)
        clock.tick()
        t.phase_start("Side", "Build", 4)   # a concurrent sibling starting at 0 would pull the mean down
        for step in range(4):
            clock.tick()
            t.step_complete("Pass", step)
            t.step_complete("Side", step)
        clock.tick()
        t.phase_finish("Side")
        clock.tick()
        t.phase_finish("Pass")
        clock.tick()
        t.step_complete("Build", outer)
    clock.tick()
    t.phase_finish("Build")
    assert len(rec.events) > 20
    assert rec.fractions == sorted(rec.fractions)
    assert rec.fractions[-1] == 1.0


def test_a_second_top_level_phase_starts_a_new_bar() -> None:
    t, clock, rec = tracker()
    t.phase_start("Parsing", None, 2)
    t.step_complete("Parsing", 1)
    t.phase_finish("Parsing")
    assert t.fraction() == 1.0
    clock.tick()
    t.phase_start("Building", None, 4)
    assert t.fraction() == 0.0
    assert rec.events[-1] == (0.0, "Building: Building 1 of 4")


def test_snapshot_fractions() -> None:
    t, _, _ = tracker()
    t.phase_start("P", None, 4)
    t.step_complete("P", 1)
    t.phase_start("Q", "P", 2)
    t.step_complete("Q", 0)
    assert t.snapshot() == [{"name": "P", "depth": 0, "done": 2, "num_steps": 4, "fraction": 2.5 / 4},
                            {"name": "Q", "depth": 1, "done": 1, "num_steps": 2, "fraction": 0.5}]


# --- throttling -----------------------------------------------------------------------------------------

def test_emits_at_most_twenty_per_second() -> None:
    clock = Clock()
    sent: list[tuple[float, float, str]] = []
    t = PhaseTracker(lambda f, m: sent.append((clock(), f, m)), clock=clock)
    t.phase_start("Build", None, 1)
    t.phase_start("Layers", "Build", 1000)
    for step in range(1000):
        clock.tick(0.001)  # 1000 steps in one second
        t.step_complete("Layers", step)
    assert 19 <= len(sent) <= 21
    gaps = [b[0] - a[0] for a, b in zip(sent, sent[1:], strict=False)]
    assert min(gaps) >= 0.05 - 1e-9
    assert sent[0][1:] == (0.0, "Building: Build 1 of 1")
    t.flush()
    assert sent[-1][1:] == (1.0, "Building: Build ▸ Layers 1000 of 1000")


def test_flush_sends_what_the_throttle_held_back() -> None:
    t, clock, rec = tracker()
    t.phase_start("Build", None, 10)
    t.step_complete("Build", 0)       # same instant: held back
    t.step_complete("Build", 1)
    assert rec.events == [(0.0, "Building: Build 1 of 10")]
    t.flush()
    assert rec.events[-1] == (pytest.approx(0.2), "Building: Build 3 of 10")
    n = len(rec.events)
    t.flush()                          # nothing new: nothing sent
    assert len(rec.events) == n


def test_identical_states_are_not_sent_twice() -> None:
    t, clock, rec = tracker()
    t.phase_start("Build", None, 2)
    clock.tick()
    t.step_complete("Unknown", 0)
    assert len(rec.events) == 1


def test_top_level_start_and_finish_always_go_out() -> None:
    t, clock, rec = tracker(min_interval=10.0)
    t.phase_start("Build", None, 2)
    t.step_complete("Build", 0)
    t.phase_start("Inner", "Build", 2)  # nested start: throttled
    t.phase_finish("Inner")
    t.phase_finish("Build")             # top-level finish: forced
    assert [m for _, m in rec.events] == ["Building: Build 1 of 2", "Building: finishing…"]
    assert rec.fractions[-1] == 1.0


def test_no_emit_callback_is_fine() -> None:
    t = PhaseTracker()
    t.phase_start("P", None, 2)
    assert t.step_complete("P", 0) is True
    t.flush()
    assert t.fraction() == 0.5


# --- cancel ---------------------------------------------------------------------------------------------

def test_cancel_mid_phase_stops_at_the_next_step_and_stays_stopped() -> None:
    flag = {"cancel": False}
    clock, rec = Clock(), Recorder()
    t = PhaseTracker(rec, clock=clock, cancelled=lambda: flag["cancel"])
    t.phase_start("Build", None, 4)
    t.phase_start("Tactics", "Build", 50)
    assert t.step_complete("Tactics", 0) is True
    clock.tick(0.5)
    flag["cancel"] = True
    assert t.cancel_requested_at is None  # nobody has asked yet
    clock.tick(0.25)
    assert t.step_complete("Tactics", 1) is False
    assert t.cancel_requested_at == 100.75 and t.cancel_delivered_at == 100.75
    assert rec.events[-1][1] == "Building: cancelling…"
    flag["cancel"] = False  # the flag going back does not resume a cancelled build
    clock.tick()
    assert t.step_complete("Tactics", 2) is False
    assert t.is_cancelled() and t.cancelled()
    assert t.cancel_delivered_at == 100.75
    t.phase_finish("Tactics")  # TensorRT unwinds: finish arrives before all steps
    t.phase_finish("Build")
    assert t.message() == "Building: cancelling…"


def test_cancel_called_directly_is_delivered_at_the_next_step() -> None:
    t, clock, rec = tracker()
    t.phase_start("Build", None, 4)
    clock.tick(2.0)
    t.cancel()
    assert t.cancel_requested_at == 102.0 and t.cancel_delivered_at is None
    assert rec.events[-1][1] == "Building: cancelling…"  # shown at once, not throttled
    clock.tick(3.0)
    assert t.step_complete("Build", 0) is False
    assert t.cancel_delivered_at == 105.0
    t.cancel()  # twice is harmless
    assert t.cancel_requested_at == 102.0


def test_a_broken_cancel_check_does_not_cancel(caplog: pytest.LogCaptureFixture) -> None:
    def boom() -> bool:
        raise RuntimeError("flag gone")

    t = PhaseTracker(cancelled=boom)
    t.phase_start("P", None, 2)
    with caplog.at_level(logging.ERROR, logger="app.core.engine.progress"):
        assert t.step_complete("P", 0) is True
    assert "cancelled() failed" in caplog.text


def test_a_broken_emit_never_reaches_tensorrt(caplog: pytest.LogCaptureFixture) -> None:
    def emit(fraction: float, message: str) -> None:
        raise ValueError("widget gone")

    t = PhaseTracker(emit)
    with caplog.at_level(logging.ERROR, logger="app.core.engine.progress"):
        t.phase_start("P", None, 2)
        assert t.step_complete("P", 0) is True
        t.phase_finish("P")
    assert "emit failed" in caplog.text


def test_bad_arguments_from_a_binding_are_swallowed(caplog: pytest.LogCaptureFixture) -> None:
    t = PhaseTracker()
    with caplog.at_level(logging.ERROR, logger="app.core.engine.progress"):
        t.phase_start("P", None, "many")  # type: ignore[arg-type]
        t.phase_start("Q", None, 3)
        assert t.step_complete("Q", None) is True  # type: ignore[arg-type]
    assert "phase_start('P', None, 'many') failed" in caplog.text
    assert "step_complete('Q', None) failed" in caplog.text
    assert [p["name"] for p in t.snapshot()] == ["Q"]


def test_concurrent_callbacks_from_several_threads() -> None:
    t = PhaseTracker(lambda f, m: None, min_interval=0.0)
    t.phase_start("Build", None, 8)
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            name = f"Layer group {i}"
            t.phase_start(name, "Build", 200)
            for step in range(200):
                assert t.step_complete(name, step) is True
            t.phase_finish(name)
            t.step_complete("Build", i)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert t.fraction() == 1.0
    assert [p["name"] for p in t.snapshot()] == ["Build"]


# --- cancel escalation ----------------------------------------------------------------------------------

def test_policy_timeline_without_tensorrt_noticing() -> None:
    p = CancelPolicy(grace_s=1.0, unwind_s=2.0, max_wait_s=3.0, kill_after_s=1.0)
    assert p.stage(50.0, None) == CancelStage.RUNNING
    assert p.stage(10.0, 10.0) == CancelStage.COOPERATIVE
    assert p.stage(10.99, 10.0) == CancelStage.COOPERATIVE
    assert p.stage(11.0, 10.0) == CancelStage.TERMINATE
    assert p.next_deadline(10.0) == 11.0
    assert p.stage(11.5, 10.0, terminated_at=11.05) == CancelStage.TERMINATE  # waiting for SIGTERM to work
    assert p.stage(12.05, 10.0, terminated_at=11.05) == CancelStage.KILL
    assert p.next_deadline(10.0, terminated_at=11.05) == pytest.approx(12.05)
    assert p.next_deadline(10.0, terminated_at=11.05, killed=True) is None
    assert p.stage(12.5, 10.0, terminated_at=11.05, stopped=True) == CancelStage.STOPPED


def test_policy_gives_an_acknowledged_cancel_time_to_unwind_within_the_cap() -> None:
    p = CancelPolicy(grace_s=1.0, unwind_s=2.0, max_wait_s=3.0, kill_after_s=1.0)
    assert p.terminate_at(10.0, acknowledged_at=10.2) == pytest.approx(12.2)
    assert p.stage(12.0, 10.0, acknowledged_at=10.2) == CancelStage.COOPERATIVE
    assert p.stage(12.2, 10.0, acknowledged_at=10.2) == CancelStage.TERMINATE
    assert p.terminate_at(10.0, acknowledged_at=10.9) == pytest.approx(12.9)
    assert CancelPolicy(unwind_s=5.0, max_wait_s=3.0).terminate_at(10.0, acknowledged_at=10.5) == 13.0
    # acknowledged after the grace ran out: too late to earn more time
    assert p.terminate_at(10.0, acknowledged_at=11.5) == 11.0
    assert p.kill_at(10.0, acknowledged_at=10.2) == pytest.approx(13.2)


def test_policy_stopped_build_needs_nothing() -> None:
    p = CancelPolicy()
    assert p.stage(99.0, 10.0, stopped=True) == CancelStage.STOPPED
    assert p.next_deadline(10.0, stopped=True) is None and p.next_deadline(None) is None


@pytest.mark.parametrize("kw", [{"grace_s": -1.0}, {"kill_after_s": float("nan")}, {"grace_s": 5.0, "max_wait_s": 2.0}])
def test_policy_refuses_impossible_timings(kw: dict) -> None:
    with pytest.raises(ValueError):
        CancelPolicy(**kw)


def test_tracker_and_policy_together() -> None:
    """The watchdog reads when TensorRT was told from the tracker."""
    flag = {"cancel": False}
    clock = Clock()
    t = PhaseTracker(clock=clock, cancelled=lambda: flag["cancel"])
    policy = CancelPolicy(grace_s=1.0, unwind_s=2.0, max_wait_s=3.0)
    t.phase_start("Build", None, 10)
    flag["cancel"], requested = True, clock()
    clock.tick(0.4)
    t.step_complete("Build", 0)          # TensorRT hears of it 0.4 s later
    ack = t.cancel_delivered_at
    assert ack == pytest.approx(requested + 0.4)
    assert policy.stage(requested + 2.0, requested, acknowledged_at=ack) == CancelStage.COOPERATIVE
    assert policy.stage(requested + 2.4, requested, acknowledged_at=ack) == CancelStage.TERMINATE
