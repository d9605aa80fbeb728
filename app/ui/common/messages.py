"""Where a feature of the window speaks to the user: the status line (what the last action did), the banner over
the graph (what went wrong, and what to do about it), and the widget that its dialogs and menus open over.

The shell makes one and hands it to the controllers, so that none of them needs the window itself."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtWidgets import QLabel, QWidget

from app.core.errors import TrtlabError
from app.ui.common.error_banner import ErrorBanner


class Messages:
    """The status line, the banner and the dialogs' parent of one window."""

    def __init__(self, status_label: QLabel, banner: ErrorBanner, parent: QWidget) -> None:
        self.status_label = status_label
        self.banner = banner
        self.parent = parent

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
