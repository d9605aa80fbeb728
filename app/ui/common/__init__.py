"""Small widgets and helpers every feature uses: the error banner, table cells, plain text, a thread helper,
colours and icons."""
