"""Bad input data is never trained on: each malformed input gives one DataError that names
the file, table, column, a bad value and how many rows are wrong."""
import re

import pandas as pd
import pytest

from rdl.data import DataError, Database, Table, checks, synthetic_hm
from rdl.data.hm import hm_database
from rdl.data.kaggle import read_kaggle, write_kaggle
from rdl.families.node import NodeTask


@pytest.fixture(scope="module")
def frames():
    return synthetic_hm.generate(seed=0, scale=0.001)


@pytest.fixture
def kaggle(frames, tmp_path):
    """The frames as Kaggle files; returns the folder."""
    return write_kaggle(frames, tmp_path / "kaggle")


def edit(path, row: int, col: int, value: str) -> None:
    """Set field ``col`` of data row ``row`` (0-based, header not counted) of a CSV file."""
    lines = path.read_text().splitlines()
    fields = lines[row + 1].split(",")
    fields[col] = value
    lines[row + 1] = ",".join(fields)
    path.write_text("\n".join(lines) + "\n")


def files(folder):
    return sorted(p.name for p in folder.iterdir())


# -- keys -------------------------------------------------------------------------------------
@pytest.mark.parametrize("file,table,col", [("articles.csv", "article", "article_id"),
                                            ("customers.csv", "customer", "customer_id")])
def test_missing_primary_key_names_file_table_column_and_count(kaggle, file, table, col):
    for row in (3, 7):
        edit(kaggle / file, row, 0, "")
    before = files(kaggle)
    with pytest.raises(DataError) as e:
        read_kaggle(kaggle)
    msg = str(e.value)
    assert f"{kaggle / file}: table {table!r}, column {col!r}" in msg
    assert re.search(r"primary key missing in 2 of \d+ rows \(first: row 3\)", msg), msg
    assert files(kaggle) == before  # nothing written


def test_missing_or_repeated_key_in_frames(frames):
    f = dict(frames, articles=frames["articles"].assign(
        article_id=frames["articles"]["article_id"].astype("float64").where(lambda s: s.index != 2)))
    with pytest.raises(DataError, match=r"table 'article', column 'article_id': primary key "
                                        r"missing in 1 of \d+ rows \(first: row 2\)"):
        hm_database(**f)
    cust = frames["customers"]
    f = dict(frames, customers=pd.concat([cust, cust.iloc[:3]], ignore_index=True))
    with pytest.raises(DataError, match="column 'customer_id': primary key duplicated: 6 rows "
                                        "share 3 values, e.g. '"):
        hm_database(**f)


# -- values that do not parse -----------------------------------------------------------------
@pytest.mark.parametrize("col,index,value,what", [
    ("t_dat", 0, "2020-13-45", r"dates \(%Y-%m-%d\)"),
    ("price", 3, "cheap", "numbers"),
    ("sales_channel_id", 4, "1.5", "whole numbers"),
])
def test_unparsable_value_names_file_column_sample_and_count(kaggle, col, index, value, what):
    path = kaggle / "transactions_train.csv"
    for row in (5, 9, 11):
        edit(path, row, index, value)
    with pytest.raises(DataError) as e:
        read_kaggle(kaggle)
    msg = str(e.value)
    rows = len(pd.read_csv(path))
    assert msg == (f"{path}: table 'transactions', column {col!r}: 3 of {rows} values are "
                   f"not {what.replace(chr(92), '')}, e.g. {value!r} (row 5)")
    assert "CSV column #" not in msg


def test_unparsable_date_in_frames(frames):
    tx = frames["transactions"]
    tx = tx.assign(t_dat=tx["t_dat"].dt.strftime("%Y-%m-%d"))
    tx.loc[[4, 6], "t_dat"] = "yesterday"
    with pytest.raises(DataError, match=r"table 'transactions', column 't_dat': 2 of \d+ values are not dates "
                                        r"\(%Y-%m-%d\), e.g. 'yesterday' \(row 4\)"):
        hm_database(**dict(frames, transactions=tx))


