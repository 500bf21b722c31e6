"""The LightGBM ranker scores a split ``chunk_seeds`` seeds at a time (its memory bounded by
its settings, not the data): the same candidates, features, scores and metrics as all at
once, no seed dropped or given twice at a chunk's edge."""
from collections import Counter
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from rdl.baselines.ranker import RankerSettings, fit_ranker
from rdl.baselines.ranker.features import Featuriser
from tests.baselines.test_ranker import T, purchase_task, shop


def seeds_at_two_times() -> pd.DataFrame:
    """Seven seeds at two seed times, the times interleaved (as a split table may be); two
    want an article that nothing retrieves (0 and 4: never sold)."""
    return pd.DataFrame({"timestamp": [T("2020-08-31"), T("2020-08-27")] * 3 + [T("2020-08-31")],
                         "customer_id": [0, 1, 2, 3, 0, 2, 1],
                         "article_id": [[3], [1], [5], [0], [2], [3], [4]]})


@pytest.mark.parametrize("chunk", [1, 2, 3, 100])
def test_chunks_give_every_seed_once_and_the_rows_of_all_at_once(chunk):
    db, df = shop(), seeds_at_two_times()
    tables = {"train": df, "val": df, "test": df}
    f = Featuriser(purchase_task(), db, tables, RankerSettings(chunk_seeds=chunk), False)
    try:
        whole = f.split(df)
        parts = list(f.chunks(df))
        light = f.candidates(df)
        hits = f.split(df, hits_only=True)
    finally:
        f.close()
    assert whole.seeds == 7 and len(whole.rid) > 7 and set(whole.rid) == set(range(7))
    # a chunk: at most chunk_seeds seeds, all of one seed time, each seed whole
    times = df["timestamp"].to_numpy()
    seeds_in = [np.unique(p.rid) for p in parts]
    for p, seeds in zip(parts, seeds_in):
        assert 0 < len(seeds) <= chunk and len(set(times[seeds])) == 1
        assert (np.bincount(p.rid, minlength=7) == np.bincount(whole.rid, minlength=7))[seeds].all()
    # every seed in exactly one chunk: none dropped, none twice
    assert Counter(np.concatenate(seeds_in).tolist()) == Counter(range(7))
    assert len(parts) == sum(-(-int((times == t).sum()) // chunk) for t in set(times))
    # the chunks' rows, put in order, are the rows of all at once, feature for feature
    rid = np.concatenate([p.rid for p in parts])
    item = np.concatenate([p.item for p in parts])
    order = np.lexsort((item, rid))
    X = pd.concat([p.X for p in parts], ignore_index=True).iloc[order].reset_index(drop=True)
    pd.testing.assert_frame_equal(X, whole.X)
    assert (rid[order] == whole.rid).all() and (item[order] == whole.item).all()
    label = np.concatenate([p.label for p in parts])[order]
    assert (label == whole.label).all() and label.sum() > 0
    assert (sum(p.found for p in parts) == whole.found).all()
    # retrieval alone (what the seeds LightGBM learns from are chosen by) finds the same
    assert (light.rid == whole.rid).all() and (light.item == whole.item).all()
    assert (light.label == whole.label).all() and (light.found == whole.found).all()
    # the seeds LambdaRank learns from alone: the same rows, less those of seeds without hit
    assert np.flatnonzero(whole.found == 0).tolist() == [3, 6]   # articles 0 and 4: unsold
    keep = whole.found[whole.rid] > 0
    assert (hits.rid == whole.rid[keep]).all() and (hits.item == whole.item[keep]).all()
    assert (hits.label == whole.label[keep]).all() and (hits.found == whole.found).all()
    pd.testing.assert_frame_equal(hits.X, whole.X[keep].reset_index(drop=True))


def fitted(inputs, **settings):
    cfg, task, view, tables, ranker, deep = inputs
    return fit_ranker(task, view, tables, replace(ranker, rounds=30, **settings),
                      cfg.data.strict, cfg.seed, deep=deep)


# the forum's case is slow-marked (CI's 15 minutes): the same chunking, another database
@pytest.mark.parametrize("task", ["user-item-purchase", pytest.param(
    "experiment=forum-user-vote", marks=pytest.mark.slow)])
def test_scoring_in_chunks_changes_nothing(task, rdl_cache):
    """The tiny H&M database (depth-2 features, as runs have them) and the forum."""
    from rdl.bench.ranker import ranker_inputs
    data = ["debug=tiny"] if "forum" not in task else ["data.db.scale=0.001"]
    inputs = ranker_inputs(task, 0, [*data, f"data.cache_dir={rdl_cache}"])
    tables = inputs[3]
    # few val seeds stop the trees early (a sample of those with a true candidate)
    once = fitted(inputs, val_seeds=15)
    chunked = fitted(inputs, val_seeds=15, chunk_seeds=4)
    for split in ("val", "test"):
        a, b = once.splits[split], chunked.splits[split]
        assert a.seeds == len(tables[split]) > 2 * 4 and len(a.rid) > a.seeds  # many chunks
        for x, y in ((a.rid, b.rid), (a.item, b.item), (a.label, b.label), (a.found, b.found),
                     (once.scores[split], chunked.scores[split])):
            np.testing.assert_array_equal(x, y)   # bit for bit
        assert a.truth == b.truth
    assert once.metrics() == chunked.metrics()
    assert once.booster.model_to_string() == chunked.booster.model_to_string()
