"""Infinite numbers as a file writes them (the Lahman databank's ``PitchingPost.ERA``: ``inf``
where a pitcher gave up runs without an out): the loader stops, naming the word that
``missing:`` declares; the draft declares it, so the table is read (before, it was left out,
"not read"); a readme beside the tables is no table."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from rdl.data.checks import Infinite
from rdl.data.draft import draft
from rdl.data.folder import load_folder

ERA = ["3.50", "inf", "0.00", "", "Infinity", "2.25", "inf", "4.10"]


def write(folder, era=ERA):
    folder.mkdir(exist_ok=True)
    n = len(era)
    pd.DataFrame({"player_id": [f"p{i}" for i in range(4)],
                  "debut": pd.date_range("2001-04-01", periods=4, freq="365D").date}
                 ).to_csv(folder / "players.csv", index=False)
    lines = ["stint_id,player_id,played_on,ERA,outs"] + [
        f"{i},p{i % 4},2010-{1 + i % 12:02d}-01,{e},{i * 3}" for i, e in enumerate(era)]
    (folder / "pitching.csv").write_text("\n".join(lines) + "\n")
    (folder / "readme2014.txt").write_text(
        "Baseball Databank\n\n   Column     Meaning\n   ERA        earned run average\n")
    return n


SCHEMA = {"tables": {
    "players": {"file": "players.csv", "pkey": "player_id", "time": "debut"},
    "pitching": {"file": "pitching.csv", "pkey": "stint_id", "time": "played_on",
                 "fkeys": {"player_id": "players"}}}}


def test_the_loader_names_the_word_that_declares_them_missing(tmp_path):
    write(tmp_path)
    with pytest.raises(Infinite) as e:
        load_folder(tmp_path, SCHEMA)
    assert "(table 'pitching', column 'ERA'): 3 of 8 values are infinite" in str(e.value)
    assert "declare them missing (missing: [Infinity, inf])" in str(e.value)
    schema = yaml.safe_load(yaml.safe_dump(SCHEMA))
    schema["tables"]["pitching"]["missing"] = ["Infinity", "inf"]
    era = load_folder(tmp_path, schema)["pitching"].df["ERA"]
    assert era.isna().tolist() == [e in ("", "inf", "Infinity") for e in ERA]
    assert era.dropna().tolist() == [3.5, 0.0, 2.25, 4.1]


def test_the_draft_declares_them_and_its_schema_loads(tmp_path):
    write(tmp_path)
    text = draft(tmp_path)
    tables = yaml.safe_load(text)["tables"]
    assert set(tables) == {"players", "pitching"}   # readme2014.txt: no table
    assert tables["pitching"]["missing"] == ["Infinity", "inf"]
    assert "missing: [Infinity, inf]   # 3 infinite numbers, which no model takes" in text
    assert "not read" not in text
    db = load_folder(tmp_path, {"tables": tables})
    assert int(db["pitching"].df["ERA"].isna().sum()) == 4
    assert np.isfinite(db["pitching"].df["ERA"].dropna()).all()


def test_numbers_too_large_are_no_word_to_declare(tmp_path):
    """``1e400`` is a number (an export's overflow), not a word for infinity: the draft
    leaves the table to a person, and the error says no ``missing:``."""
    write(tmp_path, ["3.5", "1e400", "0.0", "2.0"])
    with pytest.raises(Infinite) as e:
        load_folder(tmp_path, SCHEMA)
    assert "missing: [" not in str(e.value) and e.value.words == []
    text = draft(tmp_path)
    assert "# not read: " in text and "1 of 4 values are infinite" in text
