"""A warehouse benchmark's files as its generator writes them: TPC-H's dbgen (and
tpchgen-cli, its port on PyPI) writes each table as ``customer.tbl``, no header row,
fields delimited by ``|``, and a ``|`` ending every line; its columns are named after
their table (``c_custkey`` in customer, ``o_custkey`` in orders) where a header or a
parquet file names them. The files here are of TPC-H's shape, small: the draft reads
them, finds the keys by their values (no header) or their names (prefixed), and the
schema it writes loads."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from rdl.data import files, sources
from rdl.data.database import DataError
from rdl.data.draft import draft
from rdl.data.folder import load_folder

COLUMNS = {
    "region": ["r_regionkey", "r_name", "r_comment"],
    "nation": ["n_nationkey", "n_name", "n_regionkey", "n_comment"],
    "customer": ["c_custkey", "c_name", "c_address", "c_nationkey", "c_phone", "c_acctbal",
                 "c_mktsegment", "c_comment"],
    "supplier": ["s_suppkey", "s_name", "s_nationkey", "s_acctbal"],
    "part": ["p_partkey", "p_name", "p_size", "p_retailprice"],
    "partsupp": ["ps_partkey", "ps_suppkey", "ps_availqty", "ps_supplycost"],
    "orders": ["o_orderkey", "o_custkey", "o_orderdate", "o_totalprice", "o_shippriority"],
    "lineitem": ["l_orderkey", "l_partkey", "l_suppkey", "l_linenumber", "l_quantity",
                 "l_extendedprice", "l_shipdate", "l_commitdate", "l_receiptdate"],
}


def tpch(seed: int = 0) -> dict[str, pd.DataFrame]:
    """TPC-H's tables, small: 25 nations in 5 regions, 150 customers (a third without
    orders), 40 suppliers, 200 parts with 4 suppliers each, 600 orders over 120 days (a
    few each day), 1 to 7 lines each, shipped, committed and received days after."""
    rng = np.random.default_rng(seed)
    day = pd.Timestamp("1995-01-01")
    t = {"region": pd.DataFrame({"r_regionkey": range(5), "r_name": list("ABCDE"),
                                 "r_comment": "even, final deposits"}),
         "nation": pd.DataFrame({"n_nationkey": range(25), "n_name": [f"N{i}" for i in
                                                                       range(25)],
                                 "n_regionkey": [i % 5 for i in range(25)],
                                 "n_comment": "slyly, regular"})}
    t["customer"] = pd.DataFrame({
        "c_custkey": range(1, 151), "c_name": [f"Customer#{i:09d}" for i in range(1, 151)],
        "c_address": [f"IVhz ot,c,E{i}" for i in range(150)],   # (commas in the first row)
        "c_nationkey": rng.integers(0, 25, 150), "c_phone": [f"25-{i:03d}-741" for i in
                                                              range(150)],
        "c_acctbal": rng.uniform(-999, 9999, 150).round(2),
        "c_mktsegment": rng.choice(["BUILDING", "AUTOMOBILE", "MACHINERY"], 150),
        "c_comment": "to the even, regular platelets"})
    t["supplier"] = pd.DataFrame({"s_suppkey": range(1, 41), "s_name": [
        f"Supplier#{i:09d}" for i in range(1, 41)], "s_nationkey": rng.integers(0, 25, 40),
        "s_acctbal": rng.uniform(-999, 9999, 40).round(2)})
    t["part"] = pd.DataFrame({"p_partkey": range(1, 201), "p_name": [
        f"goldenrod {i}" for i in range(200)], "p_size": rng.integers(1, 51, 200),
        "p_retailprice": rng.uniform(900, 2000, 200).round(2)})
    t["partsupp"] = pd.DataFrame(
        [{"ps_partkey": p, "ps_suppkey": (p + 10 * j) % 40 + 1, "ps_availqty":
          int(rng.integers(1, 9999)), "ps_supplycost": round(float(rng.uniform(1, 1000)), 2)}
         for p in range(1, 201) for j in range(4)])
    buyers = [c for c in range(1, 151) if c % 3]   # (dbgen: no orders for a third)
    ordered = day + pd.to_timedelta(np.sort(rng.integers(0, 120, 600)), "D")
    t["orders"] = pd.DataFrame({"o_orderkey": range(1, 601), "o_custkey": rng.choice(
        buyers, 600), "o_orderdate": ordered, "o_totalprice": rng.uniform(
        900, 4e5, 600).round(2), "o_shippriority": 0})
    lines = []
    for o, at in zip(range(1, 601), ordered):
        for n in range(1, int(rng.integers(1, 8)) + 1):
            part = int(rng.integers(1, 201))
            ship = at + pd.Timedelta(days=int(rng.integers(1, 122)))
            lines.append({"l_orderkey": o, "l_partkey": part,
                          "l_suppkey": (part + 10 * int(rng.integers(4))) % 40 + 1,
                          "l_linenumber": n, "l_quantity": int(rng.integers(1, 51)),
                          "l_extendedprice": round(float(rng.uniform(900, 1e5)), 2),
                          "l_shipdate": ship,
                          "l_commitdate": at + pd.Timedelta(days=int(rng.integers(30, 91))),
                          "l_receiptdate": ship + pd.Timedelta(days=int(rng.integers(1, 31)))})
    t["lineitem"] = pd.DataFrame(lines)
    assert all(list(df.columns) == COLUMNS[n] for n, df in t.items())
    return t


def dbgen(folder, suffix: str = ".tbl") -> dict[str, pd.DataFrame]:
    """The tables as dbgen writes them: no header, ``|`` after every field."""
    tables = tpch()
    for name, df in tables.items():
        text = "".join("|".join(("" if pd.isna(v) else v.strftime("%Y-%m-%d")
                                  if isinstance(v, pd.Timestamp) else str(v)) for v in row)
                       + "|\n" for row in df.itertuples(index=False))
        (folder / f"{name}{suffix}").write_text(text)
    return tables


@pytest.mark.parametrize("suffix", [".tbl", ".dat"])
def test_dbgen_s_files_are_drafted_with_their_keys_found_by_their_values(tmp_path, suffix):
    tables = dbgen(tmp_path, suffix)
    (tmp_path / "README.dat").write_bytes(b"\x00\x01binary\x00")   # (a .dat of no text)
    text = draft(tmp_path)
    schema = yaml.safe_load(text)["tables"]
    assert set(schema) == set(tables)
    for name, df in tables.items():   # (the empty field after the last | is no column)
        assert schema[name]["columns"] == [f"column_{i}" for i in range(1, df.shape[1] + 1)]
    fkeys = {n: s.get("fkeys", {}) for n, s in schema.items()}
    assert fkeys["orders"] == {"column_2": "customer"}
    assert fkeys["customer"] == {"column_4": "nation"}
    assert fkeys["nation"] == {"column_3": "region"}
    assert fkeys["supplier"] == {"column_3": "nation"}
    # l_orderkey, l_partkey, l_suppkey; not l_linenumber (1-7, ids of nations too) nor
    # l_quantity: small numbers hold few of a table's keys
    assert fkeys["lineitem"] == {"column_1": "orders", "column_2": "part",
                                 "column_3": "supplier"}
    assert "keys of each of" not in text   # (no note asks which of several tables)
    assert schema["orders"]["pkey"] == "column_1" and schema["orders"]["time"] == "column_3"
    db = load_folder(tmp_path, {"tables": schema})
    assert len(db["lineitem"]) == len(tables["lineitem"])
    assert db["customer"].df["column_3"].iloc[0] == "IVhz ot,c,E0"   # (split by |, not ,)
    assert list(db["lineitem"].df.columns) == schema["lineitem"]["columns"]   # (9, not 10)


def test_a_first_row_with_commas_is_split_by_the_delimiter_every_line_shares(tmp_path):
    path = tmp_path / "customer.txt"
    path.write_text("1|IVhz ot,c,E|15|\n2|XSTf4 NCw|13|\n3|MG9k, dTD2|1|\n")
    h = files.header(path, "customer")
    assert h.delimiter == "|" and h.written == ["1", "IVhz ot,c,E", "15", ""]
    plain = tmp_path / "plain.csv"   # (a | in a name, commas steady: still a CSV)
    plain.write_text("id,a|b,note\n1,x,y\n2,\"p, q\",z\n")
    assert files.header(plain, "plain").delimiter == ","


def test_named_columns_are_keys_of_the_table_their_names_after_its_prefix_say(tmp_path):
    for name, df in tpch().items():
        df.to_parquet(tmp_path / f"{name}.parquet", index=False)
    text = draft(tmp_path)
    schema = yaml.safe_load(text)["tables"]
    fkeys = {n: s.get("fkeys", {}) for n, s in schema.items()}
    assert fkeys["orders"] == {"o_custkey": "customer"}
    # a line's dates all come after its order's: its order's time is told, not taken (no
    # value tells a line, known when ordered, from an episode, known when aired)
    assert "    # time: {via: l_orderkey}? its times all come at or after its orders" in text
    assert fkeys["customer"] == {"c_nationkey": "nation"}
    assert fkeys["supplier"] == {"s_nationkey": "nation"}
    assert schema["partsupp"]["pkey"] == ["ps_partkey", "ps_suppkey"]
    assert fkeys["lineitem"] == {"l_orderkey": "orders", "l_partkey": "part",
                                 "l_suppkey": "supplier", "l_partkey, l_suppkey": "partsupp"}
    db = load_folder(tmp_path, {"tables": schema})   # each line reaches its part's supplier
    lines, ps = db["lineitem"].df, db["partsupp"].df
    at = lines["l_partkey, l_suppkey"].to_numpy()
    assert (ps[["ps_partkey", "ps_suppkey"]].to_numpy()[at]
            == lines[["l_partkey", "l_suppkey"]].to_numpy()).all()


def test_dates_of_days_each_some_row_s_are_no_next_versions(tmp_path):
    """Lines ship days after their order, and every day some line is committed: a ship
    date among the rows' days says nothing of versions."""
    lineitem = tpch()["lineitem"]
    lineitem.to_csv(tmp_path / "lineitem.csv", index=False)
    text = draft(tmp_path)
    said = [line for line in text.splitlines() if "l_receiptdate:" in line]
    assert said and "a later event" in said[0] and "version" not in said[0]


