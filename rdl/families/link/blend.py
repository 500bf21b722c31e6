"""A link model on the LightGBM ranker's candidates: the ranker's score and the model's,
blended with the weight chosen on val.

The ranker (:mod:`rdl.baselines.ranker`) retrieves about a hundred candidates per seed and
orders them from hand-made features of the past; the model scores every item from the
sampled subgraph. Each sees what the other does not: the ranker its features, the model
the graph and the true items retrieval missed (5.5 % of the teams on
lahman-player-team). So, after training, each seed's candidates and the model's own top
``k`` items are ranked by ``(1 - w) * z(ranker) + w * z(model)``, for each ``w`` of
``evaluation.ranker_blend``:

- ``z``: the scores standardised by the mean and spread of the seed's candidates, so that
  neither's scale decides;
- an item of the model's top ``k`` that retrieval did not find gets the ranker's lowest
  ``z`` among the seed's candidates: no better than the worst item it found;
- ``w = 0`` ranks the candidates by the ranker alone (exactly its baseline row); ``w = 1``
  ranks by the model alone (its own top ``k`` over every item).

The ``w`` best on val is kept, the smallest where two tie: the model's entry in the report
is that ranking. The model's own ranking of every item, as trained, is kept beside it
(``"blend": {"alone": ...}``), with every weight's val and test scores (test scores are
reported, never used to choose).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import torch

from rdl.baselines.ranker import RankerFit, fit_ranker
from rdl.baselines.ranker.features import Candidates
from rdl.baselines.link import pad_lists
from rdl.baselines.ranker.fit import score_ranking, top_k

log = logging.getLogger("rdl.train")


def per_seed_stats(f: Candidates, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each seed's mean and standard deviation of ``x`` over its candidates that have a
    finite score (a standard deviation of 0, all equal or none scored, is given as 1)."""
    ok = np.isfinite(x)
    n = np.maximum(np.bincount(f.rid, weights=ok, minlength=f.seeds), 1)
    mean = np.bincount(f.rid, weights=np.where(ok, x, 0.0), minlength=f.seeds) / n
    d = np.where(ok, x - mean[f.rid], 0.0)
    std = np.sqrt(np.bincount(f.rid, weights=d * d, minlength=f.seeds) / n)
    return mean, np.where(std > 0, std, 1.0)


def per_seed_z(f: Candidates, x: np.ndarray) -> np.ndarray:
    """``x`` standardised over each seed's candidates (0 where they are all equal). A
    candidate without a finite score (ID-GNN scores only the items in the seed's
    subgraph: ``-inf`` elsewhere) gets the seed's lowest ``z``, no better than the worst
    it scored, as an item retrieval missed gets the ranker's lowest; before, one ``-inf``
    made the seed's every ``z`` NaN and the blend an arbitrary order."""
    mean, std = per_seed_stats(f, x)
    ok = np.isfinite(x)
    z = np.where(ok, (np.where(ok, x, 0.0) - mean[f.rid]) / std[f.rid], np.inf)
    return np.where(ok, z, _lowest(f, z)[f.rid])


def _lowest(f: Candidates, z: np.ndarray) -> np.ndarray:
    """Each seed's lowest finite ``z`` over its candidates (0 where it has none)."""
    lowest = np.full(f.seeds, np.inf)
    np.minimum.at(lowest, f.rid, z)
    lowest[np.isinf(lowest)] = 0.0
    return lowest


@dataclass
class Scored:
    """The model's scores of one split's seeds: of each candidate (``candidates``, in the
    rows of the ranker's :class:`Candidates`) and of each seed's own top ``k`` items over
    every item (``rid``, ``item``, ``score``)."""

    candidates: np.ndarray
    rid: np.ndarray
    item: np.ndarray
    score: np.ndarray


Joined = tuple  # (rows: Candidates, z(ranker), z(model)) over a seed's candidates and more


def union(f: Candidates, ranker: np.ndarray, model: Scored) -> Joined:
    """``(rows, z(ranker), z(model))`` over each seed's candidates and the model's top items
    that retrieval did not find (after them, their ranker ``z`` the seed's lowest)."""
    zr = per_seed_z(f, ranker)
    mean, std = per_seed_stats(f, model.candidates)
    zm = per_seed_z(f, model.candidates)
    n_items = int(max(f.item.max(initial=0), model.item.max(initial=0))) + 1
    # (a top item the model scored -inf is one it did not score: nothing to add)
    new = ~np.isin(model.rid * n_items + model.item, f.rid * n_items + f.item) & \
        np.isfinite(model.score)
    rid, item = model.rid[new], model.item[new]
    lowest = _lowest(f, zr)
    truth = [set(t) for t in f.truth]
    label = np.array([i in truth[r] for r, i in zip(rid, item)], dtype=f.label.dtype)
    rows = Candidates(np.concatenate([f.rid, rid]), np.concatenate([f.item, item]),
                      np.concatenate([f.label, label]), f.truth, f.found)
    return (rows, np.concatenate([zr, lowest[rid]]),
            np.concatenate([zm, (model.score[new] - mean[rid]) / std[rid]]))


