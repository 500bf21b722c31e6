"""Predictions of a trained model: ``python -m rdl.predict ckpt_path=<run>/checkpoints/best.ckpt``.

Rebuilds the run from the config saved in the checkpoint (no training config is needed),
scores every seed of a split and writes one file in RelBench's layout: the seed time, the
entity's id (its key in the source files where the loader kept it) and the prediction, under
the task's own column names (a RelBench task's: its files are RelBench's evaluator's input).
Node tasks: the positive-class probability, the value, or the class with its class
probabilities; link tasks: the top ``eval_k`` target ids, best first (in a CSV file a JSON
list, ``[41, 34, 76]``, as RelBench's evaluator reads it). The split's metrics
are printed beside (they equal the training run's for the same checkpoint).

``split=now`` scores the seeds at the database's last time, which has no labels yet (the
production use: who churns next week?): the entities the task's SQL selects then (a link
task: every entity it ever labelled), with every row of the database in the graph.

Settings (``conf/predict.yaml``): ``split=val|test|now``, ``format=parquet|csv``, ``output=``
(default: ``predictions_<split>.<format>`` in the checkpoint's run folder), and
``+run.<key>=<value>`` to change the saved training config, e.g. ``+run.data.db.path=...``
to read the same database from another folder.
"""
from __future__ import annotations

if __name__ == "__main__":   # python -m rdl.predict: before torch is imported (rdl/threads.py)
    from rdl.threads import at_start
    at_start()

import json
import logging
import os
import sys
from pathlib import Path

import hydra
import numpy as np
import pandas as pd
import pytorch_lightning as pl
import torch
from omegaconf import DictConfig, OmegaConf

from rdl.api import build, user_error
from rdl.settings import duckdb_settings
from rdl.caching import atomic_file
from rdl.checkpoints import read_checkpoint
from rdl.data.database import DataError
from rdl.families import family_of
from rdl.families.family import original_ids
from rdl.graph.columns import is_list_column
from rdl.safe_load import check_targets
from rdl.training.process import configured

log = logging.getLogger("rdl.predict")
SPLITS = ("val", "test", "now")
FORMATS = ("parquet", "csv")


def predict(cfg: DictConfig) -> tuple[Path, pd.DataFrame, dict]:
    """Writes the predictions of ``cfg.ckpt_path`` for ``cfg.split``; returns the file, the
    table written and the split's metrics."""
    if cfg.get("task") is not None:
        raise ValueError(
            "task=...: rdl.predict takes the task from the checkpoint, which was "
            "trained on it; for another task train a model on it (python -m rdl.train "
            "task=...), and to change a setting of the checkpoint's run give "
            "+run.<key>=<value> (e.g. +run.task.path=<folder>)")
    if cfg.split not in SPLITS:
        raise ValueError(f"split={cfg.split!r}: expected one of {SPLITS}")
    if cfg.format not in FORMATS:
        raise ValueError(f"format={cfg.format!r}: expected one of {FORMATS}")
    trust = bool(cfg.get("trust_checkpoint"))
    saved, ckpt = read_checkpoint(cfg.ckpt_path, trust)
    check_targets(saved, f"ckpt_path {cfg.ckpt_path}", trust)  # Hydra builds them below
    run = newer_settings(OmegaConf.create(saved), cfg.ckpt_path)
    run.compile.enabled = False  # one pass over a split: compiling would cost more than it saves
    # sampled on the CPU, whatever the machine that trained (data.sampler.device; and a
    # checkpoint from before the setting lacks it)
    OmegaConf.update(run, "data.sampler", {"device": None}, force_add=True)
    run = OmegaConf.merge(run, cfg.get("run") or {})
    if cfg.split == "now":  # the seeds at the database's last time, the whole database in the graph
        OmegaConf.update(run, "data.now", True, force_add=True)
    OmegaConf.update(run, "data.predict_split", cfg.split, force_add=True)
    pl.seed_everything(run.seed, workers=True)
    task, dm, module = build(run)
    state = ckpt["state_dict"]
    check_schema(cfg.ckpt_path, module.state_dict(), state)
    module.load_state_dict(state)
    if "rdl_correction_scale" in ckpt:  # chosen on val after training (node tasks)
        module.correction_scale = float(ckpt["rdl_correction_scale"])
    trainer = pl.Trainer(accelerator=cfg.accelerator, devices=1, logger=False,
                         enable_checkpointing=False, inference_mode=False,
                         enable_progress_bar=False, enable_model_summary=False)
    outs = trainer.predict(module, datamodule=dm)
    ids = torch.cat([o[0] for o in outs]).numpy()
    pred = torch.cat([o[1] for o in outs])
    order = np.argsort(ids, kind="stable")
    if not np.array_equal(ids[order], np.arange(len(dm.tables[cfg.split]))):
        raise RuntimeError(f"predicted {len(ids)} rows for the {len(dm.tables[cfg.split])} "
                           f"rows of split {cfg.split!r}")
    pred = pred[torch.from_numpy(order)]
    if ckpt.get("rdl_ranker_blend") is not None:  # link tasks: with the ranker, as chosen on val
        from rdl.families.link.blend import blend_predictions
        pred = blend_predictions(module, dm, cfg.split, float(ckpt["rdl_ranker_blend"]))
    table, metrics = layout(dm, cfg.split, pred)
    out = Path(cfg.output) if cfg.get("output") else (
        Path(cfg.ckpt_path).resolve().parent.parent / f"predictions_{cfg.split}.{cfg.format}")
    write(table, out, cfg.format)
    return out, table, metrics


