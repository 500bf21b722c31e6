"""CSV files as R writes them (``write.csv``: ``NA`` for missing, offsets as small signed
integers, tables zipped one to an archive), read by load_folder as pandas and DuckDB users
expect (issue 38, point 6)."""
from __future__ import annotations

import logging
import zipfile

import pandas as pd
import pytest

from rdl.data.folder import load_folder
from tests.data.test_folder import fails

SCHEMA = """\
tables:
  patients: {pkey: id, time: admitted}
  visits: {time: day, fkeys: {patient: patients}}
"""
#: R's write.csv: "NA" in numeric, time and text columns; a country column where NA is
#: Namibia; a column more than half NA; offsets in days, negative
PATIENTS = """\
"id","admitted","weight","country","score","offset"
1,"2024-01-01",70.5,"NA",NA,-5
2,"2024-01-03",NA,"DE",NA,-3
3,"2024-01-04",81,"NA",4,-12
4,"2024-01-09",66.2,"US",NA,-1
"""
VISITS = """\
"patient","day","bp","referred"
1,"2024-02-01",120,"2024-01-29"
2,"2024-02-02",NA,NA
3,"2024-02-05",131,"2024-02-05"
"""


def write(folder, patients: str = PATIENTS, schema: str = SCHEMA) -> None:
    (folder / "schema.yaml").write_text(schema)
    (folder / "patients.csv").write_text(patients)
    (folder / "visits.csv").write_text(VISITS)


def test_na_is_missing_where_the_other_values_are_numbers_or_times(tmp_path, caplog):
    write(tmp_path)
    with caplog.at_level(logging.WARNING):
        db = load_folder(tmp_path)
    p, v = db["patients"].df, db["visits"].df
    assert p["weight"].dtype == "float64" and p["weight"].isna().tolist() == [
        False, True, False, False]
    assert p["score"].dtype == "float64" and p["score"].notna().sum() == 1  # 3 of 4 NA
    assert p["country"].tolist() == ["NA", "DE", "NA", "US"]   # text: Namibia stays
    assert pd.api.types.is_datetime64_any_dtype(v["referred"])
    assert v["referred"].isna().tolist() == [False, True, False]
    assert v["bp"].isna().tolist() == [False, True, False]
    assert "are not numbers" not in caplog.text


@pytest.mark.parametrize("word", ["-", "--", "?", "."])
def test_a_placeholder_among_numbers_is_missing_and_text_keeps_it(tmp_path, word):
    """A report's dash, UCI's '?', SAS's and Stata's '.' for a missing number: before, the
    column was read as text (its numbers trained as categories)."""
    write(tmp_path, PATIENTS.replace("NA,-3", f"{word},-3").replace('"DE"', f'"{word}"'))
    p = load_folder(tmp_path)["patients"].df
    assert p["score"].dtype == "float64" and p["score"].isna().tolist() == [
        True, True, False, True]
    assert p["country"].tolist() == ["NA", word, "NA", "US"]   # among words: a value


def test_small_signed_integers_are_numbers_not_times(tmp_path):
    write(tmp_path)
    offset = load_folder(tmp_path)["patients"].df["offset"]
    assert pd.api.types.is_integer_dtype(offset) and offset.tolist() == [-5, -3, -12, -1]


def test_a_declared_numerical_column_takes_na(tmp_path):
    write(tmp_path, schema=SCHEMA.replace("time: admitted}", "time: admitted, "
                                          "stypes: {score: numerical, weight: numerical}}"))
    p = load_folder(tmp_path)["patients"].df
    assert p["score"].notna().sum() == 1 and p["weight"].isna().sum() == 1


def test_the_schema_names_more_missing_words(tmp_path):
    write(tmp_path, PATIENTS.replace("NA,-5", "?,-5").replace("81", "unknown"),
          "missing: ['?', unknown]\n" + SCHEMA)
    p = load_folder(tmp_path)["patients"].df
    assert p["score"].isna().tolist() == [True, True, False, True]
    assert p["weight"].dtype == "float64" and p["weight"].isna().sum() == 2
    write(tmp_path, schema="missing: 7\n" + SCHEMA)
    fails(tmp_path, "missing: 7", "a list of words")


@pytest.mark.parametrize("member", ["patients.csv", "export/patients.csv"])
def test_a_single_member_zip_is_read_like_other_compressed_files(tmp_path, member):
    write(tmp_path, schema=SCHEMA.replace("patients: {", "patients: {file: patients.zip, "))
    with zipfile.ZipFile(tmp_path / "patients.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(member, PATIENTS)
    (tmp_path / "patients.csv").unlink()
    p = load_folder(tmp_path)["patients"].df
    assert len(p) == 4 and p["weight"].dtype == "float64"
    with zipfile.ZipFile(tmp_path / "patients.zip", "a") as z:
        z.writestr("readme.txt", "exported by R")
    fails(tmp_path, "patients.zip (table 'patients')", "holds 2 files",
          "'readme.txt'", "one CSV file")


def test_a_column_that_is_no_time_is_told_to_declare_its_stype(tmp_path):
    """Text that fails as times names the stypes, not only ISO 8601."""
    write(tmp_path, schema=SCHEMA.replace("time: admitted}", "time: admitted, "
                                          "stypes: {offset: timestamp}}"))
    fails(tmp_path, "patients.csv (table 'patients', column 'offset')",
          "stypes: {offset: numerical}")


def test_a_declared_numerical_column_of_words_names_the_ways_out(tmp_path):
    write(tmp_path, schema=SCHEMA.replace("time: admitted}", "time: admitted, "
                                          "stypes: {country: numerical}}"))
    fails(tmp_path, "patients.csv (table 'patients', column 'country'): 4 of 4 values are not "
          "numbers, e.g. 'NA' (row 0)", "name the word in the schema's missing: list",
          "stypes: {country: categorical}")


def test_a_spreadsheet_s_failed_formulas_are_missing_among_numbers(tmp_path, caplog):
    """A spreadsheet's CSV export writes a failed formula's error (#DIV/0!, #VALUE!): among
    numbers, missing (logged); among text, text."""
    write(tmp_path, PATIENTS.replace("70.5,", "#DIV/0!,").replace('"DE"', '"#VALUE!"')
          .replace(",-3", ",#REF!"))
    with caplog.at_level(logging.INFO):
        p = load_folder(tmp_path)["patients"].df
    assert p["weight"].dtype == "float64" and p["weight"].isna().tolist() == [
        True, True, False, False]
    assert p["offset"].isna().tolist() == [False, True, False, False]
    assert p["country"].tolist() == ["NA", "#VALUE!", "NA", "US"]
    assert "#DIV/0!" in caplog.text
