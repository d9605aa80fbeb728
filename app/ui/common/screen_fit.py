"""Sizing a window that opens beside the main one so that all of it is on the screen."""

from __future__ import annotations

from PySide6.QtCore import QRect, QTimer
from PySide6.QtGui import QGuiApplication, QScreen
from PySide6.QtWidgets import QWidget

SCREEN_SHARE = 0.9   # of the available geometry a window may take on each side when the screen is small


def fitted_rect(avail: QRect, want: tuple[int, int], share: float = SCREEN_SHARE) -> QRect:
    """`want` where the available geometry has room, else `share` of it on that side; centred on it."""
    width = max(1, min(want[0], int(avail.width() * share)))
    height = max(1, min(want[1], int(avail.height() * share)))
    return QRect(avail.x() + (avail.width() - width) // 2, avail.y() + (avail.height() - height) // 2, width, height)


def screen_of(window: QWidget, near: QWidget | None = None) -> QScreen | None:
    """The screen `near` (the window it opens from) is on, else the window's own, else the primary one."""
    for w in (near.window() if near is not None else None, window):
        screen = w.screen() if w is not None else None
        if screen is not None:
            return screen
    return QGuiApplication.primaryScreen()


def fit_window(window: QWidget, want: tuple[int, int], near: QWidget | None = None,
               share: float = SCREEN_SHARE) -> None:
    """Size and place a top-level window on the available geometry of the screen `near` is on: `want` on a big
    screen, at most `share` of it on a small one, centred. Once shown and laid out (a window's minimum size or a
    frame the window manager adds can make it bigger than asked), it is shrunk where it must be and centred again,
    frame included."""
    screen = screen_of(window, near)
    if screen is None:
        window.resize(*want)
        return
    avail = screen.availableGeometry()
    if avail.width() <= 0 or avail.height() <= 0:
        window.resize(*want)
        return
    rect = fitted_rect(avail, want, share)
    window.resize(rect.size())
    window.move(rect.topLeft())

    def keep_inside() -> None:
        frame = window.frameGeometry()
        extra_w, extra_h = frame.width() - window.width(), frame.height() - window.height()
        if frame.width() > avail.width() or frame.height() > avail.height():
            window.resize(min(window.width(), avail.width() - extra_w), min(window.height(), avail.height() - extra_h))
            frame = window.frameGeometry()
        # centred again with its frame, which is known only now (window.move places the frame's corner)
        window.move(max(avail.x(), avail.x() + (avail.width() - frame.width()) // 2),
                    max(avail.y(), avail.y() + (avail.height() - frame.height()) // 2))

    QTimer.singleShot(0, window, keep_inside)


__all__ = ["SCREEN_SHARE", "fit_window", "fitted_rect", "screen_of"]
