"""What the run controller needs of the rest of the window, as a protocol: the docks it brings forward (the
Jobs and Results docks among them). Its other collaborators (the Run panel, the job bridge, the plan, the Results
view, where to say things) it is given as they are; results that other features show leave it as signals."""

from __future__ import annotations

from typing import Protocol

from app.ui.precision.host import Docks


class RunDocks(Docks, Protocol):
    """The window's docks, as the run controller brings them forward."""

    def show_jobs(self) -> None: ...

    def show_results(self) -> None: ...