def test_dat_files_of_text_only_are_tables(tmp_path):
    (tmp_path / "a.dat").write_text("x|y|\n1|2|\n")
    (tmp_path / "b.dat").write_bytes(b"\x00\x00\x00binary")
    assert sources.is_csv(tmp_path / "a.dat") and not sources.is_csv(tmp_path / "b.dat")


def test_lines_taking_their_order_s_time_name_it_where_their_file_has_that_name(tmp_path):
    """Headerless, the lines' third field (a supplier) is named as the orders' time
    (``column_3``, the order date): the load stops before reading it as times, saying to
    name the time the lines take; so named, they load, each at its order's date."""
    tables = dbgen(tmp_path)
    schema = yaml.safe_load(draft(tmp_path))["tables"]
    lines = schema["lineitem"]
    lines["time"] = {"via": "column_1"}
    lines["stypes"] = {c: "drop" for c in ("column_7", "column_8", "column_9")}
    with pytest.raises(DataError, match="has a column 'column_3', the name of the time it "
                                        r"takes: name that time \(time: \{via: column_1, "
                                        "column: <a new name>"):
        load_folder(tmp_path, {"tables": schema})
    lines["time"]["column"] = "ordered"
    db = load_folder(tmp_path, {"tables": schema})
    placed = tables["orders"].set_index("o_orderkey")["o_orderdate"]
    want = tables["lineitem"]["l_orderkey"].map(placed).to_numpy()
    assert (db["lineitem"].df["ordered"].to_numpy() == want).all()


