"""Mutation fuzzing of snapshot input: every mutated fixture must give a verdict or a one-line error.

`python -m tests.fuzz --count 10000` runs the long campaign by hand; tests/test_fuzz.py runs a short one in CI.
"""
