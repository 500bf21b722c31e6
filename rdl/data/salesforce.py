"""Salesforce's record ids, written two ways: 15 characters (case-sensitive: a report's
export, the web page's address) or 18 (the API's, Data Loader's: the 15 and a 3-character
suffix that encodes their letters' case, so that a system blind to case tells them apart).

A CRM export mixes them: ``Account.csv`` from a report holds ``001D000000IqhSL``, and
``Opportunity.csv`` from Data Loader its ``AccountId`` ``001D000000IqhSLIAZ``; compared as
text no key matches. Where the key values compared are all Salesforce ids, some of 15
characters and some of 18, and every 18-character one's suffix is its case code (a check
no other 18-character code passes by chance: 3 characters of 32), the 18-character ones are
read as their first 15: the record's id itself (:func:`~rdl.data.keys.comparable`).

The suffix: for each 5-character chunk of the 15, a 5-bit number whose bit ``i`` is set
where the chunk's ``i``-th character is an upper-case letter, written as a character of
``A..Z0..5``.
"""
from __future__ import annotations

import re

import numpy as np

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345"
ID = re.compile(r"[a-zA-Z0-9]{15}(?:[A-Z0-5]{3})?")


def suffix(id15: str) -> str:
    """The 3 characters an 18-character id adds to its first 15."""
    return "".join(ALPHABET[sum(1 << i for i, ch in enumerate(id15[j:j + 5]) if "A" <= ch <= "Z")]
                   for j in (0, 5, 10))


def as_15(columns: list[np.ndarray]) -> list[np.ndarray]:
    """Key values (object arrays, ``None`` missing) with 18-character Salesforce ids as
    their 15 characters, where all are Salesforce ids and both lengths occur (see the
    module's docstring); else ``columns`` as they are."""
    if not all(_first_is_id(c) for c in columns):
        return columns   # (cheap: most keys fail on their first value)
    values = [c[np.fromiter((v is not None for v in c), bool, len(c))] for c in columns]
    lengths = {len(x) if isinstance(x, str) else -1 for v in values for x in v}
    if lengths != {15, 18}:
        return columns
    for v in values:
        for x in v:
            if not ID.fullmatch(x) or len(x) == 18 and suffix(x[:15]) != x[15:]:
                return columns
    return [np.array([x[:15] if isinstance(x, str) and len(x) == 18 else x for x in c],
                     dtype=object) for c in columns]


def _first_is_id(values: np.ndarray) -> bool:
    """Whether the first value not missing is a Salesforce id (or all are missing)."""
    x = next((v for v in values if v is not None), None)
    return x is None or isinstance(x, str) and ID.fullmatch(x) is not None
