"""How long a job still needs, from the fractions it reports: shown by the window's Jobs panel and the CLI's progress
lines."""

from __future__ import annotations

ESTIMATE_AFTER_S = 3.0  # a job's time left is said once it has run this long since its first fraction


def time_left(first: tuple[float, float] | None, fraction: float, now: float) -> str:
    """The time a job still needs at the pace it went since its first fraction ("40 s", "3 min"); "" until it has
    run 3 s and moved 2 % since then, or when it reports no fraction."""
    if first is None or fraction < 0:
        return ""
    t0, f0 = first
    spent, done = now - t0, fraction - f0
    if spent < ESTIMATE_AFTER_S or done < 0.02:
        return ""
    left = spent * (1.0 - fraction) / done
    return f"{max(1, round(left))} s" if left < 90 else f"{round(left / 60)} min"
