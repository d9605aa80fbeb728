"""Results: the Results view and its plots, the answers as pictures, the scorecard, profiles, batch results and
the report."""
