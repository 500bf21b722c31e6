"""Experiment tracking: ``logger=mlflow`` and ``logger=wandb`` (the ``mlflow`` and ``wandb``
extras), Lightning's own loggers with what a run of rdl adds to them.

- **Params**: rdl's composed config, resolved and flattened (``model.channels``,
  ``data.db.scale``...), not the unresolved copy that travels in the checkpoints (Lightning
  would log that one, ``rdl_config/...``, with ``${...}`` left in).
- **Metrics**: Lightning's, per step and per epoch, as logged by the module.
- **The report** (:func:`log_results`, called by :func:`rdl.fit` after the report): the val
  and test tables of the model and the baselines, ``metrics.json`` (MLflow:
  ``report/results.json``), and the best checkpoint.

MLflow: a local SQLite store in the run's folder by default (``mlflow.db``, artifacts in
``mlartifacts/``), or ``tracking_uri`` (also read from ``MLFLOW_TRACKING_URI``). W&B:
offline (``<run>/wandb/offline-run-*``, ``wandb sync`` uploads it later) unless a key is
configured (``WANDB_API_KEY`` or ``wandb login``); ``WANDB_MODE=offline`` forces it, as W&B
documents, for a machine with a key but no network.
"""
from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import OmegaConf

from rdl.checkpoints import CONFIG_KEY

log = logging.getLogger("rdl.train")

#: what an MLflow param or metric key may not hold (MLflow: alphanumerics, _ - . / and space)
MLFLOW_KEY = re.compile(r"[^\w\-. /]")


def flat_config(config: dict) -> dict[str, Any]:
    """``config`` (rdl's composed config as a container, interpolations left in) resolved
    and flattened to ``a.b.c`` keys. A value that cannot be resolved here (``${hydra:...}``
    outside a Hydra app) stays as written."""
    conf = OmegaConf.create(config)
    flat: dict[str, Any] = {}

    def walk(node, prefix: str) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for k, v in items:
            key = f"{prefix}{k}"
            if isinstance(v, dict) and v:
                walk(v, key + ".")
                continue
            try:
                value = OmegaConf.select(conf, key, throw_on_resolution_failure=True)
            except Exception:  # noqa: BLE001 - any resolver's failure: keep it as written
                value = v
            if OmegaConf.is_config(value):
                value = OmegaConf.to_container(value, resolve=False)
            flat[key] = value

    walk(OmegaConf.to_container(conf, resolve=False), "")
    return flat


def _params(params) -> dict:
    params = dict(params)
    config = params.pop(CONFIG_KEY, None)
    if config is not None:
        params.update(flat_config(config))
    return params


def split_tables(results: dict) -> dict[str, pd.DataFrame]:
    """The report's tables, one per split: a row per model or baseline (``who``), a column
    per metric."""
    tables = {}
    for split in ("val", "test"):
        rows = [{"who": who, **r[split]} for who, r in results.items()
                if isinstance(r, dict) and split in r]
        tables[split] = pd.DataFrame(rows)
    return tables


try:
    from pytorch_lightning.loggers import MLFlowLogger as _MLFlowLogger
    from pytorch_lightning.loggers import WandbLogger as _WandbLogger
except ImportError:  # pragma: no cover - Lightning ships both
    _MLFlowLogger = _WandbLogger = object


class MLFlowLogger(_MLFlowLogger):
    """Lightning's MLFlowLogger: ``tracking_uri`` null means ``MLFLOW_TRACKING_URI`` if set,
    else a SQLite store in ``store_dir`` (the run's folder) with its artifacts beside it
    (MLflow 3 refuses its old folder store); params are rdl's config, resolved and
    flattened."""

    def __init__(self, store_dir: str | None = None, tracking_uri: str | None = None,
                 artifact_location: str | None = None, **kwargs):
        tracking_uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
        if not tracking_uri and store_dir is not None:
            store = Path(store_dir).resolve()
            store.mkdir(parents=True, exist_ok=True)
            tracking_uri = f"sqlite:///{store / 'mlflow.db'}"
            artifact_location = artifact_location or (store / "mlartifacts").as_uri()
        super().__init__(tracking_uri=tracking_uri, artifact_location=artifact_location,
                         **kwargs)

    def log_hyperparams(self, params) -> None:
        # MLflow refuses a batch with a key of other characters (a column named "price ($)"
        # in data.stypes): they become "_"
        super().log_hyperparams({MLFLOW_KEY.sub("_", k): v for k, v in _params(params).items()})

    def log_results(self, results: dict, out: Path, ckpt: str | None) -> None:
        client, run = self.experiment, self.run_id
        for split, table in split_tables(results).items():
            client.log_table(run, data=table, artifact_file=f"report/{split}.json")
        if (out / "metrics.json").exists():
            # not as metrics.json: the local store is inside the run's folder, where
            # rdl.backtest takes every metrics.json for a run of its own
            client.log_text(run, (out / "metrics.json").read_text(), "report/results.json")
        if ckpt:
            client.log_artifact(run, ckpt, "checkpoints")


def _wandb_key() -> bool:
    """Whether W&B has a key here: ``WANDB_API_KEY``, or a ``wandb login`` (netrc)."""
    if os.environ.get("WANDB_API_KEY"):
        return True
    try:
        import netrc
        return netrc.netrc().authenticators("api.wandb.ai") is not None
    except (OSError, netrc.NetrcParseError):
        return False


class WandbLogger(_WandbLogger):
    """Lightning's WandbLogger; ``offline`` null: offline unless W&B has a key here (then
    ``WANDB_MODE=offline`` still keeps it offline, W&B's own switch); params are rdl's
    config, resolved and flattened."""

    def __init__(self, offline: bool | None = None, **kwargs):
        if offline is None:
            offline = not _wandb_key()
            if offline:
                log.info("W&B: no key (WANDB_API_KEY, wandb login): logging offline to "
                         "%s/wandb; `wandb sync` uploads it", kwargs.get("save_dir", "."))
        super().__init__(offline=offline, **kwargs)

    def log_hyperparams(self, params) -> None:
        super().log_hyperparams(_params(params))

    def log_results(self, results: dict, out: Path, ckpt: str | None) -> None:
        import wandb
        for split, table in split_tables(results).items():
            self.log_table(key=f"report/{split}", dataframe=table)
        artifact = wandb.Artifact(f"run-{self.experiment.id}-report", type="report")
        if (out / "metrics.json").exists():
            artifact.add_file(str(out / "metrics.json"))
        if ckpt:
            artifact.add_file(ckpt, name=f"checkpoints/{Path(ckpt).name}")
        self.experiment.log_artifact(artifact)
        # the run ends here: W&B writes its summary and config, and the next run of a
        # multirun (the same process) starts a run of its own instead of joining this one
        self.experiment.finish()


def log_results(loggers, results: dict, out: Path, ckpt: str | None) -> None:
    """Each tracking logger of ``loggers`` records the report's tables, ``metrics.json`` and
    the best checkpoint ``ckpt``; other loggers (CSV, TensorBoard) have them in the run's
    folder already."""
    for logger in loggers:
        if hasattr(logger, "log_results"):
            logger.log_results(results, Path(out), ckpt)
