"""Months named in French, German, Spanish, Italian, Portuguese or Dutch, as reports and
localized spreadsheets write dates (``31 janv. 2024``, ``31. März 2024``, ``31 de enero de
2024``, ``1er mai 2024``, ``5-ene-2024``), rewritten as English names them (``31 Jan
2024``), which pandas reads (:func:`rdl.data.times._rewritten`).

A column is rewritten only where one of its first values names a month in another
language; its English names are then written alike (``01.Jan.2025`` beside
``31.Dez.2024``), so that one form reads them all.
"""
from __future__ import annotations

import re

import pandas as pd

#: each month's names and abbreviations in those languages, but those English shares
_WORDS = ("janvier janv januar jänner jän enero ene gennaio gen janeiro januari",
          "février févr fév fevrier fevr februar febrero febbraio fevereiro fev februari",
          "mars märz mär mrz marzo março marco maart mrt",
          "avril avr abril abr aprile",
          "mai mayo maggio mag maio mei",
          "juin juni junio giugno giu junho",
          "juillet juil juli julio luglio lug julho",
          "août aout aou agosto ago augustus",
          "septembre setiembre settembre setembro set",
          "octobre oktober okt octubre ottobre ott outubro",
          "novembre noviembre novembro",
          "décembre déc decembre dezember dez diciembre dic dicembre dezembro")
_ENGLISH = {d.strftime(f).casefold(): d.strftime("%b") for d in
            pd.date_range("2000-01-01", periods=12, freq="MS") for f in ("%b", "%B")}
NAMES = {**_ENGLISH, "sept": "Sep", **{w: pd.Timestamp(2000, m, 1).strftime("%b")
                                       for m, words in enumerate(_WORDS, 1)
                                       for w in words.split()}}


def _between_numbers(words) -> re.Pattern:
    """A month's name between a day and what follows it (a year), with what joins them:
    a French ordinal (1er), Spanish and Portuguese "de", a dot, a dash, a slash."""
    return re.compile(r"(?i)(?<=\d)(?:er)?(?:\.?\s+de)?[\s.\-/]+(" + "|".join(
        sorted(words, key=len, reverse=True)) + r")\.?(?:\s+de)?[\s.\-/,]+(?=\d)")


#: what a column must hold to be rewritten: a month named in another language
FOREIGN = _between_numbers(set(NAMES) - set(_ENGLISH) - {"sept"})
#: what is rewritten in it: every month's name
WRITTEN = _between_numbers(NAMES)


def english(match: re.Match) -> str:
    """A match of :data:`WRITTEN` as English writes it: `` Jan ``."""
    return f" {NAMES[match.group(1).casefold()]} "
