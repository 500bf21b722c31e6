"""LightGBM on the leak-free feature table of :mod:`rdl.features.table`.

Gradient-boosted trees fitted on the train split (at most :data:`MAX_TRAIN_ROWS` rows, a
seeded sample of them if there are more), early-stopped on the val split, and scored on
val and test with the task's own metrics. The objective follows the task: ``binary``,
``multiclass``, or for regression ``l1`` when the task monitors MAE (``l2`` otherwise).
Regression boosts from the entity's last visible label (the *last label* baseline) rather
than from a constant: the trees learn the change from last time, which a heavy-tailed
target (sales) needs, and where ``l1`` boosting from a constant converges slowly; a
monthly series' from it moved by last year's change, where that is nearer the train
labels (:func:`seasonal_base`).
LightGBM's own training API is used (its scikit-learn wrappers would need scikit-learn).

Each split's features are computed on the database as the model's graph holds it (rows up
to the test time); the visibility rules of :func:`~rdl.features.table.entity_features`
keep every seed from seeing anything after its own time.
"""
from __future__ import annotations

import contextlib
import logging
import dataclasses
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rdl.cores import usable_cores
from rdl.features import names as feature_names
from rdl.features.table import entity_features
from rdl.baselines.history import (CHANGE, from_history, last_label, monitor, seasonal,
                                   statistic, statistic_values)
from rdl.baselines.scoring import score
from rdl.baselines.stopping import held_out, stopped_on_train
from rdl.features.labels import train_prior, visible_labels
from rdl.data.database import Database
from rdl.progress import bar, stage
from rdl.tasks import Task
from rdl.tasks.window import months, seasonal_lag

log = logging.getLogger(__name__)

#: the train rows a LightGBM is fitted on, a seeded sample where there are more: time and
#: memory bounded at any scale (``data.tree_rows``, whose default it is)
MAX_TRAIN_ROWS = 200_000
#: the baselines' names: LightGBM on depth-1 features, and on depth 1 and 2
#: (:mod:`rdl.features.deep`)
DEPTH1, DEPTH2 = "LightGBM", "LightGBM (depth 2)"
#: Early stopping watches the LightGBM metric matching the task's monitor, if there is one
#: (else the objective's own metric).
STOPPING_METRIC = {"mae": "l1", "mse": "l2", "rmse": "rmse", "auroc": "auc",
                   "average_precision": "average_precision"}
PARAMS = dict(learning_rate=0.05, num_leaves=31, min_data_in_leaf=20, bagging_fraction=0.8,
              bagging_freq=1, feature_fraction=0.8, lambda_l2=1.0, deterministic=True,
              force_row_wise=True, verbosity=-1)
ROUNDS, PATIENCE = 2000, 50


