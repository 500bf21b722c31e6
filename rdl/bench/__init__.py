"""Benchmarks: ``python -m rdl.bench <name> [options]``; each prints a table and writes it."""
