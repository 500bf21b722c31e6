"""``data.num_workers`` and ``data.prefetch_factor``: ``auto`` sized from the cores this
process may use (rdl/cores.py; ``machine``: tests/conftest.py), a number used as given, and
the loaders built with what was chosen (rdl/training/loader_workers.py)."""
from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
import torch

from rdl.api import build
from rdl.graph.link_sampling import KeepArgsLinkLoader
from rdl.training.loader_workers import LoaderWorkers


@pytest.mark.parametrize("cores, on_cuda, processes, workers, prefetch", [
    (16, True, 1, 8, 2),      # capped at 8; 8 workers keep 16 batches ready already
    (16, False, 1, 8, 2),
    (4, True, 1, 3, 2),       # one core for the training process
    (2, True, 1, 1, 4),       # a lone worker keeps the 4 batches ready
    (1, True, 1, 1, 4),       # on CUDA a worker still overlaps the GPU's step
    (1, False, 1, 0, None),   # on the CPU a worker would take the step's only core
    (16, True, 4, 3, 2),      # four training processes share the 16 cores
])
def test_auto_workers_and_prefetch_from_the_cores(machine, cores, on_cuda, processes,
                                                  workers, prefetch):
    machine(cores)
    plan = LoaderWorkers.of("auto", "auto", on_cuda, processes)
    assert (plan.workers, plan.prefetch) == (workers, prefetch)
    assert plan.cores == cores // processes
    assert plan.describe().startswith(f"loader: {workers} worker{'s' * (workers != 1)} "
                                      f"({cores // processes} cores usable), prefetch ")


def test_a_given_number_wins(machine):
    machine(2)
    assert LoaderWorkers.of(6, 5, on_cuda=False) == LoaderWorkers(6, 5, None)
    assert LoaderWorkers.of(0, None, on_cuda=True) == LoaderWorkers(0, None, None)
    assert LoaderWorkers.of("auto", 7, on_cuda=True).prefetch == 7
    assert LoaderWorkers.of(3, "auto", on_cuda=True).prefetch == 2
    assert LoaderWorkers.of(1, "auto", on_cuda=True).prefetch == 4
    assert LoaderWorkers.of(1, None, on_cuda=True).loader_kwargs() == {
        "num_workers": 1, "persistent_workers": True, "prefetch_factor": None}


@pytest.fixture(scope="module")
def built(tiny_cfg):
    return build(tiny_cfg("task=user-churn"))


def on(device: str, devices: int = 1):
    """What Lightning gives a data module that it trains with."""
    return SimpleNamespace(strategy=SimpleNamespace(root_device=torch.device(device)),
                           global_rank=0, world_size=1, num_devices=devices)


def test_loaders_are_built_with_the_choice_logged_once(built, machine, caplog):
    machine(3)
    _, built_dm, _ = built
    dm = type(built_dm)(built_dm.settings.replace(num_workers="auto", prefetch_factor="auto"),
                        built_dm.prepared, built_dm.shapes)
    dm.trainer = on("cuda")
    try:
        with caplog.at_level(logging.INFO, logger="rdl.training.datamodule"):
            loaders = [dm.train_dataloader(), dm.val_dataloader(), dm.test_dataloader()]
        for loader in loaders:
            assert (loader.num_workers, loader.prefetch_factor) == (2, 2)
            assert loader.persistent_workers and loader.pin_memory
        said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("loader:")]
        assert said == ["loader: 2 workers (3 cores usable), prefetch 2"]
    finally:
        dm.teardown()


def test_the_default_loader_is_unchanged(built, machine, caplog):
    """``data.num_workers=0``, no prefetch: the loader in the training process, and not a
    word more in the run's output."""
    machine(16)
    _, dm, _ = built
    dm.trainer = on("cpu")
    try:
        with caplog.at_level(logging.INFO, logger="rdl.training.datamodule"):
            loader = dm.train_dataloader()
        assert (loader.num_workers, loader.prefetch_factor, loader.pin_memory) == (0, None,
                                                                                  False)
        assert not [r for r in caplog.records if r.getMessage().startswith("loader:")]
    finally:
        dm.trainer = None
        dm.teardown()


def test_the_triplet_loader_takes_the_choice_too(tiny_cfg, machine):
    machine(4)
    _, dm, _ = build(tiny_cfg("task=user-item-purchase", "model=two-tower",
                              "data.num_workers=auto", "data.prefetch_factor=3"))
    dm.trainer = on("cpu")
    try:
        loader = dm.train_dataloader()
        assert isinstance(loader, KeepArgsLinkLoader)
        assert (loader.num_workers, loader.prefetch_factor) == (3, 3)
    finally:
        dm.teardown()
