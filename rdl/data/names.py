"""Column names as the words they are made of, for the rules that read names (times of
day, periods, numbers named as times, the draft's guesses): one split for all of them."""
from __future__ import annotations

import re


def name_words(name: str) -> list[str]:
    """A column name's words, lower case: ``WEEK_NO`` -> week, no; ``yearWeek`` -> year,
    week; ``ERZET`` -> erzet."""
    return [w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", str(name))]
