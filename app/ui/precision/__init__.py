"""The precision plan: its undoable edits, the Precision dock, and the window's precision work."""
