"""A first ``schema.yaml`` for a folder of exported tables, drafted from their files:
``python -m rdl.data.draft FOLDER [--write]``.

Writing a schema for an export of twenty tables is most of the work of a first run; this
drafts one from the files' names and values, each guess with the evidence for it in a
comment, for a person to check (it is a draft: nothing is trained on it unseen). Each file
or folder of parts is a table, read as the folder loader reads it (:mod:`rdl.data.folder`:
encodings, numbers, times). Then, per table:

* **primary key**: a column of whole numbers or text, filled in and unique in every row,
  named as keys are (``id``, ``<table>_id``, ``...ID``, ``..._key``, ``..._code``), or the
  first column; else, where another table holds two of its columns by name, a pair unique
  in every row (a composite key: ``[origin, time_hour]``); else none (a table of facts);
* **foreign keys**: a column named as another table's key (``customer_id``, also
  ``<table>_id``) with at least half its values among that key's; text whose values all
  are keys of one table (``origin``: airports' ``faa``); whole numbers named as a key
  (``author_id``) whose values all are keys of exactly one table, those of several left
  for a person to say; the pair of a composite key, by its names; a column named as a
  key that no table holds, repeated (``household_key``), said to be the key of a table
  ``implied: true`` would make (:mod:`rdl.data.implied`);
* **time**: its column of times (of several, by name: ``created``, ``timestamp``, ``date``
  ...; never a birth date's); none: a static table.

What no file says is left to the person, in comments: times written as numbers (a week
number, a season's ``yearID``: the declaration that would make them the rows' time), ids
that are keys of several tables, keys no table holds; and stypes.
"""
from __future__ import annotations

import argparse
import logging
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from rdl.data import files
from rdl.data.composite import ids
from rdl.data.database import DataError
from rdl.data.folder import load_folder
from rdl.data.keys import comparable
from rdl.data.periods import looks_like, name_words

log = logging.getLogger(__name__)

#: names of time columns, most likely the row's own time first
TIME_WORDS = ("created", "timestamp", "time", "date", "ts", "at", "day", "start", "signup",
              "registered", "joined", "opened", "event", "updated")
#: words that start the names of times that are no row's own (a birth, an expiry, an end)
NOT_ROW_TIMES = ("birth", "dob", "born", "death", "died", "expir", "end", "due", "until")
#: words that start the names of times a row changed at (``last_update``, ``ModifiedDate``)
CHANGE_TIMES = ("updat", "modif", "chang", "edit", "last", "latest", "load", "etl", "ingest",
                "refresh", "sync")
#: words that start the names of times known before they come (a due date, an estimate)
AHEAD = ("due", "expir", "until", "valid", "plan", "schedul", "estimat", "expect", "requir",
         "deadline", "target", "promis")