@dataclass
class TreeFit:
    """LightGBM fitted on a task's train split, early-stopped on val, and what it needs to
    predict each split: ``X`` (features), ``base`` (regression: the last label it boosts
    from, else None), ``frames`` (the split tables, train possibly a sample) and ``bounds``
    (the kind's ``label_range`` of the whole train split, which regression keeps to).
    ``names``: ``{LightGBM's name: readable name}`` of the features, in their order
    (:mod:`rdl.features.names`: LightGBM stores no category value). ``raws``: the raw
    scores of val and test where they were stored (:meth:`stored`; no ``X`` then)."""

    task: Task
    booster: object
    frames: dict
    X: dict
    base: dict
    name: str = DEPTH1
    bounds: tuple | None = None
    names: dict = field(default_factory=dict)
    raws: dict = field(default_factory=dict)

    @property
    def rounds(self) -> int:
        # best_iteration: 0 without early stopping, -1 in a booster read from its text
        best = int(self.booster.best_iteration or 0)
        return max(1, best if best > 0 else self.booster.current_iteration())

    def raw(self, split: str) -> np.ndarray:
        """Raw scores of a split: values (regression), logits (binary) or class scores
        ``(N, C)`` (multiclass, before the softmax)."""
        if split in self.raws:
            return self.raws[split]
        return raw_scores(self.booster, self.X[split], self.base[split], self.rounds)

    def stored(self) -> dict:
        """What scores the fit again without its features (plain values, for the prepared
        data's cache, :mod:`rdl.prepared_cache`): its raw scores of val and test, the
        trees as LightGBM's text, its bounds and names."""
        return {"name": self.name, "raws": {s: self.raw(s) for s in ("val", "test")},
                "booster": self.booster.model_to_string(num_iteration=self.rounds),
                "names": self.names,
                "bounds": None if self.bounds is None else [float(b) for b in self.bounds]}

    @classmethod
    def restored(cls, task: Task, stored: dict, tables: dict[str, pd.DataFrame]) -> "TreeFit":
        """A fit from :meth:`stored`: it scores ``tables``' val and test (the splits it
        was stored with) as the fit did."""
        import lightgbm

        bounds = stored["bounds"]
        return cls(task, lightgbm.Booster(model_str=stored["booster"]),
                   {s: tables[s] for s in stored["raws"]}, X={}, base={}, name=stored["name"],
                   bounds=None if bounds is None else tuple(bounds), names=stored["names"],
                   raws=stored["raws"])

    def scores(self, rows: dict | None = None) -> dict:
        """``{"LightGBM": {split: {metric: value}}}`` for val and test (``rows``: split ->
        the first ``n`` rows only)."""
        rows = rows or {}
        out = {}
        for s in ("val", "test"):
            n = rows.get(s, len(self.frames[s]))
            pred = to_prediction(self.task, self.raw(s), self.bounds)[:n]
            out[s] = score(self.task, pred, self.frames[s].iloc[:n])
        return {self.name: out}

    def importance(self, kind: str = "gain") -> pd.Series:
        """LightGBM's feature importance (``gain`` or ``split``) of the trees used, by
        readable feature name, in the features' order."""
        values = self.booster.feature_importance(kind, iteration=self.rounds)
        return pd.Series(values, index=[self.names.get(n, n) for n in
                                        self.booster.feature_name()], name=kind)

    def val_score(self) -> float:
        """The val value of the task's monitored metric, as larger-is-better."""
        value = self.scores()[self.name]["val"][monitor(self.task)]
        return value if self.task.monitor_mode == "max" else -value


def fit_tree_baselines(task: Task, db: Database, tables: dict[str, pd.DataFrame],
                       history: pd.DataFrame | None = None, strict: bool = False,
                       seed: int = 0, features: dict[str, pd.DataFrame] | None = None,
                       deep=None, max_train_rows: int = MAX_TRAIN_ROWS,
                       ) -> tuple[dict[str, TreeFit], dict[str, dict]]:
    """LightGBM on depth-1 features (``features``, computed if None) and, with ``deep``
    (:class:`~rdl.features.deep.DeepSettings`), on depth 1 and 2: ``({name: fit},
    {name: feature tables per split})``. Each fit on a seeded sample of ``max_train_rows``
    train rows where there are more (``data.tree_rows``)."""
    from rdl.features.deep import deep_features

    if deep is not None and deep.select and deep.select_weeks:   # before any heavy work
        tail_weeks(tables["train"], deep.select_weeks)
    history = task.history(tables) if history is None else history
    view = db if "now" in tables else db.upto(task.test_time)
    if features is None:
        features = {s: entity_features(task, view, df, history, strict)
                    for s, df in tables.items()}
    fits = {DEPTH1: fit_lightgbm(task, db, tables, history, strict, seed, max_train_rows,
                                 features=features)}
    feats = {DEPTH1: features}
    if deep is not None:
        synthesis = stage("depth-2 synthesis", log)
        both = {s: feature_names.side_by_side(
                    [features[s], deep_features(task, view, df, history, strict, deep)])
                for s, df in tables.items()}
        synthesis.end(f"{both['train'].shape[1] - features['train'].shape[1]} columns for "
                      f"{sum(map(len, tables.values()))} rows")
        fits[DEPTH2] = fit_lightgbm(task, db, tables, history, strict, seed, max_train_rows,
                                    features=both, name=DEPTH2)
        feats[DEPTH2] = both
        if deep.select:
            fits[DEPTH2], feats[DEPTH2] = choose_depth2(
                task, db, tables, history, strict, seed, fits[DEPTH1], fits[DEPTH2], both, deep,
                max_train_rows=max_train_rows)
    return fits, feats


