"""Link-prediction baselines from the task's own labels of earlier windows.

- **popularity (last window)**: the rows linked most often in the last window that closed
  before the seed time;
- **past links**: each entity's own earlier targets, most frequent first, then most recent.
"""
from __future__ import annotations

import pandas as pd
import torch

from rdl.baselines.scoring import score_tensors
from rdl.tasks import Task


def pad_lists(lists, k: int) -> torch.Tensor:
    width = max([k, *map(len, lists)])
    return torch.tensor([list(x) + [-1] * (width - len(x)) for x in lists], dtype=torch.long)


@torch.no_grad()
def link_baselines(task: Task, tables: dict[str, pd.DataFrame], rows: dict | None = None) -> dict:
    """``{baseline: {split: {metric: value}}}`` for popularity and past links (``rows``:
    split -> score the first ``n`` rows only)."""
    src, dst, k = task.entity_col, task.target_col, task.eval_k
    links = pd.concat([tables["train"], tables["val"]])[["timestamp", src, dst]].explode(dst)
    out = {"popularity (last window)": {}, "past links": {}}
    for split in ("val", "test"):
        df = tables[split].iloc[: (rows or {}).get(split)]
        t = df["timestamp"].iloc[0]
        # A label at time s covers (s, s + window]: it is history at t if s + window <= t.
        seen = links[task.closes(links["timestamp"]) <= t]
        last = seen[seen["timestamp"] == seen["timestamp"].max()]
        popular = last[dst].value_counts().index[:k].tolist()
        past = (seen.groupby([src, dst]).agg(n=("timestamp", "size"), last=("timestamp", "max"))
                .reset_index().sort_values([src, "n", "last"], ascending=[True, False, False]))
        past = past.groupby(src)[dst].agg(lambda s: s.iloc[:k].tolist())
        truth = pad_lists(df[dst].map(list).tolist(), 1)
        preds = {
            "popularity (last window)": pad_lists([popular] * len(df), k),
            "past links": pad_lists([past.get(c, []) for c in df[src]], k),
        }
        for name, pred in preds.items():
            out[name][split] = score_tensors(task, pred[:, :k], truth)
    return out
