"""``logger=mlflow`` and ``logger=wandb`` (rdl/tracking.py): a tiny run read back with each
tool's own means: MLflow's ``MlflowClient`` on the run's local store, W&B's offline run
folder."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

from rdl.backtest import read_runs
from rdl.tracking import flat_config, split_tables

#: eager, and a loss logged at every step (the tracking logger must get each)
FAST = ("compile.enabled=false", "trainer.max_epochs=2", "trainer.log_every_n_steps=1")


def metrics(run_dir: Path) -> dict:
    return json.loads((run_dir / "metrics.json").read_text())


def test_the_config_is_logged_resolved_and_flat():
    config = {"a": {"b": 1, "c": "${a.b}", "d": [1, 2]}, "out": "${hydra:runtime.output_dir}",
              "e": {}}
    flat = flat_config(config)
    # resolved where it can be; a resolver that needs Hydra's app stays as written
    assert flat == {"a.b": 1, "a.c": 1, "a.d": [1, 2], "out": "${hydra:runtime.output_dir}",
                    "e": {}}


def test_the_report_tables_have_a_row_per_model_and_baseline():
    results = {"model": {"val": {"auroc": 0.7}, "test": {"auroc": 0.6}},
               "LightGBM": {"val": {"auroc": 0.65}, "test": {"auroc": 0.66}}}
    tables = split_tables(results)
    assert tables["val"].to_dict("records") == [{"who": "model", "auroc": 0.7},
                                                {"who": "LightGBM", "auroc": 0.65}]
    assert tables["test"]["auroc"].tolist() == [0.6, 0.66]


def test_mlflow_tracking_uri_defaults_to_the_run_folder(tmp_path, monkeypatch):
    pytest.importorskip("mlflow", reason="the mlflow extra")
    from rdl.tracking import MLFlowLogger
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    local = MLFlowLogger(store_dir=str(tmp_path / "run"), experiment_name="x")
    assert local._tracking_uri == f"sqlite:///{tmp_path / 'run' / 'mlflow.db'}"
    given = f"sqlite:///{tmp_path / 'shared.db'}"
    assert MLFlowLogger(store_dir=str(tmp_path), tracking_uri=given)._tracking_uri == given
    monkeypatch.setenv("MLFLOW_TRACKING_URI", given)
    assert MLFlowLogger(store_dir=str(tmp_path))._tracking_uri == given


def test_an_mlflow_run_reads_back_with_mlflows_client(run_train, tmp_path):
    pytest.importorskip("mlflow", reason="the mlflow extra")
    from mlflow import MlflowClient
    run_dir = tmp_path / "run"
    env = {"MLFLOW_TRACKING_URI": ""}
    out = run_train(run_dir, "logger=mlflow", *FAST, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    client = MlflowClient(f"sqlite:///{run_dir / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("user-churn")
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED"
    run_id, expected = run.info.run_id, metrics(run_dir)

    # params: the composed config, resolved and flattened
    params = run.data.params
    assert params["model.channels"] == "16" and params["task.monitor"] == "auroc"
    assert params["output_dir"] == str(run_dir)
    assert not any("${" in v for v in params.values())
    # metrics: per step and per epoch, and the best checkpoint's val and test
    steps = client.get_metric_history(run_id, "train/loss_step")
    assert len(steps) == 2 * 3  # 2 epochs of 3 batches, logged at every step
    assert len(client.get_metric_history(run_id, "train/loss_epoch")) == 2
    assert run.data.metrics["val/auroc"] == pytest.approx(expected["model"]["val"]["auroc"])
    assert run.data.metrics["test/auroc"] == pytest.approx(expected["model"]["test"]["auroc"])

    # artifacts: the report's tables, metrics.json, the best checkpoint
    local = Path(client.download_artifacts(run_id, "", str(tmp_path / "artifacts")))
    for split in ("val", "test"):
        table = json.loads((local / "report" / f"{split}.json").read_text())
        table = pd.DataFrame(table["data"], columns=table["columns"]).set_index("who")
        assert list(table.index) == [w for w in expected if w != "task"]
        for who in table.index:
            assert table.loc[who].to_dict() == pytest.approx(expected[who][split])
    assert json.loads((local / "report" / "results.json").read_text()) == expected
    best = run_dir / "checkpoints" / "best.ckpt"
    assert (local / "checkpoints" / "best.ckpt").read_bytes() == best.read_bytes()
    # the store in the run's folder is not taken for runs of its own by rdl.backtest
    assert [r["run"] for r in read_runs(run_dir)] == [run_dir]


@pytest.mark.slow   # CI's 15 minutes: the MLflow test above runs the same tracking code
def test_a_wandb_run_without_a_key_writes_its_offline_folder(run_train, tmp_path):
    pytest.importorskip("wandb", reason="the wandb extra")
    run_dir, home = tmp_path / "run", tmp_path / "home"
    home.mkdir()
    # no key, no login (a HOME without a .netrc)
    env = {"HOME": str(home), "WANDB_API_KEY": "", "WANDB_CONFIG_DIR": str(home / ".config")}
    out = run_train(run_dir, "logger=wandb", *FAST, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    (folder,) = (run_dir / "wandb").glob("offline-run-*")
    (log,) = folder.glob("run-*.wandb")
    data = log.read_bytes()
    # the run's records: the flattened config, the metrics, the report's artifact
    for key in (b"model.channels", b"output_dir", b"val/auroc", b"train/loss_step",
                b"best.ckpt", b"metrics.json"):
        assert key in data, key
    expected = metrics(run_dir)
    (val,) = folder.glob("files/media/table/report/val_*.table.json")
    table = json.loads(val.read_text())
    rows = {r[0]: dict(zip(table["columns"][1:], r[1:])) for r in table["data"]}
    assert rows["model"] == pytest.approx(expected["model"]["val"])
    assert rows["LightGBM"] == pytest.approx(expected["LightGBM"]["val"])


def test_the_tracking_configs_compose(tiny_cfg, tmp_path):
    for name in ("mlflow", "wandb"):
        cfg = tiny_cfg(f"logger={name}", f"output_dir={tmp_path}")
        logger = OmegaConf.to_container(cfg.logger, resolve=True)
        assert logger["_target_"].startswith("rdl.tracking.")
        assert str(tmp_path) in (logger.get("store_dir"), logger.get("save_dir"))


def test_callbacks_rich_keeps_the_defaults_and_gives_lightning_a_rich_console(tiny_cfg,
                                                                              tmp_path):
    pytest.importorskip("rich", reason="the rich extra")
    from hydra.utils import instantiate
    from pytorch_lightning.callbacks import RichModelSummary, RichProgressBar

    default = tiny_cfg("callbacks=default")
    rich = tiny_cfg("callbacks=rich", f"output_dir={tmp_path}")
    assert set(rich.callbacks) == {*default.callbacks, "rich_progress_bar", "rich_model_summary"}
    callbacks = [instantiate(c) for c in rich.callbacks.values()]
    trainer = instantiate(rich.trainer, callbacks=callbacks, logger=False, accelerator="cpu")
    # the config's own (Lightning also picks Rich's by default wherever rich is installed)
    bar = next(c for c in callbacks if isinstance(c, RichProgressBar))
    assert trainer.progress_bar_callback is bar
    summaries = [c for c in trainer.callbacks if "ModelSummary" in type(c).__name__]
    assert len(summaries) == 1 and isinstance(summaries[0], RichModelSummary)
    assert summaries[0] in callbacks and summaries[0]._max_depth == 1


def test_mlflow_params_with_characters_mlflow_refuses_are_logged(tmp_path, monkeypatch):
    pytest.importorskip("mlflow", reason="the mlflow extra")
    from mlflow import MlflowClient

    from rdl.checkpoints import CONFIG_KEY
    from rdl.tracking import MLFlowLogger
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    logger = MLFlowLogger(store_dir=str(tmp_path), experiment_name="x")
    config = {"data": {"stypes": {"article": {"price ($)": "numerical"}}}, "lr": 0.01}
    logger.log_hyperparams({CONFIG_KEY: config})
    params = MlflowClient(logger._tracking_uri).get_run(logger.run_id).data.params
    assert params == {"data.stypes.article.price ___": "numerical", "lr": "0.01"}
