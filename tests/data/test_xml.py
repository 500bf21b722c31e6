"""Tables exported as XML (``rdl/data/xmlrows.py``): the Stack Exchange data dump's files
(each row an element of attributes, as ``Posts.xml`` holds RelBench's rel-stack's source),
and rows of child elements as Oracle, MySQL and pandas write them."""
from __future__ import annotations

import gzip
from xml.sax.saxutils import quoteattr

import numpy as np
import pandas as pd
import pytest
import yaml

from rdl.data.database import DataError
from rdl.data.draft import draft
from rdl.data.folder import load_folder


def dump(folder, seed: int = 0, kind: str = "xml") -> dict[str, pd.DataFrame]:
    """A Stack Exchange site's dump, small: users (the Community user, -1, first), posts
    (questions, answers naming their question, an accepted answer named by its question,
    a closed one), comments; a value a row lacks is an attribute it leaves out."""
    rng = np.random.default_rng(seed)
    t0 = pd.Timestamp("2011-10-11 19:25:16.397")
    def at(hours):
        return t0 + pd.Timedelta(hours=float(hours))
    users = pd.DataFrame({"Id": [-1, *range(2, 121)],
                          "CreationDate": [at(0), *(at(h) for h in np.sort(
                              rng.uniform(1, 9000, 119)))],
                          "DisplayName": ["Community", *(f"user{i}" for i in range(2, 121))],
                          "DownVotes": rng.integers(0, 3, 120),
                          "Reputation": rng.integers(1, 5000, 120)})
    posts = []
    for i in range(1, 301):
        made = at(10 + 30 * i)
        question = i % 3 != 2
        row = {"Id": i, "PostTypeId": 1 if question else 2, "CreationDate": made,
               "Score": int(rng.integers(-2, 30)),
               "Body": "<p>How did the Romans, in 44 BC,\nrule?</p>",
               "OwnerUserId": int(rng.choice(users["Id"][users["CreationDate"] <= made]))}
        if not question:
            row["ParentId"] = i - 1
        if i % 3 == 1:
            row["AcceptedAnswerId"] = i + 1
        if i == 150:
            row["ClosedDate"] = made + pd.Timedelta(days=2)
        if i % 7 == 0:   # (edited since, last by one who may have joined after)
            row["LastEditorUserId"] = int(rng.choice(users["Id"]))
        posts.append(row)
    comments = [{"Id": i, "PostId": p, "Score": 0, "Text": "Thanks, & well said <3",
                 "CreationDate": at(10 + 30 * p + int(rng.integers(1, 40))),
                 "UserId": int(rng.choice(users["Id"][users["CreationDate"] <= at(30 * p)]))}
                for i, p in enumerate(np.sort(rng.integers(1, 301, 400)), start=1)]
    tables = {"Users": users, "Posts": pd.DataFrame(posts), "Comments": pd.DataFrame(comments)}
    for name, df in tables.items():
        if kind == "csv":   # (the same rows as a CSV file: the draft's rules, not XML's)
            df.to_csv(folder / f"{name}.csv", index=False, date_format="%Y-%m-%dT%H:%M:%S.%f")
            continue
        lines = ["\ufeff<?xml version=\"1.0\" encoding=\"utf-8\"?>",
                 f"<!DOCTYPE {name.lower()} SYSTEM '{name.lower()}.dtd'>", f"<{name.lower()}>"]
        for row in df.to_dict("records"):
            attrs = " ".join(f"{k}={quoteattr(_text(v))}" for k, v in row.items()
                             if not pd.isna(v))
            lines.append(f"  <row {attrs.replace(chr(10), '&#xA;')} />")
        (folder / f"{name}.xml").write_text("\n".join([*lines, f"</{name.lower()}>", ""]),
                                           encoding="utf-8")
    return tables


def _text(v) -> str:
    if isinstance(v, pd.Timestamp):
        return v.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
    return str(int(v)) if isinstance(v, float) and v == int(v) else str(v)


