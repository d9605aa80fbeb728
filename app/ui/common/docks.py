"""The window's docks: their icons, and the version of the dock layout that the window and projects save."""

from __future__ import annotations

LAYOUT_VERSION = 2  # bump when the set of docks changes: an older saved layout is then ignored
DOCK_ICONS = {"summary": "summary", "properties": "properties", "run": "run", "results": "results",
              "precision": "precision", "readiness": "readiness", "engine": "engine", "jobs": "jobs",
              "profile": "profile"}
