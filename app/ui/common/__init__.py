"""Small widgets and helpers every feature uses: the error banner, table cells, plain text, a thread helper,
colours and icons, and sizing a window to its screen (screen_fit.py)."""
