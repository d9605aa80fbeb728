"""The guided comparison for first-time users: its steps and the flow between them."""
