"""Where a feature of the window speaks to the user: the status line (what the last action did), the banner over
the graph (what went wrong, and what to do about it), the widget that its dialogs and menus open over, and the dock
it points the user to (where the answer, the refusal's cause or the job is).

The shell makes one and hands it to the controllers, so that none of them needs the window itself."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from PySide6.QtWidgets import QLabel, QWidget

from app.core.errors import TrtlabError
from app.ui.common.error_banner import ErrorBanner


class Docks(Protocol):
    """The window's docks, by name (`app.ui.common.docks`), as a feature brings them forward."""

    def raise_dock(self, name: str, at_least: float = 0.0, share: float = 0.0) -> None: ...

    def show_jobs(self) -> None: ...

    def show_results(self) -> None: ...


class Messages:
    """The status line, the banner, the dialogs' parent and the docks of one window."""

    def __init__(self, status_label: QLabel, banner: ErrorBanner, parent: QWidget, docks: Docks) -> None:
        self.status_label = status_label
        self.banner = banner
        self.parent = parent
        self.docks = docks

    def raise_dock(self, name: str, at_least: float = 0.0, share: float = 0.0) -> None:
        """Bring a dock forward (at least `at_least` of the window's height, `share` when it was smaller): where the
        user should look next."""
        self.docks.raise_dock(name, at_least, share)

    def show_jobs(self) -> None:
        self.docks.show_jobs()

    def show_results(self) -> None:
        self.docks.show_results()

    def say(self, text: str) -> None:
        """What the last action did, in the status line."""
        self.status_label.setText(text)

    def show_message(self, title: str, message: str, fix: str = "", level: str = "error") -> None:
        """A message over the graph, with what to do about it."""
        self.banner.show_message(title, message, fix, level=level)

    def show_error(self, error: TrtlabError) -> None:
        self.banner.show_message(getattr(error, "title", "Error"), error.message, error.fix)

    def clear(self, titles: Iterable[str]) -> None:
        """Hide the banner where it shows a message with one of these titles (one that no longer applies)."""
        if self.banner.isVisible() and self.banner.title in set(titles):
            self.banner.hide()