def choose_depth2(task: Task, db: Database, tables: dict[str, pd.DataFrame],
                  history: pd.DataFrame, strict: bool, seed: int, depth1: TreeFit,
                  whole: TreeFit, both: dict[str, pd.DataFrame], deep,
                  name: str = DEPTH2, max_train_rows: int = MAX_TRAIN_ROWS,
                  ) -> tuple[TreeFit, dict[str, pd.DataFrame]]:
    """The depth-2 trees on depth 1's features and the depth-2 features ``deep.select``
    keeps, chosen on val (:func:`select_on_val`) or on the train split's last weeks
    (:func:`select_on_train_tail`, ``deep.select_weeks``): ``(fit, feature tables)``.
    ``whole``: the trees on all of ``both``; ``depth1``: on depth 1's features alone."""
    refit = lambda f, t=tables: fit_lightgbm(task, db, t, history, strict, seed,  # noqa: E731
                                             max_train_rows, features=f, name=name)
    n1 = depth1.X["train"].shape[1]
    if not deep.select_weeks:
        return select_on_val(whole, both, n1, deep.select, refit, depth1=depth1)
    cols = select_on_train_tail(tables["train"], both["train"], n1, deep.select,
                                deep.select_weeks, refit)
    if len(cols) == both["train"].shape[1]:   # all kept: the fit on all
        return whole, both
    chosen = {s: df[cols] for s, df in both.items()}
    return (dataclasses.replace(depth1, name=whole.name) if len(cols) == n1
            else refit(chosen)), chosen


def tail_weeks(train: pd.DataFrame, weeks: int) -> np.ndarray:
    """The train split's last ``weeks`` seed times, or one clear error if it has too few."""
    times = np.sort(train["timestamp"].unique())
    if len(times) <= weeks:
        raise ValueError(f"data.deep_features.select_weeks={weeks}: the train split has "
                         f"{len(times)} seed time(s); it needs more than {weeks} "
                         "(0: choose on val)")
    return times[-weeks:]


def select_on_train_tail(train: pd.DataFrame, both: pd.DataFrame, n_depth1: int, keep: tuple,
                         weeks: int, refit) -> list:
    """The columns of ``both`` (the train split's depth-1 then depth-2 features) to keep:
    depth 1's and the ``k`` depth-2 features of the most gain, ``k`` in ``keep`` or all,
    chosen on the train split's last ``weeks`` seed times by trees fitted on its earlier
    ones (``refit(features, tables)``; fewer features where two tie). Val, which chooses
    the tree prior and the model's correction after this, is not read."""
    held = train["timestamp"].isin(tail_weeks(train, weeks))
    inner = {"train": train[~held], "val": train[held], "test": train[held]}
    fit = lambda cols: refit({s: both[cols] for s in inner}, inner)  # noqa: E731
    _, best = keep_most_gain(fit(list(both.columns)), both.columns, n_depth1, keep, fit)
    log.info("%s: %d of %d depth-2 features, chosen on the train split's last %d seed "
             "time(s) among %s and all", DEPTH2, len(best) - n_depth1,
             len(both.columns) - n_depth1, weeks, sorted(keep))
    return best


def keep_most_gain(whole: TreeFit, cols: pd.Index, n_depth1: int, keep: tuple, fit_cols,
                   depth1: TreeFit | None = None) -> tuple[TreeFit, list]:
    """Of ``whole`` (the trees on all ``cols``: depth 1's ``n_depth1``, then depth 2's) and
    the trees ``fit_cols(kept)`` on depth 1's columns plus the ``k`` depth-2 columns of the
    most gain in ``whole``, for each ``k`` in ``keep``: the one best on its own val split
    (fewer columns where two tie), and its columns. ``depth1``: the trees on depth 1's
    columns if fitted already (``k = 0``, one fit fewer)."""
    gain = whole.booster.feature_importance("gain", iteration=whole.rounds)[n_depth1:]
    order = np.argsort(-gain, kind="stable")
    deep_cols = cols[n_depth1:]
    best, best_cols, best_score = whole, list(cols), whole.val_score()
    for k in sorted({int(k) for k in keep if int(k) < len(deep_cols)}):
        kept = [*cols[:n_depth1], *deep_cols[np.sort(order[:k])]]
        candidate = (dataclasses.replace(depth1, name=whole.name) if k == 0 and depth1 is not None
                     else fit_cols(kept))
        score = candidate.val_score()  # each call predicts val and test: once a fit
        if score > best_score or (score == best_score and len(kept) < len(best_cols)):
            best, best_cols, best_score = candidate, kept, score
    return best, best_cols