def _norm(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", name.casefold())


def _singular(name: str) -> str:
    n = _norm(name)
    return n[:-3] + "y" if n.endswith("ies") else n[:-1] if n.endswith("s") else n


def tables_of(folder: Path) -> dict[str, str]:
    """The folder's tables: name -> its file or folder of parts (relative)."""
    out = {}
    for p in sorted(folder.iterdir()):
        if p.name.startswith((".", "_")) or p.name == "schema.yaml":
            continue
        if (p.is_file() and (files.is_csv(p) or files.is_parquet(p))) or (
                p.is_dir() and files.parts(p)):
            out.setdefault(_stem(p.name) if p.is_file() else p.name, p.name)
    return out


def _stem(file: str) -> str:
    """A file's table name: its name without its compression and data suffixes
    (``dim.tags.csv.gz``: ``dim.tags``)."""
    name = re.sub(r"\.(gz|bz2|zst|lz4|zip)$", "", file, flags=re.I)
    return re.sub(r"\.(csv|tsv|txt|parquet|pq|jsonl|ndjson|json)$", "", name, flags=re.I)


def _read(folder: Path, name: str, file: str) -> pd.DataFrame:
    return load_folder(folder, {"tables": {name: {"file": file}}})[name].df


def _keyish(s: pd.Series) -> bool:
    """Whole numbers or text (no floats, times or lists): what keys are written as."""
    if pd.api.types.is_bool_dtype(s) or pd.api.types.is_datetime64_any_dtype(s):
        return False
    v = s.dropna()
    if pd.api.types.is_integer_dtype(s) or (pd.api.types.is_float_dtype(s) and len(v)
                                            and (v % 1 == 0).all()):   # ints with gaps
        return True
    return pd.api.types.is_string_dtype(s) and (not len(v) or isinstance(v.iloc[0], str))


def _key_name_score(col: str, table: str) -> int:
    n, t = _norm(col), _singular(table)
    if n in (f"{t}id", f"{_norm(table)}id", f"{t}key", f"{t}code"):
        return 4
    if n == "id":
        return 3
    if n.endswith(("id", "key", "code", "no", "number", "num")):
        return 2
    return 1


def primary_key(name: str, df: pd.DataFrame) -> tuple[str | None, str]:
    """A table's single-column key and why (or None)."""
    best = None
    for i, col in enumerate(df.columns):
        s = df[col]
        if not _keyish(s) or s.isna().any() or not s.is_unique:
            continue
        score = _key_name_score(col, name) + (0.5 if i == 0 else 0)
        if score >= 1.5 and (best is None or score > best[0]):
            best = (score, col)
    if best is None:
        return None, ""
    return best[1], f"unique and filled in, all {len(df)} rows"


def _times(df: pd.DataFrame) -> tuple[str | None, str, dict[str, tuple[str, str]]]:
    """A table's time and why, and the stypes its other columns of times need (the
    loader stops on a timed table's column after its rows' time: :mod:`rdl.data.leaks`)."""
    times = [c for c in df.columns if pd.api.types.is_datetime64_any_dtype(df[c])]
    words = {c: name_words(c) for c in times}
    stypes = {c: ("drop", "when the row last changed, not when it began: as a feature it "
                          "tells of the future") for c in times
              if any(w.startswith(CHANGE_TIMES) for w in words[c])}
    begins = [c for c in times if c not in stypes and "validto" not in _norm(c)
              and not any(w.startswith(NOT_ROW_TIMES) for w in words[c])]
    if not begins:
        return None, "", {**stypes, **_static(df, times, stypes)}
    rank = lambda c: (min((i for i, w in enumerate(TIME_WORDS) if w in _norm(c)),  # noqa: E731
                          default=len(TIME_WORDS)), df[c].median())   # then the earliest
    col = min(begins, key=rank)
    why = "its only column of times" if len(times) == 1 else \
        f"of its columns of times {times}, by its name"
    for c in times:
        later = (df[c] > df[col]).mean()
        if c != col and c not in stypes and later >= 0.01:
            stypes[c] = ("timestamp", f"after the row's time in {later:.0%} of rows, known "
                                      "when the row began, by its name") if any(
                w.startswith(AHEAD) for w in words[c]) else (
                "drop", f"after the row's time in {later:.0%} of rows: a later event, which "
                        "as a feature a seed would see early (known when the row began, a due "
                        "date: timestamp)")
    return col, why + ("; missing in some rows: the loader stops" if df[col].isna().any()
                       else ""), stypes


def _static(df: pd.DataFrame, times: list[str], stypes: dict) -> dict:
    """The stypes of a static table's columns of times (the loader stops a table of
    facts with undeclared times): features."""
    return {c: ("timestamp", "a static table's feature") for c in times if c not in stypes}


def _share(values: pd.Series, keys: pd.Series) -> float:
    v, k = comparable(values.dropna().drop_duplicates(), keys)
    return float(np.isin(v.astype(str), k.astype(str)).mean()) if len(v) else 0.0


def _foreign_keys(name: str, df: pd.DataFrame, pkeys: dict[str, str],
                  frames: dict[str, pd.DataFrame]) -> tuple[dict, list[str]]:
    """A table's single-column foreign keys (column -> table, why) and notes on columns
    whose table is anyone's guess."""
    out, notes = {}, []
    for col in df.columns:
        if col == pkeys.get(name) or not _keyish(df[col]) or df[col].notna().sum() == 0:
            continue
        by_name = [t for t, k in pkeys.items() if t != name and (
            _norm(col) == _norm(k) or _norm(col) in (f"{_singular(t)}id", f"{_norm(t)}id"))]
        if by_name:
            t = by_name[0]
            share = _share(df[col], frames[t][pkeys[t]])
            if share >= 0.5:
                out[col] = (t, f"named as the key of {t}; {share:.0%} of its values are "
                               "keys of it" + _rest(share, t))
            continue
        text = not pd.api.types.is_numeric_dtype(df[col])
        if not (text or _norm(col).endswith(("id", "key"))):
            continue
        shares = {t: _share(df[col], frames[t][k]) for t, k in pkeys.items()
                  if (t != name or not text) and _keyish(frames[t][k])}
        holds = [t for t, share in shares.items() if share >= 0.9]
        if len(holds) == 1:
            out[col] = (holds[0], f"{shares[holds[0]]:.0%} of its values are keys of "
                                  f"{holds[0]}" + _rest(shares[holds[0]], holds[0]))
        elif len(holds) > 1:
            notes.append((col, f"{col}: its values are all keys of each of {holds}: a foreign "
                               "key? say which (fkeys: {" + col + ": <table>})"))
        elif _norm(col).endswith(("id", "key")) and df[col].nunique() < df[col].notna().sum():
            table = re.sub(r"[\s_]*(id|key)$", "", str(col), flags=re.I) + "s"
            notes.append((col, f"{col}: keys of no table here, repeated; if they are entities "
                               f"(a household, a session), a table of them: {table}: {{pkey: "
                               f"{col}, implied: true}}, and fkeys: {{{col}: {table}}} here"))
    return out, notes


def _years(col: str, values: pd.Series) -> str | None:
    """The declaration that times rows by a column of years (``yearID``, ``season``), which
    the loader's period rule leaves alone (a model year is a feature): a row about a year
    is known at its end."""
    v = values.dropna()
    if not ({"year", "yr", "season"} & set(name_words(col))) or not len(v) or \
            not pd.api.types.is_numeric_dtype(v) or not (v % 1 == 0).all() or \
            not v.between(1800, 2200).all():
        return None
    return (f"time: {{column: {col}, unit: year, origin: {int(v.min())}-01-01, "
            f"first: {int(v.min())}}}")


def _rest(share: float, table: str) -> str:
    """What becomes of the values of a foreign key that are no key of its table."""
    return "" if share == 1 else (f" (the rest become missing; implied: true on {table} "
                                  "makes them rows of it)")


def _composites(frames: dict[str, pd.DataFrame], pkeys: dict) -> dict:
    """Composite keys found by name: table -> [c1, c2], for a table without a key and a
    pair of its columns, unique and filled in as a pair, that another table holds by the
    same names, at least half of its pairs among the first's (a reference)."""
    found = {}
    for b, df in frames.items():
        if pkeys.get(b) is not None:
            continue
        for a, other in frames.items():
            shared = [c for c in df.columns if a != b and c in other.columns
                      and (_keyish(df[c]) or pd.api.types.is_datetime64_any_dtype(df[c]))]
            for pair in ([c1, c2] for i, c1 in enumerate(shared) for c2 in shared[i + 1:]):
                cols = df[pair]
                if not cols.isna().any().any() and not cols.duplicated().any() \
                        and _pair_share(other[pair], cols) >= 0.5:
                    found[b] = pair
                    break
            if b in found:
                break
    return found


def draft(folder) -> str:
    """The draft ``schema.yaml`` of ``folder``'s tables (see the module's docstring)."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder")
    tables = tables_of(folder)
    if not tables:
        raise DataError(f"{folder}: no CSV, parquet or JSON file in it")
    frames, failed = {}, {}
    for name, file in tables.items():
        try:
            frames[name] = _read(folder, name, file)
        except DataError as e:
            failed[name] = str(e)
    keys = {n: primary_key(n, df) for n, df in frames.items()}
    pkeys = {n: k for n, (k, _) in keys.items() if k is not None}
    composite = _composites(frames, pkeys)
    times = {n: _times(df) for n, df in frames.items()}
    fkeys = {n: _foreign_keys(n, df, pkeys, frames) for n, df in frames.items()}
    for name, df in frames.items():
        for t, cols in composite.items():
            if t != name and set(cols) <= set(df.columns):
                share = _pair_share(df[cols], frames[t][cols])
                if share >= 0.5:
                    fkeys[name][0][", ".join(cols)] = (
                        t, f"the composite key of {t}; {share:.0%} of its pairs are keys of it")
    rejected = _older_than_parents(frames, pkeys, times, fkeys)
    lines = [f"# drafted by python -m rdl.data.draft from {folder}: every guess says why;",
             "# check each, then: python -m rdl.train data=folder data.db.path=... task=...",
             "tables:"]
    for name, file in tables.items():
        lines.append(f"  {_yaml(name)}:")
        lines.append(f"    file: {_yaml(file)}")
        if name in failed:
            lines.append("    # not read: " + failed[name].replace("\n", " "))
            continue
        df = frames[name]
        pkey, why = keys[name]
        if pkey is not None:
            lines.append(f"    pkey: {_yaml(pkey)}   # {why}")
        elif name in composite:
            lines.append(f"    pkey: [{', '.join(map(_yaml, composite[name]))}]   # unique and "
                         f"filled in as a pair, all {len(df)} rows (a composite key)")
        time, why, stypes = times[name]
        if name in rejected:
            lines.append(f"    # time: {_yaml(time)}   # not declared: {rejected[name]}")
        elif time is not None:
            lines.append(f"    time: {_yaml(time)}   # {why}")
        else:   # numbers that count periods (a year, a week): the rows' time, once declared
            periods = [(c, d) for c in df.columns if (d := looks_like(str(c), df[c])
                                                      or _years(c, df[c]))]
            lines += [f"    # {c}: period numbers? if they are the rows' time: {d}"
                      for c, d in periods[:1]]
        keys_of, notes = fkeys[name]
        if keys_of:
            lines.append("    fkeys:")
            lines += [f"      {_yaml(c)}: {_yaml(t)}   # {why}" for c, (t, why) in keys_of.items()]
        if stypes:
            lines.append("    stypes:")
            lines += [f"      {_yaml(c)}: {st}   # {why}" for c, (st, why) in stypes.items()]
        parts = {c for key in keys_of for c in key.split(", ")}   # a composite key's columns
        lines += [f"    # {n}" for c, n in notes if c not in parts and not _years(c, df[c])]
    return "\n".join(lines) + "\n"


def _older_than_parents(frames: dict, pkeys: dict, times: dict, fkeys: dict) -> dict:
    """Tables whose drafted time is after most rows that reference them (an account made
    when the data was migrated, after its history): no time their rows began, so they
    are static (:func:`rdl.data.leaks.future_references`); table -> why, their time's
    column then a feature's stype (dropped: a time from the rows' future)."""
    rejected = {}
    for name, df in frames.items():
        mine = times[name][0]
        for col, (ref, _) in fkeys[name][0].items():
            theirs = times[ref][0] if ref in times else None
            if mine is None or theirs is None or ref == name or ", " in col:
                continue
            values, keys = comparable(df[col], frames[ref][pkeys[ref]])
            pos = pd.Index(keys).get_indexer(values)
            linked = pos >= 0
            older = (frames[ref][theirs].to_numpy()[pos[linked]] > df[mine].to_numpy()[linked])
            if linked.any() and older.mean() >= 0.5 and ref not in rejected:
                rejected[ref] = (f"{older.mean():.0%} of {name}.{col}'s rows are older than "
                                 f"the {ref} row they reference: no time a {ref} began, a "
                                 "static table")
                times[ref][2][theirs] = ("drop", "after most of the rows that reference it "
                                                 "(above): a time from their future")
    return rejected


def _pair_share(values: pd.DataFrame, keys: pd.DataFrame) -> float:
    v = ids(values, list(values.columns)).dropna().drop_duplicates()
    return float(v.isin(set(ids(keys, list(keys.columns)))).mean()) if len(v) else 0.0


def _yaml(name: str) -> str:
    """A name as YAML writes it plainly, or quoted where it must be."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_ .()-]*", name) and name.strip() == name \
            and name.lower() not in ("null", "true", "false", "yes", "no", "on", "off", "y", "n"):
        return name
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m rdl.data.draft", description=__doc__.split(
        "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder")
    p.add_argument("--write", action="store_true",
                   help="write FOLDER/schema.yaml (not over one already there)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    try:
        text = draft(args.folder)
    except DataError as e:
        sys.exit(f"error: {e}")
    if not args.write:
        print(text, end="")
        return
    target = Path(args.folder).expanduser() / "schema.yaml"
    if target.exists():
        sys.exit(f"error: {target} exists; the draft is printed without --write")
    tmp = target.with_name(".schema.yaml.draft")
    tmp.write_text(text)
    tmp.replace(target)
    print(f"draft written to {target}: check every line before training")


if __name__ == "__main__":
    main()