@pytest.mark.parametrize("kind", ["xml", "csv"])
def test_a_stack_exchange_dump_is_drafted_and_loads_as_its_rows_say(tmp_path, kind):
    tables = dump(tmp_path, kind=kind)
    text = draft(tmp_path)
    schema = yaml.safe_load(text)["tables"]
    posts = schema["Posts"]
    assert posts["pkey"] == "Id" and posts["time"] == "CreationDate"
    assert posts["fkeys"]["OwnerUserId"] == "Users" and posts["fkeys"]["ParentId"] == "Posts"
    assert posts["fkeys"]["AcceptedAnswerId"] == "Posts"
    assert schema["Comments"]["fkeys"] == {"PostId": "Posts", "UserId": "Users"}
    # closed: a later event, though one post in 300 holds it (the loader's share: of the
    # rows that hold one)
    assert posts["events"] == ["ClosedDate"]
    # 1 and 2 are keys of every table here: a type's code, no foreign key to them
    assert posts["fkeys"]["PostTypeId"] == "PostTypes" and "keys of each of" not in text
    assert "panel of series" not in text   # (users' DownVotes: times of their own)
    db = load_folder(tmp_path, {"tables": schema})
    p, u = db["Posts"].df, db["Users"].df
    assert len(p) == 300 and len(u) == 120 and len(db["Comments"]) == 400
    assert p["Body"].iloc[0] == tables["Posts"]["Body"].iloc[0]   # (escapes and line break)
    assert db["Comments"].df["Text"].iloc[0] == "Thanks, & well said <3"
    assert pd.api.types.is_numeric_dtype(p["Score"]) and (
        p["Score"].to_numpy() == tables["Posts"]["Score"].to_numpy()).all()
    assert (p["CreationDate"] == tables["Posts"]["CreationDate"]).all()   # (milliseconds)
    assert p["ParentId"].isna().sum() == 200   # (questions leave it out)


@pytest.mark.parametrize("kind", ["xml", "csv"])
def test_tallies_written_at_the_export_are_dropped_from_tables_whose_rows_have_events(
        tmp_path, caplog, kind):
    dump(tmp_path, kind=kind)
    schema = yaml.safe_load(draft(tmp_path))["tables"]
    dropped = {n: sorted(c for c, st in s.get("stypes", {}).items() if st == "drop")
               for n, s in schema.items()}
    assert dropped["Users"] == ["DownVotes", "Reputation"]   # (users have comments, posts)
    # (posts have comments; the last editor: a key written at the export, no link)
    assert dropped["Posts"] == ["LastEditorUserId", "Score"]
    assert "LastEditorUserId" not in schema["Posts"]["fkeys"]
    assert dropped["Comments"] == []   # (no row references a comment: its own, or a tally?)
    for name in ("Users", "Posts"):
        del schema[name]["stypes"]
    schema["Posts"]["fkeys"]["LastEditorUserId"] = "Users"
    load_folder(tmp_path, {"tables": schema})
    said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("table 'Users'): columns 'DownVotes', 'Reputation': by its name, a tally" in m
               for m in said), said
    assert any("table 'Posts'): column 'Score'" in m for m in said)
    assert not any("table 'Comments'" in m and "tally" in m for m in said)
    assert any("column 'LastEditorUserId'): a foreign key named as the last Users row" in m
               for m in said)
    # a question names its accepted answer, posted after it: that link, not a static table
    assert any("'AcceptedAnswerId'" in m and "a later row of its own table" in m
               and "static" not in m for m in said)


ROWS = pd.DataFrame({"id": [1, 2, 3], "name": ["a, b", "c", None],
                     "amount": [1.5, None, 3.0],
                     "at": pd.to_datetime(["2024-01-05 10:00", "2024-01-06 00:00", "2024-02-01 00:00"])})

ORACLE = """<?xml version="1.0"?>
<ROWSET>
 <ROW><ID>1</ID><NAME>a, b</NAME><AMOUNT>1.5</AMOUNT><AT>2024-01-05 10:00:00</AT></ROW>
 <ROW><ID>2</ID><NAME>c</NAME><AT>2024-01-06</AT></ROW>
 <ROW><ID>3</ID><AMOUNT>3</AMOUNT><AT>2024-02-01</AT></ROW>
</ROWSET>
"""
MYSQL = """<?xml version="1.0"?>
<resultset statement="SELECT * FROM t" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <row><field name="id">1</field><field name="name">a, b</field><field name="amount">1.5</field>
       <field name="at">2024-01-05 10:00:00</field></row>
  <row><field name="id">2</field><field name="name">c</field>
       <field name="amount" xsi:nil="true" /><field name="at">2024-01-06</field></row>
  <row><field name="id">3</field><field name="name" xsi:nil="true" />
       <field name="amount">3</field><field name="at">2024-02-01</field></row>
</resultset>
"""


@pytest.mark.parametrize("written", ["oracle", "mysql", "pandas", "gzip"])
def test_rows_of_child_elements_load_as_the_same_rows_in_csv(tmp_path, written):
    path = tmp_path / "t.xml"
    if written == "oracle":
        path.write_text(ORACLE)
    elif written == "mysql":
        path.write_text(MYSQL)
    else:   # (pandas' own writer: its index a column it names "index", left out here)
        text = ROWS.to_xml(index=False, parser="etree")
        if written == "gzip":
            path = tmp_path / "t.xml.gz"
            path.write_bytes(gzip.compress(text.encode()))
        else:
            path.write_text(text)
    (tmp_path / "c.csv").write_text(ROWS.to_csv(index=False))
    key = "ID" if written == "oracle" else "id"   # (Oracle's names in capitals)
    got = load_folder(tmp_path, {"tables": {"t": {"file": path.name, "pkey": key}}})["t"].df
    want = load_folder(tmp_path, {"tables": {"t": {"file": "c.csv", "pkey": "id"}}})["t"].df
    got.columns = got.columns.str.lower()
    pd.testing.assert_frame_equal(got, want, check_dtype=False)