def test_checks_parse_numbers_and_keep_missing_values():
    s = pd.Series(["1", None, "3"])
    assert checks.parse_numbers(s, "w", integer=True).tolist() == [1, pd.NA, 3]
    assert checks.parse_numbers(pd.Series(["1", "2"]), "w", integer=True).dtype == "int64"
    assert checks.parse_numbers(pd.Series(["0.5"]), "w").tolist() == [0.5]


# -- empty tables and empty splits ------------------------------------------------------------
def test_empty_and_header_only_files(kaggle):
    path = kaggle / "transactions_train.csv"
    header = path.read_text().splitlines()[0]
    path.write_text(header + "\n")
    with pytest.raises(DataError, match=r"transactions_train\.csv: no rows, only the header "
                                        r"\(table 'transactions' is empty\)"):
        read_kaggle(kaggle)
    path.write_text("")
    with pytest.raises(DataError, match=r"transactions_train\.csv: empty file \(expected a header "
                                        "line: t_dat,customer_id"):
        read_kaggle(kaggle)


def test_transactions_all_before_the_start(frames):
    tx = frames["transactions"].assign(t_dat=pd.Timestamp("2018-01-01"))
    with pytest.raises(DataError, match="table 'transactions': no rows from 2019-09-07 on .*"
                                        r"its \d+ rows span 2018-01-01 to 2018-01-01"):
        hm_database(**dict(frames, transactions=tx))
    with pytest.raises(DataError, match=r"table 'transactions': no rows \(the table is empty\)"):
        hm_database(**dict(frames, transactions=tx.iloc[:0]))


def churn(**kw) -> NodeTask:
    return NodeTask(name="user-churn", sql="hm/user-churn.sql", kind="binary_classification",
                    entity_table="customer", entity_col="customer_id", target_col="churn",
                    **{"val_timestamp": "2020-09-07", "test_timestamp": "2020-09-14", **kw})


def small_db(times) -> Database:
    zero = pd.array([0] * len(times), "Int64")
    tx = pd.DataFrame({"t_dat": pd.to_datetime(times), "customer_id": zero, "article_id": zero,
                       "price": 0.1})
    return Database({"customer": Table(pd.DataFrame({"customer_id": [0]}), pkey="customer_id"),
                     "article": Table(pd.DataFrame({"article_id": [0]}), pkey="article_id"),
                     "transactions": Table(tx, fkeys={"customer_id": "customer",
                                                      "article_id": "article"}, time_col="t_dat")})


def test_empty_table_is_named_not_nat():
    with pytest.raises(DataError, match=r"no timed rows: table\(s\) \['transactions'\] are empty"):
        churn().split_table("train", small_db([]))


@pytest.mark.parametrize("split,times", [
    ("val", ["2020-01-01", "2020-01-20"]),      # ends before val_timestamp + window
    ("train", ["2020-09-05", "2020-09-30"]),    # starts after val_timestamp - window
    ("test", ["2020-08-01", "2020-09-15"]),     # ends before test_timestamp + window
])
def test_split_left_empty_names_split_times_and_range(split, times):
    db = small_db(times)
    with pytest.raises(DataError) as e:
        churn().split_table(split, db)
    msg = str(e.value)
    assert f"task 'user-churn': the {split} split is empty" in msg
    assert "val_timestamp 2020-09-07, test_timestamp 2020-09-14, window 7d" in msg
    assert f"the data spans {pd.Timestamp(times[0])} to {pd.Timestamp(times[-1])}" in msg


def test_split_whose_sql_labels_nothing():
    # seed times exist, but nobody bought in the week before val_timestamp: no churn seed
    db = small_db(["2020-08-01", "2020-09-30"])
    with pytest.raises(DataError, match=r"the val split is empty: .*user-churn\.sql labels no "
                                        "row at its seed times"):
        churn().split_table("val", db)


