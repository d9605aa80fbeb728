"""What more than one test module (or a benchmark) needs: waits on conditions, model builders, the GUI soak.

Test modules import from here, never from one another; `tests/test_test_hygiene.py` keeps it so."""