def blend(f: Candidates, ranker: np.ndarray, model: Scored, w: float,
          joined: Joined | None = None) -> tuple[Candidates, np.ndarray]:
    """The rows and scores of weight ``w`` (0: the ranker's candidates alone; ``joined``:
    :func:`union` of the same, computed once for several weights)."""
    if w == 0:
        return f, per_seed_z(f, ranker)
    rows, zr, zm = joined or union(f, ranker, model)
    return rows, (1 - w) * zr + w * zm


@torch.no_grad()
def model_scores(module, data, split: str, f: Candidates, rows: int) -> Scored:
    """The model's score of every candidate of ``f`` (a split's first ``rows`` seeds), and
    each seed's own top ``k`` items, by the split's evaluation loader, on the module's
    device."""
    device = module.trainer.strategy.root_device
    module.to(device).eval()
    if module.model.embeds_candidates:
        module.embed_candidates(split)
    ptr = np.searchsorted(f.rid, np.arange(f.seeds + 1))
    out = np.full(len(f.rid), np.nan)
    tops = []
    loader = {"val": data.val_dataloader, "test": data.test_dataloader}.get(
        split, data.predict_dataloader)()
    for batch in loader:
        seeds = batch[module.entity].input_id.numpy()
        if seeds.min() >= rows:   # evaluation is in table order: the rest is not scored
            break
        batch = batch.to(device)
        keep = np.flatnonzero(seeds < rows)
        start, end = ptr[seeds[keep]], ptr[seeds[keep] + 1]
        b = np.repeat(keep, end - start)
        at = np.concatenate([np.arange(s, e) for s, e in zip(start, end)]) if len(b) else b
        s = module.scores(batch)
        out[at] = s[torch.as_tensor(b, device=s.device),
                    torch.as_tensor(f.item[at], device=s.device)].float().cpu().numpy()
        top = s[torch.as_tensor(keep, device=s.device)].float().topk(
            min(module.k, s.shape[1]), dim=-1)
        tops.append((np.repeat(seeds[keep], top.indices.shape[1]),
                     top.indices.cpu().numpy().reshape(-1), top.values.cpu().numpy().reshape(-1)))
    if np.isnan(out).any():
        raise RuntimeError(f"{split}: the model scored {int(np.isnan(out).sum())} of the "
                           f"ranker's {len(out)} candidates only")
    rid, item, score = (np.concatenate(x) for x in zip(*tops)) if tops else ([], [], [])
    return Scored(out, np.asarray(rid, np.int64), np.asarray(item, np.int64),
                  np.asarray(score, np.float64))


def blended(module, data, trainer, ckpt: str | None, alone: dict, weights, rows: dict) -> dict:
    """The model's entry in the results: the blend with the weight best on val, and
    ``"blend": {"weight": w, "by_weight": {w: {"val": ..., "test": ...}}, "alone": ...}``
    (``alone``: the model's own scores, as :meth:`Family.evaluate` gives them); the weight
    is saved into ``ckpt`` (the best checkpoint) for ``rdl.predict``."""
    task = data.task
    fit = cached_fit(data, rows)
    model = {s: model_scores(module, data, s, f, len(f.truth)) for s, f in fit.splits.items()}
    joined = {s: union(f, fit.scores[s], model[s]) for s, f in fit.splits.items()}
    table, best = {}, None
    key, higher = task.monitor, task.monitor_mode != "min"
    for w in map(float, weights):
        table[w] = {s: _task_metrics(score_ranking(
                        task, *blend(f, fit.scores[s], model[s], w, joined[s])))
                    for s, f in fit.splits.items()}
        v = table[w]["val"][key]
        if best is None or (v > table[best]["val"][key] if higher else v < table[best]["val"][key]):
            best = w
    log.info("the model on the ranker's candidates: weight %g, the best on val of %s (%s: %s)",
             best, ", ".join(f"{w:g}" for w in table), key,
             ", ".join(f"{t['val'][key]:.4f}" for t in table.values()))
    module.ranker_blend = best
    if ckpt:
        trainer.save_checkpoint(ckpt, weights_only=False)
    by_weight = {f"{w:g}": t for w, t in table.items()}
    return {**table[best], "blend": {"weight": best, "by_weight": by_weight, "alone": alone}}


def _task_metrics(scores: dict) -> dict:
    """The task's metrics of a ranking (the candidates' recall is the ranker's row's)."""
    return {k: v for k, v in scores.items() if k != "candidate_recall"}


def cached_fit(data, rows: dict, splits=("val", "test")) -> RankerFit:
    """The data module's ranker, fitted once (the blend and the baseline share it)."""
    key = (tuple(sorted((rows or {}).items())), tuple(splits))
    cache = data.__dict__.setdefault("_ranker_fits", {})
    if key not in cache:
        s = data.settings
        cache[key] = fit_ranker(data.task, data.db, data.tables, s.ranker, s.strict,
                                s.random_seed, rows, s.deep_features, splits)
    return cache[key]


def blend_predictions(module, data, split: str, weight: float) -> torch.Tensor:
    """``[N, k]``: each seed of ``split`` (in its table's order) ranked as the training run
    chose on val (:func:`blend`; the ranker refitted as the run fitted it: same data,
    settings and seed)."""
    fit = cached_fit(data, {}, (split,))
    f = fit.splits[split]
    rows, score = blend(f, fit.scores[split], model_scores(module, data, split, f, f.seeds),
                        weight)
    return pad_lists(top_k(rows, score, data.task.eval_k), data.task.eval_k)[:, : data.task.eval_k]