def dss(folder) -> None:
    """dbgen's dss.ddl (its tables' columns, upper case, in order) and dss.ri (their keys,
    in DB2's words: CONNECT TO, a foreign key's name after FOREIGN KEY, no columns after
    the table it references, COMMIT WORK)."""
    ddl = "".join(f"CREATE TABLE {name.upper()} ( " + ",\n    ".join(
        f"{c.upper()} INTEGER NOT NULL" for c in cols) + ");\n\n" for name, cols in COLUMNS.items())
    (folder / "dss.ddl").write_text("-- Sccsid:     @(#)dss.ddl\t2.1.8.1\n" + ddl)
    keys = {"region": ["r_regionkey"], "nation": ["n_nationkey"], "customer": ["c_custkey"],
            "orders": ["o_orderkey"], "partsupp": ["ps_partkey", "ps_suppkey"],
            "lineitem": ["l_orderkey", "l_linenumber"]}
    ri = "CONNECT TO TPCD;\n\n--ALTER TABLE TPCD.REGION DROP PRIMARY KEY;\n"
    ri += "".join(f"ALTER TABLE TPCD.{t.upper()}\nADD PRIMARY KEY ({','.join(k).upper()});\n\n"
                  for t, k in keys.items())
    ri += ("ALTER TABLE TPCD.NATION\nADD FOREIGN KEY NATION_FK1 (N_REGIONKEY) references "
           "TPCD.REGION;\n\nCOMMIT WORK;\n\nALTER TABLE TPCD.ORDERS\nADD FOREIGN KEY ORDERS_FK1 "
           "(O_CUSTKEY) references TPCD.CUSTOMER;\n\nCOMMIT WORK;\n")
    (folder / "dss.ri").write_text(ri)


def test_the_ddl_beside_the_files_names_their_columns_and_keys(tmp_path):
    """dbgen's files with its dss.ddl and dss.ri beside them: each headerless file's
    columns as the DDL names them, in its order, and the keys it declares (the parquet
    files' lower-case names the DDL's, case aside)."""
    tables = dbgen(tmp_path)
    dss(tmp_path)
    text = draft(tmp_path)
    schema = yaml.safe_load(text)["tables"]
    assert set(schema) == set(tables)   # (no table of the DDL's files)
    for name in tables:
        assert schema[name]["columns"] == [c.upper() for c in COLUMNS[name]]
    assert schema["lineitem"]["pkey"] == ["L_ORDERKEY", "L_LINENUMBER"]
    assert schema["nation"]["fkeys"]["N_REGIONKEY"] == "region"
    assert "N_REGIONKEY: region   # the database declares it" in text
    assert "O_CUSTKEY: customer   # the database declares it" in text
    db = load_folder(tmp_path, {"tables": schema})
    assert len(db["lineitem"]) == len(tables["lineitem"])
    for name, df in tables.items():   # (as parquet, named in lower case)
        df.to_parquet(tmp_path / f"{name}.parquet")
        (tmp_path / f"{name}.tbl").unlink()
    schema = yaml.safe_load(draft(tmp_path))["tables"]
    assert schema["lineitem"]["pkey"] == ["l_orderkey", "l_linenumber"]
    assert schema["partsupp"]["pkey"] == ["ps_partkey", "ps_suppkey"]
    assert "columns" not in schema["orders"]