# -- the task's SQL ---------------------------------------------------------------------------
def test_task_sql_error_and_wrong_columns(tmp_path):
    db = small_db(["2020-08-01", "2020-09-30"])
    sql = tmp_path / "mine.sql"
    kw = dict(name="mine", sql=str(sql), kind="regression", entity_table="customer",
              entity_col="customer_id", target_col="y",
              val_timestamp="2020-09-07", test_timestamp="2020-09-14")
    rows = "FROM timestamps WHERE $window IS NOT NULL"  # the SQL must take $window
    sql.write_text(f"SELECT nope {rows}")
    with pytest.raises(DataError, match=rf"task 'mine': {sql} failed in DuckDB: .*nope"):
        NodeTask(**kw).make_table(db, [pd.Timestamp("2020-09-01")])
    sql.write_text(f"SELECT timestamp, 0 AS customer, 1.0 AS y {rows}")
    with pytest.raises(DataError) as e:
        NodeTask(**kw).make_table(db, [pd.Timestamp("2020-09-01")])
    assert str(e.value) == (f"task 'mine': {sql} returned columns ['timestamp', 'customer', 'y'], "
                            "expected ['timestamp', 'customer_id', 'y'] (missing ['customer_id'])")
    sql.write_text(f"SELECT timestamp, 'x' AS customer_id, 1.0 AS y {rows}")
    with pytest.raises(DataError, match=rf"task 'mine': {sql} returned a column of the wrong type"):
        NodeTask(**kw).make_table(db, [pd.Timestamp("2020-09-01")])


# -- through python -m rdl.train --------------------------------------------------------------
@pytest.mark.parametrize("bad", ["missing key",
                                 pytest.param("ends before val", marks=pytest.mark.slow)])
def test_train_refuses_bad_files_before_training(frames, tmp_path, run_train, bad):
    """Exit 1 with one ``error:`` line (a missing key trained without a word before), and
    nothing in the run folder but Hydra's own config and log."""
    folder = tmp_path / "kaggle"
    if bad == "missing key":
        write_kaggle(frames, folder)
        for row in (3, 7):
            edit(folder / "customers.csv", row, 0, "")
        message = (f"error: {folder / 'customers.csv'}: table 'customer', column 'customer_id': "
                   f"primary key missing in 2 of {len(frames['customers'])} rows (first: row 3)")
    else:
        tx = frames["transactions"]
        write_kaggle(dict(frames, transactions=tx[tx["t_dat"] < "2020-08-01"]), folder)
        message = ("error: task 'user-churn': the val split is empty: val labels need rows up to "
                   "2020-09-14 00:00:00 (val_timestamp 2020-09-07, test_timestamp 2020-09-14, "
                   "window 7d; the data spans 2019-09-07 00:00:00 to 2020-07-31 00:00:00)")
    run = tmp_path / "run"
    out = run_train(run, "data.db.source=kaggle", f"+data.db.path={folder}")
    assert out.returncode == 1, out.stderr[-2000:]
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(message), out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    assert {p.name for p in run.iterdir()} <= {".hydra", "train.log"}


def test_task_tables_must_be_keyed_tables_of_the_database(frames):
    """A task naming a table the database lacks, or a table without a primary key, fails
    when its data is prepared, before any label or graph (it was a KeyError after them)."""
    from rdl.families.link import LinkTask
    from rdl.preparation import task_database
    from rdl.training.data_settings import DataSettings

    db, settings = hm_database(**frames), DataSettings.of()
    kw = dict(name="t", sql="hm/user-churn.sql", kind="binary_classification",
              entity_col="customer_id", target_col="churn",
              val_timestamp="2020-09-07", test_timestamp="2020-09-14")
    with pytest.raises(DataError, match="task 't': entity_table 'customers' is not a table of "
                                        r"the database; its tables: \['article', 'customer', "
                                        "'transactions'"):
        task_database(NodeTask(entity_table="customers", **kw), db, settings)
    with pytest.raises(DataError, match="entity_table 'transactions' has no primary key"):
        task_database(NodeTask(entity_table="transactions", **kw), db, settings)
    link = dict(kw, kind="link_prediction", target_col="article_id", entity_table="customer")
    with pytest.raises(DataError, match="target_table 'articles' is not a table"):
        task_database(LinkTask(target_table="articles", **link), db, settings)
    task_database(LinkTask(target_table="article", **link), db, settings)  # as configured
