"""A link model on the LightGBM ranker's candidates: the ranker's score and the model's,
blended with the weight chosen on val.

The ranker (:mod:`rdl.baselines.ranker`) retrieves about a hundred candidates per seed and
orders them from hand-made features of the past; the model scores every item from the
sampled subgraph. Each sees what the other does not. So, after training, each seed's
candidates are ranked by ``(1 - w) * z(ranker) + w * z(model)`` (``z``: the scores
standardised over the seed's candidates, so that neither's scale decides), for each
``w`` of ``evaluation.ranker_blend`` (0: the ranker alone; 1: the model alone on the
ranker's candidates); its entry ``alone`` is the model's own ranking of every item, as
trained, which finds the true items retrieval missed (on lahman-player-team it was ahead
of every blend on val and test in all five weeks: docs/results.md). The option best on
val is kept, the first listed where two tie: the model's entry in the report is that
ranking. The model's own ranking is kept beside it (``"blend": {"alone": ...}``), with
every option's val and test scores (test scores are reported, never used to choose).
"""
from __future__ import annotations

import logging

import numpy as np
import torch

from rdl.baselines.ranker import RankerFit, fit_ranker
from rdl.baselines.ranker.features import Candidates
from rdl.baselines.link import pad_lists
from rdl.baselines.ranker.fit import score_ranking, top_k

log = logging.getLogger("rdl.train")


def per_seed_z(f: Candidates, x: np.ndarray) -> np.ndarray:
    """``x`` standardised over each seed's candidates (0 where they are all equal)."""
    n = np.bincount(f.rid, minlength=f.seeds).astype(np.float64)
    mean = np.bincount(f.rid, weights=x, minlength=f.seeds) / np.maximum(n, 1)
    d = x - mean[f.rid]
    std = np.sqrt(np.bincount(f.rid, weights=d * d, minlength=f.seeds) / np.maximum(n, 1))
    return np.where(std[f.rid] > 0, d / np.where(std[f.rid] > 0, std[f.rid], 1.0), 0.0)


@torch.no_grad()
def model_scores(module, data, split: str, f: Candidates, rows: int) -> np.ndarray:
    """The model's score of every candidate of ``f`` (a split's first ``rows`` seeds), by
    the split's evaluation loader, on the module's device."""
    device = module.trainer.strategy.root_device
    module.to(device).eval()
    if module.model.embeds_candidates:
        module.embed_candidates(split)
    ptr = np.searchsorted(f.rid, np.arange(f.seeds + 1))
    out = np.full(len(f.rid), np.nan)
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
    if np.isnan(out).any():
        raise RuntimeError(f"{split}: the model scored {int(np.isnan(out).sum())} of the "
                           f"ranker's {len(out)} candidates only")
    return out


def blended(module, data, trainer, ckpt: str | None, alone: dict, weights, rows: dict) -> dict:
    """The model's entry in the results: the option of ``weights`` (blend weights, and
    ``"alone"``) best on val, and ``"blend": {"weight": w, "by_weight": {w: {"val": ...,
    "test": ...}}, "alone": ...}`` (``alone``: the model's own scores, as
    :meth:`Family.evaluate` gives them); the choice is saved into ``ckpt`` (the best
    checkpoint) for ``rdl.predict`` (the weight; None: the model alone)."""
    task = data.task
    fit = cached_fit(data, rows)
    options = [ALONE if w == ALONE else float(w) for w in weights]
    ranker = {s: per_seed_z(f, fit.scores[s]) for s, f in fit.splits.items()}
    if any(w != ALONE for w in options):
        model = {s: per_seed_z(f, model_scores(module, data, s, f, len(f.truth)))
                 for s, f in fit.splits.items()}
    table, best = {}, None
    key, higher = task.monitor, task.monitor_mode != "min"
    for w in options:
        if w == ALONE:
            table[w] = {s: _task_metrics(alone[s]) for s in fit.splits}
        else:
            table[w] = {s: _task_metrics(score_ranking(task, f, (1 - w) * ranker[s] + w * model[s]))
                        for s, f in fit.splits.items()}
        v = table[w]["val"][key]
        if best is None or (v > table[best]["val"][key] if higher else v < table[best]["val"][key]):
            best = w
    log.info("the model on the ranker's candidates: %s, the best on val of %s (%s: %s)",
             "the model alone over every item" if best == ALONE else f"weight {best:g}",
             ", ".join(map(_name, table)), key,
             ", ".join(f"{t['val'][key]:.4f}" for t in table.values()))
    module.ranker_blend = None if best == ALONE else best
    if ckpt:
        trainer.save_checkpoint(ckpt, weights_only=False)
    by_weight = {_name(w): t for w, t in table.items()}
    return {**table[best], "blend": {"weight": best, "by_weight": by_weight, "alone": alone}}


#: the option of ``evaluation.ranker_blend`` that ranks every item by the model alone
ALONE = "alone"


def _name(w) -> str:
    return w if w == ALONE else f"{w:g}"


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
    chose on val: its ranker candidates by ``(1 - weight) * ranker + weight * model``
    (the ranker refitted as the run fitted it: same data, settings and seed)."""
    fit = cached_fit(data, {}, (split,))
    f = fit.splits[split]
    score = ((1 - weight) * per_seed_z(f, fit.scores[split])
             + weight * per_seed_z(f, model_scores(module, data, split, f, f.seeds)))
    return pad_lists(top_k(f, score, data.task.eval_k), data.task.eval_k)[:, : data.task.eval_k]
