"""What the run controller needs of the rest of the window: the model on show as the jobs take it (`JobModel`: the
opened model, its precision plan and its readiness check). Its other collaborators (the Run panel, the job bridge,
the Results view, where to say things and which dock to point to) it is given as they are; results that other
features show leave it as signals."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from app.ui.precision.plan_controller import PlanController

if TYPE_CHECKING:
    from app.core.model import OpenedModel
    from app.core.readiness import Report


class JobModel:
    """The model on show as the jobs take it: the opened model (None when none is), the plan its `B:plan` targets
    run, and the readiness check a build runs first (`readiness("rtx")` against TensorRT for RTX, None for the
    TensorRT here; None when there is nothing to check)."""

    def __init__(self, opened: Callable[[], OpenedModel | None], plan: PlanController,
                 readiness: Callable[[str | None], Report | None]) -> None:
        self.opened = opened
        self.plan = plan
        self.readiness = readiness

    def plan_precisions(self) -> frozenset[str]:
        """The precisions the plan uses (what a `B:plan` result says it emulated)."""
        return frozenset(r.precision for r in self.plan.rows) - {"fixed"}
