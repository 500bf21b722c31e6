"""Temporal correctness, the one rule: what a seed at time ``s`` may see.

A row at time ``t`` is visible to a seed at ``s`` iff ``t <= s``, or ``t < s`` with
``strict=True`` (RelBench v3's rule): :func:`visible`. A label of the task's label history
is a row at the time its window closes (``available``); every row it was computed from
lies before that time, so it is visible iff ``available <= s``, strict or not. Static
tables (no time column) are always visible. Nothing a seed is given, by the sampler or
by a feature, breaks the rule.

It is applied in three vectorised forms, each through :func:`includes_equal` and each
checked against :func:`visible` row by row (``tests/test_visibility.py``):

- the sampler's temporal index (:mod:`rdl.graph.temporal_index`): a sorted search for the
  seed's time, to its right when a row at the seed's own time is visible;
- the feature table's SQL and all-time sums (:mod:`rdl.features.table`): ``t <= s`` (or
  ``<``) in DuckDB, an ``asof`` join that takes exact matches (or not);
- the label history's statistics (:mod:`rdl.features.labels`): an ``asof`` join on
  ``available`` that takes exact matches (an entity's own labels), and a sorted search
  for the seed's time to its right (every entity's, ``closed_statistic``).
"""
from __future__ import annotations


def includes_equal(strict: bool) -> bool:
    """Whether a row at the seed's own time is visible to it."""
    return not strict


def visible(row_time, seed_time, strict: bool = False):
    """Whether (elementwise) a row at ``row_time`` is visible to a seed at ``seed_time``."""
    return row_time <= seed_time if includes_equal(strict) else row_time < seed_time


def sql_comparison(strict: bool) -> str:
    """:func:`visible` as a SQL comparison: ``row_time <op> seed_time``."""
    return "<=" if includes_equal(strict) else "<"
