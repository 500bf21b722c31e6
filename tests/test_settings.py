"""Settings that cannot train are refused before any data is read (rdl.settings.check_settings):
one ValueError naming the setting, its value and what it must be."""
import pytest

from rdl.settings import check_settings


@pytest.mark.parametrize("overrides,message", [
    (["model.channels=0"], "model.channels=0: must be an integer >= 1"),
    (["model.channels=2.5"], "model.channels=2.5: must be an integer >= 1"),
    (["model.num_layers=-1"], "model.num_layers=-1: must be an integer >= 0"),
    (["model=graph-transformer", "model.num_layers=0"], "model.num_layers=0: must be an integer >= 1"),
    (["data.num_neighbors=[]"], "data.num_neighbors=[]: must list the fan-out of each hop"),
    (["data.num_neighbors=[16,0]"], "data.num_neighbors=[16, 0]: each fan-out must be an integer "
                                    ">= 1, or -1 for all neighbours"),
    (["data.num_neighbors=[16,-2]"], "data.num_neighbors=[16, -2]: each fan-out must be an integer >= 1, or -1"),
    (["data.num_neighbors=[16]"], "data.num_neighbors=[16]: one fan-out per message-passing layer "
                                  "is needed: model.num_layers=2"),
    (["model.stacked_encoders=1"], "model.stacked_encoders=1: true, false, null (the run's "
                                   "launch_bound) or a number of rows per chunk (2 or more)"),
    (["model.stacked_encoders=lots"], "model.stacked_encoders=lots: true, false, null"),
    (["data.batch_size=0"], "data.batch_size=0: must be an integer >= 1"),
    (["data.eval_batch_size=-1"], "data.eval_batch_size=-1: must be an integer >= 1"),
    (["lr=0"], "lr=0: must be a finite number > 0"),
    (["lr=-0.1"], "lr=-0.1: must be a finite number > 0"),
    (["lr=nan"], "lr=nan: must be a finite number > 0"),
    (["lr=inf"], "lr=inf: must be a finite number > 0"),
    (["backtest=-2"], "backtest=-2: must be a whole number of task windows >= 0"),
    (["backtest=0.5"], "backtest=0.5: must be a whole number of task windows >= 0"),
    (["data.num_workers=-1"], "data.num_workers=-1: must be a whole number >= 0"),
    (["data.num_workers=many"], "data.num_workers=many: must be a whole number >= 0 "
                                "(0: the loader in the training process) or auto"),
    (["data.prefetch_factor=0"], "data.prefetch_factor=0: must be a whole number >= 1"),
    (["data.prefetch_factor=4"], "data.prefetch_factor=4: batches each loader worker keeps "
                                 "ready, and data.num_workers=0 starts none"),
    (["threads=0"], "threads=0: must be auto (from the cores this process may use), a whole "
                    "number >= 1, or off"),
    (["threads=many"], "threads=many: must be auto"),
    (["duckdb.memory_limit=lots"], "duckdb.memory_limit='lots': expected auto or a size"),
])
def test_bad_setting_is_named(tiny_cfg, overrides, message):
    with pytest.raises(ValueError) as e:
        check_settings(tiny_cfg(*overrides))
    assert str(e.value).startswith(message)


@pytest.mark.parametrize("overrides", [
    [],
    ["model.num_layers=0"],                            # the entity-features-only baseline
    ["data.num_neighbors=[-1,-1]"],                    # every neighbour
    ["data.num_neighbors=[8,4,2]"],                    # more hops than layers: the first two
    ["model=graph-transformer", "data.num_neighbors=[8]"],   # token models take every hop
    ["data.eval_batch_size=null"],
    ["backtest=3"],
    ["experiment=gpu"],                                # auto workers and prefetch
    ["data.num_workers=2", "data.prefetch_factor=4"],
    ["threads=3"], ["threads=off"],
    ["duckdb.memory_limit=8GB"], ["duckdb.memory_limit=500MiB", "duckdb.spill_dir=/tmp"],
])
def test_good_settings_pass(tiny_cfg, overrides):
    check_settings(tiny_cfg(*overrides))
