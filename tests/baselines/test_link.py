"""Link baselines on a hand-made table, computed by hand."""
import pandas as pd
import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from rdl import CONF_DIR
from rdl.baselines import link_baselines


def test_popularity_and_past_links():
    task = instantiate(OmegaConf.load(CONF_DIR / "task/user-item-purchase.yaml"),
                       _convert_="all")
    ts = lambda s: pd.Timestamp(s)  # noqa: E731
    train = pd.DataFrame({
        "timestamp": [ts("2020-08-24"), ts("2020-08-31"), ts("2020-08-31"), ts("2020-08-31")],
        "customer_id": [0, 0, 1, 2],
        "article_id": [[5, 6], [6], [6, 7], [9]],
    })
    val = pd.DataFrame({"timestamp": [ts("2020-09-07")] * 2, "customer_id": [0, 1],
                        "article_id": [[6], [5]]})
    test = pd.DataFrame({"timestamp": [ts("2020-09-14")], "customer_id": [3], "article_id": [[7]]})
    out = link_baselines(task, {"train": train, "val": val, "test": test})
    # last window before val (labels at 08-31): 6 (2 customers), then 7 and 9 (1 each)
    # customer 0 rank for popularity: 6 first -> AP 1; customer 1 wants 5: not popular -> 0
    assert out["popularity (last window)"]["val"]["map"] == pytest.approx(0.5)
    # past links: customer 0 bought 6 twice, 5 once -> [6, 5]: AP 1; customer 1 had [6, 7]: 0
    assert out["past links"]["val"]["map"] == pytest.approx(0.5)
    # before test the last window is val's (09-07): 6 and 5 once each; customer 3 wants 7
    assert out["popularity (last window)"]["test"]["map"] == 0
    assert out["past links"]["test"]["map"] == 0  # customer 3 has no history