def select_on_val(fit: TreeFit, both: dict[str, pd.DataFrame], n_depth1: int, keep: tuple,
                  refit, depth1: TreeFit | None = None) -> tuple[TreeFit, dict[str, pd.DataFrame]]:
    """The depth-2 trees on depth 1's features plus only the ``k`` depth-2 features of the
    most gain in ``fit`` (all of them fitted), for each ``k`` in ``keep``; the fit best on
    val is kept (fewer features where two tie). Where the data has no signal two hops out,
    hundreds of depth-2 columns are noise that the trees still split on (synthetic
    user-churn: worse than depth 1 in 9 weeks of 10, docs/results.md); the val split that
    already stops the trees early chooses how many to keep. ``depth1``: the depth-1 fit, the
    same trees as keeping none (one fit fewer)."""
    cols = both["train"].columns
    best, kept = keep_most_gain(fit, cols, n_depth1, keep,
                                lambda c: refit({s: df[c] for s, df in both.items()}), depth1)
    log.info("%s: %d of %d depth-2 features, chosen on val among %s and all", best.name,
             len(kept) - n_depth1, len(cols) - n_depth1, sorted(keep))
    return best, (both if len(kept) == len(cols) else {s: df[kept] for s, df in both.items()})


def lightgbm_baseline(task: Task, db: Database, tables: dict[str, pd.DataFrame],
                      history: pd.DataFrame | None = None, strict: bool = False,
                      seed: int = 0, max_train_rows: int = MAX_TRAIN_ROWS) -> dict:
    """``{"LightGBM": {split: {metric: value}}}`` for val and test."""
    return fit_lightgbm(task, db, tables, history, strict, seed, max_train_rows).scores()


def fit_lightgbm(task: Task, db: Database, tables: dict[str, pd.DataFrame],
                 history: pd.DataFrame | None = None, strict: bool = False, seed: int = 0,
                 max_train_rows: int = MAX_TRAIN_ROWS,
                 features: dict[str, pd.DataFrame] | None = None, name: str = DEPTH1) -> TreeFit:
    """LightGBM fitted on the train split (a seeded sample of ``max_train_rows`` if it has
    more), early-stopped on val. ``features``: the feature tables of the whole splits
    (:func:`~rdl.features.table.entity_features`), if already computed."""
    timer = stage(name, log)
    history = task.history(tables) if history is None else history
    view = db if "now" in tables else db.upto(task.test_time)  # "now": the whole database
    train = tables["train"]
    rows = f"{len(train)} train rows"
    if len(train) > max_train_rows:
        rows = f"a sample of {max_train_rows} of {len(train)} train rows (data.tree_rows)"
        train = train.sample(n=max_train_rows, random_state=seed).sort_index()
    frames = {"train": train, **{s: tables[s] for s in ("val", "test", "now") if s in tables}}
    if len(frames["val"]) == 0:
        raise ValueError(f"task {task.name!r}: LightGBM needs val rows to stop early on")
    if features is None:
        X = {s: entity_features(task, view, df, history, strict) for s, df in frames.items()}
    else:
        X = {s: features[s].loc[df.index] for s, df in frames.items()}
    names = feature_names.lightgbm_names(X["train"].columns)
    X = {s: lightgbm_names(x) for s, x in X.items()}
    y = {s: df[task.target_col].to_numpy(dtype=np.float64) for s, df in frames.items()}
    moved = seasonal_base(task, tables["train"], history)   # (once: the train split's)
    base = {s: boost_base(task, df, history, tables["train"], moved) for s, df in frames.items()}
    featurised = timer.seconds()
    if (held := held_out(task, frames["train"], frames["val"])) is None:
        booster = train_trees(task, X["train"], y["train"], base["train"], seed,
                              valid=(X["val"], y["val"], base["val"]))
    else:   # (val's labels one value)
        booster = stopped_on_train(task, (X["train"], y["train"], base["train"]), held, seed,
                                   train_trees, name)
    fit = TreeFit(task, booster, frames, X, base, name, task.kind.label_range(
        tables["train"][task.target_col].to_numpy(dtype=np.float64)), names)
    top = fit.importance().nlargest(3)
    timer.end(f"features {featurised:.1f} s, fit {timer.seconds() - featurised:.1f} s; "
              f"{fit.rounds} trees, {rows} x {X['train'].shape[1]} features; "
              f"most gain: {', '.join(feature_names.shown(n, 60) for n in top.index)}")
    return fit