@pytest.mark.parametrize("text, said", [
    ("<orders><order id='1'><items><item sku='a'/></items></order>"
     "<order id='2'><items><item sku='b'/></items></order></orders>", "nested records"),
    ("<?xml version='1.0'?><Workbook xmlns='urn:schemas-microsoft-com:office:spreadsheet'>"
     "<Worksheet/></Workbook>", "save it as .xlsx"),
    ("<rows><row id='1'></rows>", "not a readable XML file"),
    ("<rows></rows>", "no rows"),
])
def test_xml_that_holds_no_table_s_rows_stops_saying_why(tmp_path, text, said):
    (tmp_path / "t.xml").write_text(text)
    with pytest.raises(DataError, match=said):
        load_folder(tmp_path, {"tables": {"t": {"file": "t.xml"}}})


def test_an_element_before_the_rows_is_no_row(tmp_path):
    (tmp_path / "t.xml").write_text(
        "<export><meta generated='2024-01-01'/><rows><row id='1' v='x'/><row id='2' v='y'/>"
        "<row id='3'/></rows></export>")
    df = load_folder(tmp_path, {"tables": {"t": {"file": "t.xml", "pkey": "id"}}})["t"].df
    assert list(df.columns) == ["id", "v"] and len(df) == 3 and df["v"].isna().sum() == 1


def test_a_folder_of_a_dump_s_archive_says_to_extract_it(tmp_path):
    (tmp_path / "history.stackexchange.com.7z").write_bytes(b"7z\xbc\xaf\x27\x1c")
    with pytest.raises(DataError, match=r"archives: history.stackexchange.com.7z: extract"):
        draft(tmp_path)


def _rows(path, name: str, df: pd.DataFrame) -> None:
    if path.suffix == ".csv":
        df.to_csv(path, index=False, date_format="%Y-%m-%dT%H:%M:%S.%f")
        return
    rows = "\n".join("  <row " + " ".join(f"{k}={quoteattr(_text(v))}" for k, v in r.items()
                                          if not pd.isna(v)) + " />"
                     for r in df.to_dict("records"))
    path.write_text(f"<{name}>\n{rows}\n</{name}>\n")


@pytest.mark.parametrize("kind", ["xml", "csv"])
def test_a_dump_without_its_posts_implies_them_once_and_its_type_codes(tmp_path, kind):
    """A dump's votes, post links and badges without its posts (a repository holding the
    files GitHub would keep): a post named after a role (RelatedPostId) is a post, and
    a vote's type, 1 to 3 (keys of the badges too, few of them), a type of its own."""
    rng = np.random.default_rng(1)
    day = pd.Timestamp("2012-01-31")
    _rows(tmp_path / f"Users.{kind}", "users", pd.DataFrame({
        "Id": range(1, 51), "CreationDate": [day + pd.Timedelta(hours=i) for i in range(50)]}))
    _rows(tmp_path / f"Badges.{kind}", "badges", pd.DataFrame({
        "Id": range(1, 201), "UserId": rng.integers(1, 51, 200),
        "Date": [day + pd.Timedelta(days=3, hours=i) for i in range(200)]}))
    votes = pd.DataFrame({
        "Id": range(1, 301), "PostId": rng.integers(1001, 1090, 300),
        "VoteTypeId": rng.integers(1, 4, 300),
        "CreationDate": [day + pd.Timedelta(days=int(d)) for d in np.sort(
            rng.integers(0, 60, 300))]})
    _rows(tmp_path / f"Votes.{kind}", "votes", votes)
    links = pd.DataFrame({"Id": range(1, 41), "PostId": rng.integers(1001, 1090, 40),
                          "RelatedPostId": rng.integers(1001, 1030, 40), "LinkTypeId": 1,
                          "CreationDate": [day + pd.Timedelta(days=i) for i in range(40)]})
    _rows(tmp_path / f"PostLinks.{kind}", "postlinks", links)
    text = draft(tmp_path)
    schema = yaml.safe_load(text)["tables"]
    assert "via: UserId" not in text   # (badges come after their user: rows of their own)
    assert schema["Votes"]["fkeys"]["VoteTypeId"] == "VoteTypes"
    assert schema["PostLinks"]["fkeys"]["RelatedPostId"] == "Posts"
    assert schema["PostLinks"]["fkeys"]["PostId"] == "Posts" and "RelatedPosts" not in schema
    db = load_folder(tmp_path, {"tables": schema})
    assert len(db["Posts"]) == len(set(links["PostId"]) | set(links["RelatedPostId"])
                                   | set(votes["PostId"]))
