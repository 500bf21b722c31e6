"""Last label and label mean (last k), against a plain pandas reading of the rule: a seed
at ``s`` sees the entity's labels whose window has closed by ``s``."""
import numpy as np
import pandas as pd
import pytest

from rdl.baselines.constant import constant_baselines
from rdl.baselines.history import KS, history_baselines
from rdl.features.labels import visible_labels
from .shop import W, make_task, shop_tables


def visible(tables, entity, s) -> pd.Series:
    """The entity's labels with timestamp + window <= s, oldest first (by hand)."""
    h = pd.concat([tables["train"], tables["val"]])
    h = h[(h["shop_id"] == entity) & (h["timestamp"] + W <= s)]
    return h.sort_values("timestamp")["y"]


def by_hand(tables, split, stat):
    prior = tables["train"]["y"].mean()
    out = []
    for e, s in zip(tables[split]["shop_id"], tables[split]["timestamp"]):
        y = visible(tables, e, s)
        out.append(prior if len(y) == 0 else stat(y))
    return np.array(out)


def mae(pred, df):
    return float(np.abs(pred - df["y"].to_numpy()).mean())


def test_visible_labels_window_edges():
    task, tables = make_task(), shop_tables()
    st = visible_labels(task, tables["val"], task.history(tables), ks=(2, 4))
    # shop 0: its six weekly labels, the last closing exactly at VAL (available == s counts)
    assert st["count"].tolist() == [6, 0, 1, 0]
    assert st["last"][:, 0].tolist()[0] == 13.0
    assert st["mean_2"][0, 0] == pytest.approx((8 + 13) / 2)
    assert st["mean_4"][0, 0] == pytest.approx((3 + 5 + 8 + 13) / 4)
    assert st["mean_all"][0, 0] == pytest.approx(32 / 6)
    # shop 1: its label's window closes at VAL + 4d > VAL: not visible
    assert np.isnan(st["last"][1, 0]) and np.isnan(st["since"][1])
    # shop 2: available exactly at VAL
    assert st["last"][2, 0] == 7.0 and st["since"][2] == 0.0
    # at TEST the val labels' windows close exactly (val + 7d == TEST), as does shop 1's
    # train label, before them
    st = visible_labels(task, tables["test"], task.history(tables), ks=(2,))
    assert st["count"].tolist() == [7, 2, 2, 1]
    assert st["last"][:, 0].tolist() == [20.0, 1.0, 6.0, 2.0]
    assert st["mean_2"][1, 0] == pytest.approx((100 + 1) / 2)
    assert st["since"].tolist() == [0.0, 0.0, 0.0, 0.0]


def test_last_label_and_label_mean_match_pandas():
    task, tables = make_task(), shop_tables()
    out = history_baselines(task, tables)
    for split in ("val", "test"):
        expected = mae(by_hand(tables, split, lambda y: y.iloc[-1]), tables[split])
        assert out["last label"][split]["mae"] == pytest.approx(expected, rel=1e-6)
    val = {k: mae(by_hand(tables, "val", lambda y, k=k: y.tail(k).mean()), tables["val"])
           for k in KS}
    best = min(KS, key=lambda k: (val[k], k))  # the first of equals
    name = f"label mean (last {best})"
    assert [n for n in out if n.startswith("label mean")] == [name]
    assert out[name]["val"]["mae"] == pytest.approx(val[best], rel=1e-6)
    test = mae(by_hand(tables, "test", lambda y: y.tail(best).mean()), tables["test"])
    assert out[name]["test"]["mae"] == pytest.approx(test, rel=1e-6)


def test_binary_and_multiclass_fall_back_to_the_train_prior():
    tables = shop_tables()
    for df in tables.values():
        df["y"] = (df["y"] > 7).astype(int)
    task = make_task("binary_classification")
    out = history_baselines(task, tables)
    assert set(out["last label"]["val"]) == {"auroc", "accuracy"}
    # val labels 1, 0, 0, 0; predicted: shop 0 its last (1), shop 1 the train rate (3/8),
    # shop 2 its last (0), shop 3 the train rate
    assert tables["train"]["y"].mean() == 3 / 8
    assert out["last label"]["val"]["accuracy"] == 1.0
    assert constant_baselines(task, tables)["constant (train rate)"]["val"]["auroc"] == 0.5

    tables = shop_tables()
    for df in tables.values():
        df["y"] = np.digitize(df["y"], [4, 10])  # classes 0, 1, 2
    task = make_task("multiclass_classification")
    out = history_baselines(task, tables)
    assert set(out["last label"]["test"]) == {"accuracy", "auroc"}
    st = visible_labels(task, tables["val"], task.history(tables), ks=(4,))
    # one-hot last label; class frequencies among the last 4 (3, 5, 8, 13 -> 0, 1, 1, 2)
    assert st["last"][0].tolist() == [0, 0, 1]
    assert st["mean_4"][0].tolist() == pytest.approx([0.25, 0.5, 0.25])