def boost_base(task: Task, df: pd.DataFrame, history: pd.DataFrame,
               train: pd.DataFrame, moved: bool | None = None) -> np.ndarray | None:
    """Regression boosts from the last label (the train mean where there is none), or
    from the last label moved by last year's change where ``moved`` (None: where
    :func:`seasonal_base` of ``train``); classification from LightGBM's own start (None)."""
    if not task.kind.starts_from_last_label:
        return None
    prior = np.atleast_1d(train_prior(task, train))
    if seasonal_base(task, train, history) if moved is None else moved:
        return from_history(task, statistic_values(task, df, history, statistic(CHANGE)), prior)
    return last_label(task, df, history, prior)


def seasonal_base(task: Task, train: pd.DataFrame, history: pd.DataFrame) -> bool:
    """Whether the trees boost from the last label moved by last year's change (a
    monthly series' season, :mod:`rdl.baselines.history`): for a window of calendar
    months, where that is nearer the labels of ``train`` than the last label is (mean
    absolute difference; each seed's from what it may know). Trees boosting from the last
    label, with last year's change a feature, do not learn to add it: on the 148 monthly
    US employment series they scored 12.3 test MAE, 8.5 the change added alone
    (docs/results.md). A weekly task keeps the last label: its numbers stay as measured."""
    if not (task.kind.starts_from_last_label and months(task.window)
            and seasonal_lag(task.window)):
        return False
    y = train[task.target_col].to_numpy(dtype=np.float64)
    st = visible_labels(task, train, history, ks=(), year=True)
    last, moved = st["last"][:, 0], seasonal(st, "year_change")[:, 0]
    ok = ~np.isnan(last) & ~np.isnan(y)
    return bool(ok.any() and np.abs(moved[ok] - y[ok]).mean() < np.abs(last[ok] - y[ok]).mean())


def train_trees(task: Task, X: pd.DataFrame, y: np.ndarray, base: np.ndarray | None,
                seed: int, valid: tuple | None = None, rounds: int = ROUNDS):
    """A LightGBM booster with the task's objective; early-stopped on ``valid`` ``(X, y,
    base)`` if given, else ``rounds`` trees."""
    import lightgbm

    params = dict(PARAMS, seed=seed, num_threads=threads(),
                  **task.kind.lightgbm_params(task.monitor))
    if metric := STOPPING_METRIC.get(monitor(task)):
        params["metric"] = metric
    train_set = lightgbm.Dataset(X, y, init_score=base)
    with growing(rounds) as grown:
        if valid is None:
            return lightgbm.train(params, train_set, num_boost_round=rounds, callbacks=[grown])
        val_set = lightgbm.Dataset(valid[0], valid[1], reference=train_set, init_score=valid[2])
        return lightgbm.train(params, train_set, num_boost_round=rounds, valid_sets=[val_set],
                              callbacks=[lightgbm.early_stopping(PATIENCE, first_metric_only=True,
                                                                 verbose=False), grown])


@contextlib.contextmanager
def growing(rounds: int):
    """LightGBM's callback that moves a bar over the ``rounds`` trees it may grow
    (:func:`rdl.progress.bar`: shown on a terminal when the fit is long)."""
    with bar(desc="LightGBM", total=rounds, unit="tree") as trees:
        yield lambda env: trees.update()


def raw_scores(booster, X: pd.DataFrame, base: np.ndarray | None, rounds: int) -> np.ndarray:
    """The booster's raw scores (plus ``base``: the regression start it boosted from)."""
    raw = booster.predict(X, num_iteration=rounds, raw_score=True)
    return raw if base is None else raw + base


def to_prediction(task: Task, raw: np.ndarray, bounds: tuple | None = None) -> np.ndarray:
    """Raw scores as the task's metrics take them: values (clamped to ``bounds``, the
    train labels' range, as the model's are), the positive-class probability, or class
    probabilities ``(N, C)``."""
    return task.kind.from_raw(raw, bounds)


def threads() -> int:
    """Two threads where the machine has cores to spare, else one: OpenMP threads on a
    small, busy machine wait on each other (ten times slower than one thread, measured on
    two cores). The cores: those this process may use (:mod:`rdl.cores`)."""
    return 2 if usable_cores() >= 8 else 1


def lightgbm_names(X: pd.DataFrame) -> pd.DataFrame:
    """``X`` under the names LightGBM stores (:func:`rdl.features.names.lightgbm_names`:
    distinct, safe, no category value in them)."""
    out = X.copy(deep=False)
    out.columns = list(feature_names.lightgbm_names(X.columns))
    return out
