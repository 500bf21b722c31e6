"""Later events as tables of their own (rdl/data/events.py): a rental's return, declared
``events: [return_date]``, is a row at the return's time referencing its rental, which a
seed sees once the return has happened and not before."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from rdl.data.folder import load_folder
from tests.data.sakila_like import write_sakila
from tests.data.test_folder import fails
from tests.data.test_implied import regression_task
from tests.data.test_leaks import RENTALS_SQL, STATIC, schema


def test_a_later_event_is_a_table_of_its_own(tmp_path):
    folder = write_sakila(tmp_path / "sakila")
    rental = pd.read_csv(folder / "rental.csv", parse_dates=["return_date"])
    db = load_folder(folder, schema(rental={"events": ["return_date"]}, customer=STATIC))
    returns = db["rental_return_date"]
    assert (returns.time_col, returns.fkeys, returns.pkey) == (
        "return_date", {"rental_id": "rental"}, None)
    written = rental.dropna(subset=["return_date"])
    assert len(returns) == len(written) == 1471
    # each return references its own rental, at the time the file gives it
    ids = db.keys["rental"][returns.df["rental_id"].to_numpy()]
    got = pd.Series(returns.df["return_date"].to_numpy(), index=ids).sort_index()
    assert (got == written.set_index("rental_id")["return_date"].sort_index()).all()
    assert db.stypes["rental"]["return_date"] is None   # no feature of the rental's
    named = load_folder(folder, schema(rental={"events": {"return_date": "returns"}},
                                       customer=STATIC))
    assert len(named["returns"]) == 1471


@pytest.mark.parametrize("rental, message", [
    ({"events": {"return_date": "payment"}}, "would be table 'payment', a name already taken"),
    ({"events": ["rental_date"]}, "the column is a key or the table's time"),
    ({"events": ["return_date"], "stypes": {"return_date": "timestamp"}},
     "declared timestamp in stypes; an event leaves the row's features"),
    ({"events": "return_date, last_update"}, "'return_date, last_update' missing"),
    ({"events": 3}, "events 3: a list of columns"),
    ({"events": ["return_date"], "pkey": None}, "events need the table's primary key"),
])
def test_an_event_declared_wrong_stops_naming_it(tmp_path, rental, message):
    folder = write_sakila(tmp_path / "sakila")
    spec = schema(rental=rental, customer=STATIC)
    if rental.get("pkey", 1) is None:
        del spec["tables"]["payment"]["fkeys"]["rental_id"]
    fails(folder, "table 'rental'", message, schema=spec)


def test_an_event_no_row_has_stops(tmp_path):
    folder = write_sakila(tmp_path / "sakila")
    rental = pd.read_csv(folder / "rental.csv")
    rental["return_date"] = None
    rental.to_csv(folder / "rental.csv", index=False)
    fails(folder, "(table 'rental', column 'return_date'): declared an event",
          "no row has a time in it", schema=schema(rental={"events": ["return_date"]},
                                                   customer=STATIC))


def test_a_seed_sees_a_return_once_it_happened_and_not_before(tmp_path):
    """A training batch of customers (seeds) at their seed times, two hops: each rental of a
    customer brings its return into the batch exactly when the return is at or before the
    seed's time (every return is one row, within the fan-out)."""
    import rdl
    from rdl import api
    folder = write_sakila(tmp_path / "sakila")
    (folder / "schema.yaml").write_text(yaml.safe_dump(
        schema(rental={"events": ["return_date"]}, customer=STATIC)))
    conf = tmp_path / "conf" / "task"
    conf.mkdir(parents=True)
    (conf / "customer-rentals.yaml").write_text(regression_task(
        "customer-rentals", "customer", "customer_id", "rentals", "2005-08-01", "2005-08-08"))
    (conf / "customer-rentals.sql").write_text(RENTALS_SQL)
    cfg = rdl.config(f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "task=customer-rentals",
                     f"task.sql={conf / 'customer-rentals.sql'}", "data=folder",
                     f"data.db.path={folder}", "debug=tiny", "compile.enabled=false")
    _, data, _ = api.build(cfg)
    data.setup("fit")
    returned = data.db["rental"].df["return_date"].astype("int64").to_numpy() // 10 ** 9
    returned[data.db["rental"].df["return_date"].isna().to_numpy()] = np.iinfo(np.int64).max
    seen = expected = 0
    for batch, _ in zip(data.train_dataloader(), range(3)):
        seed_time = batch["customer"].seed_time
        events, rentals = batch["rental_return_date"], batch["rental"]
        assert (events.time <= seed_time[events.batch]).all()
        first_hop = int(rentals.num_sampled_nodes[1])   # the customers' own rentals
        ids = rentals.n_id[:first_hop].numpy()
        at = seed_time[rentals.batch[:first_hop]].numpy()
        expected += int((returned[ids] <= at).sum())
        seen += int(events.num_sampled_nodes[2])
        assert (returned[ids] > at).any()   # returns still to come: left out
    assert seen == expected > 0


def test_a_table_keyed_by_two_columns_has_its_events(tmp_path):
    """A stint of an employee in a department, keyed [emp_no, dept_no] (MySQL's employees
    sample), ended by to_date: the ends are a table referencing their stints."""
    pd.DataFrame({"emp_no": [1, 2, 3]}).to_csv(tmp_path / "employees.csv", index=False)
    stints = pd.DataFrame({"emp_no": [1, 2, 2, 3], "dept_no": ["d1", "d1", "d2", "d2"],
                           "from_date": ["2020-01-01", "2020-02-01", "2021-03-01", "2020-05-01"],
                           "to_date": [None, "2021-03-01", None, "2022-01-01"]})
    stints.to_csv(tmp_path / "dept_emp.csv", index=False)
    db = load_folder(tmp_path, {"tables": {
        "employees": {"pkey": "emp_no"},
        "dept_emp": {"pkey": ["emp_no", "dept_no"], "time": "from_date",
                     "fkeys": {"emp_no": "employees"}, "events": ["to_date"]}}})
    ends = db["dept_emp_to_date"]
    assert ends.fkeys == {"emp_no, dept_no": "dept_emp"} and len(ends) == 2
    stint = db["dept_emp"].df.iloc[ends.df["emp_no, dept_no"].to_numpy()]
    assert sorted(zip(stint["from_date"].dt.strftime("%Y-%m-%d"),
                      ends.df["to_date"].dt.strftime("%Y-%m-%d"))) == [
        ("2020-02-01", "2021-03-01"), ("2020-05-01", "2022-01-01")]
