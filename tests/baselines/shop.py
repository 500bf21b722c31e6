"""A tiny hand-made shop database, its labels and tasks of each node kind, for the
baseline tests."""
from __future__ import annotations

import pandas as pd
import torchmetrics
from torchmetrics import classification as tmc

from rdl.data import Database, Table
from rdl.families.node import NodeTask

W = pd.Timedelta("7D")
#: the val and test seed times of :func:`make_task`
VAL, TEST = pd.Timestamp("2020-03-02"), pd.Timestamp("2020-03-09")

METRICS = {
    "regression": lambda: {"mae": torchmetrics.MeanAbsoluteError(),
                           "rmse": torchmetrics.MeanSquaredError(squared=False)},
    "binary_classification": lambda: {"auroc": tmc.BinaryAUROC(),
                                      "accuracy": tmc.BinaryAccuracy()},
    "multiclass_classification": lambda: {"accuracy": tmc.MulticlassAccuracy(num_classes=3),
                                          "auroc": tmc.MulticlassAUROC(num_classes=3)},
}
MONITOR = {"regression": ("mae", "min"), "binary_classification": ("auroc", "max"),
           "multiclass_classification": ("accuracy", "max")}


def make_task(kind: str = "regression") -> NodeTask:
    """A task on ``shop`` whose labels the tests write by hand (its SQL is never run)."""
    monitor, mode = MONITOR[kind]
    return NodeTask(name="shop-task", sql="hm/item-sales.sql", kind=kind, entity_table="shop",
                    entity_col="shop_id", target_col="y", window="7d",
                    val_timestamp=str(VAL.date()), test_timestamp=str(TEST.date()),
                    num_classes=3 if kind == "multiclass_classification" else None,
                    metrics=METRICS[kind](), monitor=monitor, monitor_mode=mode)


def shop_db() -> Database:
    """Four shops; sales placed on the edges of the windows before ``VAL``."""
    shop = pd.DataFrame({
        "shop_id": [0, 1, 2, 3],
        "size": [10.0, None, 30.0, 40.0],
        "kind": ["mall", "street", None, "mall"],
        "open": [True, False, True, True],
        "opened": pd.to_datetime(["2019-01-01", "2019-06-01", "2020-01-01", "2020-02-01"]),
    })
    d = pd.Timedelta("1D")
    t = [VAL,                  # shop 0: exactly at the seed: only when strict=False
         VAL - W,              # shop 0: exactly at s - 1w: not in the last window
         VAL - W + d,          # shop 0: inside the last window
         VAL - W + d,          # shop 0: the same time again
         VAL - 4 * W,          # shop 0: exactly at s - 4w: not in the last 4 windows
         VAL - 12 * W - d,     # shop 0: before the last 12 windows, but in "all"
         VAL + d,              # shop 0: after the seed: never
         VAL - 2 * d,          # shop 1: a missing amount
         VAL - 30 * d,         # shop 1
         VAL - d,              # no shop (a dangling key)
         VAL + 3 * d,          # shop 2: only after the seed
         VAL - 3 * W,          # shop 0
         ]
    sale = pd.DataFrame({
        "sale_id": range(len(t)),
        "t": t,
        "shop_id": pd.array([0, 0, 0, 0, 0, 0, 0, 1, 1, None, 2, 0], dtype="Int64"),
        "amount": [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, None, 128.0, 256.0, 512.0, 1024.0],
        "online": [True, False, True, True, False, False, True, True, False, True, True, False],
        "note": ["x"] * len(t),
    })
    return Database({"shop": Table(shop, pkey="shop_id"),
                     "sale": Table(sale, pkey="sale_id", fkeys={"shop_id": "shop"}, time_col="t")})


def shop_tables() -> dict[str, pd.DataFrame]:
    """Hand-made labels: shop 0 with a long history, shop 1 with one label that is not yet
    available at ``VAL`` (its window closes after it), shop 2 with a label available
    exactly at ``VAL``, shop 3 with none."""
    train = pd.DataFrame({
        "timestamp": [VAL - k * W for k in range(6, 0, -1)] + [VAL - pd.Timedelta("3D"), VAL - W],
        "shop_id": [0, 0, 0, 0, 0, 0, 1, 2],
        "y": [1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 100.0, 7.0],
    })
    val = pd.DataFrame({"timestamp": [VAL] * 4, "shop_id": [0, 1, 2, 3],
                        "y": [20.0, 1.0, 6.0, 2.0]})
    test = pd.DataFrame({"timestamp": [TEST] * 4, "shop_id": [0, 1, 2, 3],
                         "y": [21.0, 90.0, 5.0, 3.0]})
    return {"train": train, "val": val, "test": test}
