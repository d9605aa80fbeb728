"""Model-provided text (node names, op types, attribute values, messages) shown as written.

Qt guesses rich text from a leading tag: a node named '<b>x</b>' would show bold 'x', and '<unk>' would
vanish. Labels that are rich text on purpose escape what they embed; tooltips go through `tooltip`.
"""

from __future__ import annotations

import html
import re

# Where a long value may break when it wraps: after separators, and inside very long runs of letters.
_AFTER_SEPARATOR = re.compile(r"([/_.,:;×])(?=\S)")
_LONG_RUN = re.compile(r"[^\s\u200b]{21,}")  # longer than any word of prose: broken every 10 characters
ZWSP = "\u200b"


def escape(text: object) -> str:
    """Text for inside rich text: markup characters shown as themselves."""
    return html.escape(str(text), quote=False)


def tooltip(text: str) -> str:
    """A tooltip that shows `text` literally; as rich text it also wraps instead of running off the screen."""
    if not text:
        return ""
    return f"<p style='white-space:pre-wrap'>{escape(text)}</p>"


def breakable(text: str) -> str:
    """The text with invisible break points (zero-width spaces), so a long tensor name or list wraps in a
    narrow column instead of being cut off. For display only: the stored value stays as it was."""
    text = _AFTER_SEPARATOR.sub(rf"\1{ZWSP}", text)
    return _LONG_RUN.sub(lambda m: ZWSP.join(m[0][k:k + 10] for k in range(0, len(m[0]), 10)), text)
