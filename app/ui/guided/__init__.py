"""The guided comparison for first-time users: its steps (steps.py), the flow between them (flow.py), and what it
says about the demo model and the inputs, made from the facts the jobs use (words.py)."""
