"""Regression: a robust numerical encoder, the L1 loss in asinh space, predictions mapped
back and clamped to the train range, and the change from the last visible label."""
import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch_frame
from torch_frame.data.stats import StatType

from rdl.nn.encoder import RobustLinearEncoder
from rdl.families.node import NodeTask
from rdl.families.node.kinds import Regression
from rdl.families.node.module import NodeTaskModule, output

from tests.training.test_label_history import datamodule, make_task


def test_robust_encoder_spreads_a_heavy_tail():
    stats = [{StatType.MEAN: 0.07, StatType.STD: 0.33,
              StatType.QUANTILES: [0.0, 0.0, 0.0, 0.0139, 13.0]},   # sales: IQR 0.0139
             {StatType.MEAN: 1.0, StatType.STD: 2.0,
              StatType.QUANTILES: [0.0, 1.0, 1.0, 1.0, 3.0]}]      # IQR 0: falls back to std
    enc = RobustLinearEncoder(4, stats, torch_frame.numerical)
    torch.nn.init.ones_(enc.weight)
    torch.nn.init.zeros_(enc.bias)
    x = torch.tensor([[0.0, 1.0], [0.0139, 3.0], [0.1, 5.0], [13.0, -1.0]])
    got = enc(x)[:, :, 0]
    s = 0.0139 / 1.349
    assert got[:, 0].tolist() == pytest.approx([math.asinh(v / s) for v in (0, 0.0139, 0.1, 13)],
                                               rel=1e-5)
    assert got[:, 1].tolist() == pytest.approx([math.asinh((v - 1) / (2 + 1e-6))
                                                for v in (1, 3, 5, -1)], rel=1e-5)
    # the bulk is spread (standardising by the std would put 0 and 0.0139 0.04 apart)
    assert got[1, 0] - got[0, 0] > 1


def module(stats) -> NodeTaskModule:
    task = NodeTask(name="item-sales", sql="hm/item-sales.sql", kind="regression",
                    entity_table="article", entity_col="article_id", target_col="sales",
                    val_timestamp="2020-09-07", test_timestamp="2020-09-14")
    model = torch.nn.Linear(1, 1)
    model.time_types = []
    return NodeTaskModule(model, task, optimizer=torch.optim.Adam, compile=False,
                          target_stats=stats)


def test_stats_and_loss_in_asinh_space():
    y = torch.tensor([0.0, 0.0, 0.0, 0.5, 2.0])
    center, scale, low, high = Regression("t").target_stats(y)
    assert (center, low, high) == (0.0, 0.0, 2.0)
    assert scale == pytest.approx(0.5)  # mean |y - median|
    m = module((center, scale, low, high))
    pred = torch.tensor([0.0, 1.0])
    target = torch.tensor([0.5, 0.0])
    assert m.loss(pred, target).item() == pytest.approx((math.asinh(1.0) + 1.0) / 2)
    # back to the target's units, clamped to the train range
    got = m.predict_value(torch.tensor([0.0, math.asinh(1.0), 50.0, -50.0]))
    assert got.tolist() == pytest.approx([0.0, 0.5, 2.0, 0.0])
    assert Regression("t").target_stats(torch.zeros(4))[1] == 1.0  # no spread: unit scale


def test_output_is_the_change_from_the_last_label():
    stats = (0.0, 0.5, 0.0, 10.0)
    m = module(stats)
    zero = torch.zeros(3, 1)   # the model's output [B, 1]

    def from_base(out, base):
        return output(m.kind, out, base, m.target_stats)

    # no change predicted: exactly the last label; no last label (NaN): the median
    got = m.predict_value(from_base(zero, torch.tensor([0.25, 4.0, float("nan")])))
    assert got.tolist() == pytest.approx([0.25, 4.0, 0.0])
    assert m.predict_value(from_base(zero, None)).tolist() == pytest.approx([0.0] * 3)
    up = m.predict_value(from_base(torch.full((1, 1), 0.1), torch.tensor([4.0])))
    assert up.item() == pytest.approx(0.5 * math.sinh(math.asinh(8.0) + 0.1))


def test_datamodule_attaches_the_last_visible_label():
    task = make_task("item-sales")
    dm = datamodule(task)
    hist = task.history(dm.tables)
    for split in ("train", "test"):
        df = dm.tables[split]
        last = dm.base(split)
        # brute force: the label of the latest earlier seed time whose window has closed
        for i in np.random.default_rng(0).choice(len(df), min(40, len(df)), replace=False):
            row = df.iloc[i]
            seen = hist[(hist["article_id"] == row["article_id"])
                        & (hist["timestamp"] + pd.Timedelta("7D") <= row["timestamp"])]
            want = seen.sort_values("timestamp")["sales"].iloc[-1] if len(seen) else float("nan")
            assert last[i].item() == pytest.approx(want, nan_ok=True)
        b = next(iter(dm.loader(split, shuffle=False)))
        torch.testing.assert_close(b["article"].base, last[b["article"].input_id], equal_nan=True)
    assert datamodule(task, label_history=False).base("train") is None
    assert datamodule(make_task("user-churn")).base("train") is None  # regression only