def newer_settings(run: DictConfig, path) -> DictConfig:
    """``run`` (a checkpoint's saved config) with the data settings rdl gained since it was
    written set to today's defaults (``data/loader/default.yaml``), named in a warning: a
    checkpoint of an older rdl predicts instead of failing on a missing argument."""
    from rdl.paths import CONF_DIR
    packaged = OmegaConf.load(CONF_DIR / "data" / "loader" / "default.yaml")
    new = [k for k in packaged if k != "_target_" and k not in run.data]
    for k in new:
        OmegaConf.update(run, f"data.{k}", packaged[k], force_add=True)
    if new:
        log.warning("ckpt_path %s was written by an older rdl: the settings %s are not in "
                    "it, and take today's defaults", path, ", ".join(f"data.{k}" for k in new))
    return run


def check_schema(path, want: dict, got: dict) -> None:
    """One clear error if the checkpoint's weights do not fit the model built from the
    database (another schema: other tables, columns or categories)."""
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    shapes = sorted(k for k in set(want) & set(got) if want[k].shape != got[k].shape)
    if missing or extra or shapes:
        parts = [f"{name}: {', '.join(keys[:4])}{' ...' if len(keys) > 4 else ''}"
                 for name, keys in (("not in the checkpoint", missing),
                                    ("only in the checkpoint", extra),
                                    ("of another shape", shapes)) if keys]
        raise DataError(f"ckpt_path {path}: the database differs from the one the model was "
                        "trained on (another schema: tables, columns or categories); "
                        "parameters " + "; ".join(parts))


def layout(dm, split: str, pred: torch.Tensor) -> tuple[pd.DataFrame, dict]:
    """The split's predictions in RelBench's layout, and its metrics: the seed time under
    the task's own name (a RelBench autocomplete task's is its table's time column, which
    RelBench's evaluator joins on), the entity's id, and the family's columns."""
    task, df = dm.task, dm.tables[split]
    rows = df[task.entity_col].to_numpy()
    table = pd.DataFrame({task.time_col: df["timestamp"].to_numpy(),
                          task.entity_col: original_ids(dm.db, task.entity_table, rows)})
    # an entity keyed by several columns (rdl.data.composite, ``"store, product"``): a
    # column per part too, as its table holds them (a part that is a foreign key as the
    # ids of the rows it references, not their positions)
    entities = dm.db[task.entity_table]
    for part in str(task.entity_col).split(", ") if ", " in str(task.entity_col) else []:
        if part in entities.df.columns and part not in table.columns:
            values = entities.df[part].to_numpy()[rows]
            ref = entities.fkeys.get(part)
            table[part] = values if ref is None else original_ids(
                dm.db, ref, values.astype("int64"))
    # "now" has no labels yet: nothing to score
    columns, metrics = family_of(task).predictions(dm, split, pred, labelled=split != "now")
    for col, values in columns.items():
        table[col] = values
    return table, metrics


def _plain(x):
    """A numpy scalar as the Python number JSON writes."""
    return x.item() if isinstance(x, np.generic) else x


def write(table: pd.DataFrame, out: Path, fmt: str) -> None:
    """``table`` to ``out``, through a temporary file beside it (never half-written)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(out) as tmp:
        if fmt == "parquet":
            table.to_parquet(tmp, index=False)
        else:  # a list of ids as a JSON list, as RelBench's evaluator reads a cell
            lists = [c for c in table.columns if is_list_column(table[c])]
            table.assign(**{c: table[c].map(lambda v: json.dumps([_plain(x) for x in v]))
                            for c in lists}).to_csv(tmp, index=False)


@hydra.main(config_path="conf", config_name="predict", version_base="1.3")
def main(cfg: DictConfig) -> None:
    try:
        with configured(verbose=bool(cfg.get("verbose", False)),    # undone when it ends
                        threads=cfg.get("threads", "auto"), duckdb=duckdb_settings(cfg)):
            out, table, metrics = predict(cfg)
    except Exception as e:
        if user_error(e) is None or os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        print(f"error: {user_error(e)}", file=sys.stderr)
        raise SystemExit(1) from None
    print(f"{len(table)} predictions written to {out}")
    if metrics:
        print(f"{cfg.split}: " + ", ".join(f"{k} {v:.4f}" for k, v in metrics.items()))


if __name__ == "__main__":
    main()
